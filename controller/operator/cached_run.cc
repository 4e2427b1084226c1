#include "controller/operator/cached_run.h"

#include <algorithm>

#include "api/loader.h"
#include "api/well_known.h"
#include "controller/kube/api_fields.h"
#include "common/json_read.h"
#include "controller/operator/reconciler.h"

namespace fairbench::controller {
namespace {

using kube::Json;

// status.stored.id, when it is a positive integer: the result store has
// the run's record.
bool StoredIdOf(const Json& object) {
  const auto st = object.find("status");
  if (st == object.end() || !st->is_object()) return false;
  const auto sd = st->find("stored");
  if (sd == st->end() || !sd->is_object()) return false;
  const auto id = sd->find("id");
  return id != sd->end() && id->is_number_integer() && id->get<int64_t>() > 0;
}

}  // namespace

bool CancelRequested(const kube::ObjectMeta& meta) {
  const auto it = meta.annotations.find(api::annotation::kCancel);
  return it != meta.annotations.end() && !it->second.empty() && it->second != "false";
}

Result<CachedRun> CachedRun::Parse(Json object) {
  auto meta = kube::ObjectMeta::FromJson(json_read::Object(object, kube::fields::kMetadata));
  if (!meta.ok()) return meta.status();
  CachedRun view;
  view.meta = std::move(meta).value();
  view.has_finalizer = std::find(view.meta.finalizers.begin(), view.meta.finalizers.end(), api::kFinalizer) !=
                       view.meta.finalizers.end();
  view.cancel_requested = CancelRequested(view.meta);
  view.phase = PhaseOf(object);
  view.stored = StoredIdOf(object);
  view.run = api::FromKubernetesObject(object);
  view.object = std::move(object);
  return view;
}

}  // namespace fairbench::controller
