#include "controller/platform/platform.h"

namespace fairbench::controller {

std::optional<double> CoresBetween(const TargetUsage& first, const TargetUsage& last) {
  const double seconds = std::chrono::duration<double>(last.sampled_at - first.sampled_at).count();
  if (seconds <= 0) return std::nullopt;
  return (last.cpu_seconds - first.cpu_seconds) / seconds;
}

}  // namespace fairbench::controller
