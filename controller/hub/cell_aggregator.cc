#include "controller/hub/cell_aggregator.h"

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

void CellAggregator::OnSnapshot(const std::string&, Snapshot snapshot) {
  std::lock_guard<std::mutex> lock(mu_);
  if (snapshot.sequence < next_sequence_) return;  // its interval was already closed
  Partial& p = partial_[snapshot.sequence];
  MergeInto(p.merged, snapshot, p.parts == 0);
  ++p.parts;
  FlushReady();
}

void CellAggregator::FlushReady() {
  for (auto it = partial_.begin(); it != partial_.end() && it->first == next_sequence_ && it->second.parts == agents_;) {
    const Snapshot& s = it->second.merged;
    const double secs = static_cast<double>(s.end_ns - s.start_ns) / 1e9;
    if (secs > 0) live_rps_ = static_cast<double>(s.stats.counters.requests) / secs;
    totals_.Add(s);
    if (on_interval_) on_interval_(s);
    ++next_sequence_;
    it = partial_.erase(it);
  }
}

void CellAggregator::SetIntervalCallback(std::function<void(const Snapshot&)> callback) {
  std::lock_guard<std::mutex> lock(mu_);
  on_interval_ = std::move(callback);
}

void CellAggregator::OnDone(const std::string&, const JobSummary& summary) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++done_;
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
    }
  }
  cv_.notify_all();
}

void CellAggregator::OnFailed(const std::string& agent_id, const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (failure_.empty()) failure_ = "agent " + agent_id + ": " + reason;
  }
  cv_.notify_all();
}

CellAggregator::Outcome CellAggregator::Wait(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_until(lock, deadline, [&] { return !failure_.empty() || done_ == agents_; });
  if (!failure_.empty()) return Outcome::kFailed;
  if (done_ == agents_) return Outcome::kDone;
  return Outcome::kTimeout;
}

RunTotals CellAggregator::Totals() const {
  std::lock_guard<std::mutex> lock(mu_);
  return totals_;
}
EndReport CellAggregator::End() const {
  std::lock_guard<std::mutex> lock(mu_);
  return end_;
}
bool CellAggregator::consistent() const {
  std::lock_guard<std::mutex> lock(mu_);
  return consistent_;
}
std::string CellAggregator::failure() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}
double CellAggregator::LiveRequestsPerSecond() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_rps_;
}
uint64_t CellAggregator::missing_snapshots() const {
  std::lock_guard<std::mutex> lock(mu_);
  return missing_;
}

}  // namespace fairbench::controller
