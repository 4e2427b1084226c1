// CellAggregator: merges what every agent of one cell reports into the
// cell's numbers.
//
// Snapshots of the same sequence number from all agents cover the same
// interval (the agents run the same schedule from the same wall-clock
// start), so they are merged into one interval first — counters added,
// histograms merged bucket by bucket, never percentiles averaged — and the
// merged intervals are added up in order. The result is what one agent
// would have reported had it made all the load itself.
//
// Observer calls come from gRPC threads; Wait and the accessors from the
// orchestrator. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "common/wrk_summary.h"
#include "controller/hub/agent_pool.h"

namespace fairbench::controller {

class CellAggregator final : public JobObserver {
 public:
  explicit CellAggregator(size_t agents) : agents_(agents) {}

  // Called with each merged interval as it is added to the totals, in
  // order, with the aggregator locked (so never after the callback is
  // replaced): must be quick and must not call back into the aggregator.
  void SetIntervalCallback(std::function<void(const Snapshot&)> callback);

  void OnSnapshot(const std::string& agent_id, Snapshot snapshot) override;
  void OnDone(const std::string& agent_id, const JobSummary& summary) override;
  void OnFailed(const std::string& agent_id, const std::string& reason) override;

  enum class Outcome { kDone, kFailed, kTimeout };
  // Until every agent is done, one failed, or the deadline.
  Outcome Wait(std::chrono::steady_clock::time_point deadline);

  // After kDone: the merged totals and timeline, the agents' end reports
  // added up, and whether every agent's stream was complete.
  RunTotals Totals() const;
  EndReport End() const;
  bool consistent() const;
  std::string failure() const;
  // Requests/s of the newest complete interval (for live progress).
  double LiveRequestsPerSecond() const;
  uint64_t missing_snapshots() const;

 private:
  void FlushReady();  // adds complete intervals to totals_, in order; mu_ held

  const size_t agents_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  struct Partial {
    Snapshot merged;
    size_t parts = 0;
  };
  std::map<uint64_t, Partial> partial_;  // guarded by mu_; by sequence
  uint64_t next_sequence_ = 1;           // guarded by mu_
  RunTotals totals_;                     // guarded by mu_
  EndReport end_;                        // guarded by mu_
  size_t done_ = 0;                      // guarded by mu_
  bool consistent_ = true;               // guarded by mu_
  uint64_t missing_ = 0;                 // guarded by mu_
  std::string failure_;                  // guarded by mu_
  double live_rps_ = 0;                  // guarded by mu_
  std::function<void(const Snapshot&)> on_interval_;  // guarded by mu_
};

}  // namespace fairbench::controller
