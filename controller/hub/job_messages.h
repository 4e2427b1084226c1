// What the hub makes of an agent's messages about a job, apart from gRPC
// and the session's locking: AgentSession (agent_hub.cc) calls these for
// every Snapshot and JobDone, and the agent_stream fuzzer drives the very
// same code with hostile input.
#pragma once

#include "common/metrics.h"
#include "common/status.h"
#include "controller/hub/agent_pool.h"
#include "controller/hub/job_stream.h"
#include "fairbench/v1/agent.pb.h"

namespace fairbench::controller {

// A Snapshot message, decoded (every value bounded, common/wire.h). The
// decode needs no lock; TakeSnapshot does (it advances the job's stream).
Result<Snapshot> DecodeJobSnapshot(const v1::Snapshot& msg);

enum class SnapshotTake {
  kRefused,    // not decodable: the job fails, naming why
  kDuplicate,  // a resend: dropped and counted, never added twice
  kAccepted,   // goes to the job's observer
};
SnapshotTake TakeSnapshot(const Result<Snapshot>& decoded, JobStream& stream);

// JobDone, checked against what `stream` accepted.
JobSummary SummarizeJobDone(const v1::JobDone& done, const JobStream& stream);

}  // namespace fairbench::controller
