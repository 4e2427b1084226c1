// RFC 3339 timestamps, as Kubernetes writes them in metadata and status:
// "2026-09-28T12:00:00Z", "2026-09-28T12:00:00.125Z", "…+02:00".
//
// Formatting writes UTC with a "Z" and as many fraction digits as needed
// (none for whole seconds, which is what metav1.Time carries). Errors are
// reasons without a field path.
#pragma once

#include <string>
#include <string_view>

#include "common/api/benchmark_run.h"
#include "common/status.h"

namespace fairbench::api {

Result<Time> ParseTime(std::string_view text);
std::string FormatTime(Time t);

}  // namespace fairbench::api
