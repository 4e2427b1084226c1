// Engine: the wrk-equivalent load generator.
//
// T worker threads, each with its own epoll set and its share of exactly C
// connections (C / T each, the first C mod T threads get one more). Each
// connection is a small state machine: connect → write a request → parse
// the response → next request, with keep-alive (or a new connection per
// request), optional pipelining and an optional constant request rate. Or
// HTTP/2 (h2c, or h2 over TLS by ALPN): up to `h2.max_streams` streams in
// flight per connection, each stream counted like an HTTP/1.1 request; a
// constant rate schedules streams as it schedules requests (worker.h).
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

#include "agent/engine_options.h"
#include "agent/load_coordinator.h"
#include "common/metrics.h"
#include "common/mutex.h"
#include "common/status.h"

namespace fairbench::agent {

// Checks the options for what would make a run meaningless; the message
// names the option.
Status ValidateOptions(const EngineOptions& options);

class Worker;

// The workers see the engine only as their LoadCoordinator.
class Engine final : private LoadCoordinator {
 public:
  explicit Engine(EngineOptions options);
  ~Engine() override;
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
  // After NextSnapshot: true when the snapshot it returned was the last one
  // (or the load was stopped), so that nothing more follows it. Owner thread.
  bool Ending() const;
  // Waits up to `d`, returning at once when Stop() is called. Any thread.
  void HoldUnlessStopped(std::chrono::nanoseconds d);
  // Joins the workers (after NextSnapshot returned nullopt, or after Stop).
  EndReport Finish();

  const EngineOptions& options() const { return options_; }

 private:
  // LoadCoordinator
  const LoadState& state() const override { return state_; }
  void Deliver(size_t boundary_index, uint32_t worker, IntervalStats&& stats, uint32_t open_connections, int64_t end_ns,
               bool final) override;
  void ReportConnected(int64_t now_ns) override;
  void SetLoadStart(int64_t now_ns) override;
  void StopLoad() override { Stop(); }

  EngineOptions options_;
  LoadState state_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::thread> threads_;
  std::atomic<uint32_t> connected_workers_{0};

  Mutex mu_;
  CondVar cv_;
  struct Pending {
    std::vector<IntervalStats> parts;
    uint32_t open = 0;
    int64_t end_ns = 0;
  };
  static constexpr size_t kRunning = SIZE_MAX;
  std::map<size_t, Pending> pending_ GUARDED_BY(mu_);
  std::vector<size_t> final_index_ GUARDED_BY(mu_);  // per worker, the boundary of its last interval
  size_t next_boundary_ = 0;                         // owner thread only: next snapshot to hand out
  int64_t last_end_ns_ = 0;                          // owner thread only
  double last_cpu_ = 0;                              // owner thread only
  uint64_t sequence_ = 0;                            // owner thread only
  bool started_ = false;
  bool finished_ = false;
};

}  // namespace fairbench::agent
