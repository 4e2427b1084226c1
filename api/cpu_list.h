// CPU lists as Linux writes them (cpuset(7), taskset -c, /sys/…/online):
// "0-3,8,10-11". Used by spec.local to pin targets and agents to disjoint
// cores.
//
// CPUs are 0..kMaxCpu, the range a cpu_set_t (sched_setaffinity) can hold.
// Errors are reasons without a field path.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "api/benchmark_run.h"
#include "common/status.h"

namespace fairbench::api {

inline constexpr int kMaxCpu = 1023;  // CPU_SETSIZE - 1

// "" → empty list. Spaces around items are allowed; "3-1", "a", "1-" are not.
Result<CpuList> ParseCpuList(std::string_view text);
// Canonical: ascending, runs collapsed ("0-3,8").
std::string FormatCpuList(const CpuList& list);
CpuList Intersection(const CpuList& a, const CpuList& b);
// The first half and the second half, in the list's order (targets and
// agents on disjoint cores); with an odd count the second half has one more.
// Fewer than two CPUs cannot be split: both halves are the whole list.
std::pair<CpuList, CpuList> SplitInHalves(const CpuList& list);

}  // namespace fairbench::api
