// TimeScale: how much longer a test may wait than it would in a release build.
//
// Sanitizers slow code down (ThreadSanitizer five- to fifteenfold): a test
// that waits a bounded time for something to happen would fail only for
// being slow. The sanitizer presets set FAIRBENCH_TIME_SCALE (asan 3,
// tsan 5); Scaled() stretches such waits by it. Waits that are what a test
// measures (a deadline the code under test must keep) stay unscaled.
// Thread-safe.
#pragma once

#include <chrono>

namespace fairbench::testing {

// FAIRBENCH_TIME_SCALE when it is a number >= 1, else 1.
double TimeScale();

template <typename Rep, typename Period>
std::chrono::milliseconds Scaled(std::chrono::duration<Rep, Period> d) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d);
  return std::chrono::milliseconds(
      static_cast<std::chrono::milliseconds::rep>(static_cast<double>(ms.count()) * TimeScale()));
}

}  // namespace fairbench::testing
