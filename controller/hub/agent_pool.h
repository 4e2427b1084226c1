// AgentPool: what the orchestrator needs of the agents — wait for idle ones,
// start a job on one, cancel it. AgentHub (the gRPC service agents dial)
// implements it; tests use a fake. No gRPC here.
//
// Everything an agent sends about a job reaches the job's JobObserver,
// already checked (sequence numbers, see JobStream) and decoded; a broken
// stream reaches it as a failure. Observer calls come from other threads
// (gRPC's): they must be quick and must not block.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "common/cpu_view.h"
#include "common/metrics.h"
#include "common/status.h"
#include "common/wire_job.h"

namespace fairbench::controller {

// What an agent reported at the end of a job.
struct JobSummary {
  EndReport end;
  Counters totals;         // the agent's own totals (JobDone)
  bool consistent = true;  // totals equal the sum of the accepted snapshots, no gap
  uint64_t missing_snapshots = 0;
  uint64_t duplicate_snapshots = 0;
  // A wrk script: what its done() printed (and the error that stopped the
  // load, if any); for a probe job, its first request.
  std::string script_output;
  std::optional<wire::JobRequest> first_request;
};

class JobObserver {
 public:
  virtual ~JobObserver() = default;
  virtual void OnSnapshot(const std::string& agent_id, Snapshot snapshot) = 0;
  virtual void OnDone(const std::string& agent_id, const JobSummary& summary) = 0;
  // JobFailed from the agent, a broken stream, or a message that breaks the protocol.
  virtual void OnFailed(const std::string& agent_id, const std::string& reason) = 0;
};

// What an agent said of its own CPUs (its Hello).
struct AgentCpuView {
  std::string agent;
  std::string node;
  std::optional<CpuView> view;  // nullopt: not connected, or it did not say
};

class AgentPool {
 public:
  virtual ~AgentPool() = default;
  virtual AgentCpuView AgentCpus(const std::string& agent_id) const { return {agent_id, "", std::nullopt}; }
  // Waits until `count` idle agents (among `ids`, if given) are connected:
  // their ids; DeadlineExceeded after `timeout`, Cancelled on a stop.
  virtual Result<std::vector<std::string>> WaitForAgents(size_t count, std::chrono::milliseconds timeout,
                                                         const std::set<std::string>& ids, std::stop_token stop) = 0;
  virtual Status StartJob(const std::string& agent_id, const wire::JobSpec& job,
                          std::shared_ptr<JobObserver> observer) = 0;
  virtual void CancelJob(const std::string& agent_id, const std::string& job_id, const std::string& reason) = 0;
};

}  // namespace fairbench::controller
