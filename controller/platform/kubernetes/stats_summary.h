// The kubelet's summary API (/stats/summary, through the API server's node
// proxy): a target container's usage read out of it, as a pure function.
//
// The container is found by pod (podRef name and namespace) and container
// name. memory_bytes = memory.workingSetBytes (what the local platform's
// cgroup working set means too), cpu_seconds = cpu.usageCoreNanoSeconds / 1e9
// (cumulative), sampled_at = the sample's own cpu.time (memory.time when the
// CPU sample has none): the kubelet refreshes them every ~10–15 s, so cores
// are Δcpu ÷ Δtime of the samples, not of the controller's polling.
//
// Pure; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include <string_view>

#include "common/status.h"
#include "controller/platform/platform.h"

namespace fairbench::controller::k8s {

// NotFound when the pod or container is not in the summary (yet);
// Unavailable when its CPU or memory figures are missing.
Result<TargetUsage> UsageFromSummary(const nlohmann::json& summary, std::string_view ns, std::string_view pod,
                                     std::string_view container);

// The path of a node's summary through the API server's node proxy.
std::string SummaryPath(std::string_view node);

// The kubelet's CPU manager policy ("static", "none") out of its /configz
// ({"kubeletconfig": {"cpuManagerPolicy": …}}); empty, with `why` set, when
// the answer has none.
std::string CpuManagerPolicy(const nlohmann::json& configz, std::string* why);

}  // namespace fairbench::controller::k8s
