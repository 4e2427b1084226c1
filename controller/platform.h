// Platform: where targets and agents run. The orchestrator is the same on
// every platform; only this seam differs (LocalPlatform: processes pinned to
// CPUs on this machine; KubernetesPlatform: pods pinned to nodes).
//
// Calls come from the orchestrator's thread, one at a time.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/api/benchmark_run.h"
#include "common/status.h"

namespace fairbench::controller {

// The target's memory and CPU as the platform sees them.
struct TargetUsage {
  uint64_t memory_bytes = 0;
  double cpu_seconds = 0;  // cumulative, so that deltas give cores
};

class TargetInstance {
 public:
  virtual ~TargetInstance() = default;
  // Where agents reach it.
  virtual std::string host() const = 0;
  virtual uint16_t port() const = 0;
  // Polls until the target answers HTTP on its ready path, it exits, or the
  // deadline passes.
  virtual Status WaitReady(std::chrono::steady_clock::time_point deadline) = 0;
  // Why the target is gone ("exited with code 1", "OOMKilled"), or nullopt
  // while it runs.
  virtual std::optional<std::string> Gone() = 0;
  virtual Result<TargetUsage> Usage() = 0;
  // Stops it and releases what it held.
  virtual Status Teardown() = 0;
  // Where its output is kept, for messages ("see out/logs/drogon.log").
  virtual std::string LogLocation() const = 0;
};

// Held while a target is under load; destroying it releases the slot.
class LoadSlot {
 public:
  virtual ~LoadSlot() = default;
  // Still ours? (A lease can be lost; a lock file cannot.)
  virtual bool held() const = 0;
};

class Platform {
 public:
  virtual ~Platform() = default;
  virtual std::string name() const = 0;
  // Starts the target pinned to the target CPUs / node.
  virtual Result<std::unique_ptr<TargetInstance>> Deploy(const api::Target& target) = 0;
  // Makes sure `count` agents exist and are dialing the controller; returns
  // their ids. Restarts agents that died.
  virtual Result<std::vector<std::string>> EnsureAgents(int count, int threads) = 0;
  // Waits for the global load slot (one target under load at a time).
  virtual Result<std::unique_ptr<LoadSlot>> AcquireSlot(const std::string& holder,
                                                        std::chrono::milliseconds timeout) = 0;
  // Facts about the environment for the report ("4 CPUs pinned: 0-1 targets, 2-3 agents").
  virtual std::vector<int> target_cpus() const = 0;
  virtual std::vector<int> agent_cpus() const = 0;
  virtual std::vector<std::string> notes() const = 0;
};

}  // namespace fairbench::controller
