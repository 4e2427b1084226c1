// The test API server's storage (KUBE-API.md §2): objects by resource,
// namespace and name; one global resourceVersion counter bumped on every
// stored write; a bounded history of changes that serves watches and lists
// at an older RV (older than the history → 410 Expired); the open watches,
// fed with selector transitions (an object that starts matching arrives as
// ADDED, one that stops matching as DELETED) and bookmarks.
//
// Not thread-safe: ApiServer calls it with its mutex held. Objects are
// stored as JSON with metadata.resourceVersion set by the store.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "testing/apiserver/selectors.h"
#include "testing/apiserver/watch_channel.h"

namespace fairbench::apiserver {

using nlohmann::json;

// What one watch wants and how its events are rendered.
struct WatchSpec {
  std::string storage_key;
  std::string ns;  // "" = all namespaces
  LabelSelector labels;
  FieldSelector fields;
  bool bookmarks = false;
  std::string kind;         // for bookmark objects
  std::string api_version;  // for bookmark objects
  // The event's "object" for a stored object (version, defaults, Table).
  std::function<json(const json& object)> render;
};

class ObjectStore {
 public:
  explicit ObjectStore(size_t history_limit) : history_limit_(history_limit) {}

  uint64_t current_rv() const { return rv_; }
  // Every event with an RV above this one is still in the history.
  uint64_t compacted_rv() const { return compacted_rv_; }

  const json* Get(const std::string& key, const std::string& ns, const std::string& name) const;
  // In storage order (namespace, then name). ns "" = all namespaces.
  std::vector<const json*> List(const std::string& key, const std::string& ns) const;
  // The objects as they were at `rv`; nullopt when the history no longer
  // reaches back that far.
  std::optional<std::vector<json>> ListAt(const std::string& key, const std::string& ns, uint64_t rv) const;
  // Every stored object with its storage key.
  void ForEach(const std::function<void(const std::string& key, const json& object)>& fn) const;

  // Writes stamp metadata.resourceVersion with a new RV and notify watches.
  const json& Create(const std::string& key, json object);
  const json& Update(const std::string& key, json object);
  // Removes the object; returns its last state, stamped with the deletion RV.
  json Remove(const std::string& key, const std::string& ns, const std::string& name, json last_state);

  // Opens a watch. from_rv nullopt = start with a synthetic ADDED for every
  // current object; otherwise only changes after from_rv. Returns nullptr if
  // from_rv is older than the history (the caller answers 410).
  std::shared_ptr<WatchChannel> Watch(const WatchSpec& spec, std::optional<uint64_t> from_rv, size_t max_queued,
                                      std::chrono::steady_clock::time_point deadline);
  void SendBookmarks();
  // Ends the watches of one resource ("" = all).
  void EndWatches(const std::string& key, WatchChannel::End how);
  size_t open_watches();
  // Forgets all history: every RV before now becomes too old.
  void Compact();
  // Drops the oldest events beyond the limit (also done on every write).
  void set_history_limit(size_t limit);

 private:
  enum class EventType { kAdded, kModified, kDeleted };
  struct Event {
    uint64_t rv;
    std::string key;
    std::string ns;
    std::string name;
    EventType type;
    json object;  // new state; for DELETED the last state
    json prev;    // state before (null for ADDED)
  };
  struct Watcher {
    WatchSpec spec;
    std::shared_ptr<WatchChannel> channel;
  };

  static std::string ObjectKey(const std::string& ns, const std::string& name) { return ns + "/" + name; }
  void Record(Event e);
  void Deliver(Watcher& w, const Event& e);
  static bool Matches(const WatchSpec& spec, const json& object);
  static std::string Line(const char* type, json object);

  size_t history_limit_;
  uint64_t rv_ = 1;
  uint64_t compacted_rv_ = 1;
  std::map<std::string, std::map<std::string, json>> objects_;  // storage key → ns/name → object
  std::deque<Event> history_;
  std::vector<Watcher> watchers_;
};

}  // namespace fairbench::apiserver
