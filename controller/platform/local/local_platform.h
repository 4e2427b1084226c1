// LocalPlatform: the embedded default — targets and agents are processes on
// this machine, on separate CPUs.
//
// CPUs: the target CPUs and agent CPUs never overlap. By default the CPUs
// this process may use are split in half: the first half for targets, the
// second for agents (on a 2-CPU machine: CPU 0 and CPU 1). The run's
// spec.local or the options override it.
//
// Targets: spec.targets[].local.command, with "{port}" replaced by a free
// loopback port (or the target's port when the command has no "{port}"),
// its env and working directory; a bare program name is found next to the
// fairbench binary, then on PATH (program_path.h), and the report says
// which file ran; output in LOGDIR/<target>.log; pinned;
// RLIMIT_NOFILE set to the target's nofile; stopped with SIGTERM, and
// SIGKILL after target_stop_grace (a teardown error then says so). When the machine allows it, each
// target runs in a cgroup of its own (TargetCgroup): spec.resources are
// enforced, memory is its working set, an OOM kill is named. Otherwise
// memory and CPU are the sums over its process tree, from /proc.
//
// Profiles (spec.profile): perf record on the target's process tree during
// a cell's measured window (perf_profile.h), perf's messages in
// LOGDIR/profile-<target>.log.
//
// Agents: fairbench-agent processes in connect mode dialing the controller
// on loopback, pinned to the agent CPUs, output in LOGDIR/agent-N.log.
//
// The load slot is an exclusive flock on a machine-wide lock file, so that
// two `fairbench run` commands on one machine never load at the same time
// (the kernel releases it if the process dies).
//
// The report's environment (Describe) is this machine's: targets and agents
// run here, whatever process asks.
//
// Children die with the thread that started them (PR_SET_PDEATHSIG): call
// Deploy and EnsureAgents from the thread that runs the whole run.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "controller/platform/platform.h"
#include "host/process.h"

namespace fairbench::controller {

struct LocalPlatformOptions {
  std::string agent_binary;             // path of fairbench-agent
  std::string controller_address;       // host:port the agents dial
  std::string token;                    // given to the agents in their environment, never in argv
  std::vector<std::string> agent_args;  // more flags for every agent (its TLS files)
  std::string log_dir;
  std::string base_dir;     // relative working dirs start here (the run file's directory)
  std::string program_dir;  // bare program names are looked up here first (the fairbench binary's folder)
  std::string fairbench_version;
  std::string lock_file = "/tmp/fairbench-load.lock";
  std::vector<int> target_cpus;  // empty: first half of the allowed CPUs
  std::vector<int> agent_cpus;   // empty: second half
  // Put each target in a cgroup of its own when the machine allows it
  // (limits from spec.resources enforced, memory read like docker stats).
  bool use_cgroups = true;
  // spec.profile: the perf program (a path, or a name looked up on PATH).
  std::string perf_program = "perf";
  // A target is stopped with SIGTERM to its process group; one still there
  // this long after is killed (SIGKILL), and the teardown says so.
  std::chrono::milliseconds target_stop_grace{10000};
};

class LocalPlatform final : public Platform {
 public:
  // Fails when the CPU sets overlap or are empty.
  static Result<std::unique_ptr<LocalPlatform>> Create(LocalPlatformOptions options);
  ~LocalPlatform() override;

  std::string name() const override { return "local"; }
  Result<std::unique_ptr<TargetInstance>> Deploy(const DeployRequest& request, std::stop_token stop) override;
  Result<std::vector<std::string>> EnsureAgents(const AgentRequest& request, std::stop_token stop) override;
  Result<std::unique_ptr<LoadSlot>> AcquireSlot(const std::string& holder, std::chrono::milliseconds timeout,
                                                std::stop_token stop) override;
  report::Environment Describe() const override;

  const std::vector<int>& target_cpus() const { return options_.target_cpus; }
  const std::vector<int>& agent_cpus() const { return options_.agent_cpus; }

  // For tests: kill agent `index` (simulates a crash).
  void KillAgent(size_t index, int signal);
  std::vector<pid_t> AgentPids();

 private:
  explicit LocalPlatform(LocalPlatformOptions options) : options_(std::move(options)) {}
  LocalPlatformOptions options_;
  std::vector<host::Process> agents_;
  std::vector<std::string> agent_ids_;
  int agent_generation_ = 0;
  int deployed_ = 0;
  bool cgroup_warned_ = false;
  bool cgroups_used_ = false;
  std::map<std::string, std::string> ran_;  // target name → what was started
};

// "0-1,4", as Linux writes CPU lists.
std::string CpuListText(const std::vector<int>& cpus);

}  // namespace fairbench::controller
