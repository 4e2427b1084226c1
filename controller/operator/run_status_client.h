// RunStatusClient: the one way a BenchmarkRun's status reaches the API
// server — a JSON merge patch (application/merge-patch+json) on the status
// subresource, with the controller's field manager. The reconciler (Queued,
// Cancelled, a spec the model refuses), the status writer of the run being
// executed and the controller's own failures of a run (a missing agent
// token, a record that cannot be read) all write through it.
//
// A refusal by authorization (403: the Role lacks patch on
// benchmarkruns/status) is told once per run as a Warning Event
// StatusForbidden, and the first write that succeeds after it as a Normal
// StatusWritten: the user sees why the status stands still, without an
// Event per retry. What to do after a failure (retry, give up) is the
// caller's.
//
// Thread-safe. The client and the recorder (null: no Events) must outlive
// it.
#pragma once

#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/benchmark_run.h"
#include "common/mutex.h"
#include "controller/kube/client.h"
#include "controller/kube/event_recorder.h"
#include "controller/platform/platform.h"

namespace fairbench::controller {

class RunStatusClient {
 public:
  RunStatusClient(kube::Client& client, kube::EventRecorder* events,
                  std::string field_manager = "fairbench-controller");

  // Merges `fields` (status fields as the codec writes them; a null
  // removes one) into the status of `run` (its namespace: the client's
  // default when empty).
  kube::ApiResult<nlohmann::json> Patch(const RunIdentity& run, const nlohmann::json& fields);
  // The whole of `status` (api::ToJson), merged: a field it leaves unset is
  // left as it is on the server.
  kube::ApiResult<nlohmann::json> Write(const RunIdentity& run, const api::BenchmarkRunStatus& status);

  // Marks `run` Failed (completion time now, no current cell) with the
  // condition {Failed, True, reason, message} and, when `event`, a Warning
  // Event of that reason. A failure to write is logged, not returned: the
  // run is already being given up.
  void Fail(const api::BenchmarkRun& run, const std::string& reason, const std::string& message, bool event);

  // The Event's object for `run`: apiVersion, kind, metadata {name,
  // namespace, uid}.
  static nlohmann::json ObjectOf(const RunIdentity& run);
  static RunIdentity IdentityOf(const api::BenchmarkRun& run);

 private:
  void Warn(const RunIdentity& run, bool warning, const char* reason, const std::string& message);

  kube::Client& client_;
  kube::EventRecorder* const events_;
  const std::string field_manager_;
  Mutex mu_;
  std::set<std::string> forbidden_ GUARDED_BY(mu_);  // "ns/name" of runs whose 403 was told
};

}  // namespace fairbench::controller
