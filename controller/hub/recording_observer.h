// For the hub's tests: a JobObserver that records everything the hub
// reports about one job, and lets a test wait for it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "controller/hub/agent_pool.h"

namespace fairbench::controller {

class RecordingObserver : public JobObserver {
 public:
  void OnSnapshot(const std::string&, Snapshot s) override {
    std::lock_guard<std::mutex> lock(mu_);
    snapshots.push_back(std::move(s));
    arrivals.push_back(std::chrono::system_clock::now());
    cv_.notify_all();
  }
  void OnDone(const std::string&, const JobSummary& s) override {
    std::lock_guard<std::mutex> lock(mu_);
    summary = s;
    done = true;
    cv_.notify_all();
  }
  void OnFailed(const std::string&, const std::string& reason) override {
    std::lock_guard<std::mutex> lock(mu_);
    failure = reason;
    failed = true;
    cv_.notify_all();
  }
  // Until the job is done or failed. The fields below are read after it.
  bool WaitEnd(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return done || failed; });
  }
  bool WaitSnapshots(size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return snapshots.size() >= n || done || failed; });
  }
  // The requests of every snapshot received, added up.
  uint64_t SnapshotRequests() const {
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t n = 0;
    for (const Snapshot& s : snapshots) n += s.stats.counters.requests;
    return n;
  }

  std::vector<Snapshot> snapshots;
  std::vector<std::chrono::system_clock::time_point> arrivals;  // one per snapshot
  JobSummary summary;
  bool done = false;
  bool failed = false;
  std::string failure;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace fairbench::controller
