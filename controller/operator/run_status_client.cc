#include "controller/operator/run_status_client.h"

#include <spdlog/spdlog.h>

#include "api/codec.h"
#include "api/conditions.h"
#include "api/well_known.h"
#include "common/mutex.h"

namespace fairbench::controller {
namespace {

using Json = nlohmann::json;

api::Time WallNow() { return std::chrono::time_point_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now()); }

}  // namespace

RunStatusClient::RunStatusClient(kube::Client& client, kube::EventRecorder* events, std::string field_manager)
    : client_(client), events_(events), field_manager_(std::move(field_manager)) {}

RunIdentity RunStatusClient::IdentityOf(const api::BenchmarkRun& run) {
  return RunIdentity{run.metadata.name, run.metadata.namespace_, run.metadata.uid};
}

Json RunStatusClient::ObjectOf(const RunIdentity& run) {
  Json md = {{"name", run.name}, {"namespace", run.namespace_}};
  if (!run.uid.empty()) md["uid"] = run.uid;
  return {{"apiVersion", std::string(api::kApiVersion)}, {"kind", std::string(api::kKind)}, {"metadata", md}};
}

void RunStatusClient::Warn(const RunIdentity& run, bool warning, const char* reason, const std::string& message) {
  if (events_ == nullptr) return;
  const kube::ApiStatus s =
      warning ? events_->Warning(ObjectOf(run), reason, message) : events_->Normal(ObjectOf(run), reason, message);
  if (!s.ok())
    spdlog::warn("BenchmarkRun {}/{}: Event {} not recorded: {}", run.namespace_, run.name, reason,
                 s.error().ToString());
}

kube::ApiResult<Json> RunStatusClient::Patch(const RunIdentity& run, const Json& fields) {
  const std::string ns = run.namespace_.empty() ? client_.default_namespace() : run.namespace_;
  kube::PatchOptions po;
  po.field_manager = field_manager_;
  auto result = client_.Patch(kube::resources::BenchmarkRuns(), ns, run.name, kube::PatchType::kMerge,
                              Json{{"status", fields}}.dump(), po, "status");
  const std::string key = ns + "/" + run.name;
  RunIdentity where = run;
  where.namespace_ = ns;
  if (!result.ok() && result.error().reason == kube::Reason::kForbidden) {
    bool first = false;
    {
      MutexLock lock(mu_);
      first = forbidden_.insert(key).second;
    }
    if (first) {
      Warn(where, true, api::reason::kStatusForbidden,
           "status not written: " + result.error().ToString() +
               " (the controller's Role must allow patch on benchmarkruns/status); retrying until it is allowed");
    }
  } else if (result.ok()) {
    bool again = false;
    {
      MutexLock lock(mu_);
      again = forbidden_.erase(key) != 0;
    }
    if (again) Warn(where, false, api::reason::kStatusWritten, "status written again after it was forbidden");
  }
  return result;
}

kube::ApiResult<Json> RunStatusClient::Write(const RunIdentity& run, const api::BenchmarkRunStatus& status) {
  return Patch(run, api::ToJson(status));
}

void RunStatusClient::Fail(const api::BenchmarkRun& run, const std::string& reason, const std::string& message,
                           bool event) {
  const api::Time now = WallNow();
  api::BenchmarkRunStatus failed = run.status;
  failed.phase = api::RunPhase::kFailed;
  failed.completion_time = now;
  failed.current.reset();
  api::Condition c;
  c.type = api::condition::kFailed;
  c.status = api::ConditionStatus::kTrue;
  c.reason = reason;
  c.message = message;
  c.observed_generation = run.metadata.generation;
  api::SetCondition(failed.conditions, c, now);
  const RunIdentity id = IdentityOf(run);
  auto written = Write(id, failed);
  if (!written.ok()) {
    spdlog::warn("BenchmarkRun {}/{}: status not written: {}", id.namespace_, id.name, written.error().ToString());
  }
  if (event) Warn(id, true, reason.c_str(), message);
}

}  // namespace fairbench::controller
