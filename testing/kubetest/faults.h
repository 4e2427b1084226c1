// Fault injection for tests: the failures a client of a real kube-apiserver
// meets, on chosen requests.
//
//   error      5xx (500, 503 or 504) before the request is handled
//   throttle   429 TooManyRequests with Retry-After (header and
//              details.retryAfterSeconds), before the request is handled
//   latency    the request waits before it is handled
//   watch-drop after a streamed watch event the connection is cut (no
//              terminating chunk), as a broken connection or a restarting
//              apiserver cuts it
//   expire     the watch history is compacted before the request is
//              handled, as etcd compaction does: a watch from an older RV
//              gets a 200 stream whose one event is an ERROR Status 410
//              Expired, a list with a continue token from before gets 410
//   timeout    the request is handled, then answered with 504 Timeout
//              instead of its result, as the apiserver's request timeout
//              does while the write goes on: the write took effect but the
//              client cannot know
//
// Which requests are eligible is filtered by method, path prefix and
// authenticated user (discovery always stays healthy). A config is also a
// text, for the test server's --faults flag:
//
//   error=0.1,throttle=0.05,retry-after=1,latency=50ms,latency-rate=0.2,
//   watch-drop=0.2,expire=0.05,timeout=0.02,codes=500+503,methods=GET+PUT,
//   paths=/apis/fairbench.dev,user=alice,seed=7
//
// Thread-safe; decisions come from one seeded generator so that a failing
// run can be repeated with the same seed (given the same order of requests).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "testing/kubetest/api_status.h"

namespace fairbench::kubetest {

struct FaultConfig {
  double server_error_rate = 0;  // one of server_error_codes, before the request is handled
  std::vector<int> server_error_codes = {500, 503, 504};
  double throttle_rate = 0;  // 429 with Retry-After
  int retry_after_seconds = 1;
  double watch_drop_rate = 0;  // after each streamed watch event, cut the connection
  std::chrono::milliseconds latency{0};
  double latency_rate = 1;                 // share of eligible requests that wait `latency`
  double expire_rate = 0;                  // compact the history before a watch from an RV or a continued list
  double timeout_rate = 0;                 // handle a non-watch request, then answer 504
  bool include_watches = true;             // also fail watch requests before they stream
  std::set<std::string> methods;           // empty = all
  std::vector<std::string> path_prefixes;  // empty = all resource paths
  std::set<std::string> users;             // empty = every user (anonymous included)
  uint64_t seed = 1;

  // The text form above; an error names the key and the value.
  static Result<FaultConfig> Parse(std::string_view text);
  std::string ToString() const;
};

// Faults injected since the last Configure, by kind.
struct FaultCounts {
  uint64_t server_errors = 0;
  uint64_t throttles = 0;
  uint64_t latencies = 0;
  uint64_t watch_drops = 0;
  uint64_t expirations = 0;
  uint64_t timeouts = 0;
  uint64_t total() const { return server_errors + throttles + latencies + watch_drops + expirations + timeouts; }
  // "error=3 throttle=1 latency=40 watch-drop=2 expire=1 timeout=0"
  std::string ToString() const;
};

// What is due for one request, decided once before it is handled.
struct FaultPlan {
  std::chrono::milliseconds delay{0};
  std::optional<StatusReply> reply;  // answer this instead of handling the request
  bool compact_history = false;      // compact before handling (counted by CountExpired when it bites)
  bool lose_reply = false;           // handle, then answer TimeoutReply()
};

class FaultInjector {
 public:
  void Configure(const FaultConfig& config);
  void Clear() { Configure(FaultConfig{}); }
  FaultConfig config() const;

  // `resumes` : a watch from a resourceVersion or a list with a continue
  // token (a request an expired history changes).
  FaultPlan Plan(const std::string& method, const std::string& path, const std::string& user, bool is_watch,
                 bool resumes);
  // Whether the faults apply to this request at all (a watch that may be cut).
  bool Applies(const std::string& method, const std::string& path, const std::string& user) const;
  bool DropWatchNow();
  // The compaction a plan asked for made the request's RV too old (the
  // caller knows; a compaction that changes nothing is not a fault).
  void CountExpired();
  // Faults injected since the last Configure.
  uint64_t injected() const;
  FaultCounts counts() const;

  // kube-apiserver's answer when a request outlives its timeout.
  static StatusReply TimeoutReply();

 private:
  bool Eligible(const std::string& method, const std::string& path, const std::string& user) const REQUIRES(mu_);
  bool Roll(double rate) REQUIRES(mu_);  // under mu_

  mutable Mutex mu_;
  FaultConfig config_ GUARDED_BY(mu_);
  std::mt19937_64 rng_ GUARDED_BY(mu_){1};
  FaultCounts counts_ GUARDED_BY(mu_);
};

}  // namespace fairbench::kubetest
