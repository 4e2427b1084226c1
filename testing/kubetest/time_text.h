// Kubernetes time text for the test API server, on common/api/time_text.h:
// metav1.Time is RFC 3339 UTC to the second ("2026-07-01T10:00:00Z").
// Stateless.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace fairbench::kubetest {

std::string FormatTime(std::chrono::system_clock::time_point t);
// Any RFC 3339 time (a zone is required); nullopt for anything else.
std::optional<std::chrono::system_clock::time_point> ParseTime(const std::string& text);
// kubectl's age column ("5s", "3m2s", "4h", "2d3h"), from apimachinery's HumanDuration.
std::string HumanDuration(std::chrono::seconds d);

}  // namespace fairbench::kubetest
