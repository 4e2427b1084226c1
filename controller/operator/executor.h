// OrchestratorExecutor: the RunExecutor of the operator. It runs the one
// active BenchmarkRun with the unchanged orchestrator on a thread of its
// own, always resuming from what the run's store holds (a run a previous
// leader started keeps every finished cell; the interrupted one is redone).
//
// What a run needs — the platform, the store of its record, the observer
// that writes its status, what to do once it is over — comes from a
// factory, so the executor knows none of them. When a run is over (any
// way), `on_idle` is called from the executor's thread so that the next run
// can start.
//
// Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/mutex.h"
#include "controller/hub/agent_pool.h"
#include "controller/operator/reconciler.h"
#include "controller/orchestrator/orchestrator.h"

namespace fairbench::controller {

struct RunParts {
  std::shared_ptr<Platform> platform;
  std::unique_ptr<RunStore> store;
  std::unique_ptr<RunObserver> observer;  // may be null
  // After the run: the record as it ended (final report, status flush), or
  // the error that ended it early.
  std::function<void(const Result<report::RunRecord>&)> finish;
};

class OrchestratorExecutor final : public RunExecutor {
 public:
  using Factory = std::function<Result<RunParts>(const api::BenchmarkRun& run)>;
  OrchestratorExecutor(AgentPool& agents, OrchestratorOptions options, Factory factory, std::function<void()> on_idle);
  // Cancels the active run and waits for it to end.
  ~OrchestratorExecutor() override;

  std::string Active() const override;
  Status Start(const std::string& key, const api::BenchmarkRun& run) override;
  void Cancel(const std::string& key) override;
  // Cancels whatever runs and waits until the executor is idle.
  void Shutdown();
  // For a process about to _exit: no run starts after this, and the run
  // thread is joined if it has finished, else detached to end with the
  // process (a standby resumes its run). Either way no thread is left
  // unjoined that could finish before the exit (ThreadSanitizer's leak).
  void ReleaseForExit();

 private:
  void Execute(std::string key, api::BenchmarkRun run, RunParts parts);

  AgentPool& agents_;
  const OrchestratorOptions options_;
  const Factory factory_;
  const std::function<void()> on_idle_;
  mutable Mutex mu_;
  std::string active_ GUARDED_BY(mu_);
  Orchestrator* orchestrator_ GUARDED_BY(mu_) = nullptr;  // of the active run
  bool cancel_requested_ GUARDED_BY(mu_) = false;
  bool shut_down_ GUARDED_BY(mu_) = false;
  bool finished_ GUARDED_BY(mu_) = true;  // thread_ has nothing left to do
  std::mutex thread_mu_;                  // held to start, join or replace thread_
  std::thread thread_;                    // joined before the next Start
};

}  // namespace fairbench::controller
