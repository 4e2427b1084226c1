// DockerPlatform (`fairbench run --platform docker`): each target runs as a
// container of its `image` on this machine's Docker engine, talked to over
// the Engine API on its unix socket (docker_client.h), never through the
// docker CLI.
//
// A target's container:
//   - host networking (the engine has no bridge here: agents reach it on
//     127.0.0.1:port); "{port}" in `command`/`args` becomes a free port, as
//     on the local platform; a `port` that is neither one the image
//     exposes nor passed to its server is refused (image_port.h);
//   - `command` replaces the image's ENTRYPOINT, `args` its CMD, `env` added;
//   - spec.resources enforced by the kernel through the engine: the CPU as a
//     CFS quota (CpuQuota per 100 ms CpuPeriod; above the CPUs it is pinned
//     to, the CPU set is the limit and the report says so), memory with no swap (MemorySwap = Memory: a
//     container that grows past it is OOM-killed), `nofile` as the
//     container's RLIMIT_NOFILE (soft = hard), pinned to the target CPUs
//     (CpusetCpus);
//   - labelled with the run, the target and this process (pid and start
//     time), so that a later run removes what a killed one left behind
//     (containers whose owner is gone);
//   - usage from the container's own cgroup, read directly (found from its
//     process's /proc/PID/cgroup; v1 or v2): CPU time, and memory as the
//     working set, usage less inactive file cache, as docker stats shows it;
//     the engine's stats, with its own timestamps, where the files cannot be
//     read;
//   - its peak memory (the cgroup's high-water mark) noted in the report's
//     environment when it is torn down;
//   - gone: the engine's exit code and OOMKilled;
//   - its output (the engine's log) written to LOGDIR/<target>.log when it
//     stops, or is found gone;
//   - stopped with SIGTERM and SIGKILL after the grace, then removed.
//
// One target container at a time: the orchestrator tears one down before it
// deploys the next, and the load slot is the local platform's machine-wide
// lock. Agents are fairbench-agent processes next to the engine, pinned to
// the agent CPUs, exactly as on the local platform: in the study the load
// tool ran without limits, and a container on the host's network adds
// nothing to its path (bench/docker_overhead.py measures it).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "host/docker_client.h"
#include "controller/platform/local/local_platform.h"
#include "controller/platform/platform.h"

namespace fairbench::controller {

struct DockerPlatformOptions {
  // The engine: "unix:///var/run/docker.sock" (DOCKER_HOST's form) or a path.
  std::string docker_host;
  // Agents, the load slot, the CPU split, logs and the stop grace, as on the
  // local platform.
  LocalPlatformOptions local;
  // RLIMIT_NOFILE of each target is at most this (--max-nofile): the engine
  // cannot give a container more than the machine's hard limit.
  std::optional<int64_t> max_nofile;
};

// "PID START" of this process (START: field 22 of /proc/self/stat), the
// owner label's value.
std::string DockerOwnerOfThisProcess();
// Whether an owner label names a process that still runs (the same pid with
// the same start time).
bool DockerOwnerAlive(const std::string& owner);

class DockerPlatform final : public Platform {
 public:
  // Fails with one line when the engine does not answer (or the socket is
  // not ours), or the CPU sets are wrong. Removes the containers that runs
  // which are gone left behind, and says so in the log.
  static Result<std::unique_ptr<DockerPlatform>> Create(DockerPlatformOptions options);
  ~DockerPlatform() override;

  std::string name() const override { return "docker"; }
  Result<std::unique_ptr<TargetInstance>> Deploy(const DeployRequest& request, std::stop_token stop) override;
  Result<std::vector<std::string>> EnsureAgents(const AgentRequest& request, std::stop_token stop) override;
  Result<std::unique_ptr<LoadSlot>> AcquireSlot(const std::string& holder, std::chrono::milliseconds timeout,
                                                std::stop_token stop) override;
  report::Environment Describe() const override;

  const std::vector<int>& target_cpus() const { return local_->target_cpus(); }
  const std::vector<int>& agent_cpus() const { return local_->agent_cpus(); }
  // How many leftover containers Create removed.
  int removed_leftovers() const { return removed_leftovers_; }

 private:
  DockerPlatform(DockerPlatformOptions options, std::unique_ptr<LocalPlatform> local,
                 std::shared_ptr<docker::DockerClient> client)
      : options_(std::move(options)), local_(std::move(local)), client_(std::move(client)) {}
  Status RemoveLeftovers();

  DockerPlatformOptions options_;
  std::unique_ptr<LocalPlatform> local_;
  std::shared_ptr<docker::DockerClient> client_;
  std::string engine_version_;
  std::string owner_;
  int removed_leftovers_ = 0;
  int deployed_ = 0;
  std::map<std::string, std::string> ran_;  // target name → image and limits
  std::vector<std::string> capped_;         // nofile caps applied, for the report
  std::vector<std::string> quota_notes_;    // CPU quotas above the pinned CPUs
  // Written by the targets at teardown (their peak memory), for Describe.
  std::shared_ptr<std::vector<std::string>> notes_ = std::make_shared<std::vector<std::string>>();
  // Containers created and not yet removed (removed by the destructor should
  // a teardown not happen).
  std::shared_ptr<std::set<std::string>> live_ = std::make_shared<std::set<std::string>>();
};

}  // namespace fairbench::controller
