// Engine: the wrk-equivalent load generator.
//
// T worker threads, each with its own epoll set and its share of exactly C
// connections (C / T each, the first C mod T threads get one more). Each
// connection is a small state machine: connect → write a request → parse
// the response → next request, with keep-alive (or a new connection per
// request), optional pipelining and an optional constant request rate.
//
// Time runs from the start: an optional warmup phase, then the measure phase,
// cut into intervals (one second by default). NextSnapshot() hands out each
// interval, all threads merged, in order; the last one is followed by
// nullopt. After the measure phase, requests in flight are given up to the
// timeout to finish (the drain); they are reported in EndReport, never in the
// snapshots.
//
// Thread safety: Start, NextSnapshot and Finish are called from one thread
// (the owner); Stop may be called from any thread, also from a signal-safe
// context via RequestStop().
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "agent/request.h"
#include "agent/url.h"
#include "common/metrics.h"
#include "common/status.h"

namespace fairbench::agent {

struct EngineOptions {
  std::vector<SocketAddress> addresses;  // the target; connections use the first address
  std::vector<BuiltRequest> requests;    // one or a weighted mix
  uint32_t threads = 2;
  uint32_t connections = 10;
  std::chrono::nanoseconds warmup{0};
  std::chrono::nanoseconds duration = std::chrono::seconds(10);
  std::chrono::nanoseconds timeout = std::chrono::seconds(2);
  std::chrono::nanoseconds interval = std::chrono::seconds(1);
  bool keep_alive = true;
  uint32_t pipeline = 1;   // requests written back to back per connection
  double rate = 0;         // total requests/s over all connections; 0 = as fast as possible
  std::vector<int> cpus;   // pin worker i to cpus[i % size]; empty = no pinning
  // With several agents sharing a load: this engine's first connection
  // among all of them, and their total. A constant rate is then staggered
  // over every connection of every agent.
  uint32_t connection_offset = 0;
  uint32_t total_connections = 0;  // 0: just this engine's
  // Wall-clock start of the load (so that several agents start together).
  // Connections are opened before it. Unset: the load starts as soon as
  // every connection is established (or after `timeout`, whichever comes
  // first), so that the measurement does not include opening them.
  std::optional<std::chrono::system_clock::time_point> start_at;
};

// Checks the options for what would make a run meaningless; the message
// names the option.
Status ValidateOptions(const EngineOptions& options);

class Worker;

class Engine {
 public:
  explicit Engine(EngineOptions options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Starts the worker threads. Fails when a thread or an epoll set cannot be
  // created (e.g. the file limit is too low for the connections asked).
  Status Start();
  // Blocks until the next interval is complete; nullopt after the last one.
  std::optional<Snapshot> NextSnapshot();
  // Ends the load early: the current interval is closed and reported, then
  // the drain. Safe from any thread.
  void Stop();
  // Joins the workers (after NextSnapshot returned nullopt, or after Stop).
  EndReport Finish();

  const EngineOptions& options() const { return options_; }

  // Interval boundaries, relative to the start, shared by all workers.
  struct Boundary {
    int64_t at_ns;
    Phase phase;  // of the interval that ends here
    bool last;
  };

 private:
  friend class Worker;
  // Called by a worker at each boundary it crosses (once a second), and once
  // with final = true for the interval in which it stopped.
  void Deliver(size_t boundary_index, uint32_t worker, IntervalStats&& stats, uint32_t open_connections,
               int64_t end_ns, bool final);

  EngineOptions options_;
  std::vector<Boundary> boundaries_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::thread> threads_;
  // Sets the load's start (monotonic ns) once, and wakes the workers.
  void SetLoadStart(int64_t now_ns);

  std::atomic<bool> stop_{false};
  std::atomic<int64_t> load_start_ns_{0};     // 0 until known
  std::atomic<uint32_t> connected_workers_{0};
  int64_t connect_deadline_ns_ = 0;           // start anyway at this time

  std::mutex mu_;
  std::condition_variable cv_;
  struct Pending {
    std::vector<IntervalStats> parts;
    uint32_t open = 0;
    int64_t end_ns = 0;
  };
  static constexpr size_t kRunning = SIZE_MAX;
  std::map<size_t, Pending> pending_;  // guarded by mu_
  std::vector<size_t> final_index_;    // guarded by mu_: per worker, the boundary of its last interval
  size_t next_boundary_ = 0;           // owner thread only: next snapshot to hand out
  int64_t last_end_ns_ = 0;            // owner thread only
  double last_cpu_ = 0;                // owner thread only
  uint64_t sequence_ = 0;              // owner thread only
  bool started_ = false;
  bool finished_ = false;
};

}  // namespace fairbench::agent
