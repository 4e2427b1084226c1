#include "controller/operator/reconciler.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "api/cells.h"
#include "api/codec.h"
#include "api/conditions.h"
#include "api/grpc_calls.h"
#include "api/loader.h"
#include "api/validate.h"
#include "api/well_known.h"
#include "common/base64.h"
#include "controller/kube/api_fields.h"
#include "common/json_read.h"
#include "controller/operator/cached_run.h"

namespace fairbench::controller {
namespace {

using kube::Json;
namespace jr = json_read;
namespace f = kube::fields;

api::Time WallNow() { return std::chrono::time_point_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now()); }

bool Terminal(std::optional<api::RunPhase> p) {
  return p == api::RunPhase::kSucceeded || p == api::RunPhase::kFailed || p == api::RunPhase::kCancelled;
}

// Read straight from the object, not through a typed copy (CachedRun, as
// Reconcile reads its one run): NextRunnable asks them of every cached run
// on each resync, and the live check of a run about to start asks them of
// the server's object.
const Json& Metadata(const Json& object) { return jr::Object(object, f::kMetadata); }

bool HasFinalizer(const Json& object) {
  const Json& finalizers = jr::Array(Metadata(object), f::kFinalizers);
  return std::any_of(finalizers.begin(), finalizers.end(),
                     [](const Json& v) { return v.is_string() && v.get<std::string>() == api::kFinalizer; });
}

bool CancelRequested(const Json& object) {
  const std::string v = jr::String(jr::Object(Metadata(object), f::kAnnotations), api::annotation::kCancel);
  return !v.empty() && v != "false";
}

bool BeingDeleted(const Json& object) { return !jr::String(Metadata(object), f::kDeletionTimestamp).empty(); }

RunIdentity IdentityOf(const kube::ObjectMeta& meta) { return RunIdentity{meta.name, meta.namespace_, meta.uid}; }

}  // namespace

std::string KeyOf(const Json& object) { return kube::ObjectKey(object); }

std::optional<api::RunPhase> PhaseOf(const Json& object) {
  const std::string phase = jr::String(jr::Object(object, f::kStatus), f::kPhase);
  for (api::RunPhase p : {api::RunPhase::kQueued, api::RunPhase::kRunning, api::RunPhase::kSucceeded,
                          api::RunPhase::kFailed, api::RunPhase::kCancelled}) {
    if (phase == api::ToString(p)) return p;
  }
  return std::nullopt;
}

Reconciler::Reconciler(kube::Client& client, kube::Informer& runs, RunExecutor& executor, kube::EventRecorder* events,
                       ReconcilerOptions options)
    : client_(client),
      runs_(runs),
      executor_(executor),
      events_(events),
      options_(std::move(options)),
      status_(client, events, options_.field_manager) {}

void Reconciler::Event(const kube::ObjectMeta& meta, bool warning, const std::string& reason,
                       const std::string& message) {
  if (events_ == nullptr) return;
  const Json object = RunStatusClient::ObjectOf(IdentityOf(meta));
  const kube::ApiStatus s =
      warning ? events_->Warning(object, reason, message) : events_->Normal(object, reason, message);
  if (!s.ok()) spdlog::warn("event {} for {}: {}", reason, meta.Key(), s.error().message);
}

Status Reconciler::PatchStatus(const kube::ObjectMeta& meta, const api::BenchmarkRunStatus& status) {
  // A refusal by authorization is told once as an Event by the status
  // client (Events are a rule of their own), while the reconcile retries.
  auto r = status_.Write(IdentityOf(meta), status);
  if (!r.ok()) return Status::Unavailable("status of " + meta.Key() + ": " + r.error().message);
  return Status::Ok();
}

