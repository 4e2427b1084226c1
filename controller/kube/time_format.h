// Kubernetes time text (KUBE-API.md §3): metav1.Time is RFC 3339 UTC to the
// second ("2026-07-01T10:00:00Z"); metav1.MicroTime has six fractional
// digits ("2026-07-01T10:00:00.123456Z"). Stateless.
#pragma once

#include <chrono>
#include <string>

#include "common/status.h"

namespace fairbench::kube {

std::string FormatTime(std::chrono::system_clock::time_point t);
std::string FormatMicroTime(std::chrono::system_clock::time_point t);
// Accepts both forms and numeric zone offsets.
Result<std::chrono::system_clock::time_point> ParseTime(const std::string& text);

}  // namespace fairbench::kube
