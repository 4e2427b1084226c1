#include "controller/orchestrator/orchestrator.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <set>

#include <spdlog/spdlog.h>

#include "common/api/conditions.h"
#include "controller/orchestrator/cpu_verdict.h"
#include "common/mutex.h"
#include "common/report/format.h"
#include "common/report/limiter.h"
#include "common/units.h"
#include "controller/hub/cell_aggregator.h"
#include "controller/orchestrator/cell_jobs.h"
#include "controller/orchestrator/cell_phase.h"
#include "controller/orchestrator/cell_profiling.h"
#include "controller/orchestrator/verify.h"

namespace fairbench::controller {
namespace {

using api::CellReason;
using api::CellState;
using api::Stage;

api::Time WallNow(const Clock& clock) { return std::chrono::time_point_cast<std::chrono::nanoseconds>(clock.WallNow()); }

// Notes of an earlier attempt that name what it ran ("target …") stay in a
// resumed record's environment unless the platform reports them anew.
std::vector<std::string> MergeNotes(std::vector<std::string> now, const std::vector<std::string>& before) {
  for (const std::string& n : before) {
    if (n.rfind("target ", 0) == 0 && std::find(now.begin(), now.end(), n) == now.end()) now.push_back(n);
  }
  return now;
}

// A usage sample of the target taken in the measured window.
void SampleUsage(RunObserver* observer, const std::string& run, const api::CurrentCell& cell, const TargetUsage& u,
                 CellMeasurement& m) {
  if (!m.usage_first) m.usage_first = u;
  m.usage_last = u;
  // Fresh: taken in the measure phase. A second's slack, as a kubelet
  // stamps its samples to the second.
  if (u.sampled_at + std::chrono::seconds(1) >= m.measure_start &&
      (m.usage_times.empty() || u.sampled_at != m.usage_times.back())) {
    m.usage_times.push_back(u.sampled_at);
  }
  m.memory_max = std::max(m.memory_max, u.memory_bytes);
  if (observer != nullptr) {
    api::CurrentCell c = cell;
    c.stage = Stage::kMeasuring;
    observer->OnTargetUsage(run, c, u);
  }
}

}  // namespace

struct Orchestrator::RunState {
  const api::BenchmarkRun& run;
  RunStore& store;
  report::RunRecord record;
  std::vector<api::Cell> cells;
  // The finished cells are kept once, in record.cells (in cell order, with
  // their results mirrored in record.run.status.results); `finished` holds
  // their cell indexes, in the same order.
  std::vector<size_t> finished;
  std::vector<std::string> earlier_notes;
  std::set<std::string> profile_messages = {};  // why profiles were not taken, each told once
  std::map<size_t, TargetCpuFacts> cpu_facts = {};  // target index → what its current deployment got
  // Scenario index → what the check before the load found in one answer
  // of the current target read to its end (scenarios with vary).
  std::map<size_t, api::AnswerChecks> answer_headers = {};

  // status.cpus gets `cpus` in place of the target's earlier entry, in spec order.
  void PutCpus(api::TargetCpus cpus) {
    std::vector<api::TargetCpus>& all = record.run.status.cpus;
    std::erase_if(all, [&](const api::TargetCpus& c) { return c.target == cpus.target; });
    all.push_back(std::move(cpus));
    std::vector<api::TargetCpus> ordered;
    for (const api::Target& t : run.spec.targets) {
      for (api::TargetCpus& c : all) {
        if (c.target == t.name) ordered.push_back(std::move(c));
      }
    }
    all = std::move(ordered);
  }

  bool Has(size_t index) const { return std::binary_search(finished.begin(), finished.end(), index); }

  // Records cell `index` (or replaces it), in place: a run's cells are
  // never copied as a whole.
  const report::CellRecord& Put(size_t index, report::CellRecord c) {
    const auto at = std::lower_bound(finished.begin(), finished.end(), index);
    const auto i = at - finished.begin();
    if (at != finished.end() && *at == index) {
      record.run.status.results[static_cast<size_t>(i)] = c.result;
      record.cells[static_cast<size_t>(i)] = std::move(c);
    } else {
      finished.insert(at, index);
      record.run.status.results.insert(record.run.status.results.begin() + i, c.result);
      record.cells.insert(record.cells.begin() + i, std::move(c));
    }
    UpdateProgress();
    return record.cells[static_cast<size_t>(i)];
  }

  void UpdateProgress() {
    record.run.status.progress.completed = static_cast<int64_t>(finished.size());
    record.run.status.progress.total = static_cast<int64_t>(cells.size());
  }
};

Orchestrator::Orchestrator(Platform& platform, AgentPool& agents, OrchestratorOptions options, RunObserver* observer)
    : platform_(platform),
      agents_(agents),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : SystemClock::Instance()),
      observer_(observer) {
  if (!options_.verify) {
    options_.verify = [](const TargetPlacement& t, const api::ScenarioSettings& s) { return VerifyScenario(t.host, t.port, t.https, s, t.protocol); };
  }
  if (!options_.read_answer) {
    options_.read_answer = [](const TargetPlacement& t, const api::ScenarioSettings& s) { return ReadAnswerToEnd(t.host, t.port, s); };
  }
}

void Orchestrator::Cancel(const std::string& reason) {
  {
    MutexLock lock(cancel_reason_->mu);
    if (!stop_.stop_requested() && cancel_reason_->text.empty()) cancel_reason_->text = reason;
  }
  stop_.request_stop();
}