Status Reconciler::Cleanup(const kube::ObjectMeta& meta) {
  const std::string& ns = meta.namespace_;
  const std::string key = meta.Key();
  kube::ListOptions selector;
  selector.label_selector = std::string(api::label::kRun) + "=" + meta.name;
  kube::DeleteOptions now;
  now.grace_period_seconds = 0;
  now.propagation = kube::PropagationPolicy::kBackground;
  for (const kube::ResourceType& r : {kube::resources::Pods(), kube::resources::ConfigMaps()}) {
    auto d = client_.DeleteCollection(r, ns, selector, now);
    if (!d.ok() && d.error().reason != kube::Reason::kNotFound) {
      return Status::Unavailable("cleaning up " + key + ": " + d.error().message);
    }
  }
  // Pods of a run in another namespace than the controller's pods.
  if (!options_.pod_namespace.empty() && options_.pod_namespace != ns) {
    kube::ListOptions elsewhere;
    elsewhere.label_selector = selector.label_selector + "," + api::label::kRunNamespace + "=" + ns;
    auto d = client_.DeleteCollection(kube::resources::Pods(), options_.pod_namespace, elsewhere, now);
    if (!d.ok() && d.error().reason != kube::Reason::kNotFound) {
      return Status::Unavailable("cleaning up the pods of " + key + ": " + d.error().message);
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
    const std::string created = jr::String(Metadata(o), f::kCreationTimestamp);
    const std::string key = KeyOf(o);
    if (best_key.empty() || created < best_time || (created == best_time && key < best_key)) {
      best_key = key;
      best_time = created;
    }
  });
  return best_key;
}

Reconciler::Outcome Reconciler::Reconcile(const std::string& key) {
  const std::optional<Json> cached = runs_.Get(key);
  const bool active = executor_.Active() == key;
  // 1. Gone.
  if (!cached) {
    if (active) executor_.Cancel(key);
    return {};
  }
  auto parsed = CachedRun::Parse(*cached);
  if (!parsed.ok()) {
    // The API server would not store such an object: nothing to do but say so.
    spdlog::warn("{}: {}", key, parsed.status().message());
    return {};
  }
  CachedRun& run = *parsed;
  // 2. Being deleted: stop it, remove what it created, let it go.
  if (run.meta.deletion_timestamp) return Release(key, run, active);
  // 3. The finalizer, so that a deletion waits for the cleanup.
  if (!run.has_finalizer) return AddFinalizer(key, run);
  // 4. Finished: nothing to do.
  if (Terminal(run.phase)) return Finished(key, run, active);
  // 5. What the CRD schema lets through but the model refuses.
  if (!run.run.ok()) {
    Outcome out;
    out.status = FailInvalid(run.meta, run.run.status().message());
    return out;
  }
  // 6. First seen: queued.
  if (!run.phase) return Enqueue(run);
  // 7. Cancel requested: the active run stops and keeps its record; a
  // queued one never starts.
  if (run.cancel_requested) return CancelRun(key, run, active);
  // 8. The executor's turn: the oldest runnable run goes first.
  return StartIfNext(key, run);
}

Reconciler::Outcome Reconciler::Release(const std::string& key, const CachedRun& run, bool active) {
  Outcome out;
  if (active) {
    executor_.Cancel(key);
    out.requeue_after = std::chrono::milliseconds(200);
    return out;
  }
  if (!run.has_finalizer) return out;
  if (Status s = Cleanup(run.meta); !s.ok()) {
    out.status = s;
    return out;
  }
  Json updated = run.object;
  Json& finalizers = updated["metadata"]["finalizers"];
  finalizers.erase(std::remove(finalizers.begin(), finalizers.end(), Json(api::kFinalizer)), finalizers.end());
  auto r = client_.Update(kube::resources::BenchmarkRuns(), updated);
  if (!r.ok() && r.error().reason != kube::Reason::kNotFound) {
    out.status = Status::Unavailable("removing the finalizer of " + key + ": " + r.error().message);
  }
  return out;
}

Reconciler::Outcome Reconciler::AddFinalizer(const std::string& key, const CachedRun& run) {
  Outcome out;
  Json updated = run.object;
  updated["metadata"]["finalizers"].push_back(api::kFinalizer);
  auto r = client_.Update(kube::resources::BenchmarkRuns(), updated);
  // The informer brings the updated object back; it is reconciled then.
  if (!r.ok()) out.status = Status::Unavailable("adding the finalizer to " + key + ": " + r.error().message);
  return out;
}

Reconciler::Outcome Reconciler::Finished(const std::string& key, const CachedRun& run, bool active) {
  Outcome out;
  if (active) executor_.Cancel(key);  // cannot happen unless someone rewrote the status
  if (options_.on_finished && !active && !run.stored && run.run.ok()) options_.on_finished(*run.run);
  // The cache has just learnt that a run finished: with the executor
  // idle, the next run goes (it may have been passed over while the
  // cache still showed this one runnable).
  if (!active && executor_.Active().empty()) out.also = NextRunnable();
  return out;
}

