// Exponential backoff with jitter and a cap: the bounded waiting between
// retries of a request, between re-lists/re-watches of a reflector, and
// between requeues of one work-queue key.
//
// Not thread-safe: each retry loop owns its Backoff.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>

namespace fairbench::kube {

struct BackoffPolicy {
  std::chrono::milliseconds initial{100};
  std::chrono::milliseconds max{10000};
  double factor = 2.0;
  double jitter = 0.2;  // each wait is stretched by up to this fraction
};

class Backoff {
 public:
  explicit Backoff(BackoffPolicy policy = {}, uint64_t seed = std::random_device{}());
  // The wait before the next attempt; grows with every call up to the cap.
  std::chrono::milliseconds Next();
  void Reset() { attempt_ = 0; }
  int attempt() const { return attempt_; }

 private:
  BackoffPolicy policy_;
  int attempt_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace fairbench::kube
