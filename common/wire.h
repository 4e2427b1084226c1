// Wire: conversions between the engine's metrics and the agent protocol's
// messages (proto/fairbench/v1/agent.proto).
//
// Histograms travel as HdrHistogram V2 compressed counts plus their exact
// moments, so a decoded snapshot is equal to the one encoded, bucket for
// bucket and sum for sum.
#pragma once

#include "common/metrics.h"
#include "common/status.h"
#include "fairbench/v1/agent.pb.h"

namespace fairbench::wire {

// What an agent may claim, checked before anything is counted: a message
// beyond these is refused with a message naming the field, so that no
// later arithmetic (sequence + 1, end − start, the moments) can overflow.
inline constexpr uint64_t kMaxSequence = uint64_t{1} << 32;
// A thread samples 10 per second; 65,536 is 1,000 threads at 6.5 s intervals.
inline constexpr int kMaxRateSamples = 65536;

void ToProto(const Counters& in, v1::Counters* out);
Counters FromProto(const v1::Counters& in);

void ToProto(const IdleReport& in, v1::IdleReport* out);
// An unknown mode reads as "block" (an agent newer than this controller).
IdleReport FromProto(const v1::IdleReport& in);

void ToProto(const Histogram& in, v1::Latency* out);
// Checks the moments against the counts: min and max in the lowest and
// highest non-empty buckets, count·min ≤ sum ≤ count·max, Σx² between
// (Σx)²/count and max·Σx, clamped ≤ count.
Result<Histogram> FromProto(const v1::Latency& in);

void ToProto(const Snapshot& in, const std::string& job_id, v1::Snapshot* out);
// The snapshot and the job id it belongs to.
Result<Snapshot> FromProto(const v1::Snapshot& in);

}  // namespace fairbench::wire
