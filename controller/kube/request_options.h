// Options of the client's operations, one struct per verb, mirroring the
// API's query parameters and DeleteOptions. Every call has a timeout; zero
// means the client's default. Plain values.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace fairbench::kube {

struct GetOptions {
  std::string resource_version;  // "" = most recent
  std::chrono::milliseconds timeout{0};
};

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  int64_t limit = 0;  // page size; 0 = no paging
  std::string continue_token;
  std::string resource_version;        // "" most recent, "0" any, "N" not older than N
  std::string resource_version_match;  // "", "Exact", "NotOlderThan"
  std::chrono::milliseconds timeout{0};
};

struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;  // "" or "0": synthetic ADDED for current objects first
  bool allow_bookmarks = true;
  std::chrono::seconds timeout_seconds{0};  // server closes cleanly after this; 0 = server default
};

struct WriteOptions {
  std::string field_manager;
  std::string field_validation;  // "", "Ignore", "Warn", "Strict"
  bool dry_run = false;
  std::chrono::milliseconds timeout{0};
};

enum class PatchType { kMerge, kJson, kStrategicMerge, kApply };

struct PatchOptions {
  std::string field_manager;  // required for kApply
  bool force = false;         // kApply only
  std::string field_validation;
  bool dry_run = false;
  std::chrono::milliseconds timeout{0};
};

enum class PropagationPolicy { kDefault, kBackground, kForeground, kOrphan };

struct DeleteOptions {
  PropagationPolicy propagation = PropagationPolicy::kDefault;
  std::optional<int64_t> grace_period_seconds;
  std::string precondition_uid;
  std::string precondition_resource_version;
  bool dry_run = false;
  std::chrono::milliseconds timeout{0};
};

}  // namespace fairbench::kube