// A script's ConfigMap is looked for now, so that a wrong name is a field
// error at once.
Reconciler::Outcome Reconciler::Enqueue(CachedRun& run) {
  Outcome out;
  const kube::ObjectMeta& meta = run.meta;
  if (Status s = ReadConfigMaps(meta.namespace_, *run.run); !s.ok()) {
    out.status = s.code() == Status::Code::kInvalidArgument ? FailInvalid(meta, s.message()) : s;
    return out;
  }
  api::BenchmarkRunStatus queued;
  queued.phase = api::RunPhase::kQueued;
  queued.observed_generation = meta.generation;
  queued.progress.total = static_cast<int64_t>(api::CountCells(run.run->spec));
  api::Condition c;
  c.type = api::condition::kQueued;
  c.status = api::ConditionStatus::kTrue;
  c.reason = api::reason::kQueued;
  c.message = "waiting for its turn: runs are executed one at a time, in order of creation";
  c.observed_generation = meta.generation;
  api::SetCondition(queued.conditions, c, WallNow());
  out.status = PatchStatus(meta, queued);
  if (out.status.ok()) {
    Event(meta, false, api::reason::kQueued, std::to_string(queued.progress.total) + " cells queued");
    for (const std::string& w : api::Warnings(run.run->spec)) Event(meta, true, api::reason::kSpecWarning, w);
  }
  return out;
}

Reconciler::Outcome Reconciler::CancelRun(const std::string& key, const CachedRun& run, bool active) {
  Outcome out;
  if (active) {
    executor_.Cancel(key);
    return out;
  }
  const kube::ObjectMeta& meta = run.meta;
  api::BenchmarkRunStatus status = run.run->status;
  status.phase = api::RunPhase::kCancelled;
  status.completion_time = WallNow();
  status.current.reset();
  api::Condition c;
  c.type = api::condition::kProgressing;
  c.status = api::ConditionStatus::kFalse;
  c.reason = api::reason::kCancelled;
  c.message = std::string("cancelled by the ") + api::annotation::kCancel + " annotation before it ran";
  c.observed_generation = meta.generation;
  api::SetCondition(status.conditions, c, WallNow());
  out.status = PatchStatus(meta, status);
  if (out.status.ok()) Event(meta, false, api::reason::kCancelled, c.message);
  return out;
}

Reconciler::Outcome Reconciler::StartIfNext(const std::string& key, CachedRun& run) {
  Outcome out;
  if (!executor_.Active().empty()) return out;
  const std::string next = NextRunnable();
  if (next != key) {
    out.also = next;
    return out;
  }
  if (std::optional<Outcome> not_now = ConfirmRunnable(key, run.meta)) return *not_now;
  // The scripts as they are now: a ConfigMap edited while the run waited is
  // what it runs with.
  if (Status s = ReadConfigMaps(run.meta.namespace_, *run.run); !s.ok()) {
    out.status = s.code() == Status::Code::kInvalidArgument ? FailInvalid(run.meta, s.message()) : s;
    return out;
  }
  out.status = executor_.Start(key, *run.run);
  if (out.status.ok()) spdlog::info("started {}", key);
  return out;
}

// The cache may lag the server (a watch cut, a relist after 410 not done
// yet): the run just executed may still show Running there after its final
// status was written. Starting it again would redo its setup and rewrite a
// finished status, so the run is read from the server first; the informer
// brings the newer state and it is reconciled then. nullopt: still runnable.
std::optional<Reconciler::Outcome> Reconciler::ConfirmRunnable(const std::string& key, const kube::ObjectMeta& meta) {
  Outcome out;
  auto live = client_.Get(kube::resources::BenchmarkRuns(), meta.namespace_, meta.name);
  if (!live.ok()) {
    if (live.error().reason == kube::Reason::kNotFound) return out;
    out.status = Status::Unavailable("reading " + key + " before starting it: " + live.error().ToString());
    return out;
  }
  const std::string live_uid = jr::String(Metadata(*live), f::kUid);
  const std::optional<api::RunPhase> live_phase = PhaseOf(*live);
  if (live_uid != meta.uid || BeingDeleted(*live) || CancelRequested(*live) || !live_phase || Terminal(live_phase)) {
    spdlog::info("{}: the cache is behind the server (phase {} there); not starting it now", key,
                 jr::String(jr::Object(*live, f::kStatus), f::kPhase));
    // Looked at again soon: by then the cache has caught up and the next
    // runnable run is chosen from it.
    out.requeue_after = std::chrono::milliseconds(500);
    return out;
  }
  return std::nullopt;
}

