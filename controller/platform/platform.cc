#include "controller/platform/platform.h"

#include <nlohmann/json.hpp>

#include "common/log_lines.h"

namespace fairbench::controller {

std::optional<std::string> TargetFactsFromLog(std::string_view log) {
  for (std::string_view rest : LinesAfter(log, "fairbench-target-facts: ")) {
    const auto facts = nlohmann::json::parse(rest, nullptr, false);
    if (facts.is_object()) return "facts: " + facts.dump();
  }
  return std::nullopt;
}

std::optional<double> CoresBetween(const TargetUsage& first, const TargetUsage& last) {
  const double seconds = std::chrono::duration<double>(last.sampled_at - first.sampled_at).count();
  if (seconds <= 0) return std::nullopt;
  return (last.cpu_seconds - first.cpu_seconds) / seconds;
}

}  // namespace fairbench::controller
