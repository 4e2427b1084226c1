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

void ToProto(const Counters& in, v1::Counters* out);
Counters FromProto(const v1::Counters& in);

void ToProto(const Histogram& in, v1::Latency* out);
Result<Histogram> FromProto(const v1::Latency& in);

void ToProto(const Snapshot& in, const std::string& job_id, v1::Snapshot* out);
// The snapshot and the job id it belongs to.
Result<Snapshot> FromProto(const v1::Snapshot& in);

}  // namespace fairbench::wire
