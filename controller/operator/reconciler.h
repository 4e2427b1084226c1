// Reconciler: the level-based reconcile of BenchmarkRuns. For one key
// ("namespace/name") it looks at the object as the informer's cache has it
// (read once into a CachedRun) and moves it one step towards where it
// should be:
//
//   gone from the cache      the active run with that key is cancelled
//   being deleted            cancelled if active (and revisited until the
//                            executor let go of it); then everything the run
//                            created (pods, ConfigMaps with its label) is
//                            deleted and the finalizer removed
//   no finalizer             the finalizer is added
//   terminal phase           nothing (Succeeded, Failed, Cancelled), but
//                            offered to the result store (on_finished)
//                            while its status names no stored id
//   refused by the model     Failed, with a condition and a Warning event
//                            naming the field, as `fairbench run` names it
//   no phase                 Queued, with a condition and an event
//   cancel annotation        the active run is cancelled (its record is
//                            kept); a queued one becomes Cancelled
//   executor idle            the oldest runnable run (creation time, then
//                            namespace/name) is handed to the executor,
//                            once a read from the server confirms that it
//                            is still runnable (the cache may lag: a run
//                            just finished must not start again)
//
// Runs are executed one at a time, in order of creation. The executor
// writes the status of the run it executes; the reconciler writes the
// status of the others. Status goes through the status subresource as a
// merge patch (RunStatusClient). Idempotent: reconciling the same state twice changes
// nothing. Called from one worker thread.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "api/benchmark_run.h"
#include "common/status.h"
#include "controller/kube/client.h"
#include "controller/kube/event_recorder.h"
#include "controller/kube/informer.h"
#include "controller/operator/cached_run.h"
#include "controller/operator/run_status_client.h"

namespace fairbench::controller {

// The one run being executed (the orchestrator on its own thread).
class RunExecutor {
 public:
  virtual ~RunExecutor() = default;
  // The key of the run being executed; "" when idle.
  virtual std::string Active() const = 0;
  // Starts executing `run` in the background; returns at once.
  virtual Status Start(const std::string& key, const api::BenchmarkRun& run) = 0;
  // Asks the active run to stop (its load within a second); the executor
  // writes its final status and becomes idle.
  virtual void Cancel(const std::string& key) = 0;
};

struct ReconcilerOptions {
  std::string field_manager = "fairbench-controller";
  // Where the controller puts pods; runs in other namespaces have theirs
  // found there by label at cleanup. Empty: the run's own namespace.
  std::string pod_namespace;
  // Called with each run seen in a terminal phase whose status names no
  // stored id (ResultArchiver::Offer); null: no result store.
  std::function<void(const api::BenchmarkRun&)> on_finished;
};

class Reconciler {
 public:
  Reconciler(kube::Client& client, kube::Informer& runs, RunExecutor& executor, kube::EventRecorder* events,
             ReconcilerOptions options = {});

  struct Outcome {
    Status status;  // not OK: retry with backoff
    // Revisit this key after this long (a deletion waiting for the executor).
    std::chrono::milliseconds requeue_after{0};
    // Another key to visit (the oldest queued run, when this one was not it).
    std::string also;
  };
  Outcome Reconcile(const std::string& key);

  // The runnable run that goes next: the oldest by creation time, then key;
  // "" when none.
  std::string NextRunnable() const;

 private:
  // The steps of Reconcile, one per state of the cached object (see above).
  Outcome Release(const std::string& key, const CachedRun& run, bool active);
  Outcome AddFinalizer(const std::string& key, const CachedRun& run);
  Outcome Finished(const std::string& key, const CachedRun& run, bool active);
  Outcome Enqueue(CachedRun& run);
  Outcome CancelRun(const std::string& key, const CachedRun& run, bool active);
  Outcome StartIfNext(const std::string& key, CachedRun& run);
  // Reads the run from the server before it starts; an outcome when the
  // server does not show it runnable (the cache lags).
  std::optional<Outcome> ConfirmRunnable(const std::string& key, const kube::ObjectMeta& meta);

  Status PatchStatus(const kube::ObjectMeta& meta, const api::BenchmarkRunStatus& status);
  // Reads each scenario's script.configMapRef and grpc.descriptorSetConfigMapRef
  // from the run's namespace into the script's and the descriptor set's
  // content, then resolves the gRPC calls (api::ResolveGrpcCalls).
  // InvalidArgument (naming the field) when a ConfigMap or its key is
  // missing or a call cannot be made; Unavailable when the API failed.
  Status ReadConfigMaps(const std::string& ns, api::BenchmarkRun& run);
  // One key of a ConfigMap: data, or with `binary` also binaryData (decoded).
  Result<std::string> ReadConfigMapKey(const std::string& ns, const api::ConfigMapKeyRef& ref, const std::string& field,
                                       bool binary);
  // Marks the run Failed with reason InvalidSpec.
  Status FailInvalid(const kube::ObjectMeta& meta, const std::string& message);
  Status Cleanup(const kube::ObjectMeta& meta);
  void Event(const kube::ObjectMeta& meta, bool warning, const std::string& reason, const std::string& message);

  kube::Client& client_;
  kube::Informer& runs_;
  RunExecutor& executor_;
  kube::EventRecorder* events_;
  const ReconcilerOptions options_;
  RunStatusClient status_;
};

// "ns/name" of an object.
std::string KeyOf(const kube::Json& object);
// The phase in an object's status; nullopt when none is set yet.
std::optional<api::RunPhase> PhaseOf(const kube::Json& object);

}  // namespace fairbench::controller
