// What a hostile or broken agent can send the controller about a job: the
// input is a sequence of agent messages, each as
//   [agent index][length: 2 bytes, little end][that many bytes of a
//   serialized fairbench.v1.AgentMessage]
// after a first byte that sets how many agents the cell has (1 to 4). Each
// message goes through the hub's own code for it (controller/hub/
// job_messages.h, which agent_hub.cc's session calls): wire decoding, the
// per-agent JobStream checks, then the cell's CellAggregator; at the end
// the cell's totals are read and rendered as `fairbench run` does.
//
// Invariants besides no crash, no UB and bounded memory: the aggregator
// never holds more open intervals than its limit, and its timeline never
// has more intervals than snapshots were accepted.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/wrk_summary.h"
#include "controller/hub/cell_aggregator.h"
#include "controller/hub/job_messages.h"
#include "controller/hub/job_stream.h"
#include "fairbench/v1/agent.pb.h"

namespace {

using namespace fairbench;
using controller::CellAggregator;
using controller::JobStream;
using controller::JobSummary;

constexpr char kJobId[] = "j";

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "agent_stream_fuzzer: %s\n", what);
  std::abort();
}

// One agent's session, as the hub keeps it for a job.
struct Session {
  std::string id;
  JobStream stream;
  bool active = true;  // until JobDone, JobFailed or a bad snapshot
};

void Handle(Session& s, const v1::AgentMessage& in, CellAggregator& cell, uint64_t* accepted) {
  if (!s.active) return;
  switch (in.body_case()) {
    case v1::AgentMessage::kSnapshot: {
      const v1::Snapshot& msg = in.snapshot();
      auto decoded = controller::DecodeJobSnapshot(msg);
      if (msg.job_id() != kJobId) return;
      switch (controller::TakeSnapshot(decoded, s.stream)) {
        case controller::SnapshotTake::kRefused:
          if (decoded.status().message().empty()) Die("a refused snapshot without a reason");
          s.active = false;
          cell.OnFailed(s.id, "bad snapshot: " + decoded.status().message());
          return;
        case controller::SnapshotTake::kDuplicate: return;
        case controller::SnapshotTake::kAccepted:
          ++*accepted;
          cell.OnSnapshot(s.id, std::move(*decoded));
          return;
      }
      return;
    }
    case v1::AgentMessage::kJobDone: {
      const v1::JobDone& done = in.job_done();
      if (done.job_id() != kJobId) return;
      const JobSummary summary = controller::SummarizeJobDone(done, s.stream);
      s.active = false;
      cell.OnDone(s.id, summary);
      return;
    }
    case v1::AgentMessage::kJobFailed:
      if (in.job_failed().job_id() != kJobId) return;
      s.active = false;
      cell.OnFailed(s.id, in.job_failed().reason());
      return;
    case v1::AgentMessage::kHello:
    case v1::AgentMessage::BODY_NOT_SET: return;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t agents = 1 + data[0] % 4;
  std::vector<Session> sessions(agents);
  for (size_t i = 0; i < agents; ++i) sessions[i].id = "agent-" + std::to_string(i);
  CellAggregator cell(agents);
  uint64_t accepted = 0;
  size_t at = 1;
  v1::AgentMessage in;
  while (at + 3 <= size) {
    Session& s = sessions[data[at] % agents];
    const size_t len = data[at + 1] | (size_t{data[at + 2]} << 8);
    at += 3;
    const size_t take = len < size - at ? len : size - at;
    if (in.ParseFromArray(data + at, static_cast<int>(take))) Handle(s, in, cell, &accepted);
    at += take;
    if (cell.pending_intervals() > CellAggregator::kMaxPendingIntervals) Die("too many open intervals");
  }

  const auto outcome = cell.Wait(SystemClock::Instance(), SystemClock::Instance().Now());
  const RunTotals totals = cell.Totals();
  if (totals.timeline().size() > accepted) Die("more intervals than accepted snapshots");
  const EndReport end = cell.End();
  (void)cell.consistent();
  (void)cell.failure();
  (void)cell.LiveRequestsPerSecond();
  (void)cell.missing_snapshots();
  if (outcome == CellAggregator::Outcome::kDone) {
    SummaryContext ctx;
    ctx.url = "http://target/";
    ctx.threads = 1;
    ctx.connections = 1;
    ctx.duration_s = 1;
    ctx.latency_distribution = true;
    (void)RenderText(ctx, totals, end);
    (void)RenderJson(ctx, totals, end).dump();
  }
  return 0;
}
