// Kubernetes quantities for CPU and memory, as written in
// spec.targets[].resources: parsed into numbers, written back canonically.
//
// CPU: "4", "0.5", "1.25", "500m" → millicores; written "4" or "500m".
// Memory: "1Gi", "512Mi", "1G", "100M", "1048576" → bytes (common/units.h
// ParseBytes); written with the largest unit that divides it exactly, binary
// first ("1Gi"), then decimal ("1G"), else plain bytes.
// Errors are reasons without a field path: "\"4x\" is not a CPU quantity (…)".
#pragma once

#include <string>
#include <string_view>

#include "api/benchmark_run.h"
#include "common/status.h"

namespace fairbench::api {

Result<CpuQuantity> ParseCpu(std::string_view text);
std::string FormatCpu(CpuQuantity cpu);

Result<MemoryQuantity> ParseMemory(std::string_view text);
std::string FormatMemory(MemoryQuantity memory);

// A rate level (scenarios[].rates): "2000", "2k" (common/units.h
// ParseCount) or "50%" (1..100). Formatted "2000" or "50%".
Result<RateLevel> ParseRateLevel(std::string_view text);
std::string FormatRateLevel(const RateLevel& level);

}  // namespace fairbench::api
