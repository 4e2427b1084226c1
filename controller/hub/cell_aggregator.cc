#include "controller/hub/cell_aggregator.h"
#include "common/mutex.h"

#include <algorithm>

namespace fairbench::controller {
namespace {

void MergeInto(Snapshot& into, const Snapshot& s, bool first) {
  if (first) {
    into.sequence = s.sequence;
    into.phase = s.phase;
    into.start_ns = s.start_ns;
    into.end_ns = s.end_ns;
  } else {
    into.start_ns = std::min(into.start_ns, s.start_ns);
    into.end_ns = std::max(into.end_ns, s.end_ns);
  }
  into.stats.Add(s.stats);
  into.connections_open += s.connections_open;
  into.cpu_seconds += s.cpu_seconds;
}

}  // namespace

void CellAggregator::Refuse(const std::string& agent_id, const std::string& why) {
  if (failure_.empty()) failure_ = "agent " + agent_id + ": " + why;
  decided_.request_stop();
}

void CellAggregator::OnSnapshot(const std::string& agent_id, Snapshot snapshot) {
  MutexLock lock(mu_);
  if (!failure_.empty()) return;  // the cell has failed: nothing more is kept
  const uint64_t seq = snapshot.sequence;
  auto last = last_sequence_.find(agent_id);
  if (last == last_sequence_.end()) {
    if (last_sequence_.size() >= agents_) {
      return Refuse(agent_id, "more agents report on this cell than the " + std::to_string(agents_) + " it has");
    }
  } else if (seq <= last->second) {
    return;  // not newer than what this agent sent (its JobStream drops these first): never counted twice
  }
  if (seq > kMaxIntervals) {
    return Refuse(agent_id, "snapshot sequence " + std::to_string(seq) + " is beyond the limit of " +
                                std::to_string(kMaxIntervals) + " intervals per cell");
  }
  if (seq >= next_sequence_ && seq - next_sequence_ >= kMaxPendingIntervals) {
    return Refuse(agent_id, "snapshot " + std::to_string(seq) + " is " + std::to_string(seq - next_sequence_) +
                                " intervals ahead of the oldest open one (" + std::to_string(next_sequence_) +
                                "); agents may be at most " + std::to_string(kMaxPendingIntervals) + " apart");
  }
  const size_t samples = snapshot.stats.rate_samples.size();
  if (samples > kMaxRateSamples - rate_samples_) {
    return Refuse(agent_id, "more than " + std::to_string(kMaxRateSamples) + " rate samples in one cell");
  }
  rate_samples_ += samples;
  last_sequence_[agent_id] = seq;
  if (seq >= next_sequence_) {  // else its interval was already closed
    Partial& p = partial_[seq];
    MergeInto(p.merged, snapshot, p.parts == 0);
    ++p.parts;
  }
  FlushReady();
}

void CellAggregator::FlushReady() {
  if (last_sequence_.size() < agents_) return;  // some agent has sent nothing yet
  uint64_t closed = UINT64_MAX;                 // every agent has sent this interval or a later one
  for (const auto& [agent, seq] : last_sequence_) closed = std::min(closed, seq);
  while (next_sequence_ <= closed) {
    auto it = partial_.begin();
    if (it == partial_.end() || it->first > closed) {
      if (closed != UINT64_MAX) next_sequence_ = closed + 1;  // intervals nobody sent
      break;
    }
    next_sequence_ = it->first;
    const Snapshot& s = it->second.merged;
    // In doubles: the bounds are the agents' word.
    const double secs = (static_cast<double>(s.end_ns) - static_cast<double>(s.start_ns)) / 1e9;
    if (secs > 0) live_rps_ = static_cast<double>(s.stats.counters.requests) / secs;
    totals_.Add(s);
    if (on_interval_) on_interval_(s);
    ++next_sequence_;
    partial_.erase(it);
  }
}

void CellAggregator::SetIntervalCallback(std::function<void(const Snapshot&)> callback) {
  MutexLock lock(mu_);
  on_interval_ = std::move(callback);
}

void CellAggregator::OnDone(const std::string& agent_id, const JobSummary& summary) {
  bool done_complete = false;
  {
    MutexLock lock(mu_);
    auto last = last_sequence_.find(agent_id);
    if (last != last_sequence_.end() && last->second == UINT64_MAX) return;  // done already
    if (last == last_sequence_.end() && last_sequence_.size() >= agents_) {
      Refuse(agent_id, "more agents report on this cell than the " + std::to_string(agents_) + " it has");
      return;
    }
    last_sequence_[agent_id] = UINT64_MAX;  // it sends nothing more
    ++done_;
    done_complete = done_ == agents_;
    if (!summary.script_output.empty()) script_outputs_[agent_id] = summary.script_output;
    if (summary.first_request && !first_request_) first_request_ = summary.first_request;
    end_.Add(summary.end);
    consistent_ = consistent_ && summary.consistent;
    missing_ += summary.missing_snapshots;
    if (done_ == agents_) {
      // Every agent has finished: intervals that some agent never sent (a
      // gap) are added as they are, in order.
      for (auto& [seq, p] : partial_) {
        totals_.Add(p.merged);
        if (on_interval_) on_interval_(p.merged);
      }
      partial_.clear();
    } else {
      FlushReady();  // intervals that waited only for this agent
    }
  }
  if (done_complete) decided_.request_stop();
}

std::map<std::string, std::string> CellAggregator::ScriptOutputs() const {
  MutexLock lock(mu_);
  return script_outputs_;
}

std::optional<wire::JobRequest> CellAggregator::FirstRequest() const {
  MutexLock lock(mu_);
  return first_request_;
}

void CellAggregator::OnFailed(const std::string& agent_id, const std::string& reason) {
  {
    MutexLock lock(mu_);
    if (failure_.empty()) failure_ = "agent " + agent_id + ": " + reason;
  }
  decided_.request_stop();
}

CellAggregator::Outcome CellAggregator::Wait(Clock& clock, Clock::Steady deadline, std::stop_token stop) {
  {
    std::stop_source wake;
    std::stop_callback on_stop(stop, [&wake] { wake.request_stop(); });
    std::stop_callback on_decided(decided_.get_token(), [&wake] { wake.request_stop(); });
    clock.SleepUntil(deadline, wake.get_token());
  }
  MutexLock lock(mu_);
  if (!failure_.empty()) return Outcome::kFailed;
  if (done_ == agents_) return Outcome::kDone;
  return Outcome::kTimeout;
}

RunTotals CellAggregator::Totals() const {
  MutexLock lock(mu_);
  return totals_;
}
EndReport CellAggregator::End() const {
  MutexLock lock(mu_);
  return end_;
}
bool CellAggregator::consistent() const {
  MutexLock lock(mu_);
  return consistent_;
}
std::string CellAggregator::failure() const {
  MutexLock lock(mu_);
  return failure_;
}
double CellAggregator::LiveRequestsPerSecond() const {
  MutexLock lock(mu_);
  return live_rps_;
}
uint64_t CellAggregator::missing_snapshots() const {
  MutexLock lock(mu_);
  return missing_;
}
size_t CellAggregator::pending_intervals() const {
  MutexLock lock(mu_);
  return partial_.size();
}

}  // namespace fairbench::controller
