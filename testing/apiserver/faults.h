// Fault injection for tests: answer some requests with 5xx or 429 before
// they are handled, add latency, cut watch streams. Which requests are
// eligible is filtered by method and path prefix.
//
// Thread-safe; decisions come from one seeded generator so that a failing
// run can be repeated with the same seed.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "testing/apiserver/api_status.h"

namespace fairbench::apiserver {

struct FaultConfig {
  double server_error_rate = 0;  // one of server_error_codes, before the request is handled
  std::vector<int> server_error_codes = {500, 503, 504};
  double throttle_rate = 0;      // 429 with Retry-After
  int retry_after_seconds = 1;
  double watch_drop_rate = 0;    // after each streamed watch event, cut the connection
  std::chrono::milliseconds latency{0};
  bool include_watches = true;   // also fail watch requests before they stream
  std::set<std::string> methods;             // empty = all
  std::vector<std::string> path_prefixes;    // empty = all resource paths
  uint64_t seed = 1;
};

class FaultInjector {
 public:
  void Configure(const FaultConfig& config);
  void Clear() { Configure(FaultConfig{}); }

  // A reply to send instead of handling the request, if one is due.
  std::optional<StatusReply> BeforeRequest(const std::string& method, const std::string& path, bool is_watch);
  std::chrono::milliseconds Latency(const std::string& method, const std::string& path);
  bool DropWatchNow();
  // Faults injected since the last Configure.
  uint64_t injected() const;

 private:
  bool Eligible(const std::string& method, const std::string& path) const;

  mutable std::mutex mu_;
  FaultConfig config_;      // guarded by mu_
  std::mt19937_64 rng_{1};  // guarded by mu_
  uint64_t injected_ = 0;   // guarded by mu_
};

}  // namespace fairbench::apiserver
