// StatusWriter: a RunObserver that keeps a BenchmarkRun's `status` on the
// API server up to date while the orchestrator runs it, and records the
// Events a user cares about.
//
// Status goes through the status subresource as a JSON merge patch
// (RunStatusClient: application/merge-patch+json on
// .../benchmarkruns/NAME/status), encoded by the API model's codec (api::ToJson(BenchmarkRunStatus)): phase,
// observedGeneration, current {target, scenario, connections, repetition,
// stage}, nodes {target, agents}, progress / completedCells / totalCells, startTime,
// completionTime, results, cpus, conditions. A patch carries the top-level fields
// that changed since the last write this writer made (all of them on its
// first write), with null for a field that is no longer set, so the stored
// status equals the writer's whole status afterwards.
//
// Where each part comes from:
//   OnPersist   the record's status as a whole (after every save); current
//               is kept while the phase is Running and cleared otherwise
//   OnCellDone  the record's status (results, progress)
//   OnStage     the run's status and the new current cell and stage
//   OnLive      current only
//   OnTargetReady  the TargetScheduled and TargetReady Events
//   OnMessage, OnInterval, OnTargetUsage: ignored
//   SetNodes    status.nodes (the record does not carry them)
// Conditions the writer itself derives (PlacementFailed, below) and the
// nodes are kept on every status it writes, whatever the record carries.
//
// Writes happen on the writer's own thread: observer calls only update the
// wanted status under a mutex and return (they never wait for the API).
// The wanted status is one value, so a queue of changes coalesces by
// construction: the newest wins. Rate limits: at most one write per
// `live_interval` (1 s) while only `current` changed; a change of stage,
// a finished cell or a saved record goes out once `min_interval` (200 ms)
// has passed since the previous write; Flush writes at once. A failed
// write (409, 429, 5xx, transport error, timeout) is retried with backoff
// (429: after its Retry-After), always with the newest status, one warning
// line per retry (verb, path, code, wait). A failure other than 409, 429
// and 503 may have taken effect, so the write after it sends every field:
// a patch against the status last known written could leave out a field
// the lost write set and the newer status clears; 404 (the run is gone) and 400/422 (the
// server refuses the status) drop that version and keep the error in
// stats(). Only while `may_write()` is true is anything written (the
// leader); until then the newest status waits and Events are dropped.
//
// Events (through kube::EventRecorder, on the writer thread; bounded queue,
// oldest dropped first):
//   Normal  SlotTaken          a target went from WaitingForSlot to Deploying:
//                              "load slot taken for target drogon"
//   Normal  TargetScheduled    "target drogon scheduled on node N"    } from
//   Normal  TargetReady        "target drogon is ready on HOST:PORT"  } OnTargetReady
//           (each once per target and slot attempt: a new WaitingForSlot
//           starts a new attempt)
//   Warning PlacementFailed    a cell failed with DeployFailed or
//                              AgentsUnavailable whose message is the node
//                              picker's ("spec.placement…"); also sets the
//                              condition {type: Placed, status: False,
//                              reason: PlacementFailed, message: the picker's}
//   Normal  CellFinished       a cell succeeded: "drogon/hello/c100/r1: 123456.7 requests/s"
//   Warning TargetNotReady     cells failed with NotReady          } once per
//   Warning VerificationFailed cells skipped with VerificationFailed} target and
//   Warning TargetOOMKilled    TargetExited, the kernel's OOM kill  } reason
//                              (the cell's target_exit)             }
//   Warning TargetExited       other TargetExited                   }
//   Warning CellFailed         any other failed cell (its reason and message;
//                              once per target, reason and message)
//   Normal  RunSucceeded / Warning RunFailed / Normal RunCancelled, once,
//           when a saved record first carries that phase
//
// OnLive before the first whole status (OnPersist, OnStage, OnCellDone)
// writes nothing: a patch of current alone would null the other fields.
//
// Thread-safe. The client, the recorder and may_write must outlive the
// writer; destroying it (or Stop) ends the thread without writing what is
// still pending — call Flush first. Stop waits for a write in flight
// (bounded by the client's timeout).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api/benchmark_run.h"
#include "common/backoff.h"
#include "common/mutex.h"
#include "controller/kube/client.h"
#include "controller/kube/event_recorder.h"
#include "controller/operator/run_status_client.h"
#include "controller/orchestrator/run_observer.h"

namespace fairbench::controller {

struct StatusWriterOptions {
  std::string ns;    // the run's namespace; empty: the client's default namespace
  std::string name;  // the BenchmarkRun's name
  std::string uid;   // for the Events' involvedObject
  // The leader gate: nothing is written while it returns false. Null: always true.
  std::function<bool()> may_write;
  std::chrono::milliseconds live_interval{1000};
  std::chrono::milliseconds min_interval{200};
  BackoffPolicy retry_backoff{std::chrono::milliseconds(200), std::chrono::milliseconds(10000), 2.0, 0.2};
  size_t event_queue_limit = 64;
  std::string field_manager = "fairbench-controller";

