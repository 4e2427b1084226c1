// OperatorRuns: what the operator gives each BenchmarkRun it executes —
// the RunParts of executor.h. For each run:
//   platform  the one KubernetesPlatform (its node choice for the run set
//             from status.nodes: a resumed run keeps its nodes)
//   store     the run's record in ConfigMaps it owns
//   observer  RunObservers: the run's StatusWriter (writing only while
//             `may_write`, the leader) and the run metrics, and the node
//             choice copied to status.nodes as soon as the platform makes it
//   finish    the agents released, the report saved (or, when the run
//             could not be carried out at all, the run marked Failed with
//             reason RunError), the status flushed
// A run is refused (FailedPrecondition) while the agents' token cannot be
// had (AgentTokenGate): the run is marked Failed with reason
// AgentTokenMissing and a Warning Event.
//
// Called from the executor's thread; everything passed in must outlive it.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "controller/kube/client.h"
#include "controller/kube/event_recorder.h"
#include "controller/metrics/run_metrics.h"
#include "controller/operator/agent_token.h"
#include "controller/operator/executor.h"
#include "controller/operator/run_status_client.h"
#include "controller/operator/status_writer.h"
#include "controller/orchestrator/observer_fanout.h"
#include "controller/platform/kubernetes/kubernetes_platform.h"

namespace fairbench::controller {

// The status writer and the metrics of one run, as one observer. The
// platform's node choice for the run goes to status.nodes as soon as it is
// made (the target's at deploy, the agents' at their first cell).
class RunObservers final : public RunObserver {
 public:
  RunObservers(std::unique_ptr<StatusWriter> status, RunObserver* metrics,
               std::shared_ptr<const KubernetesPlatform> platform, std::string run);
  void OnStage(const api::BenchmarkRun& run, const api::CurrentCell& c) override;
  void OnLive(const api::CurrentCell& c, double rps, double elapsed) override;
  void OnCellDone(const report::RunRecord& r, const report::CellRecord& c) override;
  void OnMessage(const std::string& m) override;
  void OnTargetReady(const std::string& run, const std::string& target, const TargetPlacement& where) override;
  void OnInterval(const std::string& run, const api::CurrentCell& c, const Snapshot& s, api::Time end) override;
  void OnTargetUsage(const std::string& run, const api::CurrentCell& c, const TargetUsage& u) override;
  void OnPersist(const report::RunRecord& r) override;
  StatusWriter& status() { return *status_; }

 private:
  // Called from the orchestrator's thread only.
  void SyncNodes();

  std::unique_ptr<StatusWriter> status_;
  ObserverFanout fanout_;
  const std::shared_ptr<const KubernetesPlatform> platform_;
  const std::string run_;
  api::RunNodes last_;
};

class OperatorRuns {
 public:
  OperatorRuns(kube::Client& client, kube::EventRecorder* events, RunStatusClient& run_status, AgentTokenGate& token,
               std::shared_ptr<KubernetesPlatform> platform, metrics::RunMetrics& run_metrics,
               std::function<bool()> may_write);
  Result<RunParts> operator()(const api::BenchmarkRun& run);

 private:
  kube::Client& client_;
  kube::EventRecorder* const events_;
  RunStatusClient& run_status_;
  AgentTokenGate& token_;
  const std::shared_ptr<KubernetesPlatform> platform_;
  metrics::RunMetrics& run_metrics_;
  const std::function<bool()> may_write_;
};

}  // namespace fairbench::controller
