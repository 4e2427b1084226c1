#include "controller/operator/run_controller.h"

#include <spdlog/spdlog.h>

namespace fairbench::controller {

RunController::RunController(kube::Client& client, const std::string& ns, RunExecutor& executor,
                             kube::EventRecorder* events,
                             ReconcilerOptions options)
    : runs_(client, kube::resources::BenchmarkRuns(), ns),
      queue_(kube::WorkQueueOptions{std::chrono::milliseconds(50), std::chrono::milliseconds(30000), 100000}),
      reconciler_(client, runs_, executor, events, std::move(options)) {
  kube::InformerHandlers h;
  h.on_add = [this](const kube::Json& o) { queue_.Add(KeyOf(o)); };
  h.on_update = [this](const kube::Json&, const kube::Json& o) { queue_.Add(KeyOf(o)); };
  h.on_delete = [this](const kube::Json& o) { queue_.Add(KeyOf(o)); };
  runs_.AddHandlers(std::move(h));
}

RunController::~RunController() { Stop(); }

bool RunController::Start(std::chrono::milliseconds sync_timeout) {
  runs_.Start();
  if (!runs_.WaitForSync(sync_timeout)) return false;
  worker_ = std::jthread([this](std::stop_token stop) { Work(stop); });
  return true;
}

void RunController::Stop() {
  if (worker_.joinable()) {
    worker_.request_stop();
    queue_.ShutDown();
    worker_.join();
  }
  runs_.Stop();
}

void RunController::RequeueAll() {
  // The executor is idle: the run that goes next is reconciled first (not
  // behind every queued run), then the rest, whose state may have moved on.
  const std::string next = reconciler_.NextRunnable();
  if (!next.empty()) queue_.Add(next);
  for (const kube::Json& o : runs_.List()) queue_.Add(KeyOf(o));
}

void RunController::Work(std::stop_token stop) {
  while (!stop.stop_requested()) {
    std::optional<std::string> key = queue_.Get(stop);
    if (!key) return;
    const Reconciler::Outcome out = reconciler_.Reconcile(*key);
    if (!out.status.ok()) {
      spdlog::warn("reconcile {}: {} (retrying)", *key, out.status.message());
      queue_.AddRateLimited(*key);
    } else {
      queue_.Forget(*key);
      if (out.requeue_after.count() > 0) queue_.AddAfter(*key, out.requeue_after);
    }
    if (!out.also.empty()) queue_.Add(out.also);
    queue_.Done(*key);
  }
}

}  // namespace fairbench::controller
