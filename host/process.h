// Process: a child process the controller owns — a target server or a local
// agent — started pinned, with its own limits, and never outliving us.
//
// Start() forks and, in the child before exec: puts it in a new process
// group, pins it to `cpus` (sched_setaffinity), raises RLIMIT_NOFILE to
// `nofile` (capped at the hard limit), asks for SIGKILL when the controller
// dies (PR_SET_PDEATHSIG, so a killed controller leaves nothing behind),
// sends stdout and stderr to `log_file`. An exec failure comes back as a
// Status, not as exit code 127.
//
// Not thread-safe; the destructor kills the group if still running.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace fairbench::host {

struct ProcessOptions {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // added to the controller's environment
  std::string working_dir;
  std::vector<int> cpus;    // empty: inherit
  uint64_t nofile = 0;      // 0: inherit
  std::string log_file;     // stdout and stderr, appended; empty: /dev/null
  std::string stderr_file;  // stderr alone, appended, when set (stdout stays in log_file)
  // cgroup.procs files the child joins before exec (TargetCgroup).
  std::vector<std::string> cgroup_procs;
};

struct ExitInfo {
  bool exited = false;  // by exit(); else by a signal
  int code = 0;
  int signal = 0;
  // Stop() sent SIGKILL because the process was still there when its grace
  // period after SIGTERM ran out.
  bool killed_after_grace = false;
  std::string ToString() const;  // "exited with code 1", "killed by signal 9 (Killed)"
};

class Process {
 public:
  static Result<Process> Start(const ProcessOptions& options);
  Process() = default;
  Process(Process&& other) noexcept;
  Process& operator=(Process&& other) noexcept;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process();

  pid_t pid() const { return pid_; }
  // The exit, if the process has ended (reaps it without blocking).
  std::optional<ExitInfo> Poll();
  // SIGTERM to the group, up to `grace` for it to exit, then SIGKILL (and
  // killed_after_grace set); a zero grace is SIGKILL at once.
  ExitInfo Stop(std::chrono::milliseconds grace);
  void Kill(int signal);

 private:
  pid_t pid_ = -1;
  std::optional<ExitInfo> exit_;
};

// Resident memory and CPU time of a process and all its descendants, from /proc.
struct TreeUsage {
  uint64_t rss_bytes = 0;
  double cpu_seconds = 0;  // user + system, live processes of the tree
  int processes = 0;
};
Result<TreeUsage> SampleProcessTree(pid_t root);

// The process and all its descendants alive now (root first), from /proc;
// empty when the root is gone.
std::vector<pid_t> ProcessTreePids(pid_t root);

// The CPUs this process may run on.
std::vector<int> AllowedCpus();

// Every thread of this process pinned to `cpus` while it lives — the
// controller beside its agents, off the targets' CPUs — and given back the
// CPUs the process had when it goes (threads started meanwhile included).
class ProcessPin {
 public:
  explicit ProcessPin(const std::vector<int>& cpus);
  ~ProcessPin();
  ProcessPin(const ProcessPin&) = delete;
  ProcessPin& operator=(const ProcessPin&) = delete;

 private:
  std::vector<int> before_;
};

}  // namespace fairbench::host
