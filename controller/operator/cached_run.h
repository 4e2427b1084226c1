// CachedRun: a BenchmarkRun as the informer's cache holds it, read once for
// one reconcile. The reconciler's steps ask it what they need (the
// metadata, the finalizer, the phase, the cancel annotation, whether the
// record is stored, the model's reading of the whole object) instead of
// reading the JSON each on its own.
//
// The metadata and the status fields are read as the API server writes
// them, even when the model refuses the object (a run whose spec the model
// refuses still has a phase and can still be deleted); `run` holds the
// model's reading, or why it refuses it. A value: no references into the
// cache.
#pragma once

#include <optional>

#include "api/benchmark_run.h"
#include "common/status.h"
#include "controller/kube/objects.h"

namespace fairbench::controller {

struct CachedRun {
  kube::Json object;  // as cached: the finalizer's updates start from it
  kube::ObjectMeta meta;
  bool has_finalizer = false;
  bool cancel_requested = false;       // the cancel annotation, set and not "false"
  std::optional<api::RunPhase> phase;  // status.phase; nullopt: none yet
  bool stored = false;                 // status.stored.id names the run's record in the result store
  Result<api::BenchmarkRun> run = Status::Internal("not read");  // api::FromKubernetesObject

  // Error: the metadata cannot be read (the API server would not store
  // such an object).
  static Result<CachedRun> Parse(kube::Json object);
};

// Whether the cancel annotation asks the run to stop.
bool CancelRequested(const kube::ObjectMeta& meta);

}  // namespace fairbench::controller