  // ns, name and uid from the run's metadata.
  static StatusWriterOptions ForRun(const api::BenchmarkRun& run);
};

struct StatusWriterStats {
  uint64_t writes = 0;          // status patches the server accepted
  uint64_t failed_writes = 0;   // attempts that failed (each retried or dropped)
  uint64_t events = 0;          // Events recorded
  uint64_t events_dropped = 0;  // queue full, not the leader, or the API refused
  std::string last_error;       // of the latest failed write or Event
};

class StatusWriter final : public RunObserver {
 public:
  // `events` may be null (no Events). Starts the writer thread.
  StatusWriter(kube::Client& client, kube::EventRecorder* events, StatusWriterOptions options);
  ~StatusWriter() override;
  StatusWriter(const StatusWriter&) = delete;
  StatusWriter& operator=(const StatusWriter&) = delete;

  void OnStage(const api::BenchmarkRun& run, const api::CurrentCell& current) override;
  void OnLive(const api::CurrentCell& current, double requests_per_second, double elapsed_seconds) override;
  void OnCellDone(const report::RunRecord& record, const report::CellRecord& cell) override;
  void OnMessage(const std::string& message) override;
  void OnTargetReady(const std::string& run, const std::string& target, const TargetPlacement& where) override;
  void OnPersist(const report::RunRecord& record) override;

  // The run's nodes (status.nodes), kept on every status written from now
  // on; written at once when a whole status is known already.
  void SetNodes(const api::RunNodes& nodes);

  // Waits until the newest status and every queued Event are written,
  // writing without the rate limits; DeadlineExceeded (naming the last
  // error, or that this controller may not write) after `timeout`.
  [[nodiscard]] Status Flush(std::chrono::milliseconds timeout);
  // Ends the writer thread; idempotent.
  void Stop();
  StatusWriterStats stats() const;

  // The merge patch that makes a stored status equal `status`, given what
  // the previous write left there (`previous`: api::ToJson of the status
  // last written; null when unknown — then every field is written or
  // nulled). Empty when nothing changed.
  static nlohmann::json StatusPatch(const nlohmann::json& status_json, const nlohmann::json& previous);

 private:
  struct PendingEvent {
    bool warning = false;
    std::string reason;
    std::string message;
  };

  void Run();
  // Under mu_: the wanted status changed.
  void ChangedLocked(bool urgent) REQUIRES(mu_);
  void EnqueueLocked(bool warning, std::string reason, std::string message) REQUIRES(mu_);
  void CellEventsLocked(const report::CellRecord& cell) REQUIRES(mu_);
  void RunEventLocked(const api::BenchmarkRunStatus& status) REQUIRES(mu_);
  void StageEventsLocked(const api::CurrentCell& current) REQUIRES(mu_);
  // Adds the writer's own conditions and the nodes to `status`.
  void ApplyOwnLocked(api::BenchmarkRunStatus& status) const REQUIRES(mu_);
  bool MayWrite() const;
  RunIdentity Identity() const;

  kube::EventRecorder* events_;
  const StatusWriterOptions options_;
  const std::string ns_;
  RunStatusClient status_client_;

  mutable Mutex mu_;
  CondVar cv_;
  api::BenchmarkRunStatus wanted_ GUARDED_BY(mu_);
  bool have_wanted_ GUARDED_BY(mu_) = false;
  uint64_t version_ GUARDED_BY(mu_) = 0;  // bumped by every change
  uint64_t written_version_ GUARDED_BY(mu_) = 0;
  bool urgent_ GUARDED_BY(mu_) = false;  // a change beyond current
  std::deque<PendingEvent> queue_ GUARDED_BY(mu_);
  bool event_in_flight_ GUARDED_BY(mu_) = false;
  int flush_waiters_ GUARDED_BY(mu_) = 0;
  bool stop_ GUARDED_BY(mu_) = false;
  std::set<std::string> announced_ GUARDED_BY(mu_);               // (target, reason) and run outcomes
  std::map<std::string, api::Stage> last_stage_ GUARDED_BY(mu_);  // by target
  std::map<std::string, int> attempt_ GUARDED_BY(mu_);            // slot attempts by target
  std::vector<api::Condition> own_conditions_ GUARDED_BY(mu_);
  std::optional<api::RunNodes> nodes_ GUARDED_BY(mu_);
  StatusWriterStats stats_ GUARDED_BY(mu_);
  nlohmann::json written_json_;  // writer thread only: the status last written
  std::thread thread_;
};

}  // namespace fairbench::controller