std::string Orchestrator::WhereStopped() const {
  if (position_cell_.empty() || !position_stage_) return "";
  std::string stage;
  switch (*position_stage_) {
    case Stage::kWaitingForSlot: stage = "waiting for the load slot"; break;
    case Stage::kDeploying: stage = "deploying its target"; break;
    case Stage::kVerifying: stage = "verifying its target's answers"; break;
    case Stage::kSamplingIdle: stage = "sampling its target's idle memory"; break;
    case Stage::kWarmingUp: stage = "warming up"; break;
    case Stage::kMeasuring: stage = "measuring"; break;
    case Stage::kCoolingDown: stage = "cooling down after it"; break;
    case Stage::kTearingDown: stage = "tearing down its target"; break;
  }
  return " during cell " + position_cell_ + ", " + stage + (position_detail_.empty() ? "" : ": " + position_detail_);
}

bool Orchestrator::SleepUnlessStopped(std::chrono::nanoseconds d) { return clock_.SleepFor(d, stop_.get_token()); }

void Orchestrator::SetStage(const api::BenchmarkRun& run, const api::Cell& cell, Stage stage) {
  if (stop_.stop_requested() && stage == Stage::kTearingDown && position_stage_) {
    // Stopped: the teardown that follows is not where the run stopped.
  } else {
    position_cell_ = cell.Key();
    position_stage_ = stage;
    position_detail_.clear();
  }
  if (observer_ == nullptr) return;
  observer_->OnStage(run, api::CurrentCell{cell.target, cell.scenario, cell.connections, cell.repetition, stage, cell.rate});
}

void Orchestrator::Message(const std::string& message) {
  spdlog::info("{}", message);
  if (observer_ != nullptr) observer_->OnMessage(message);
}

