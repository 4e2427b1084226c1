// RunController: the informer on BenchmarkRuns, the work queue in front of
// the Reconciler and the one worker thread that drains it. Every change of
// a run (added, updated, deleted) queues its key; a failed reconcile is
// retried with per-key backoff; when the executor finishes a run, every key
// is queued again so that the next run starts.
//
// Start/Stop from one thread; RequeueAll from any.
//
// RunControllerStarter starts a RunController on a thread of its own once
// BenchmarkRuns can be listed: until then (the CRD not installed, the API
// server gone for a while) it retries with backoff, one log line per cause.
// Thread-safe.
#pragma once

#include <atomic>
#include <mutex>

#include <memory>
#include <stop_token>
#include <string>
#include <thread>

#include "common/backoff.h"
#include "common/mutex.h"
#include "controller/kube/informer.h"
#include "controller/kube/work_queue.h"
#include "controller/operator/reconciler.h"

namespace fairbench::controller {

class RunController {
 public:
  // `ns` "" watches every namespace.
  RunController(kube::Client& client, const std::string& ns, RunExecutor& executor, kube::EventRecorder* events,
                ReconcilerOptions options = {});
  ~RunController();

  // Lists and watches the runs (the cache is filled before the worker
  // reconciles anything); false when the first list did not come in time.
  bool Start(std::chrono::milliseconds sync_timeout);
  void Stop();
  void RequeueAll();
  kube::Informer& informer() { return runs_; }

 private:
  void Work(std::stop_token stop);

  kube::Informer runs_;
  kube::WorkQueue queue_;
  Reconciler reconciler_;
  std::jthread worker_;
};

class RunControllerStarter {
 public:
  RunControllerStarter(kube::Client& client, std::string ns, RunExecutor& executor, kube::EventRecorder* events,
                       ReconcilerOptions options, BackoffPolicy retry);
  ~RunControllerStarter();
  // Starts trying (once; later calls do nothing).
  void Start();
  // RunController::RequeueAll once it runs; nothing before.
  void RequeueAll();
  // For a process about to _exit: a starter that has finished is joined; one
  // still waiting for the API server is detached, to end with the process
  // (joining could wait for the API server; a thread left unjoined that
  // could finish before the exit is a leak to ThreadSanitizer).
  void ReleaseForExit();

 private:
  void Try(std::stop_token stop);

  kube::Client& client_;
  const std::string ns_;
  RunExecutor& executor_;
  kube::EventRecorder* const events_;
  const ReconcilerOptions options_;
  const BackoffPolicy retry_;
  Mutex mu_;
  std::unique_ptr<RunController> controller_ GUARDED_BY(mu_);
  std::jthread thread_;
  std::atomic<bool> done_{false};  // thread_ has nothing left to do
};

}  // namespace fairbench::controller
