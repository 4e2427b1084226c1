// Summary: totals of a run and wrk's summary, line for line.
//
// RunTotals adds up snapshots (from one agent's threads or from several
// agents — they merge by addition) and keeps the per-interval timeline.
// RenderText prints wrk's layout so the two can be diffed by eye, followed by
// what wrk does not show: which latency is corrected, 99.9/99.99 %, bytes per
// response, connections established versus requested, status classes, port
// exhaustion, the drain, and the generator's own CPU use. RenderJson writes
// all of it, with the encoded histogram and the timeline.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/metrics.h"

namespace fairbench {

struct TimelinePoint {
  uint64_t sequence = 0;
  Phase phase = Phase::kMeasure;
  double start_s = 0;
  double end_s = 0;
  Counters counters;
  uint64_t p50_us = 0, p90_us = 0, p99_us = 0, max_us = 0;
  double mean_us = 0;
  uint32_t connections_open = 0;
  double cpu_seconds = 0;
};

class RunTotals {
 public:
  // Adds one snapshot; only measure-phase snapshots count towards the
  // totals, every snapshot goes into the timeline (when it is kept).
  void Add(const Snapshot& s);

  // Whoever renders no timeline need not keep one: without it the totals
  // hold no data that grows with the number of intervals but the Req/Sec
  // samples (ten a second per thread, as wrk keeps them).
  void set_keep_timeline(bool keep) { keep_timeline_ = keep; }
  // Room for a run of known length, taken up front so that a long run's
  // samples are never copied into a buffer twice the size.
  void Reserve(size_t intervals, size_t rate_samples);

  const IntervalStats& measure() const { return measure_; }
  const std::vector<TimelinePoint>& timeline() const { return timeline_; }
  double agent_cpu_seconds() const { return cpu_seconds_; }

 private:
  void AddToTimeline(const Snapshot& s);

  IntervalStats measure_;
  std::vector<TimelinePoint> timeline_;
  bool keep_timeline_ = true;
  double cpu_seconds_ = 0;
};

struct SummaryContext {
  std::string url;
  uint32_t threads = 0;
  uint32_t connections = 0;
  double duration_s = 0;  // configured, for "Running 30s test"
  double rate = 0;
  bool keep_alive = true;
  uint32_t pipeline = 1;
  bool latency_distribution = false;  // --latency
  std::string protocol = "http1";     // http1, h2c or h2
  uint32_t streams = 0;               // HTTP/2: concurrent streams per connection (--streams)
  // gRPC load: the method's path (/pkg.Service/Method; empty: not gRPC)
  // and its kind (unary, server-streaming, unknown). The summary then
  // speaks of RPCs and adds the grpc-status table.
  std::string grpc_method{};
  std::string grpc_kind{};
};

// Mean, sample stdev, max and share within one stdev of a list of samples (wrk's Req/Sec row).
struct SampleStats {
  double mean = 0, stdev = 0, max = 0, within = 0;
};
SampleStats ComputeSampleStats(const std::vector<double>& samples);

std::string RenderText(const SummaryContext& ctx, const RunTotals& totals, const EndReport& end);
nlohmann::json RenderJson(const SummaryContext& ctx, const RunTotals& totals, const EndReport& end);
// {"mode", "naps", "napHits", "napSeconds", "maxNapUs", "polls", "emptyPolls", "spinSeconds"}
nlohmann::json IdleJson(const IdleReport& idle);

}  // namespace fairbench
