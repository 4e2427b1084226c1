// PodWorker's record of one container (pod_worker.cc, container_runtime.cc).
// Internal to the test kubelet.
#pragma once

#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "host/cgroup.h"
#include "host/process.h"
#include "testing/kubelet/pod_worker.h"

namespace fairbench::kubelet {

using Clock = std::chrono::steady_clock;
using SysClock = std::chrono::system_clock;

struct PodWorker::Container {
  Json spec;
  bool init = false;
  std::string name;
  std::string image;
  std::optional<host::Process> process;
  std::unique_ptr<host::TargetCgroup> cgroup;
  enum class State { kWaiting, kRunning, kTerminated } state = State::kWaiting;
  std::string waiting_reason = "ContainerCreating";
  std::string waiting_message;
  bool ever_started = false;
  int restart_count = 0;
  int backoff_step = 0;
  Clock::time_point restart_at{};
  std::string container_id;
  SysClock::time_point started_at{};
  SysClock::time_point finished_at{};
  int exit_code = 0;
  int signal = 0;
  std::string term_reason;
  std::string term_message;
  Json last_state = Json::object();
  bool ready = false;
  // The CPUs the running instance is pinned to.
  std::vector<int> cpus;
  // The probes of the running instance, by kind (startup, liveness,
  // readiness): when each runs next, its consecutive results.
  struct ProbeState {
    Clock::time_point next{};
    int successes = 0;
    int failures = 0;
  };
  std::array<ProbeState, 3> probes{};
  bool started = false;  // the startup probe succeeded, or there is none
  // Killed for a failed liveness or startup probe: SIGKILL then.
  std::optional<Clock::time_point> probe_kill_at;
  // Logs of the current and the previous instance.
  std::string log_path;
  std::string previous_log_path;
  // kDocker: the engine's container of the current instance, those of
  // earlier instances (kept for `logs --previous`, removed with the pod),
  // its main process on the host, the image's stop signal and id.
  std::string docker_id;
  std::vector<std::string> old_docker_ids;
  int64_t host_pid = 0;
  std::string stop_signal = "SIGTERM";
  std::string image_id;
  Clock::time_point next_inspect{};
  // Last CPU sample, for usageNanoCores.
  std::optional<std::pair<SysClock::time_point, uint64_t>> last_cpu;
  // The last collected stats, served until config.stats_period has passed.
  std::optional<ContainerStats> last_stats;
};

}  // namespace fairbench::kubelet
