// Well-known names: the words of fairbench's API that are not field names —
// the finalizer, the annotations and labels it puts on objects, the types
// and reasons of the conditions it sets, the reasons of the Events it
// records, and why a cell did not succeed (CellReason). Field names and the
// spellings of the API's other enums live in schema.h; Kubernetes' own
// words (pod phases, its condition types and container reasons) in
// controller/kube/api_fields.h.
//
// Each word is spelt here and nowhere else in the product's sources:
// well_known_test reads them and fails on a string literal elsewhere that
// spells one of these words, or any fairbench.dev/ or app.kubernetes.io/
// key. Users and scripts rely on them (`kubectl get br -l`, `kubectl wait
// --for=condition=Complete`, alerts on Event reasons): they change only
// with the API version.
//
// Constants and pure functions; thread-safe.
#pragma once

#include <array>
#include <optional>
#include <string_view>
#include <utility>

namespace fairbench::api {

// Holds a BenchmarkRun's deletion until what it created is gone.
inline constexpr char kFinalizer[] = "fairbench.dev/cleanup";

namespace annotation {
// `kubectl annotate br NAME fairbench.dev/cancel=true`: stop the run and
// keep its record (deleting the run removes the record too).
inline constexpr char kCancel[] = "fairbench.dev/cancel";
// A run's one-line description, shown at the top of its report.
inline constexpr char kDescription[] = "fairbench.dev/description";
// On each pod the controller creates: tells a create whose answer was lost
// from a pod that was there before.
inline constexpr char kCreateToken[] = "fairbench.dev/create-token";
// The record's ConfigMaps (controller/store/configmap_run_store.h).
inline constexpr char kResultsFormat[] = "fairbench.dev/results-format";
inline constexpr char kResultsGeneration[] = "fairbench.dev/results-generation";
inline constexpr char kResultsParts[] = "fairbench.dev/results-parts";
inline constexpr char kResultsPart[] = "fairbench.dev/results-part";
inline constexpr char kResultsBytes[] = "fairbench.dev/results-bytes";
inline constexpr char kResultsSha256[] = "fairbench.dev/results-sha256";
}  // namespace annotation

namespace label {
// Keys.
inline constexpr char kManagedBy[] = "app.kubernetes.io/managed-by";
inline constexpr char kName[] = "app.kubernetes.io/name";
inline constexpr char kComponent[] = "app.kubernetes.io/component";
inline constexpr char kRun[] = "fairbench.dev/run";
// On pods made for a run in another namespace than theirs: they carry no
// owner reference then (an owner must be in the same namespace, or the
// garbage collector deletes the pod), and cleanup finds them by this label.
inline constexpr char kRunNamespace[] = "fairbench.dev/run-namespace";
inline constexpr char kTarget[] = "fairbench.dev/target";
// Docker containers: "PID START-TIME" of the fairbench process that owns them.
inline constexpr char kOwner[] = "fairbench.dev/owner";
// The record's ConfigMaps: kResultsRecord or kReportRecord.
inline constexpr char kRecord[] = "fairbench.dev/record";
// Values.
inline constexpr char kFairbench[] = "fairbench";         // managed-by (pods, ConfigMaps, Secrets), and the CRD's name
inline constexpr char kFairbenchRun[] = "fairbench-run";  // managed-by of the Docker platform's containers
inline constexpr char kTargetApp[] = "fairbench-target";
inline constexpr char kAgentApp[] = "fairbench-agent";
inline constexpr char kCrdComponent[] = "crd";
inline constexpr char kResultsRecord[] = "results";
inline constexpr char kReportRecord[] = "report";
}  // namespace label

// The types of a BenchmarkRun's status.conditions.
namespace condition {
inline constexpr char kQueued[] = "Queued";            // waiting for its turn
inline constexpr char kProgressing[] = "Progressing";  // True while cells are being run
inline constexpr char kComplete[] = "Complete";        // every cell succeeded
inline constexpr char kFailed[] = "Failed";            // a cell failed, or the run could not be carried out
inline constexpr char kPlaced[] = "Placed";            // False: no node satisfies the placement
}  // namespace condition

// The reasons of conditions and of the Events recorded on a BenchmarkRun.
namespace reason {
// Conditions (and the Events that go with them).
inline constexpr char kQueued[] = "Queued";
inline constexpr char kStarted[] = "Started";
inline constexpr char kResumed[] = "Resumed";
inline constexpr char kFinished[] = "Finished";
inline constexpr char kCancelled[] = "Cancelled";
inline constexpr char kAllCellsSucceeded[] = "AllCellsSucceeded";
inline constexpr char kCellsFailed[] = "CellsFailed";
inline constexpr char kInvalidSpec[] = "InvalidSpec";
inline constexpr char kPlacementFailed[] = "PlacementFailed";
inline constexpr char kAgentTokenMissing[] = "AgentTokenMissing";
inline constexpr char kRunError[] = "RunError";
// Events only.
inline constexpr char kSpecWarning[] = "SpecWarning";
inline constexpr char kStatusForbidden[] = "StatusForbidden";
inline constexpr char kStatusWritten[] = "StatusWritten";
inline constexpr char kSlotTaken[] = "SlotTaken";
inline constexpr char kTargetScheduled[] = "TargetScheduled";
inline constexpr char kTargetReady[] = "TargetReady";
inline constexpr char kTargetNotReady[] = "TargetNotReady";
inline constexpr char kTargetExited[] = "TargetExited";
inline constexpr char kTargetOomKilled[] = "TargetOOMKilled";
inline constexpr char kVerificationFailed[] = "VerificationFailed";
inline constexpr char kCellFinished[] = "CellFinished";
inline constexpr char kCellFailed[] = "CellFailed";
inline constexpr char kRunSucceeded[] = "RunSucceeded";
inline constexpr char kRunFailed[] = "RunFailed";
inline constexpr char kRunCancelled[] = "RunCancelled";
inline constexpr char kResultStored[] = "ResultStored";
inline constexpr char kResultStoreFailed[] = "ResultStoreFailed";
}  // namespace reason

// Why a cell did not succeed (status.results[].reason; unset for a cell
// that succeeded).
enum class CellReason {
  kSlotUnavailable,     // the load slot was not had in time
  kSlotLost,            // the load slot was lost while the target was under load
  kDeployFailed,        // the platform could not start the target
  kNotReady,            // the target did not become ready
  kVerificationFailed,  // the target answered the scenario wrongly before any load
  kTargetExited,        // the target ended (exited, was killed, its pod went)
  kAgentsUnavailable,   // the agents could not be had
  kAgentTimeout,        // the agents did not finish in time
  kAgentFailed,         // an agent failed the cell
  kSloUnreachable,      // the objective is missed even at the first rate
  kCancelled,           // the run was cancelled during the cell
  kCpusNotExclusive,    // spec.placement.requireExclusiveCpus, and the target's CPUs were not proven its own
  kAnswersNotVerified,  // scenarios[].vary: sampled answers differed from what their requests asked for
  kCapacityUnknown,     // a rate given as a share of capacity, and the closed-loop cell that measures it failed
};

inline constexpr std::array<std::pair<CellReason, std::string_view>, 14> kCellReasonNames{{
    {CellReason::kSlotUnavailable, "SlotUnavailable"},
    {CellReason::kSlotLost, "SlotLost"},
    {CellReason::kDeployFailed, "DeployFailed"},
    {CellReason::kNotReady, "NotReady"},
    {CellReason::kVerificationFailed, "VerificationFailed"},
    {CellReason::kTargetExited, "TargetExited"},
    {CellReason::kAgentsUnavailable, "AgentsUnavailable"},
    {CellReason::kAgentTimeout, "AgentTimeout"},
    {CellReason::kAgentFailed, "AgentFailed"},
    {CellReason::kSloUnreachable, "SloUnreachable"},
    {CellReason::kCancelled, "Cancelled"},
    {CellReason::kCpusNotExclusive, "CpusNotExclusive"},
    {CellReason::kAnswersNotVerified, "AnswersNotVerified"},
    {CellReason::kCapacityUnknown, "CapacityUnknown"},
}};

// The API spelling ("SlotLost"); "" for none.
constexpr std::string_view ToString(std::optional<CellReason> r) {
  if (!r) return "";
  for (const auto& [value, name] : kCellReasonNames) {
    if (value == *r) return name;
  }
  return "";
}

}  // namespace fairbench::api