Result<report::RunRecord> Orchestrator::Run(const api::BenchmarkRun& run, RunStore& store, bool resume) {
  RunState state{run, store, {}, api::ExpandCells(run.spec), {}, {}};
  controller_cpus_ = ReadCpuView();
  report::RunRecord& record = state.record;
  record.run = run;
  record.run.status = api::BenchmarkRunStatus();
  std::optional<report::RunRecord> earlier;
  if (resume) {
    auto stored = store.Load();
    if (!stored.ok()) return stored.status();
    earlier = std::move(*stored);
  }
  if (earlier) {
    if (!(earlier->run.spec == run.spec)) {
      return Status::FailedPrecondition("the run's spec differs from the stored one: resuming would mix two different runs");
    }
    for (report::CellRecord& c : earlier->cells) {
      for (const api::Cell& cell : state.cells) {
        if (cell.Matches(c.result)) state.Put(cell.index, std::move(c));
      }
    }
    record.run.status.start_time = earlier->run.status.start_time;
    record.run.status.conditions = earlier->run.status.conditions;
    record.run.status.cpus = earlier->run.status.cpus;
    state.earlier_notes = earlier->environment.notes;
  }
  // The order of deployments: a resumed run keeps the seed it drew.
  const api::RepetitionOrder order = api::EffectiveRepetitionOrder(run.spec);
  int64_t seed = 0;
  if (run.spec.seed) {
    seed = *run.spec.seed;
  } else if (earlier && !earlier->schedule.order.empty()) {
    seed = earlier->schedule.seed;
  } else {
    seed = static_cast<int64_t>(std::random_device{}() >> 1);
  }
  const std::vector<std::vector<size_t>> rounds = api::TargetRounds(run.spec, order, seed);
  record.schedule.order = std::string(api::ToString(order));
  record.schedule.seed = seed;
  record.schedule.rounds.clear();
  for (const auto& round : rounds) {
    std::vector<std::string> names;
    for (size_t t : round) names.push_back(run.spec.targets[t].name);
    record.schedule.rounds.push_back(std::move(names));
  }

  auto describe = [&] {
    record.environment = platform_.Describe();
    record.environment.notes = MergeNotes(record.environment.notes, state.earlier_notes);
    if (record.environment.fairbench_version.empty()) record.environment.fairbench_version = options_.fairbench_version;
  };
  describe();

  auto persist = [&]() -> Status {
    if (Status s = store.Save(record); !s.ok()) return s;
    if (observer_ != nullptr) observer_->OnPersist(record);
    return Status::Ok();
  };
  record.run.status.phase = api::RunPhase::kRunning;
  if (!record.run.status.start_time) record.run.status.start_time = WallNow(clock_);
  record.run.status.observed_generation = run.metadata.generation;
  api::Condition progressing;
  progressing.type = api::condition::kProgressing;
  progressing.status = api::ConditionStatus::kTrue;
  progressing.reason = earlier ? api::reason::kResumed : api::reason::kStarted;
  progressing.message =
      std::to_string(state.finished.size()) + " of " + std::to_string(state.cells.size()) + " cells finished";
  progressing.observed_generation = run.metadata.generation;
  api::SetCondition(record.run.status.conditions, progressing, WallNow(clock_));
  state.UpdateProgress();
  if (Status s = persist(); !s.ok()) return s;
  if (!state.finished.empty()) {
    Message("resuming: " + std::to_string(state.finished.size()) + " of " + std::to_string(state.cells.size()) +
            " cells kept from the interrupted run");
  }

  if (order == api::RepetitionOrder::kInterleaved) {
    Message("repetitions interleaved: " + std::to_string(rounds.size()) + " rounds, targets in a random order drawn from seed " +
            std::to_string(seed));
  }
  // Each visit deploys one target afresh and runs its unfinished cells: all
  // of them (sequential), or those of the round's repetition (interleaved).
  struct Visit {
    size_t target;
    int32_t repetition;  // 0: every repetition
  };
  std::vector<Visit> visits;
  for (size_t r = 0; r < rounds.size(); ++r) {
    for (size_t t : rounds[r]) {
      visits.push_back({t, order == api::RepetitionOrder::kInterleaved ? static_cast<int32_t>(r + 1) : 0});
    }
  }
  for (size_t v = 0; v < visits.size() && !cancelled(); ++v) {
    const size_t t = visits[v].target;
    for (int attempt = 1;; ++attempt) {
      std::vector<const api::Cell*> todo;
      for (const api::Cell& c : state.cells) {
        if (c.target_index == t && (visits[v].repetition == 0 || c.repetition == visits[v].repetition) &&
            !state.Has(c.index)) {
          todo.push_back(&c);
        }
      }
      if (todo.empty() || cancelled()) break;
      if (attempt > options_.slot_attempts) {
        for (const api::Cell* c : todo) {
          report::CellRecord rec = NotRunRecord(*c, CellState::kFailed, CellReason::kSlotLost,
                                                "the load slot was lost " + std::to_string(options_.slot_attempts) +
                                                    " times while this target was under load");
          state.Put(c->index, std::move(rec));
        }
        if (Status s = persist(); !s.ok()) return s;
        break;
      }
      Status error;
      const TargetOutcome outcome = RunTarget(state, t, todo, &error);
      if (!error.ok()) return error;
      describe();
      if (outcome != TargetOutcome::kSlotLost) break;
      Message("target " + run.spec.targets[t].name + ": the load slot was lost; waiting for it again");
    }
  }

  state.UpdateProgress();
  size_t failed = 0, skipped = 0;
  for (const report::CellRecord& c : record.cells) {
    failed += c.result.state == CellState::kFailed;
    skipped += c.result.state == CellState::kSkipped;
  }
  const size_t total = state.cells.size();
  api::Condition done;
  done.observed_generation = run.metadata.generation;
  progressing.status = api::ConditionStatus::kFalse;
  if (cancelled()) {
    record.run.status.phase = api::RunPhase::kCancelled;
    progressing.reason = api::reason::kCancelled;
    std::string why;
    {
      MutexLock lock(cancel_reason_->mu);
      why = cancel_reason_->text.empty() ? "cancelled" : cancel_reason_->text;
    }
    progressing.message = why + WhereStopped() + "; " + std::to_string(record.cells.size()) + " of " +
                          std::to_string(total) + " cells finished" +
                          (record.cells.size() < total ? " (an interrupted cell is not recorded: a resume runs it again)" : "");
    Message("run " + run.metadata.name + ": " + progressing.message);
  } else {
    const bool all_ok = failed + skipped == 0;
    record.run.status.phase = all_ok ? api::RunPhase::kSucceeded : api::RunPhase::kFailed;
    record.run.status.completion_time = WallNow(clock_);
    progressing.reason = api::reason::kFinished;
    progressing.message = "all " + std::to_string(total) + " cells finished";
    done.type = all_ok ? api::condition::kComplete : api::condition::kFailed;
    done.status = api::ConditionStatus::kTrue;
    done.reason = all_ok ? api::reason::kAllCellsSucceeded : api::reason::kCellsFailed;
    done.message = all_ok ? "every cell succeeded"
                          : std::to_string(failed) + " failed and " + std::to_string(skipped) + " skipped of " +
                                std::to_string(total) + " cells";
    api::SetCondition(record.run.status.conditions, done, WallNow(clock_));
  }
  api::SetCondition(record.run.status.conditions, progressing, WallNow(clock_));
  record.run.status.current.reset();
  if (Status s = persist(); !s.ok()) return s;
  return record;
}

