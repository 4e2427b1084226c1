#include "controller/operator/reconciler.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "common/api/cells.h"
#include "common/api/codec.h"
#include "common/api/conditions.h"
#include "common/api/loader.h"
#include "common/api/validate.h"

namespace fairbench::controller {
namespace {

using kube::Json;

api::Time WallNow() {
  return std::chrono::time_point_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now());
}

const Json* Find(const Json& j, std::initializer_list<const char*> path) {
  const Json* at = &j;
  for (const char* p : path) {
    if (!at->is_object()) return nullptr;
    auto it = at->find(p);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

std::string StringAt(const Json& j, std::initializer_list<const char*> path) {
  const Json* v = Find(j, path);
  return v != nullptr && v->is_string() ? v->get<std::string>() : "";
}

bool Terminal(std::optional<api::RunPhase> p) {
  return p == api::RunPhase::kSucceeded || p == api::RunPhase::kFailed || p == api::RunPhase::kCancelled;
}

bool HasFinalizer(const Json& object) {
  const Json* f = Find(object, {"metadata", "finalizers"});
  if (f == nullptr || !f->is_array()) return false;
  return std::any_of(f->begin(), f->end(), [](const Json& v) { return v.is_string() && v.get<std::string>() == kFinalizer; });
}

bool CancelRequested(const Json& object) {
  const std::string v = StringAt(object, {"metadata", "annotations", kCancelAnnotation});
  return !v.empty() && v != "false";
}

bool BeingDeleted(const Json& object) { return Find(object, {"metadata", "deletionTimestamp"}) != nullptr; }

int64_t Generation(const Json& object) {
  const Json* g = Find(object, {"metadata", "generation"});
  return g != nullptr && g->is_number_integer() ? g->get<int64_t>() : 0;
}

}  // namespace

std::string KeyOf(const Json& object) {
  const std::string ns = StringAt(object, {"metadata", "namespace"});
  const std::string name = StringAt(object, {"metadata", "name"});
  return ns.empty() ? name : ns + "/" + name;
}

std::optional<api::RunPhase> PhaseOf(const Json& object) {
  const std::string phase = StringAt(object, {"status", "phase"});
  for (api::RunPhase p : {api::RunPhase::kQueued, api::RunPhase::kRunning, api::RunPhase::kSucceeded,
                          api::RunPhase::kFailed, api::RunPhase::kCancelled}) {
    if (phase == api::ToString(p)) return p;
  }
  return std::nullopt;
}

Reconciler::Reconciler(kube::Client& client, kube::Informer& runs, RunExecutor& executor, kube::EventRecorder* events,
                       ReconcilerOptions options)
    : client_(client), runs_(runs), executor_(executor), events_(events), options_(std::move(options)) {}

void Reconciler::Event(const Json& object, bool warning, const std::string& reason, const std::string& message) {
  if (events_ == nullptr) return;
  const kube::ApiStatus s = warning ? events_->Warning(object, reason, message) : events_->Normal(object, reason, message);
  if (!s.ok()) spdlog::warn("event {} for {}: {}", reason, KeyOf(object), s.error().message);
}

Status Reconciler::PatchStatus(const Json& object, const api::BenchmarkRunStatus& status) {
  const Json patch = {{"status", api::ToJson(status)}};
  auto r = client_.Patch(kube::resources::BenchmarkRuns(), StringAt(object, {"metadata", "namespace"}),
                         StringAt(object, {"metadata", "name"}), kube::PatchType::kMerge, patch.dump(), {}, "status");
  const std::string key = KeyOf(object);
  if (!r.ok()) {
    // Refused by authorization: said once, as a Warning Event (Events are
    // a rule of their own), while the reconcile retries.
    if (r.error().reason == kube::Reason::kForbidden && status_forbidden_.insert(key).second) {
      Event(object, true, "StatusForbidden",
            "status not written: " + r.error().ToString() +
                " (the controller's Role must allow patch on benchmarkruns/status); retrying until it is allowed");
    }
    return Status::Unavailable("status of " + key + ": " + r.error().message);
  }
  if (status_forbidden_.erase(key) != 0) Event(object, false, "StatusWritten", "status written again after it was forbidden");
  return Status::Ok();
}

Status Reconciler::Cleanup(const Json& object) {
  const std::string ns = StringAt(object, {"metadata", "namespace"});
  kube::ListOptions selector;
  selector.label_selector = std::string(kRunLabel) + "=" + StringAt(object, {"metadata", "name"});
  kube::DeleteOptions now;
  now.grace_period_seconds = 0;
  now.propagation = kube::PropagationPolicy::kBackground;
  for (const kube::ResourceType& r : {kube::resources::Pods(), kube::resources::ConfigMaps()}) {
    auto d = client_.DeleteCollection(r, ns, selector, now);
    if (!d.ok() && d.error().reason != kube::Reason::kNotFound) {
      return Status::Unavailable("cleaning up " + KeyOf(object) + ": " + d.error().message);
    }
  }
  // Pods of a run in another namespace than the controller's pods.
  if (!options_.pod_namespace.empty() && options_.pod_namespace != ns) {
    kube::ListOptions elsewhere;
    elsewhere.label_selector = selector.label_selector + ",fairbench.dev/run-namespace=" + ns;
    auto d = client_.DeleteCollection(kube::resources::Pods(), options_.pod_namespace, elsewhere, now);
    if (!d.ok() && d.error().reason != kube::Reason::kNotFound) {
      return Status::Unavailable("cleaning up the pods of " + KeyOf(object) + ": " + d.error().message);
    }
  }
  return Status::Ok();
}

std::string Reconciler::NextRunnable() const {
  std::string best_key;
  std::string best_time;
  // Visited in place: with a thousand queued runs this runs for each of
  // them on a resync, so no copies.
  runs_.ForEach([&](const Json& o) {
    const auto phase = PhaseOf(o);
    if (phase != api::RunPhase::kQueued && phase != api::RunPhase::kRunning) return;
    if (BeingDeleted(o) || CancelRequested(o) || !HasFinalizer(o)) return;
    // RFC 3339 in UTC to the second: text order is time order.
    const std::string created = StringAt(o, {"metadata", "creationTimestamp"});
    const std::string key = KeyOf(o);
    if (best_key.empty() || created < best_time || (created == best_time && key < best_key)) {
      best_key = key;
      best_time = created;
    }
  });
  return best_key;
}

Reconciler::Outcome Reconciler::Reconcile(const std::string& key) {
  Outcome out;
  const std::optional<Json> cached = runs_.Get(key);
  const bool active = executor_.Active() == key;
  // 1. Gone.
  if (!cached) {
    if (active) executor_.Cancel(key);
    return out;
  }
  const Json& object = *cached;
  const std::string ns = StringAt(object, {"metadata", "namespace"});
  const std::string name = StringAt(object, {"metadata", "name"});

  // 2. Being deleted: stop it, remove what it created, let it go.
  if (BeingDeleted(object)) {
    if (active) {
      executor_.Cancel(key);
      out.requeue_after = std::chrono::milliseconds(200);
      return out;
    }
    if (!HasFinalizer(object)) return out;
    if (Status s = Cleanup(object); !s.ok()) {
      out.status = s;
      return out;
    }
    Json updated = object;
    Json& finalizers = updated["metadata"]["finalizers"];
    finalizers.erase(std::remove(finalizers.begin(), finalizers.end(), Json(kFinalizer)), finalizers.end());
    auto r = client_.Update(kube::resources::BenchmarkRuns(), updated);
    if (!r.ok() && r.error().reason != kube::Reason::kNotFound) {
      out.status = Status::Unavailable("removing the finalizer of " + key + ": " + r.error().message);
    }
    return out;
  }

  // 3. The finalizer, so that a deletion waits for the cleanup.
  if (!HasFinalizer(object)) {
    Json updated = object;
    updated["metadata"]["finalizers"].push_back(kFinalizer);
    auto r = client_.Update(kube::resources::BenchmarkRuns(), updated);
    // The informer brings the updated object back; it is reconciled then.
    if (!r.ok()) out.status = Status::Unavailable("adding the finalizer to " + key + ": " + r.error().message);
    return out;
  }

  // 4. Finished: nothing to do.
  const std::optional<api::RunPhase> phase = PhaseOf(object);
  if (Terminal(phase)) {
    if (active) executor_.Cancel(key);  // cannot happen unless someone rewrote the status
    // The cache has just learnt that a run finished: with the executor
    // idle, the next run goes (it may have been passed over while the
    // cache still showed this one runnable).
    if (!active && executor_.Active().empty()) out.also = NextRunnable();
    return out;
  }

  // 5. What the CRD schema lets through but the model refuses.
  auto run = api::FromKubernetesObject(object);
  if (!run.ok()) {
    out.status = FailInvalid(object, run.status().message());
    return out;
  }

  // 6. First seen: queued (a script's ConfigMap is looked for now, so that
  // a wrong name is a field error at once).
  if (!phase) {
    if (Status s = ReadScriptConfigMaps(ns, *run); !s.ok()) {
      out.status = s.code() == Status::Code::kInvalidArgument ? FailInvalid(object, s.message()) : s;
      return out;
    }
    api::BenchmarkRunStatus queued;
    queued.phase = api::RunPhase::kQueued;
    queued.observed_generation = Generation(object);
    queued.progress.total = static_cast<int64_t>(api::CountCells(run->spec));
    api::Condition c;
    c.type = "Queued";
    c.status = api::ConditionStatus::kTrue;
    c.reason = "Queued";
    c.message = "waiting for its turn: runs are executed one at a time, in order of creation";
    c.observed_generation = Generation(object);
    api::SetCondition(queued.conditions, c, WallNow());
    out.status = PatchStatus(object, queued);
    if (out.status.ok()) {
      Event(object, false, "Queued", std::to_string(queued.progress.total) + " cells queued");
      for (const std::string& w : api::Warnings(run->spec)) Event(object, true, "SpecWarning", w);
    }
    return out;
  }

  // 7. Cancel requested: the active run stops and keeps its record; a
  // queued one never starts.
  if (CancelRequested(object)) {
    if (active) {
      executor_.Cancel(key);
      return out;
    }
    api::BenchmarkRunStatus status = run->status;
    status.phase = api::RunPhase::kCancelled;
    status.completion_time = WallNow();
    status.current.reset();
    api::Condition c;
    c.type = "Progressing";
    c.status = api::ConditionStatus::kFalse;
    c.reason = "Cancelled";
    c.message = std::string("cancelled by the ") + kCancelAnnotation + " annotation before it ran";
    c.observed_generation = Generation(object);
    api::SetCondition(status.conditions, c, WallNow());
    out.status = PatchStatus(object, status);
    if (out.status.ok()) Event(object, false, "Cancelled", c.message);
    return out;
  }

  // 8. The executor's turn: the oldest runnable run goes first.
  if (!executor_.Active().empty()) return out;
  const std::string next = NextRunnable();
  if (next != key) {
    out.also = next;
    return out;
  }
  // The cache may lag the server (a watch cut, a relist after 410 not
  // done yet): the run just executed may still show Running there after
  // its final status was written. Starting it again would redo its setup
  // and rewrite a finished status, so the run is read from the server
  // first; the informer brings the newer state and it is reconciled then.
  auto live = client_.Get(kube::resources::BenchmarkRuns(), ns, name);
  if (!live.ok()) {
    if (live.error().reason == kube::Reason::kNotFound) return out;
    out.status = Status::Unavailable("reading " + key + " before starting it: " + live.error().ToString());
    return out;
  }
  const std::string live_uid = StringAt(*live, {"metadata", "uid"});
  const std::optional<api::RunPhase> live_phase = PhaseOf(*live);
  if (live_uid != StringAt(object, {"metadata", "uid"}) || BeingDeleted(*live) || CancelRequested(*live) ||
      !live_phase || Terminal(live_phase)) {
    spdlog::info("{}: the cache is behind the server (phase {} there); not starting it now", key,
                 StringAt(*live, {"status", "phase"}));
    // Looked at again soon: by then the cache has caught up and the next
    // runnable run is chosen from it.
    out.requeue_after = std::chrono::milliseconds(500);
    return out;
  }
  // The scripts as they are now: a ConfigMap edited while the run waited is
  // what it runs with.
  if (Status s = ReadScriptConfigMaps(ns, *run); !s.ok()) {
    out.status = s.code() == Status::Code::kInvalidArgument ? FailInvalid(object, s.message()) : s;
    return out;
  }
  out.status = executor_.Start(key, *run);
  if (out.status.ok()) spdlog::info("started {}", key);
  return out;
}

Status Reconciler::FailInvalid(const Json& object, const std::string& message) {
  api::BenchmarkRunStatus failed;
  failed.phase = api::RunPhase::kFailed;
  failed.observed_generation = Generation(object);
  failed.completion_time = WallNow();
  api::Condition c;
  c.type = "Failed";
  c.status = api::ConditionStatus::kTrue;
  c.reason = "InvalidSpec";
  c.message = message;
  c.observed_generation = Generation(object);
  api::SetCondition(failed.conditions, c, WallNow());
  Status s = PatchStatus(object, failed);
  if (s.ok()) Event(object, true, "InvalidSpec", message);
  return s;
}

Status Reconciler::ReadScriptConfigMaps(const std::string& ns, api::BenchmarkRun& run) {
  for (size_t i = 0; i < run.spec.scenarios.size(); ++i) {
    api::Scenario& sc = run.spec.scenarios[i];
    if (!sc.script || !sc.script->config_map_ref) continue;
    const api::ConfigMapKeyRef& ref = *sc.script->config_map_ref;
    const std::string field = "spec.scenarios[" + std::to_string(i) + "].script.configMapRef";
    auto cm = client_.Get(kube::resources::ConfigMaps(), ns, ref.name);
    if (!cm.ok()) {
      if (cm.error().reason == kube::Reason::kNotFound) {
        return Status::InvalidArgument(field + ".name: no ConfigMap \"" + ref.name + "\" in namespace \"" + ns + "\"");
      }
      return Status::Unavailable("reading ConfigMap " + ns + "/" + ref.name + " (" + field + "): " + cm.error().ToString());
    }
    const Json* value = Find(*cm, {"data", ref.key.c_str()});
    if (value == nullptr || !value->is_string()) {
      return Status::InvalidArgument(field + ".key: ConfigMap \"" + ref.name + "\" has no key \"" + ref.key + "\"");
    }
    sc.script->content = value->get<std::string>();
    if (sc.script->content.find_first_not_of(" \t\r\n") == std::string::npos) {
      return Status::InvalidArgument(field + ".key: the script in ConfigMap \"" + ref.name + "\" key \"" + ref.key + "\" is empty");
    }
  }
  return Status::Ok();
}

}  // namespace fairbench::controller
