// Exponential backoff with jitter and a cap: how long to wait before the
// next try of something that failed. One formula for every retry loop — the
// Kubernetes client's requests, a reflector's re-lists, a work queue's
// requeues, the controller's waits for the API server, an agent's redials of
// the controller, a load worker's reconnects:
//
//   wait(n) = min(initial × factor^n, max) × (1 + jitter × u),   u in [0, 1]
//
// n counts the failures before this one (0: the first retry); u comes from
// a draw the caller makes — a PRNG (Backoff, below) or a hash (the agent's
// event loop: no allocation, no shared state, deterministic). The cap
// applies before the jitter, so that waits at the cap still spread: the
// longest wait is max × (1 + jitter).
//
// BackoffDelay is a pure function: thread-safe, allocation-free. A Backoff
// belongs to one retry loop (not thread-safe).
#pragma once

#include <chrono>
#include <cstdint>
#include <random>

namespace fairbench {

struct BackoffPolicy {
  std::chrono::nanoseconds initial = std::chrono::milliseconds(100);
  std::chrono::nanoseconds max = std::chrono::seconds(10);  // of the wait before jitter
  double factor = 2.0;
  double jitter = 0.2;  // each wait is stretched by up to this fraction
};

// The wait before retry `attempt` (0: the first), `draw` choosing the
// jitter: draw % (span + 1) nanoseconds are added, span being the base
// wait × jitter.
constexpr std::chrono::nanoseconds BackoffDelay(const BackoffPolicy& p, uint32_t attempt, uint64_t draw) {
  const double cap = static_cast<double>(p.max.count());
  double base = static_cast<double>(p.initial.count());
  for (uint32_t i = 0; i < attempt && i < 64 && base < cap; ++i) base *= p.factor;
  if (base > cap) base = cap;
  if (base < 0) base = 0;
  const auto span = static_cast<uint64_t>(base * (p.jitter > 0 ? p.jitter : 0));
  return std::chrono::nanoseconds(static_cast<int64_t>(base) + static_cast<int64_t>(draw % (span + 1)));
}

// A retry loop's backoff: counts the attempts and draws the jitter.
class Backoff {
 public:
  explicit Backoff(BackoffPolicy policy = {}, uint64_t seed = std::random_device{}()) : policy_(policy), rng_(seed) {}
  // The wait before the next attempt (to the millisecond below); grows with
  // every call up to the cap.
  std::chrono::milliseconds Next() {
    const auto wait = BackoffDelay(policy_, attempt_, rng_());
    if (attempt_ < 64) ++attempt_;
    return std::chrono::duration_cast<std::chrono::milliseconds>(wait);
  }
  void Reset() { attempt_ = 0; }
  uint32_t attempt() const { return attempt_; }

 private:
  BackoffPolicy policy_;
  uint32_t attempt_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace fairbench