Orchestrator::TargetOutcome Orchestrator::RunTarget(RunState& state, size_t target_index,
                                                    const std::vector<const api::Cell*>& todo, Status* error) {
  const api::BenchmarkRun& run = state.run;
  const api::Target& target = run.spec.targets[target_index];
  const std::stop_token stop = stop_.get_token();
  auto record_cell = [&](const api::Cell& cell, report::CellRecord rec) -> bool {
    if (Status s = state.store.SaveCell(cell, rec); !s.ok()) {
      *error = s;
      return false;
    }
    const report::CellRecord& kept = state.Put(cell.index, std::move(rec));
    if (observer_ != nullptr) observer_->OnCellDone(state.record, kept);
    if (Status s = state.store.Save(state.record); !s.ok()) {
      *error = s;
      return false;
    }
    if (observer_ != nullptr) observer_->OnPersist(state.record);
    return true;
  };
  auto fail_rest = [&](size_t from, CellState cell_state, CellReason reason, const std::string& message,
                       const std::optional<report::TargetExit>& exit = std::nullopt) {
    for (size_t i = from; i < todo.size(); ++i) {
      report::CellRecord rec = NotRunRecord(*todo[i], cell_state, reason, message);
      rec.target_exit = exit;
      if (!record_cell(*todo[i], std::move(rec))) return;
    }
  };
  // Stops and removes the target; a failure is reported, not hidden.
  // Stops and removes the target; a failure is reported, not hidden: in the
  // log and in the record's notes (kept by describe() as a "target " note).
  auto teardown = [&](TargetInstance& instance) {
    SetStage(state.record.run, *todo.front(), Stage::kTearingDown);
    if (Status s = instance.Teardown(); !s.ok()) {
      Message("WARNING: target " + target.name + " could not be torn down cleanly: " + s.message());
      const std::string note = "target " + target.name + ": teardown: " + s.message();
      for (std::vector<std::string>* notes : {&state.earlier_notes, &state.record.environment.notes}) {
        if (std::find(notes->begin(), notes->end(), note) == notes->end()) notes->push_back(note);
      }
    }
  };
  const RunIdentity identity{run.metadata.name, run.metadata.namespace_, run.metadata.uid};

  SetStage(state.record.run, *todo.front(), Stage::kWaitingForSlot);
  auto slot = platform_.AcquireSlot(run.metadata.name + "/" + target.name, options_.slot_timeout, stop);
  if (stop.stop_requested()) return TargetOutcome::kStopped;
  if (!slot.ok()) {
    fail_rest(0, CellState::kFailed, CellReason::kSlotUnavailable, slot.status().message());
    return TargetOutcome::kDone;
  }
  SetStage(state.record.run, *todo.front(), Stage::kDeploying);
  auto deployed = platform_.Deploy(DeployRequest{identity, target, target_index, run.spec.placement.target}, stop);
  if (stop.stop_requested()) {
    if (deployed.ok()) teardown(**deployed);
    return TargetOutcome::kStopped;
  }
  if (!deployed.ok()) {
    fail_rest(0, CellState::kFailed, CellReason::kDeployFailed, deployed.status().message());
    return TargetOutcome::kDone;
  }
  TargetInstance& instance = **deployed;
  const api::Readiness readiness = api::EffectiveReadiness(target);
  if (Status s = instance.WaitReady(clock_.Now() + readiness.timeout, stop); !s.ok()) {
    teardown(instance);
    if (stop.stop_requested()) return TargetOutcome::kStopped;
    fail_rest(0, CellState::kFailed, CellReason::kNotReady, s.message());
    return TargetOutcome::kDone;
  }
  TargetPlacement where = instance.placement();
  where.https = target.scheme == Scheme::kHttps;
  where.protocol = api::EffectiveProtocol(target);
  if (observer_ != nullptr) observer_->OnTargetReady(run.metadata.name, target.name, where);
  // What the target runs with, read back (the file limit in force): kept
  // with the notes of earlier targets, so that re-describing keeps it.
  // A fact is "key: value"; a newer one replaces an older one of that key
  // (from an earlier attempt of the run).
  for (const std::string& fact : instance.ReadBack()) {
    const std::string key = "target " + target.name + ": " + fact.substr(0, fact.find(':') + 1);
    for (std::vector<std::string>* notes : {&state.earlier_notes, &state.record.environment.notes}) {
      notes->erase(std::remove_if(notes->begin(), notes->end(), [&](const std::string& n) { return n.rfind(key, 0) == 0; }),
                   notes->end());
      notes->push_back("target " + target.name + ": " + fact);
    }
  }
  Message("target " + target.name + " is ready on " + where.host + ":" + std::to_string(where.port) +
          (where.node.empty() ? "" : " (node " + where.node + ")"));
  // What it really got, read from inside it; judged again with each cell's
  // agents (RunCell).
  state.cpu_facts[target_index] = instance.Cpus();
  {
    const api::TargetCpus cpus = JudgeCpus(target.name, state.cpu_facts[target_index], {}, controller_cpus_);
    state.PutCpus(cpus);
    if (cpus.exclusive == api::ConditionStatus::kFalse) {
      Message("WARNING: target " + target.name + "'s CPUs are not its own: " + cpus.message);
    }
    if (run.spec.placement.require_exclusive_cpus && cpus.exclusive != api::ConditionStatus::kTrue) {
      const std::string why = CpusNotExclusiveMessage(cpus);
      Message(why);
      teardown(instance);
      for (const api::Cell* c : todo) {
        if (!record_cell(*c, NotRunRecord(*c, CellState::kFailed, CellReason::kCpusNotExclusive, why))) break;
      }
      return TargetOutcome::kDone;
    }
  }

  SetStage(state.record.run, *todo.front(), Stage::kVerifying);
  std::map<size_t, std::string> broken;  // scenario index → why
  for (const api::Cell* c : todo) {
    if (broken.count(c->scenario_index) || stop.stop_requested()) continue;
    const api::Scenario& sc = run.spec.scenarios[c->scenario_index];
    api::ScenarioSettings settings = api::EffectiveSettings(run.spec, sc);
    if (settings.script) {
      // Checked with the first request the script's request() makes.
      auto first = ScriptFirstRequest(run, settings, where);
      if (!first.ok() && stop.stop_requested()) continue;
      if (!first.ok()) {
        broken[c->scenario_index] = "script: " + first.status().message();
        Message("target " + target.name + ": scenario " + sc.name + "'s script: " + first.status().message());
        continue;
      }
      settings.requests = {api::WeightedRequest{*first, 1}};
    }
    if (Status s = options_.verify(where, settings); !s.ok()) {
      broken[c->scenario_index] = s.message();
      Message("target " + target.name + " fails scenario " + sc.name + ": " + s.message());
    } else {
      broken[c->scenario_index] = "";
    }
    state.answer_headers.erase(c->scenario_index);
    if (settings.vary && broken[c->scenario_index].empty() && !where.https) {
      // One answer read to the end of its connection: its Content-Length
      // against its body, and its Date. What it finds flags the cells.
      if (auto found = options_.read_answer(where, settings); found.ok()) {
        state.answer_headers[c->scenario_index] = *found;
      } else {
        Message("target " + target.name + ", scenario " + sc.name + ": its answer could not be read to the end: " +
                found.status().message());
      }
    }
  }

  SetStage(state.record.run, *todo.front(), Stage::kSamplingIdle);
  SleepUnlessStopped(options_.idle_settle);
  std::optional<uint64_t> memory_idle;
  if (auto u = instance.Usage(); u.ok()) {
    memory_idle = u->memory_bytes;
    if (observer_ != nullptr) {
      const api::Cell& first = *todo.front();
      observer_->OnTargetUsage(run.metadata.name,
                               api::CurrentCell{target.name, first.scenario, first.connections, first.repetition,
                                                Stage::kSamplingIdle, first.rate},
                               *u);
    }
  }

  TargetOutcome outcome = TargetOutcome::kDone;
  for (size_t i = 0; i < todo.size(); ++i) {
    if (stop.stop_requested()) {
      outcome = TargetOutcome::kStopped;
      break;
    }
    const api::Cell& cell = *todo[i];
    if (auto gone = instance.Gone()) {
      fail_rest(i, CellState::kSkipped, CellReason::kTargetExited,
                "target " + target.name + " " + gone->text + " earlier (see " + instance.LogLocation() + ")", gone);
      break;
    }
    if (!broken[cell.scenario_index].empty()) {
      if (!record_cell(cell, NotRunRecord(cell, CellState::kSkipped, CellReason::kVerificationFailed, broken[cell.scenario_index]))) {
        break;
      }
      continue;
    }
    if (!(*slot)->held()) {  // lost between cells: nothing was loaded, nothing to record
      outcome = TargetOutcome::kSlotLost;
      break;
    }
    std::optional<int64_t> rate;
    if (cell.rate) {
      const Result<int64_t> offered = OfferedRate(state.record.run.status, cell);
      if (!offered.ok()) {
        if (!record_cell(cell, NotRunRecord(cell, CellState::kSkipped, CellReason::kCapacityUnknown,
                                            offered.status().message()))) {
          break;
        }
        continue;
      }
      rate = *offered;
    }
    report::CellRecord rec = run.spec.scenarios[cell.scenario_index].slo
                                 ? RunCapacity(state, cell, instance, **slot, memory_idle)
                                 : RunCell(state, cell, instance, **slot, memory_idle, rate);
    if (stop.stop_requested()) {  // an interrupted cell is not a result: a resume runs it again
      outcome = TargetOutcome::kStopped;
      break;
    }
    const bool slot_lost = rec.result.reason == CellReason::kSlotLost;
    if (!record_cell(cell, std::move(rec))) break;
    if (slot_lost) {
      outcome = TargetOutcome::kSlotLost;
      break;
    }
    if (i + 1 < todo.size()) {
      const api::ScenarioSettings settings = api::EffectiveSettings(run.spec, run.spec.scenarios[cell.scenario_index]);
      SetStage(state.record.run, cell, Stage::kCoolingDown);
      SleepUnlessStopped(settings.cooldown);
    }
  }
  teardown(instance);
  return outcome;
}

