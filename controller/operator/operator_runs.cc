#include "controller/operator/operator_runs.h"

#include <spdlog/spdlog.h>

#include "api/well_known.h"
#include "controller/store/configmap_run_store.h"

namespace fairbench::controller {

RunObservers::RunObservers(std::unique_ptr<StatusWriter> status, RunObserver* metrics,
                           std::shared_ptr<const KubernetesPlatform> platform, std::string run)
    : status_(std::move(status)),
      fanout_({status_.get(), metrics}),
      platform_(std::move(platform)),
      run_(std::move(run)) {}

void RunObservers::OnStage(const api::BenchmarkRun& run, const api::CurrentCell& c) {
  fanout_.OnStage(run, c);
  SyncNodes();
}

void RunObservers::OnLive(const api::CurrentCell& c, double rps, double elapsed) { fanout_.OnLive(c, rps, elapsed); }

void RunObservers::OnCellDone(const report::RunRecord& r, const report::CellRecord& c) {
  fanout_.OnCellDone(r, c);
  SyncNodes();
}

void RunObservers::OnMessage(const std::string& m) { fanout_.OnMessage(m); }

void RunObservers::OnTargetReady(const std::string& run, const std::string& target, const TargetPlacement& where) {
  fanout_.OnTargetReady(run, target, where);
  SyncNodes();
}

void RunObservers::OnInterval(const std::string& run, const api::CurrentCell& c, const Snapshot& s, api::Time end) {
  fanout_.OnInterval(run, c, s, end);
}

void RunObservers::OnTargetUsage(const std::string& run, const api::CurrentCell& c, const TargetUsage& u) {
  fanout_.OnTargetUsage(run, c, u);
}

void RunObservers::OnPersist(const report::RunRecord& r) {
  fanout_.OnPersist(r);
  SyncNodes();
}

void RunObservers::SyncNodes() {
  if (!platform_) return;
  const std::optional<k8s::NodeChoice> choice = platform_->node_choice(run_);
  if (!choice || choice->target_node.empty()) return;
  api::RunNodes nodes{choice->target_node, choice->agent_nodes};
  if (nodes == last_) return;
  last_ = nodes;
  status_->SetNodes(nodes);
}

OperatorRuns::OperatorRuns(kube::Client& client, kube::EventRecorder* events, RunStatusClient& run_status,
                           AgentTokenGate& token, std::shared_ptr<KubernetesPlatform> platform,
                           metrics::RunMetrics& run_metrics, std::function<bool()> may_write)
    : client_(client),
      events_(events),
      run_status_(run_status),
      token_(token),
      platform_(std::move(platform)),
      run_metrics_(run_metrics),
      may_write_(std::move(may_write)) {}

Result<RunParts> OperatorRuns::operator()(const api::BenchmarkRun& run) {
  if (Status s = token_.BeforeRun(); !s.ok()) {
    run_status_.Fail(run, api::reason::kAgentTokenMissing, s.message(), true);
    return s;
  }
  RunParts parts;
  parts.platform = platform_;
  auto store = std::make_unique<ConfigMapRunStore>(client_, ConfigMapRunStoreOptions::ForRun(run));
  ConfigMapRunStore* store_ptr = store.get();
  parts.store = std::move(store);
  StatusWriterOptions so = StatusWriterOptions::ForRun(run);
  so.may_write = may_write_;
  // The nodes recorded in status: a resumed run keeps them; a new run (or
  // one that never got that far) starts with no choice.
  k8s::NodeChoice kept;
  if (run.status.nodes) kept = k8s::NodeChoice{run.status.nodes->target, run.status.nodes->agents};
  platform_->SetNodeChoice(run.metadata.name, kept);
  auto writer = std::make_unique<StatusWriter>(client_, events_, so);
  if (run.status.nodes) writer->SetNodes(*run.status.nodes);
  auto observers = std::make_unique<RunObservers>(std::move(writer), &run_metrics_, platform_, run.metadata.name);
  RunObservers* observers_ptr = observers.get();
  parts.observer = std::move(observers);
  run_metrics_.RunQueued(run.metadata.name);
  parts.finish = [store_ptr, observers_ptr, &run_status = run_status_, run,
                  platform = platform_](const Result<report::RunRecord>& record) {
    // Its agents go: their CPUs are for the next run.
    if (Status s = platform->ReleaseRun(run.metadata.name); !s.ok()) {
      spdlog::warn("agents of {}: {}", run.metadata.name, s.message());
    }
    if (record.ok()) {
      if (Status s = store_ptr->SaveReport(*record); !s.ok())
        spdlog::error("report of {}: {}", run.metadata.name, s.message());
    } else {
      // The run could not be carried out at all (its stored record is
      // unreadable, or of another spec): Failed, naming why.
      run_status.Fail(run, api::reason::kRunError, record.status().message(), false);
    }
    if (Status s = observers_ptr->status().Flush(std::chrono::seconds(10)); !s.ok()) {
      spdlog::warn("status of {}: {}", run.metadata.name, s.message());
    }
  };
  return parts;
}

}  // namespace fairbench::controller
