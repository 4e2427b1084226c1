#include "controller/hub/job_messages.h"

#include "common/wire.h"

namespace fairbench::controller {

Result<Snapshot> DecodeJobSnapshot(const v1::Snapshot& msg) { return wire::FromProto(msg); }

SnapshotTake TakeSnapshot(const Result<Snapshot>& decoded, JobStream& stream) {
  if (!decoded.ok()) return SnapshotTake::kRefused;
  return stream.OnSnapshot(decoded->sequence, decoded->stats.counters) == JobStream::Verdict::kAccept
             ? SnapshotTake::kAccepted
             : SnapshotTake::kDuplicate;
}

JobSummary SummarizeJobDone(const v1::JobDone& done, const JobStream& stream) {
  JobSummary summary;
  summary.totals = wire::FromProto(done.totals());
  summary.consistent = stream.Consistent(done.last_sequence(), summary.totals);
  summary.missing_snapshots = stream.missing();
  summary.duplicate_snapshots = stream.duplicates();
  summary.end.drained = done.drained();
  summary.end.abandoned = done.abandoned();
  summary.end.connections_peak = done.connections_peak();
  summary.end.measure_seconds = done.measure_seconds();
  summary.end.stopped_early = done.stopped_early();
  summary.end.idle = wire::FromProto(done.idle());
  return summary;
}

}  // namespace fairbench::controller
