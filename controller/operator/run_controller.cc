#include "controller/operator/run_controller.h"

#include <spdlog/spdlog.h>

#include "common/mutex.h"
#include "common/clock.h"

namespace fairbench::controller {

RunController::RunController(kube::Client& client, const std::string& ns, RunExecutor& executor,
                             kube::EventRecorder* events, ReconcilerOptions options)
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

RunControllerStarter::RunControllerStarter(kube::Client& client, std::string ns, RunExecutor& executor,
                                           kube::EventRecorder* events, ReconcilerOptions options, BackoffPolicy retry)
    : client_(client),
      ns_(std::move(ns)),
      executor_(executor),
      events_(events),
      options_(std::move(options)),
      retry_(retry) {}

RunControllerStarter::~RunControllerStarter() {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
}

void RunControllerStarter::Start() {
  if (thread_.joinable() || done_.load()) return;
  thread_ = std::jthread([this](std::stop_token stop) {
    Try(stop);
    done_.store(true);
  });
}

void RunControllerStarter::RequeueAll() {
  MutexLock lock(mu_);
  if (controller_) controller_->RequeueAll();
}

void RunControllerStarter::ReleaseForExit() {
  if (!thread_.joinable()) return;
  if (done_.load()) {
    thread_.join();
  } else {
    thread_.detach();
  }
}

void RunControllerStarter::Try(std::stop_token stop) {
  Backoff backoff(retry_);
  std::string said;
  while (!stop.stop_requested()) {
    auto candidate = std::make_unique<RunController>(client_, ns_, executor_, events_, options_);
    if (candidate->Start(std::chrono::seconds(5))) {
      MutexLock lock(mu_);
      controller_ = std::move(candidate);
      if (!said.empty()) spdlog::info("BenchmarkRuns can be listed now: reconciling");
      return;
    }
    candidate.reset();
    kube::ListOptions lo;
    lo.limit = 1;
    lo.timeout = std::chrono::seconds(5);
    auto listed = client_.List(kube::resources::BenchmarkRuns(), ns_, lo);
    std::string why;
    if (!listed.ok() && listed.error().reason == kube::Reason::kNotFound) {
      why = "the BenchmarkRun CRD is not installed (kubectl apply -k manifests/)";
    } else if (!listed.ok()) {
      why = "cannot list BenchmarkRuns: " + listed.error().ToString();
    } else {
      why = "the BenchmarkRun informer did not sync";
    }
    // One line per cause, not one per attempt.
    if (why != said) spdlog::error("{} (retrying)", why);
    said = why;
    if (!SystemClock::Instance().SleepFor(backoff.Next(), stop)) return;
  }
}

}  // namespace fairbench::controller