Result<api::Request> Orchestrator::ScriptFirstRequest(const api::BenchmarkRun& run,
                                                      const api::ScenarioSettings& settings,
                                                      const TargetPlacement& where) {
  const std::stop_token stop = stop_.get_token();
  AgentRequest request;
  request.run = RunIdentity{run.metadata.name, run.metadata.namespace_, run.metadata.uid};
  request.count = std::max(1, settings.agents);
  request.threads = settings.threads;
  request.target = where;
  request.placement = run.spec.placement.agents;
  auto ids = platform_.EnsureAgents(request, stop);
  if (!ids.ok()) return ids.status();
  auto idle = agents_.WaitForAgents(1, options_.agent_timeout, std::set<std::string>(ids->begin(), ids->end()), stop);
  if (!idle.ok()) return idle.status();
  wire::JobSpec job;
  job.job_id = run.metadata.name + "/probe/" + std::to_string(++job_counter_);
  job.host = where.host;
  job.port = where.port;
  job.https = where.https;
  job.protocol = where.protocol;
  job.streams = static_cast<uint32_t>(std::max(1, settings.streams));
  job.script = wire::JobScript{settings.script->name, settings.script->text, settings.script->args};
  job.probe = true;
  job.connections = 1;
  job.threads = 1;
  auto probe = std::make_shared<CellAggregator>(1);
  const std::string agent = idle->front();
  if (Status s = agents_.StartJob(agent, job, probe); !s.ok()) return s;
  const CellAggregator::Outcome outcome = probe->Wait(clock_, clock_.Now() + std::chrono::seconds(30), stop);
  if (outcome == CellAggregator::Outcome::kFailed) return Status::InvalidArgument(probe->failure());
  if (outcome == CellAggregator::Outcome::kTimeout && stop.stop_requested()) {
    agents_.CancelJob(agent, job.job_id, "the run was cancelled");
    return Status::Cancelled("the run was cancelled");
  }
  if (outcome == CellAggregator::Outcome::kTimeout) {
    agents_.CancelJob(agent, job.job_id, "no first request within 30 s");
    return Status::DeadlineExceeded("agent " + agent + " made no first request within 30 s");
  }
  const std::optional<wire::JobRequest> first = probe->FirstRequest();
  if (!first) return Status::Internal("agent " + agent + " answered the probe without a request");
  api::Request r;
  r.method = first->method;
  r.path = first->target;
  for (const auto& [name, value] : first->headers) r.headers[name] = value;
  if (!first->body.empty()) r.body = first->body;
  return r;
}

