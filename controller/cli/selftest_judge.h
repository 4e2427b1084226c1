// JudgeStall: whether a harness measured a stall of known length as it
// happened — the verdict of `fairbench selftest` (selftest_command.h).
//
// The stall: a server that answers every request `delay` after it arrived
// is stopped for `stall` (S) in the middle of a measured cell, then resumed.
// What each load model must then show, from first principles:
//
// Open model (a constant rate R, latency from each request's due time):
// every request due during the stall waits for its end, so the request due
// at t0 + x (0 ≤ x < S) takes S − x (+ delay, + its place in its
// connection's backlog when the server resumes). About R·S requests are
// delayed, their latencies spread evenly over (0, S]: the longest ≈ S, and
// R·S/2 of them take ≥ S/2. Of N requests measured, the value at rank
// N − R·S/2 is therefore ≈ S/2.
//   open max:         within [S − timing, S + slack]
//   open p(1 − R·S/2/N): within S/2 ± tolerance·S/2
//
// Closed model (C connections, each sending its next request when the last
// is answered): during the stall each connection waits on its one request
// in flight and sends nothing, so only C requests see the stall, however
// long it lasts — coordinated omission. Its max still shows the stall, its
// percentiles hide it.
//   closed max:              within [S − timing, S + slack]
//   closed requests ≥ S/2:   at most C (exactly C in theory)
//   closed p99:              below S/10, while the open model's p99 is ≈ S
//
// A harness that timed the open model's requests from when they were sent
// (no correction for coordinated omission) counts the stall only in the
// requests sent on time, one per connection (the rest wait unsent): with
// C < R·S/2 connections, fewer than R·S/2 requests above S/2, so the value
// at rank N − R·S/2 is the server's delay and the open check fails. A
// harness that missed the stall fails the max checks.
//
// Pure; thread-compatible.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/histogram.h"

namespace fairbench::controller {

struct StallExpectation {
  std::chrono::nanoseconds stall{0};         // as injected in the open cell (between SIGSTOP and SIGCONT)
  std::chrono::nanoseconds closed_stall{0};  // in the closed cell; 0: the same as stall
  std::chrono::nanoseconds delay{0};         // the server's own, on every request
  double rate = 0;                           // the open model's offered requests/s
  int64_t closed_connections = 0;
  std::chrono::nanoseconds slack{std::chrono::milliseconds(100)};  // above S for the max
  // Below S for the max: the stall as recorded spans the injector's two
  // kill() calls and the clock reads around them, so the server's real
  // stall is that much shorter; a thread descheduled between them on a
  // busy machine has been seen to add 0.6 ms.
  std::chrono::nanoseconds timing{std::chrono::milliseconds(2)};
  double tolerance = 0.20;  // relative, around S/2
};

struct SelftestCheck {
  std::string cell;          // "open" or "closed"
  std::string name;          // what is measured ("max", "p93.75", "requests >= S/2", "p99")
  std::string expected;      // the bounds in words ("[500.0, 600.0] ms")
  double measured = 0;       // in `unit`
  double low = 0, high = 0;  // inclusive bounds, in `unit`
  double error = 0;          // measured − the theoretical value, in `unit`
  std::string unit;          // "ms" or "requests"
  bool passed = false;
};

struct StallVerdict {
  std::vector<SelftestCheck> checks;
  bool passed = false;  // every check passed
};

// Histograms in microseconds (fairbench's), of the measured phase.
StallVerdict JudgeStall(const Histogram& open, const Histogram& closed, const StallExpectation& e);

// How many recorded values are ≥ `value` (µs), counted by bucket: the
// bucket holding `value` counts whole (values within 1/1024 below it).
uint64_t CountAtOrAbove(const Histogram& h, int64_t value);

}  // namespace fairbench::controller
