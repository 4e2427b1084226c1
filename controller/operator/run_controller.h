// RunController: the informer on BenchmarkRuns, the work queue in front of
// the Reconciler and the one worker thread that drains it. Every change of
// a run (added, updated, deleted) queues its key; a failed reconcile is
// retried with per-key backoff; when the executor finishes a run, every key
// is queued again so that the next run starts.
//
// Start/Stop from one thread; RequeueAll from any.
#pragma once

#include <memory>
#include <stop_token>
#include <string>
#include <thread>

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

}  // namespace fairbench::controller
