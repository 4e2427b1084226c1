// LoadCoordinator: all that a Worker needs from whoever runs the load (the
// Engine), so that the worker depends on nothing else of it.
//
// Two parts, by how often a worker uses them:
//  - LoadState, read in every turn of the worker's loop: plain data and
//    atomics that the coordinator owns, read without a call. The worker
//    takes the reference once, at construction.
//  - the virtual calls, made at most once per interval (Deliver) or once per
//    run (ReportConnected, SetLoadStart, StopLoad): never per request.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/metrics.h"

namespace fairbench::agent {

// An interval boundary, relative to the load's start.
struct Boundary {
  int64_t at_ns;
  Phase phase;  // of the interval that ends here
  bool last;
};

struct LoadState {
  // Every interval boundary, in order; the last one ends the load. Set
  // before the workers start, read-only after.
  std::vector<Boundary> boundaries;
  // With no start time given: start anyway at this time (monotonic ns), even
  // if not every connection is established. Set before the workers start.
  int64_t connect_deadline_ns = 0;
  // Stop early: close the current interval, then drain.
  std::atomic<bool> stop{false};
  // The load's start (monotonic ns); 0 until known.
  std::atomic<int64_t> load_start_ns{0};
};

class LoadCoordinator {
 public:
  virtual ~LoadCoordinator() = default;

  // The state the workers read; valid as long as the coordinator.
  virtual const LoadState& state() const = 0;
  // A worker's counters of the interval that ends at boundary
  // `boundary_index`: once at each boundary it crosses, and once with
  // final = true for the interval in which it stopped (then `end_ns` is
  // where it stopped, relative to the start). Called from the worker's
  // thread.
  virtual void Deliver(size_t boundary_index, uint32_t worker, IntervalStats&& stats, uint32_t open_connections,
                       int64_t end_ns, bool final) = 0;
  // Once per worker, when the start is not known yet and every connection
  // of the worker is established (so that the load can start when all are).
  virtual void ReportConnected(int64_t now_ns) = 0;
  // Sets the load's start to `now_ns` if it is not set yet, and wakes the
  // workers.
  virtual void SetLoadStart(int64_t now_ns) = 0;
  // Ends the whole load early (a worker's script failed): as Stop() from
  // outside. At most once per worker.
  virtual void StopLoad() = 0;
};

}  // namespace fairbench::agent
