#include "controller/operator/executor.h"
#include "common/mutex.h"

#include <spdlog/spdlog.h>

namespace fairbench::controller {

OrchestratorExecutor::OrchestratorExecutor(AgentPool& agents, OrchestratorOptions options, Factory factory,
                                           std::function<void()> on_idle)
    : agents_(agents), options_(std::move(options)), factory_(std::move(factory)), on_idle_(std::move(on_idle)) {}

OrchestratorExecutor::~OrchestratorExecutor() { Shutdown(); }

void OrchestratorExecutor::Shutdown() {
  {
    MutexLock lock(mu_);
    shut_down_ = true;
    cancel_requested_ = true;
    if (orchestrator_ != nullptr) orchestrator_->Cancel();
  }
  std::lock_guard<std::mutex> threads(thread_mu_);
  if (thread_.joinable()) thread_.join();
}

void OrchestratorExecutor::ReleaseForExit() {
  std::lock_guard<std::mutex> threads(thread_mu_);
  bool finished = false;
  {
    MutexLock lock(mu_);
    shut_down_ = true;
    finished = finished_;
  }
  if (!thread_.joinable()) return;
  if (finished) {
    thread_.join();
  } else {
    thread_.detach();
  }
}

std::string OrchestratorExecutor::Active() const {
  MutexLock lock(mu_);
  return active_;
}

Status OrchestratorExecutor::Start(const std::string& key, const api::BenchmarkRun& run) {
  std::lock_guard<std::mutex> threads(thread_mu_);
  {
    MutexLock lock(mu_);
    if (shut_down_) return Status::Cancelled("the executor is shutting down");
    if (!active_.empty()) return Status::FailedPrecondition("run " + active_ + " is being executed");
  }
  // The previous run's thread has finished (it cleared active_ last).
  if (thread_.joinable()) thread_.join();
  auto parts = factory_(run);
  if (!parts.ok()) return parts.status();
  MutexLock lock(mu_);
  if (shut_down_) return Status::Cancelled("the executor is shutting down");
  active_ = key;
  cancel_requested_ = false;
  finished_ = false;
  thread_ = std::thread(&OrchestratorExecutor::Execute, this, key, run, std::move(*parts));
  return Status::Ok();
}

void OrchestratorExecutor::Cancel(const std::string& key) {
  MutexLock lock(mu_);
  if (active_ != key) return;
  cancel_requested_ = true;
  if (orchestrator_ != nullptr) orchestrator_->Cancel();
}

void OrchestratorExecutor::Execute(std::string key, api::BenchmarkRun run, RunParts parts) {
  Orchestrator orchestrator(*parts.platform, agents_, options_, parts.observer.get());
  {
    MutexLock lock(mu_);
    orchestrator_ = &orchestrator;
    if (cancel_requested_) orchestrator.Cancel();
  }
  spdlog::info("executing {}", key);
  Result<report::RunRecord> record = orchestrator.Run(run, *parts.store, /*resume=*/true);
  if (!record.ok()) spdlog::error("run {} ended early: {}", key, record.status().message());
  {
    MutexLock lock(mu_);
    orchestrator_ = nullptr;
  }
  if (parts.finish) parts.finish(record);
  parts.observer.reset();
  {
    MutexLock lock(mu_);
    active_.clear();
  }
  spdlog::info("run {} is over", key);
  if (on_idle_) on_idle_();
  MutexLock lock(mu_);
  finished_ = true;
}

}  // namespace fairbench::controller
