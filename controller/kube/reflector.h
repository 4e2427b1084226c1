// Reflector: keeps a sink in step with one resource the way client-go's
// reflector does (KUBE-API.md §2): list (paginated), then watch from the
// list's RV with bookmarks and a random timeout; after a clean close
// re-watch from the last RV seen; on 410 (an ERROR event or a 410 answer)
// re-list; on 429 wait Retry-After; on other failures back off and re-watch
// (transport, 5xx) or re-list (anything else). Each of these is one log
// line (spdlog, warn) naming the resource, the cause and the wait.
//
// States: kList → kWatch ⇄ (kWatch after clean close) ; failures pass
// through a backoff wait. Run() owns the loop on the caller's thread; the
// sink is called on that thread only. last_resource_version() and stats()
// are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

#include "common/backoff.h"
#include "common/mutex.h"
#include "controller/kube/client.h"
#include "controller/kube/clock.h"

namespace fairbench::kube {

struct ReflectorOptions {
  std::string label_selector;
  std::string field_selector;
  int64_t page_size = 500;
  // Each watch asks the server to close it after a random time in this range.
  std::chrono::seconds min_watch_timeout{300};
  std::chrono::seconds max_watch_timeout{600};
  BackoffPolicy backoff{std::chrono::milliseconds(800), std::chrono::milliseconds(30000), 2.0, 0.2};
  std::chrono::seconds max_retry_after{30};
};

class ReflectorSink {
 public:
  virtual ~ReflectorSink() = default;
  // A fresh list: the complete state at `resource_version`.
  virtual void Replace(std::vector<Json> objects, const std::string& resource_version) = 0;
  // An ADDED, MODIFIED or DELETED event.
  virtual void Apply(const WatchEvent& event) = 0;
};

class Reflector {
 public:
  struct Stats {
    uint64_t lists = 0;
    uint64_t watches = 0;
    uint64_t relists_after_gone = 0;
    uint64_t failures = 0;
    uint64_t throttled = 0;
    uint64_t events = 0;
  };

  Reflector(Client& client, ResourceType resource, std::string ns, ReflectorOptions options, ReflectorSink& sink,
            Clock& clock);
  // Runs until `stop` is requested.
  void Run(std::stop_token stop);
  std::string last_resource_version() const;
  Stats stats() const;

 private:
  enum class State { kList, kWatch };
  // Waits before the next attempt; honours Retry-After. False if stopped.
  // With an error, logs one line: `what` failed, why, and `next` in how long.
  bool Wait(const ApiError* error, Backoff& backoff, std::stop_token stop, const char* what, const char* next);
  void SetRv(const std::string& rv);

  Client& client_;
  const ResourceType resource_;
  const std::string ns_;
  const ReflectorOptions options_;
  ReflectorSink& sink_;
  Clock& clock_;
  mutable Mutex mu_;
  std::string last_rv_ GUARDED_BY(mu_);
  Stats stats_ GUARDED_BY(mu_);
};

}  // namespace fairbench::kube
