// Orchestrator::TargetVisit: one visit of one target, from taking the load
// slot to its teardown. Each step below is one stage of the visit in the
// order Run() takes them; a step that ends the visit early says how
// (TargetOutcome) and has already recorded what its cells became.
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "controller/orchestrator/cell_jobs.h"
#include "controller/orchestrator/cpu_verdict.h"
#include "controller/orchestrator/orchestrator.h"
#include "controller/orchestrator/run_state.h"

namespace fairbench::controller {

using api::CellReason;
using api::CellState;
using api::Stage;

class Orchestrator::TargetVisit {
 public:
  TargetVisit(Orchestrator& o, RunState& state, size_t target_index, const std::vector<const api::Cell*>& todo,
              Status* error)
      : o_(o),
        state_(state),
        run_(state.run),
        target_(state.run.spec.targets[target_index]),
        target_index_(target_index),
        todo_(todo),
        error_(error),
        stop_(o.stop_.get_token()) {}

  TargetOutcome Run();

 private:
  std::optional<TargetOutcome> TakeSlot();
  std::optional<TargetOutcome> DeployAndWaitReady();
  void AnnounceReady();
  bool CpusAllowed();
  void VerifyScenarios();
  void CheckScenario(const api::Cell& cell);
  void SampleIdleMemory();
  TargetOutcome RunCells();
  std::optional<TargetOutcome> RunCellAt(size_t i);

  // Saves one finished cell (the cell file, then the whole record); false
  // when the store failed (*error_ says why): the visit stops.
  bool RecordCell(const api::Cell& cell, report::CellRecord rec);
  // Records cells todo_[from..] as not run, all for the same reason.
  void FailRest(size_t from, CellState cell_state, CellReason reason, const std::string& message,
                const std::optional<report::TargetExit>& exit = std::nullopt);
  // Stops and removes the target; a failure is reported, not hidden: in the
  // log and in the record's notes (kept by Describe() as a "target " note).
  void Teardown(TargetInstance& instance);

