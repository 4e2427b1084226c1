// Platform: where targets and agents run. The orchestrator is the same on
// every platform; only this seam differs (LocalPlatform: processes pinned to
// CPUs on this machine; a Kubernetes platform: pods pinned to nodes).
//
// Everything here is platform-neutral: no CPU lists, no file paths, no
// process ids. Every call that may wait takes a std::stop_token and returns
// Status::Cancelled soon (well within a second) after a stop is requested,
// so that cancelling a run reaches it wherever it waits.
//
// Calls come from the orchestrator's thread, one at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "api/benchmark_run.h"
#include "common/cpu_view.h"
#include "common/protocol.h"
#include "controller/report/run_record.h"
#include "common/status.h"

namespace fairbench::controller {

// The target's memory and CPU as the platform sees them, with the time at
// which the platform took the sample (its own clock: a kubelet's stats carry
// their own timestamp), so that CPU cores are Δcpu_seconds ÷ Δsampled_at.
struct TargetUsage {
  uint64_t memory_bytes = 0;
  double cpu_seconds = 0;  // cumulative, so that deltas give cores
  api::Time sampled_at{};
};

// Cores used between two samples; nullopt when they do not span any time.
std::optional<double> CoresBetween(const TargetUsage& first, const TargetUsage& last);

// The fairness facts a target printed in its log at start
// ("fairbench-target-facts: {JSON}": framework, version, worker model,
// threads, JSON library, allocator, compiler and flags — from its source and
// build), as the read-back fact "facts: {JSON}" with the JSON re-serialised
// compactly; nullopt when the log has no such line or its JSON is broken.
// The targets of targets/<framework>/ print it.
std::optional<std::string> TargetFactsFromLog(std::string_view log);

// Which run a deployment belongs to (names, owner references, labels).
struct RunIdentity {
  std::string name;
  std::string namespace_;
  std::string uid;
};

struct DeployRequest {
  RunIdentity run;
  api::Target target;
  size_t target_index = 0;
  api::NodePlacement placement;  // spec.placement.target
};

// Where a deployed target landed and where agents reach it.
struct TargetPlacement {
  std::string node;  // the machine or Kubernetes node it runs on
  std::string host;  // address agents connect to
  uint16_t port = 0;
  Scheme scheme = Scheme::kHttp;         // the target's (set by the orchestrator from the run file)
  Protocol protocol = Protocol::kHttp1;  // likewise
};

struct AgentRequest {
  RunIdentity run;
  int count = 1;
  int threads = 1;  // load threads per agent
  // Agents never share the target's node (on one machine the platform keeps
  // them on other CPUs instead).
  TargetPlacement target;
  api::NodePlacement placement;  // spec.placement.agents
};

// spec.profile: sample the target's processes (CPU call stacks) while a
// cell is measured.
struct ProfileRequest {
  int32_t frequency_hz = 99;
  // Sampling ends by itself after this, should nobody stop it.
  std::chrono::nanoseconds max_duration = std::chrono::seconds(60);
};

// Sampling in progress. Destroying it unfinished stops the sampling and
// discards it.
class ProfileSession {
 public:
  virtual ~ProfileSession() = default;
  // Stops sampling and folds what was sampled (bounded in time; a stop
  // request cuts the folding short). Never fails: a profile that could not
  // be taken says why in its state and message.
  virtual report::CellProfile Finish(std::stop_token stop) = 0;
};

// What a target really got, read from inside it (its pod: fairbench-nofile's
// line on its log; locally: its process), and what keeps other processes
// off its CPUs. The orchestrator judges it (cpu_verdict.h).
struct TargetCpuFacts {
  std::optional<CpuView> view;            // nullopt: not read
  std::string not_read;                   // why not
  std::optional<api::CpuQuantity> asked;  // CPUs asked for: resources.cpu, or the CPUs it was pinned to
  // Kubernetes: the node's kubelet, by its CPU manager policy, is what gives
  // a Guaranteed pod CPUs of its own. Elsewhere nothing but fairbench's own
  // pinning keeps anything off them.
  bool kubelet = false;
  std::string node;
  std::string cpu_manager_policy;  // the kubelet's ("static", "none"); empty: not read
  std::string policy_not_read;     // why not
};

class TargetInstance {
 public:
  virtual ~TargetInstance() = default;
  virtual TargetPlacement placement() const = 0;
  // Until the target answers HTTP on its readiness path (any status), it
  // exits (Unavailable), the deadline passes (DeadlineExceeded) or a stop is
  // requested (Cancelled).
  virtual Status WaitReady(std::chrono::steady_clock::time_point deadline, std::stop_token stop) = 0;
  // How the target ended (its exit code or signal, an OOM kill, and the
  // text messages quote: "exited with code 1", "was OOMKilled"), or nullopt
  // while it runs.
  virtual std::optional<report::TargetExit> Gone() = 0;
  virtual Result<TargetUsage> Usage() = 0;
  // Stops it and releases what it held.
  [[nodiscard]] virtual Status Teardown() = 0;
  // Where its output is kept, for messages ("see out/logs/drogon.log").
  virtual std::string LogLocation() const = 0;
  // What was started, for the report ("/usr/bin/nginx-server --port 40211").
  virtual std::string Description() const = 0;
  // Facts read back from the running target for the report, one per line:
  // the file limit actually in force ("nofile 65536 in force (…)"), or why
  // it could not be read. Called once it is ready.
  virtual std::vector<std::string> ReadBack() { return {}; }
  // Its CPUs, quota and memory limit as read from inside it. Called once it
  // is ready.
  virtual TargetCpuFacts Cpus() {
    TargetCpuFacts f;
    f.not_read = "this platform does not read them";
    return f;
  }
  // Starts sampling the target's processes for a profile (spec.profile);
  // Unavailable, with the reason, where that cannot be done (no perf, not
  // permitted, not on this platform).
  virtual Result<std::unique_ptr<ProfileSession>> StartProfile(const ProfileRequest& /*request*/) {
    return Status::Unavailable("profiling is not available on this platform");
  }
};

// Held while a target is under load; destroying it releases the slot.
class LoadSlot {
 public:
  virtual ~LoadSlot() = default;
  // Still ours? A lease can be lost (not renewed in time, taken over); a
  // lock file cannot. The orchestrator checks it throughout every cell.
  virtual bool held() const = 0;
};

class Platform {
 public:
  virtual ~Platform() = default;
  virtual std::string name() const = 0;
  // Starts the target pinned (to the target CPUs, or a target node).
  virtual Result<std::unique_ptr<TargetInstance>> Deploy(const DeployRequest& request, std::stop_token stop) = 0;
  // Makes sure `request.count` agents exist and are dialing the controller,
  // none on the target's node; returns their ids. Replaces agents that died.
  virtual Result<std::vector<std::string>> EnsureAgents(const AgentRequest& request, std::stop_token stop) = 0;
  // Waits for the global load slot (one target under load at a time).
  virtual Result<std::unique_ptr<LoadSlot>> AcquireSlot(const std::string& holder, std::chrono::milliseconds timeout,
                                                        std::stop_token stop) = 0;
  // The environment the numbers were measured in, for the report: the
  // machines targets and agents run on (not the controller's), how they are
  // kept apart, what is enforced.
  virtual report::Environment Describe() const = 0;
};

}  // namespace fairbench::controller