Status Reconciler::FailInvalid(const kube::ObjectMeta& meta, const std::string& message) {
  api::BenchmarkRunStatus failed;
  failed.phase = api::RunPhase::kFailed;
  failed.observed_generation = meta.generation;
  failed.completion_time = WallNow();
  api::Condition c;
  c.type = api::condition::kFailed;
  c.status = api::ConditionStatus::kTrue;
  c.reason = api::reason::kInvalidSpec;
  c.message = message;
  c.observed_generation = meta.generation;
  api::SetCondition(failed.conditions, c, WallNow());
  Status s = PatchStatus(meta, failed);
  if (s.ok()) Event(meta, true, api::reason::kInvalidSpec, message);
  return s;
}

Result<std::string> Reconciler::ReadConfigMapKey(const std::string& ns, const api::ConfigMapKeyRef& ref,
                                                 const std::string& field, bool binary) {
  auto cm = client_.Get(kube::resources::ConfigMaps(), ns, ref.name);
  if (!cm.ok()) {
    if (cm.error().reason == kube::Reason::kNotFound) {
      return Status::InvalidArgument(field + ".name: no ConfigMap \"" + ref.name + "\" in namespace \"" + ns + "\"");
    }
    return Status::Unavailable("reading ConfigMap " + ns + "/" + ref.name + " (" + field +
                               "): " + cm.error().ToString());
  }
  // Text is under data; bytes (a descriptor set) under binaryData, base64
  // as the API server keeps them (kubectl create configmap --from-file puts
  // a file that is not UTF-8 there).
  const Json& data = jr::Object(*cm, f::kData);
  if (const auto value = data.find(ref.key); value != data.end() && value->is_string())
    return value->get<std::string>();
  if (binary) {
    const Json& bytes = jr::Object(*cm, f::kBinaryData);
    if (const auto value = bytes.find(ref.key); value != bytes.end() && value->is_string()) {
      auto decoded = Base64Decode(value->get<std::string>());
      if (!decoded.ok()) return Status::InvalidArgument(field + ".key: binaryData \"" + ref.key + "\" is not base64");
      return std::move(decoded).value();
    }
  }
  return Status::InvalidArgument(field + ".key: ConfigMap \"" + ref.name + "\" has no key \"" + ref.key + "\"");
}

Status Reconciler::ReadConfigMaps(const std::string& ns, api::BenchmarkRun& run) {
  for (size_t i = 0; i < run.spec.scenarios.size(); ++i) {
    api::Scenario& sc = run.spec.scenarios[i];
    const std::string at = "spec.scenarios[" + std::to_string(i) + "]";
    if (sc.grpc && sc.grpc->descriptor_set_config_map_ref) {
      auto bytes =
          ReadConfigMapKey(ns, *sc.grpc->descriptor_set_config_map_ref, at + ".grpc.descriptorSetConfigMapRef", true);
      if (!bytes.ok()) return bytes.status();
      sc.grpc->descriptor_set_content = std::move(bytes).value();
    }
    if (!sc.script || !sc.script->config_map_ref) continue;
    const api::ConfigMapKeyRef& ref = *sc.script->config_map_ref;
    const std::string field = at + ".script.configMapRef";
    auto text = ReadConfigMapKey(ns, ref, field, false);
    if (!text.ok()) return text.status();
    sc.script->content = std::move(text).value();
    if (sc.script->content.find_first_not_of(" \t\r\n") == std::string::npos) {
      return Status::InvalidArgument(field + ".key: the script in ConfigMap \"" + ref.name + "\" key \"" + ref.key +
                                     "\" is empty");
    }
  }
  // What each gRPC call sends, now that its descriptor set is here.
  const api::Diagnostics grpc = api::ResolveGrpcCalls(run);
  if (!grpc.empty()) return Status::InvalidArgument(grpc.items().front().path + ": " + grpc.items().front().message);
  return Status::Ok();
}

}  // namespace fairbench::controller