report::CellRecord Orchestrator::RunCapacity(RunState& state, const api::Cell& cell, TargetInstance& instance,
                                             const LoadSlot& slot, std::optional<uint64_t> memory_idle) {
  const api::BenchmarkRun& run = state.record.run;
  const api::Scenario& scenario = run.spec.scenarios[cell.scenario_index];
  const api::Slo& slo = *scenario.slo;
  const api::ScenarioSettings settings = api::EffectiveSettings(run.spec, scenario);
  report::CapacitySearch search;
  struct Objective {
    const char* name;
    std::optional<api::Duration> limit;
    double api::Latency::*value;
  };
  const Objective objectives[] = {{"p50", slo.p50, &api::Latency::p50},
                                  {"p90", slo.p90, &api::Latency::p90},
                                  {"p99", slo.p99, &api::Latency::p99},
                                  {"p999", slo.p999, &api::Latency::p999}};
  for (const Objective& o : objectives) {
    if (o.limit) search.objective += (search.objective.empty() ? "" : ", ") + std::string(o.name) + " ≤ " + FormatDuration(*o.limit);
  }
  if (slo.max_error_rate) search.objective += ", errors ≤ " + report::FormatShare(*slo.max_error_rate, 2);

  std::optional<report::CellRecord> best;
  int64_t pass_rate = 0, fail_rate = 0;
  // One trial: the cell measured at `rate`; nullopt and `failed` set when
  // the measurement itself failed (the target died, the slot was lost…).
  std::optional<report::CellRecord> failed;
  auto trial = [&](int64_t rate) -> bool {
    if (!search.trials.empty()) {
      SetStage(run, cell, Stage::kCoolingDown);
      SleepUnlessStopped(settings.cooldown);
    }
    Message("target " + cell.target + ", " + cell.scenario + " at " + std::to_string(cell.connections) +
            " connections: trying " + std::to_string(rate) + " requests/s against " + search.objective);
    report::CellRecord rec = RunCell(state, cell, instance, slot, memory_idle, rate);
    if (rec.result.state != CellState::kSucceeded) {
      failed = std::move(rec);
      return false;
    }
    const api::CellResult& r = rec.result;
    const uint64_t errors = r.errors.Total();
    report::CapacityTrial t;
    t.offered = static_cast<double>(rate);
    t.achieved = r.requests_per_second;
    t.p50 = r.latency.p50;
    t.p90 = r.latency.p90;
    t.p99 = r.latency.p99;
    t.p999 = r.latency.p999;
    t.error_rate = r.requests + errors > 0 ? static_cast<double>(errors) / static_cast<double>(r.requests + errors) : 0;
    bool pass = t.achieved >= 0.9 * t.offered;  // a rate the server could not keep up with fails
    for (const Objective& o : objectives) {
      if (o.limit && r.latency.*o.value > static_cast<double>(std::chrono::duration_cast<std::chrono::microseconds>(*o.limit).count())) {
        pass = false;
      }
    }
    if (slo.max_error_rate && t.error_rate > *slo.max_error_rate) pass = false;
    t.pass = pass;
    if (errors > 0 && (search.errors_began_at == 0 || t.offered < search.errors_began_at)) search.errors_began_at = t.offered;
    search.trials.push_back(t);
    if (pass && rate > pass_rate) {
      pass_rate = rate;
      best = std::move(rec);
    }
    if (!pass && (fail_rate == 0 || rate < fail_rate)) fail_rate = rate;
    return true;
  };
  // The ladder: double until the objective fails; then bisect.
  int steps = 0;
  for (int64_t rate = slo.start_rate; steps < slo.max_steps && fail_rate == 0; rate *= 2, ++steps) {
    if (!trial(rate) || stop_.stop_requested()) break;
  }
  while (!failed && !stop_.stop_requested() && steps < slo.max_steps && pass_rate > 0 && fail_rate > 0 &&
         static_cast<double>(fail_rate - pass_rate) > 0.02 * static_cast<double>(pass_rate) && fail_rate - pass_rate > 1) {
    if (!trial((pass_rate + fail_rate) / 2)) break;
    ++steps;
  }
  if (failed) {
    failed->capacity = search;
    return std::move(*failed);
  }
  search.rate = static_cast<double>(pass_rate);
  search.bounded = fail_rate > 0;
  if (!best) {
    report::CellRecord rec = NotRunRecord(cell, CellState::kFailed, CellReason::kSloUnreachable,
                                          search.objective + " is not met even at " + std::to_string(slo.start_rate) +
                                              " requests/s (the first trial): lower spec.scenarios[].slo.startRate, or "
                                              "the server cannot meet it");
    if (!search.trials.empty()) {
      const report::CapacityTrial& t = search.trials.front();
      rec.result.message += " — there p99 was " + report::FormatLatency(t.p99) + ", " +
                            report::FormatRate(t.achieved) + " requests/s answered";
    }
    rec.capacity = std::move(search);
    return rec;
  }
  report::CellRecord rec = std::move(*best);
  rec.result.message = "capacity " + report::FormatRate(search.rate) + " requests/s within " + search.objective + " (" +
                       std::to_string(search.trials.size()) + " trials; " +
                       (search.bounded ? "the lowest rate that failed: " + report::FormatRate(static_cast<double>(fail_rate))
                                       : "no trial failed it: the capacity is higher") +
                       ")";
  rec.capacity = std::move(search);
  return rec;
}

