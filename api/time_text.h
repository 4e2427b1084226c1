// RFC 3339 timestamps, as Kubernetes writes them in metadata and status:
// "2026-09-28T12:00:00Z", "2026-09-28T12:00:00.125Z", "…+02:00".
//
// Formatting writes UTC with a "Z". Errors are reasons without a field
// path.
#pragma once

#include <string>
#include <string_view>

#include "api/benchmark_run.h"
#include "common/status.h"

namespace fairbench::api {

// Any fraction (to the nanosecond) and any zone offset.
Result<Time> ParseTime(std::string_view text);
// As many fraction digits as needed, none for whole seconds:
// "2026-09-28T12:00:00Z", "2026-09-28T12:00:00.25Z".
std::string FormatTime(Time t);
// Whole seconds, the fraction cut off — Kubernetes' metav1.Time:
// "2026-09-28T12:00:00Z".
std::string FormatTimeSeconds(Time t);
// Exactly six fraction digits, cut to the microsecond — Kubernetes'
// metav1.MicroTime: "2026-09-28T12:00:00.123456Z".
std::string FormatMicroTime(Time t);

}  // namespace fairbench::api
