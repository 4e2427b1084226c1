#include "controller/platform/platform.h"

#include <nlohmann/json.hpp>

namespace fairbench::controller {

std::optional<std::string> TargetFactsFromLog(std::string_view log) {
  constexpr std::string_view kPrefix = "fairbench-target-facts: ";
  size_t at = 0;
  while (at < log.size()) {
    size_t end = log.find('\n', at);
    if (end == std::string_view::npos) end = log.size();
    const std::string_view line = log.substr(at, end - at);
    if (line.substr(0, kPrefix.size()) == kPrefix) {
      const auto facts = nlohmann::json::parse(line.substr(kPrefix.size()), nullptr, false);
      if (facts.is_object()) return "facts: " + facts.dump();
    }
    at = end + 1;
  }
  return std::nullopt;
}

std::optional<double> CoresBetween(const TargetUsage& first, const TargetUsage& last) {
  const double seconds = std::chrono::duration<double>(last.sampled_at - first.sampled_at).count();
  if (seconds <= 0) return std::nullopt;
  return (last.cpu_seconds - first.cpu_seconds) / seconds;
}

}  // namespace fairbench::controller