report::CellRecord Orchestrator::RunCell(RunState& state, const api::Cell& cell, TargetInstance& instance,
                                         const LoadSlot& slot, std::optional<uint64_t> memory_idle,
                                         std::optional<int64_t> rate) {
  const api::BenchmarkRun& run = state.record.run;
  const api::Scenario& scenario = run.spec.scenarios[cell.scenario_index];
  api::ScenarioSettings settings = api::EffectiveSettings(run.spec, scenario);
  if (rate) settings.rate = *rate;
  const int agents = std::max(1, settings.agents);
  const std::stop_token stop = stop_.get_token();
  TargetPlacement where = instance.placement();
  where.https = run.spec.targets[cell.target_index].scheme == Scheme::kHttps;
  where.protocol = api::EffectiveProtocol(run.spec.targets[cell.target_index]);
  auto not_run = [&](CellState s, CellReason reason, const std::string& message) {
    return NotRunRecord(cell, s, reason, message);
  };
  auto target_exited = [&](const report::TargetExit& exit) {
    report::CellRecord rec = not_run(CellState::kFailed, CellReason::kTargetExited,
                                     "target " + cell.target + " " + exit.text + " during this cell (see " +
                                         instance.LogLocation() + ")");
    rec.target_exit = exit;
    return rec;
  };

  SetStage(run, cell, Stage::kWarmingUp);
  AgentRequest request;
  request.run = RunIdentity{run.metadata.name, run.metadata.namespace_, run.metadata.uid};
  request.count = agents;
  request.threads = settings.threads;
  request.target = where;
  request.placement = run.spec.placement.agents;
  auto ids = platform_.EnsureAgents(request, stop);
  if (!ids.ok()) return not_run(CellState::kFailed, CellReason::kAgentsUnavailable, ids.status().message());
  auto idle = agents_.WaitForAgents(static_cast<size_t>(agents), options_.agent_timeout,
                                    std::set<std::string>(ids->begin(), ids->end()), stop);
  if (!idle.ok()) return not_run(CellState::kFailed, CellReason::kAgentsUnavailable, idle.status().message());

  // The target's CPUs beside this cell's agents.
  std::vector<AgentCpuView> agent_cpus;
  for (size_t i = 0; i < static_cast<size_t>(agents) && i < idle->size(); ++i) agent_cpus.push_back(agents_.AgentCpus((*idle)[i]));
  const api::TargetCpus cpus = JudgeCpus(cell.target, state.cpu_facts[cell.target_index], agent_cpus, controller_cpus_);
  const bool shared_cpus = cpus.exclusive == api::ConditionStatus::kFalse;
  state.PutCpus(cpus);
  if (run.spec.placement.require_exclusive_cpus && cpus.exclusive != api::ConditionStatus::kTrue) {
    return not_run(CellState::kFailed, CellReason::kCpusNotExclusive, CpusNotExclusiveMessage(cpus));
  }

  // The jobs go out a lead before the load starts (the agents open their
  // connections meanwhile); the agents read the start on their own clocks.
  const auto lead = StartLead(cell.connections, agents, settings.threads);
  const auto start_wall = clock_.WallNow() + std::chrono::duration_cast<std::chrono::system_clock::duration>(lead);
  const CellTimeline timeline =
      MakeCellTimeline(clock_.Now() + lead, settings.warmup, settings.duration, settings.timeout + options_.job_grace);
  const std::string job_id = run.metadata.name + "/" + cell.Key() + "/" + std::to_string(++job_counter_);
  const std::vector<wire::JobSpec> jobs = BuildCellJobs(settings, cell, where, agents, start_wall, job_id);

  auto aggregator = std::make_shared<CellAggregator>(static_cast<size_t>(agents));
  const api::CurrentCell this_cell{cell.target, cell.scenario, cell.connections, cell.repetition, std::nullopt, cell.rate};
  const api::Time start_time = std::chrono::time_point_cast<std::chrono::nanoseconds>(start_wall);
  if (observer_ != nullptr) {
    aggregator->SetIntervalCallback([observer = observer_, name = run.metadata.name, c = this_cell, start_time](
                                        const Snapshot& s) {
      observer->OnInterval(name, c, s, start_time + std::chrono::nanoseconds(s.end_ns));
    });
  }
  // Nothing reaches the observer once this cell is over (a cancelled job's
  // late snapshots included).
  struct Unhook {
    CellAggregator* a;
    ~Unhook() { a->SetIntervalCallback(nullptr); }
  } unhook{aggregator.get()};

  std::vector<std::string> started;
  auto cancel_all = [&](const std::string& why) {
    for (const std::string& a : started) agents_.CancelJob(a, job_id, why);
  };
  for (size_t i = 0; i < jobs.size(); ++i) {
    const std::string& agent = (*idle)[i];
    if (Status s = agents_.StartJob(agent, jobs[i], aggregator); !s.ok()) {
      cancel_all("another agent could not start");
      return not_run(CellState::kFailed, CellReason::kAgentsUnavailable, s.message());
    }
    started.push_back(agent);
  }

  CellMeasurement m;
  m.agents = agents;
  m.memory_idle = memory_idle;
  m.measure_start = start_time + settings.warmup;
  // spec.profile: the target is sampled during the measured window only.
  CellProfiling profiling(instance, api::IsProfiled(run.spec, cell),
                          run.spec.profile ? run.spec.profile->frequency : 0, timeline.measure_start, timeline.measure_end);
  // Stops the load and waits briefly for the agents to say they stopped.
  auto abort_cell = [&](const std::string& why) {
    cancel_all(why);
    aggregator->Wait(clock_, clock_.Now() + std::chrono::seconds(1));
  };
  CellPhase phase = CellPhase::kScheduled;
  CellAggregator::Outcome outcome = CellAggregator::Outcome::kTimeout;
  for (;;) {
    outcome = aggregator->Wait(
        clock_, std::min({timeline.deadline, clock_.Now() + options_.sample_period, profiling.NextEdge()}), stop);
    const Clock::Steady now = clock_.Now();
    profiling.Tick(now, stop);
    if (outcome != CellAggregator::Outcome::kTimeout) break;
    for (CellPhase next = NextPhase(phase, timeline, now); next != phase; next = NextPhase(phase, timeline, now)) {
      phase = next;
      if (phase == CellPhase::kMeasuring) SetStage(run, cell, Stage::kMeasuring);
    }
    if (stop.stop_requested()) {
      // How far the cell got, for the record of the interrupted run.
      position_stage_ = StageOf(phase);
      position_detail_ = Progress(phase, timeline, now);
      abort_cell("the run was cancelled");
      return not_run(CellState::kFailed, CellReason::kCancelled, "the run was cancelled during this cell");
    }
    if (!slot.held()) {
      abort_cell("the load slot was lost");
      return not_run(CellState::kFailed, CellReason::kSlotLost,
                     "the load slot was lost during this cell (another target may have been under load): its load "
                     "was stopped and its numbers discarded");
    }
    if (auto gone = instance.Gone()) {
      abort_cell("the target exited");
      return target_exited(*gone);
    }
    switch (phase) {
      case CellPhase::kScheduled: break;
      case CellPhase::kMeasuring:
        if (auto u = instance.Usage(); u.ok()) SampleUsage(observer_, run.metadata.name, this_cell, *u, m);
        [[fallthrough]];
      case CellPhase::kWarmingUp:
      case CellPhase::kDraining:
        if (observer_ != nullptr) {
          api::CurrentCell c = this_cell;
          c.stage = StageOf(phase);
          observer_->OnLive(c, aggregator->LiveRequestsPerSecond(),
                            std::chrono::duration<double>(now - timeline.start).count());
        }
        break;
    }
    if (now >= timeline.deadline) break;
  }
  if (outcome == CellAggregator::Outcome::kTimeout) {
    cancel_all("the controller gave up waiting");
    return not_run(CellState::kFailed, CellReason::kAgentTimeout,
                   "the agents did not finish within " +
                       std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeline.deadline - timeline.start).count()) +
                       " s");
  }
  if (outcome == CellAggregator::Outcome::kFailed) {
    cancel_all("another agent of this cell failed");
    if (auto gone = instance.Gone()) return target_exited(*gone);
    if (!slot.held()) {
      return not_run(CellState::kFailed, CellReason::kSlotLost, "the load slot was lost during this cell: its numbers were discarded");
    }
    return not_run(CellState::kFailed, CellReason::kAgentFailed, aggregator->failure());
  }
  // The whole measurement happened while the slot was ours, or it is not a result.
  if (!slot.held()) {
    return not_run(CellState::kFailed, CellReason::kSlotLost, "the load slot was lost during this cell: its numbers were discarded");
  }
  m.totals = aggregator->Totals();
  m.end = aggregator->End();
  m.consistent = aggregator->consistent();
  m.missing_snapshots = aggregator->missing_snapshots();
  m.script_outputs = aggregator->ScriptOutputs();
  if (auto found = state.answer_headers.find(cell.scenario_index); found != state.answer_headers.end()) {
    m.answer_headers = found->second;
  }
  report::CellRecord rec = CellRecordFrom(settings, cell, where, m);
  if (shared_cpus && rec.result.state == CellState::kSucceeded) {
    rec.flags.push_back(report::CellFlag::kSharedCpus);
    std::sort(rec.flags.begin(), rec.flags.end());
  }
  // Why not double: judged here, where every platform's cells end, from
  // the ceilings the target and the agents read from their kernels.
  std::vector<std::optional<CpuView>> agent_views;
  for (const AgentCpuView& a : agent_cpus) agent_views.push_back(a.view);
  rec.result.limiter = report::JudgeLimiter(
      rec, report::LimiterContextFor(settings, cell.connections, state.cpu_facts[cell.target_index].view, agent_views));
  rec.profile = profiling.Finish(stop);
  if (rec.profile && rec.profile->state != report::ProfileState::kRecorded &&
      state.profile_messages.insert(rec.profile->message).second) {
    Message("target " + cell.target + ": no profile: " + rec.profile->message);
  }
  return rec;
}

}  // namespace fairbench::controller
