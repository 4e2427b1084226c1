// What /proc says about processes a test started (and theirs): the tests
// that check no process outlives a run, or what a process shows in ps.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace fairbench::testing {

// The processes whose parent is `parent` (zombies included), optionally only
// those whose name (/proc/PID/comm, 15 characters at most) is `name`.
std::vector<pid_t> ChildProcesses(pid_t parent, const std::string& name = "");

// True once `pid` has exited (reaped, or a zombie waiting to be).
bool GoneOrZombie(pid_t pid);

}  // namespace fairbench::testing
