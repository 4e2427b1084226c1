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
// An interval is closed once every agent has sent it — or has sent a later
// one (its stream is in order, so the missing part never comes: a gap its
// JobStream counted). Only the intervals between the slowest and the
// fastest agent stay open.
//
// What agents send is bounded here, whatever they claim: at most
// kMaxPendingIntervals open intervals (agents drifting further apart, or
// one agent jumping ahead), sequence numbers up to kMaxIntervals, at most
// kMaxRateSamples rate samples in all, and no more distinct agents than
// the cell has. Beyond a bound the cell fails with a message that says
// which agent and which bound; nothing more is kept.
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

#include "common/mutex.h"
#include "common/wrk_summary.h"
#include "controller/hub/agent_pool.h"

namespace fairbench::controller {

class CellAggregator final : public JobObserver {
 public:
  // Each open interval holds merged histograms (up to ~400 KB): 256 of them
  // are 2.5 s of drift between agents at the shortest interval (10 ms).
  static constexpr size_t kMaxPendingIntervals = 256;
  // Over 6 days at 1 s intervals; each costs a timeline point.
  static constexpr uint64_t kMaxIntervals = uint64_t{1} << 19;
  // 8 bytes each; a thread samples 10 per second.
  static constexpr size_t kMaxRateSamples = size_t{1} << 24;

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
  // What each agent's script printed in done(), by agent id (agents whose
  // output was empty are left out); and a probe job's first request.
  std::map<std::string, std::string> ScriptOutputs() const;
  std::optional<wire::JobRequest> FirstRequest() const;
  // Requests/s of the newest complete interval (for live progress).
  double LiveRequestsPerSecond() const;
  uint64_t missing_snapshots() const;
  // Intervals some agent has sent and others have not yet.
  size_t pending_intervals() const;

 private:
  void FlushReady() REQUIRES(mu_);  // adds closed intervals to totals_, in order
  void Refuse(const std::string& agent_id, const std::string& why) REQUIRES(mu_);

  const size_t agents_;
  mutable Mutex mu_;
  CondVar cv_;
  struct Partial {
    Snapshot merged;
    size_t parts = 0;
  };
  std::map<uint64_t, Partial> partial_ GUARDED_BY(mu_);  // by sequence
  // By agent (at most agents_): the newest sequence it sent, UINT64_MAX once
  // it is done — nothing at or below it can come from that agent any more.
  std::map<std::string, uint64_t> last_sequence_ GUARDED_BY(mu_);
  size_t rate_samples_ GUARDED_BY(mu_) = 0;  // kept so far, open intervals included
  uint64_t next_sequence_ GUARDED_BY(mu_) = 1;
  RunTotals totals_ GUARDED_BY(mu_);
  EndReport end_ GUARDED_BY(mu_);
  size_t done_ GUARDED_BY(mu_) = 0;
  bool consistent_ GUARDED_BY(mu_) = true;
  uint64_t missing_ GUARDED_BY(mu_) = 0;
  std::string failure_ GUARDED_BY(mu_);
  std::map<std::string, std::string> script_outputs_ GUARDED_BY(mu_);
  std::optional<wire::JobRequest> first_request_ GUARDED_BY(mu_);
  double live_rps_ GUARDED_BY(mu_) = 0;
  std::function<void(const Snapshot&)> on_interval_ GUARDED_BY(mu_);
};

}  // namespace fairbench::controller