  Orchestrator& o_;
  RunState& state_;
  const api::BenchmarkRun& run_;
  const api::Target& target_;
  const size_t target_index_;
  const std::vector<const api::Cell*>& todo_;
  Status* error_;
  const std::stop_token stop_;
  // Released after the instance is gone (members go in reverse order).
  std::unique_ptr<LoadSlot> slot_;
  std::unique_ptr<TargetInstance> instance_;
  TargetPlacement where_;
  std::map<size_t, std::string> broken_;  // scenario index → why it failed its check ("" passed)
  std::optional<uint64_t> memory_idle_;
};

Orchestrator::TargetOutcome Orchestrator::RunTarget(RunState& state, size_t target_index,
                                                    const std::vector<const api::Cell*>& todo, Status* error) {
  return TargetVisit(*this, state, target_index, todo, error).Run();
}

Orchestrator::TargetOutcome Orchestrator::TargetVisit::Run() {
  if (std::optional<TargetOutcome> ended = TakeSlot()) return *ended;
  if (std::optional<TargetOutcome> ended = DeployAndWaitReady()) return *ended;
  AnnounceReady();
  if (!CpusAllowed()) return TargetOutcome::kDone;
  VerifyScenarios();
  SampleIdleMemory();
  const TargetOutcome outcome = RunCells();
  Teardown(*instance_);
  return outcome;
}

bool Orchestrator::TargetVisit::RecordCell(const api::Cell& cell, report::CellRecord rec) {
  if (Status s = state_.store.SaveCell(cell, rec); !s.ok()) {
    *error_ = s;
    return false;
  }
  const report::CellRecord& kept = state_.Put(cell.index, std::move(rec));
  if (o_.observer_ != nullptr) o_.observer_->OnCellDone(state_.record, kept);
  if (Status s = state_.store.Save(state_.record); !s.ok()) {
    *error_ = s;
    return false;
  }
  if (o_.observer_ != nullptr) o_.observer_->OnPersist(state_.record);
  return true;
}

void Orchestrator::TargetVisit::FailRest(size_t from, CellState cell_state, CellReason reason,
                                         const std::string& message, const std::optional<report::TargetExit>& exit) {
  for (size_t i = from; i < todo_.size(); ++i) {
    report::CellRecord rec = NotRunRecord(*todo_[i], cell_state, reason, message);
    rec.target_exit = exit;
    if (!RecordCell(*todo_[i], std::move(rec))) return;
  }
}

void Orchestrator::TargetVisit::Teardown(TargetInstance& instance) {
  o_.SetStage(state_.record.run, *todo_.front(), Stage::kTearingDown);
  if (Status s = instance.Teardown(); !s.ok()) {
    o_.Message("WARNING: target " + target_.name + " could not be torn down cleanly: " + s.message());
    const std::string note = "target " + target_.name + ": teardown: " + s.message();
    for (std::vector<std::string>* notes : {&state_.earlier_notes, &state_.record.environment.notes}) {
      if (std::find(notes->begin(), notes->end(), note) == notes->end()) notes->push_back(note);
    }
  }
}

std::optional<Orchestrator::TargetOutcome> Orchestrator::TargetVisit::TakeSlot() {
  o_.SetStage(state_.record.run, *todo_.front(), Stage::kWaitingForSlot);
  auto slot = o_.platform_.AcquireSlot(run_.metadata.name + "/" + target_.name, o_.options_.slot_timeout, stop_);
  if (stop_.stop_requested()) return TargetOutcome::kStopped;
  if (!slot.ok()) {
    FailRest(0, CellState::kFailed, CellReason::kSlotUnavailable, slot.status().message());
    return TargetOutcome::kDone;
  }
  slot_ = std::move(slot).value();
  return std::nullopt;
}

std::optional<Orchestrator::TargetOutcome> Orchestrator::TargetVisit::DeployAndWaitReady() {
  o_.SetStage(state_.record.run, *todo_.front(), Stage::kDeploying);
  const RunIdentity identity{run_.metadata.name, run_.metadata.namespace_, run_.metadata.uid};
  auto deployed =
      o_.platform_.Deploy(DeployRequest{identity, target_, target_index_, run_.spec.placement.target}, stop_);
  if (stop_.stop_requested()) {
    if (deployed.ok()) Teardown(**deployed);
    return TargetOutcome::kStopped;
  }
  if (!deployed.ok()) {
    FailRest(0, CellState::kFailed, CellReason::kDeployFailed, deployed.status().message());
    return TargetOutcome::kDone;
  }
  instance_ = std::move(deployed).value();
  const api::Readiness readiness = api::EffectiveReadiness(target_);
  if (Status s = instance_->WaitReady(o_.clock_.Now() + readiness.timeout, stop_); !s.ok()) {
    Teardown(*instance_);
    if (stop_.stop_requested()) return TargetOutcome::kStopped;
    FailRest(0, CellState::kFailed, CellReason::kNotReady, s.message());
    return TargetOutcome::kDone;
  }
  return std::nullopt;
}

void Orchestrator::TargetVisit::AnnounceReady() {
  where_ = instance_->placement();
  where_.scheme = target_.scheme;
  where_.protocol = api::EffectiveProtocol(target_);
  if (o_.observer_ != nullptr) o_.observer_->OnTargetReady(run_.metadata.name, target_.name, where_);
  // What the target runs with, read back (the file limit in force): kept
  // with the notes of earlier targets, so that re-describing keeps it.
  // A fact is "key: value"; a newer one replaces an older one of that key
  // (from an earlier attempt of the run).
  for (const std::string& fact : instance_->ReadBack()) {
    const std::string key = "target " + target_.name + ": " + fact.substr(0, fact.find(':') + 1);
    for (std::vector<std::string>* notes : {&state_.earlier_notes, &state_.record.environment.notes}) {
      notes->erase(
          std::remove_if(notes->begin(), notes->end(), [&](const std::string& n) { return n.rfind(key, 0) == 0; }),
          notes->end());
      notes->push_back("target " + target_.name + ": " + fact);
    }
  }
  o_.Message("target " + target_.name + " is ready on " + where_.host + ":" + std::to_string(where_.port) +
             (where_.node.empty() ? "" : " (node " + where_.node + ")"));
}

// What the target really got, read from inside it; judged again with each
// cell's agents (RunCell). False: the run requires CPUs of its own and this
// target has none, so its cells failed and it is torn down.
bool Orchestrator::TargetVisit::CpusAllowed() {
  state_.cpu_facts[target_index_] = instance_->Cpus();
  const api::TargetCpus cpus = JudgeCpus(target_.name, state_.cpu_facts[target_index_], {}, o_.controller_cpus_);
  state_.PutCpus(cpus);
  if (cpus.exclusive == api::ConditionStatus::kFalse) {
    o_.Message("WARNING: target " + target_.name + "'s CPUs are not its own: " + cpus.message);
  }
  if (!run_.spec.placement.require_exclusive_cpus || cpus.exclusive == api::ConditionStatus::kTrue) return true;
  const std::string why = CpusNotExclusiveMessage(cpus);
  o_.Message(why);
  Teardown(*instance_);
  FailRest(0, CellState::kFailed, CellReason::kCpusNotExclusive, why);
  return false;
}

void Orchestrator::TargetVisit::VerifyScenarios() {
  o_.SetStage(state_.record.run, *todo_.front(), Stage::kVerifying);
  for (const api::Cell* c : todo_) {
    if (broken_.count(c->scenario_index) || stop_.stop_requested()) continue;
    CheckScenario(*c);
  }
}

// Checks the scenario of `cell` once against its expect; a scenario that
// fails is reported and its cells are skipped without load.
void Orchestrator::TargetVisit::CheckScenario(const api::Cell& cell) {
  const api::Scenario& sc = run_.spec.scenarios[cell.scenario_index];
  api::ScenarioSettings settings = api::EffectiveSettings(run_.spec, sc);
  if (settings.script) {
    // Checked with the first request the script's request() makes.
    auto first = o_.ScriptFirstRequest(run_, settings, where_);
    if (!first.ok() && stop_.stop_requested()) return;
    if (!first.ok()) {
      broken_[cell.scenario_index] = "script: " + first.status().message();
      o_.Message("target " + target_.name + ": scenario " + sc.name + "'s script: " + first.status().message());
      return;
    }
    settings.requests = {api::WeightedRequest{*first, 1}};
  }
  if (Status s = o_.options_.verify(where_, settings); !s.ok()) {
    broken_[cell.scenario_index] = s.message();
    o_.Message("target " + target_.name + " fails scenario " + sc.name + ": " + s.message());
  } else {
    broken_[cell.scenario_index] = "";
  }
  state_.answer_headers.erase(cell.scenario_index);
  if (settings.vary && broken_[cell.scenario_index].empty() && where_.scheme != Scheme::kHttps) {
    // One answer read to the end of its connection: its Content-Length
    // against its body, and its Date. What it finds flags the cells.
    if (auto found = o_.options_.read_answer(where_, settings); found.ok()) {
      state_.answer_headers[cell.scenario_index] = *found;
    } else {
      o_.Message("target " + target_.name + ", scenario " + sc.name +
                 ": its answer could not be read to the end: " + found.status().message());
    }
  }
}

void Orchestrator::TargetVisit::SampleIdleMemory() {
  o_.SetStage(state_.record.run, *todo_.front(), Stage::kSamplingIdle);
  o_.SleepUnlessStopped(o_.options_.idle_settle);
  auto u = instance_->Usage();
  if (!u.ok()) return;
  memory_idle_ = u->memory_bytes;
  if (o_.observer_ == nullptr) return;
  const api::Cell& first = *todo_.front();
  o_.observer_->OnTargetUsage(run_.metadata.name,
                              api::CurrentCell{target_.name, first.scenario, first.connections, first.repetition,
                                               Stage::kSamplingIdle, first.rate},
                              *u);
}

Orchestrator::TargetOutcome Orchestrator::TargetVisit::RunCells() {
  for (size_t i = 0; i < todo_.size(); ++i) {
    if (std::optional<TargetOutcome> ended = RunCellAt(i)) return *ended;
  }
  return TargetOutcome::kDone;
}

// Cell todo_[i]: measured (or skipped with the reason it cannot be), then a
// cooldown before the next. A value ends the visit's cells.
std::optional<Orchestrator::TargetOutcome> Orchestrator::TargetVisit::RunCellAt(size_t i) {
  if (stop_.stop_requested()) return TargetOutcome::kStopped;
  const api::Cell& cell = *todo_[i];
  if (auto gone = instance_->Gone()) {
    FailRest(i, CellState::kSkipped, CellReason::kTargetExited,
             "target " + target_.name + " " + gone->text + " earlier (see " + instance_->LogLocation() + ")", gone);
    return TargetOutcome::kDone;
  }
  if (!broken_[cell.scenario_index].empty()) {
    if (!RecordCell(cell, NotRunRecord(cell, CellState::kSkipped, CellReason::kVerificationFailed,
                                       broken_[cell.scenario_index]))) {
      return TargetOutcome::kDone;
    }
    return std::nullopt;
  }
  if (!slot_->held()) return TargetOutcome::kSlotLost;  // lost between cells: nothing was loaded, nothing to record
  std::optional<int64_t> rate;
  if (cell.rate) {
    const Result<int64_t> offered = OfferedRate(state_.record.run.status, cell);
    if (!offered.ok()) {
      if (!RecordCell(cell, NotRunRecord(cell, CellState::kSkipped, CellReason::kCapacityUnknown,
                                         offered.status().message()))) {
        return TargetOutcome::kDone;
      }
      return std::nullopt;
    }
    rate = *offered;
  }
  report::CellRecord rec = run_.spec.scenarios[cell.scenario_index].slo
                               ? o_.RunCapacity(state_, cell, *instance_, *slot_, memory_idle_)
                               : o_.RunCell(state_, cell, *instance_, *slot_, memory_idle_, rate);
  // An interrupted cell is not a result: a resume runs it again.
  if (stop_.stop_requested()) return TargetOutcome::kStopped;
  const bool slot_lost = rec.result.reason == CellReason::kSlotLost;
  if (!RecordCell(cell, std::move(rec))) return TargetOutcome::kDone;
  if (slot_lost) return TargetOutcome::kSlotLost;
  if (i + 1 < todo_.size()) {
    const api::ScenarioSettings settings = api::EffectiveSettings(run_.spec, run_.spec.scenarios[cell.scenario_index]);
    o_.SetStage(state_.record.run, cell, Stage::kCoolingDown);
    o_.SleepUnlessStopped(settings.cooldown);
  }
  return std::nullopt;
}

}  // namespace fairbench::controller
