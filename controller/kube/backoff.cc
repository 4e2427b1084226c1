#include "controller/kube/backoff.h"

#include <algorithm>
#include <cmath>

namespace fairbench::kube {

Backoff::Backoff(BackoffPolicy policy, uint64_t seed) : policy_(policy), rng_(seed) {}

std::chrono::milliseconds Backoff::Next() {
  double base = static_cast<double>(policy_.initial.count()) * std::pow(policy_.factor, attempt_);
  base = std::min(base, static_cast<double>(policy_.max.count()));
  if (attempt_ < 64) ++attempt_;
  std::uniform_real_distribution<double> u(0, policy_.jitter);
  double wait = std::min(base * (1.0 + u(rng_)), static_cast<double>(policy_.max.count()));
  return std::chrono::milliseconds(static_cast<int64_t>(wait));
}

}  // namespace fairbench::kube
