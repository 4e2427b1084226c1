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
  // What the agent's script printed is kept, bounded (a done() that
  // prints in a loop must not fill the record).
  constexpr size_t kMaxScriptOutput = 64 * 1024;
  summary.script_output = done.script_output().substr(0, kMaxScriptOutput);
  if (done.script_output().size() > kMaxScriptOutput) summary.script_output += "\n… (cut at 64 KiB)\n";
  if (done.has_first_request()) {
    const v1::Request& r = done.first_request();
    wire::JobRequest f;
    f.method = r.method();
    f.target = r.target();
    for (const v1::Header& h : r.headers()) f.headers.emplace_back(h.name(), h.value());
    f.body = r.body();
    summary.first_request = std::move(f);
  }
  return summary;
}

}  // namespace fairbench::controller
