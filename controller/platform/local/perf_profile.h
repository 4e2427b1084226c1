// PerfProfile: spec.profile on this machine — `perf record -F HZ -g -p PIDS`
// on a target's process tree, then `perf script`, folded (profile.h).
//
// Start() runs perf record on the processes alive at that moment (the
// target and its descendants: nginx's workers, say) with call stacks, its
// samples in a file under the log directory, and a time bound of its own
// (`-- sleep N`), so a controller that never stops it cannot leave it
// sampling. Finish() interrupts it (perf writes its file on SIGTERM), runs
// perf script with the fields the folding reads, folds, and removes both
// files; perf's own messages stay in LOG.
//
// Where perf is missing, exits at once (perf_event_paranoid, no
// permission) or its samples cannot be read, the profile says so in one
// line — Unavailable or Failed — and nothing else fails.
//
// Not thread-safe; the owner calls Finish() once.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "controller/platform/platform.h"

namespace fairbench::controller {

struct PerfOptions {
  std::string perf = "perf";  // a path, or a name looked up on PATH
  std::string data_file;      // perf record's output (removed by Finish)
  std::string log_file;       // perf's messages, appended
};

Result<std::unique_ptr<ProfileSession>> StartPerfProfile(const std::vector<pid_t>& pids, const ProfileRequest& request,
                                                         const PerfOptions& options);

// kernel.perf_event_paranoid, or -100 when it cannot be read.
int PerfEventParanoid();

}  // namespace fairbench::controller
