#include "controller/orchestrator/orchestrator.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <set>

#include <spdlog/spdlog.h>

#include "api/conditions.h"
#include "controller/orchestrator/cpu_verdict.h"
#include "common/mutex.h"
#include "controller/report/format.h"
#include "controller/report/limiter.h"
#include "common/units.h"
#include "controller/hub/cell_aggregator.h"
#include "controller/orchestrator/cell_jobs.h"
#include "controller/orchestrator/cell_phase.h"
#include "controller/orchestrator/cell_profiling.h"
#include "controller/orchestrator/run_state.h"
#include "controller/orchestrator/verify.h"

namespace fairbench::controller {
namespace {

using api::CellReason;
using api::CellState;
using api::Stage;

api::Time WallNow(const Clock& clock) {
  return std::chrono::time_point_cast<std::chrono::nanoseconds>(clock.WallNow());
}

// Notes of an earlier attempt that name what it ran ("target …") stay in a
// resumed record's environment unless the platform reports them anew.
std::vector<std::string> MergeNotes(std::vector<std::string> now, const std::vector<std::string>& before) {
  for (const std::string& n : before) {
    if (n.rfind("target ", 0) == 0 && std::find(now.begin(), now.end(), n) == now.end()) now.push_back(n);
  }
  return now;
}

// The latency objectives of an SLO, with the latency each limits.
struct Objective {
  const char* name;
  std::optional<api::Duration> limit;
  double api::Latency::*value;
};

std::array<Objective, 4> Objectives(const api::Slo& slo) {
  return {{{"p50", slo.p50, &api::Latency::p50},
           {"p90", slo.p90, &api::Latency::p90},
           {"p99", slo.p99, &api::Latency::p99},
           {"p999", slo.p999, &api::Latency::p999}}};
}

// "p99 ≤ 10ms, errors ≤ 1.00%"
std::string ObjectiveText(const api::Slo& slo) {
  std::string text;
  for (const Objective& o : Objectives(slo)) {
    if (o.limit) text += (text.empty() ? "" : ", ") + std::string(o.name) + " ≤ " + FormatDuration(*o.limit);
  }
  if (slo.max_error_rate) text += ", errors ≤ " + report::FormatShare(*slo.max_error_rate, 2);
  return text;
}

// A capacity trial's numbers, and whether they meet the objective.
report::CapacityTrial JudgeTrial(const api::Slo& slo, int64_t rate, const api::CellResult& r) {
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
  for (const Objective& o : Objectives(slo)) {
    if (o.limit && r.latency.*o.value >
                       static_cast<double>(std::chrono::duration_cast<std::chrono::microseconds>(*o.limit).count())) {
      pass = false;
    }
  }
  if (slo.max_error_rate && t.error_rate > *slo.max_error_rate) pass = false;
  t.pass = pass;
  return t;
}

// The record of a finished capacity search: the best trial's, or a failure
// when even the first trial missed the objective.
report::CellRecord CapacityRecord(const api::Cell& cell, const api::Slo& slo, report::CapacitySearch search,
                                  std::optional<report::CellRecord> best, int64_t fail_rate) {
  if (!best) {
    report::CellRecord rec = NotRunRecord(cell, CellState::kFailed, CellReason::kSloUnreachable,
                                          search.objective + " is not met even at " + std::to_string(slo.start_rate) +
                                              " requests/s (the first trial): lower spec.scenarios[].slo.startRate, or "
                                              "the server cannot meet it");
    if (!search.trials.empty()) {
      const report::CapacityTrial& t = search.trials.front();
      rec.result.message += " — there p99 was " + report::FormatLatency(t.p99) + ", " + report::FormatRate(t.achieved) +
                            " requests/s answered";
    }
    rec.capacity = std::move(search);
    return rec;
  }
  report::CellRecord rec = std::move(*best);
  rec.result.message =
      "capacity " + report::FormatRate(search.rate) + " requests/s within " + search.objective + " (" +
      std::to_string(search.trials.size()) + " trials; " +
      (search.bounded ? "the lowest rate that failed: " + report::FormatRate(static_cast<double>(fail_rate))
                      : "no trial failed it: the capacity is higher") +
      ")";
  rec.capacity = std::move(search);
  return rec;
}

}  // namespace

Orchestrator::Orchestrator(Platform& platform, AgentPool& agents, OrchestratorOptions options, RunObserver* observer)
    : platform_(platform),
      agents_(agents),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : SystemClock::Instance()),
      observer_(observer) {
  if (!options_.verify) {
    options_.verify = [](const TargetPlacement& t, const api::ScenarioSettings& s) {
      return VerifyScenario(t.host, t.port, t.scheme, s, t.protocol);
    };
  }
  if (!options_.read_answer) {
    options_.read_answer = [](const TargetPlacement& t, const api::ScenarioSettings& s) {
      return ReadAnswerToEnd(t.host, t.port, s);
    };
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
  observer_->OnStage(run,
                     api::CurrentCell{cell.target, cell.scenario, cell.connections, cell.repetition, stage, cell.rate});
}

void Orchestrator::Message(const std::string& message) {
  spdlog::info("{}", message);
  if (observer_ != nullptr) observer_->OnMessage(message);
}

Result<report::RunRecord> Orchestrator::Run(const api::BenchmarkRun& run, RunStore& store, bool resume) {
  RunState state{run, store, {}, api::ExpandCells(run.spec), {}, {}};
  controller_cpus_ = ReadCpuView();
  state.record.run = run;
  state.record.run.status = api::BenchmarkRunStatus();
  std::optional<report::RunRecord> earlier;
  if (resume) {
    auto stored = store.Load();
    if (!stored.ok()) return stored.status();
    earlier = std::move(*stored);
  }
  if (earlier) {
    if (Status s = KeepEarlier(state, *earlier); !s.ok()) return s;
  }
  const std::vector<Visit> visits = Schedule(state, earlier ? &*earlier : nullptr);
  Describe(state);
  if (Status s = Start(state, earlier.has_value()); !s.ok()) return s;
  for (size_t v = 0; v < visits.size() && !cancelled(); ++v) {
    if (Status s = VisitTarget(state, visits[v]); !s.ok()) return s;
  }
  if (Status s = Finish(state); !s.ok()) return s;
  return state.record;
}

// A resumed run keeps the stored record's finished cells, its start, its
// conditions and CPUs, and the notes about its targets.
Status Orchestrator::KeepEarlier(RunState& state, report::RunRecord& earlier) {
  if (!(earlier.run.spec == state.run.spec)) {
    return Status::FailedPrecondition(
        "the run's spec differs from the stored one: resuming would mix two different runs");
  }
  for (report::CellRecord& c : earlier.cells) {
    for (const api::Cell& cell : state.cells) {
      if (cell.Matches(c.result)) state.Put(cell.index, std::move(c));
    }
  }
  api::BenchmarkRunStatus& status = state.record.run.status;
  status.start_time = earlier.run.status.start_time;
  status.conditions = earlier.run.status.conditions;
  status.cpus = earlier.run.status.cpus;
  state.earlier_notes = earlier.environment.notes;
  return Status::Ok();
}

// The order of deployments, kept in the record: a resumed run keeps the
// seed it drew. Each visit deploys one target afresh and runs its
// unfinished cells: all of them (sequential), or those of the round's
// repetition (interleaved).
std::vector<Orchestrator::Visit> Orchestrator::Schedule(RunState& state, const report::RunRecord* earlier) {
  const api::BenchmarkRun& run = state.run;
  const api::RepetitionOrder order = api::EffectiveRepetitionOrder(run.spec);
  int64_t seed = 0;
  if (run.spec.seed) {
    seed = *run.spec.seed;
  } else if (earlier != nullptr && !earlier->schedule.order.empty()) {
    seed = earlier->schedule.seed;
  } else {
    seed = static_cast<int64_t>(std::random_device{}() >> 1);
  }
  const std::vector<std::vector<size_t>> rounds = api::TargetRounds(run.spec, order, seed);
  report::RunRecord& record = state.record;
  record.schedule.order = std::string(api::ToString(order));
  record.schedule.seed = seed;
  record.schedule.rounds.clear();
  std::vector<Visit> visits;
  for (size_t r = 0; r < rounds.size(); ++r) {
    std::vector<std::string> names;
    for (size_t t : rounds[r]) {
      names.push_back(run.spec.targets[t].name);
      visits.push_back({t, order == api::RepetitionOrder::kInterleaved ? static_cast<int32_t>(r + 1) : 0});
    }
    record.schedule.rounds.push_back(std::move(names));
  }
  return visits;
}

void Orchestrator::Describe(RunState& state) {
  report::RunRecord& record = state.record;
  record.environment = platform_.Describe();
  record.environment.notes = MergeNotes(record.environment.notes, state.earlier_notes);
  if (record.environment.fairbench_version.empty()) record.environment.fairbench_version = options_.fairbench_version;
}

Status Orchestrator::Persist(RunState& state) {
  if (Status s = state.store.Save(state.record); !s.ok()) return s;
  if (observer_ != nullptr) observer_->OnPersist(state.record);
  return Status::Ok();
}

// The run is Running (Progressing: Started or Resumed), saved before any load.
Status Orchestrator::Start(RunState& state, bool resumed) {
  const api::BenchmarkRun& run = state.run;
  report::RunRecord& record = state.record;
  record.run.status.phase = api::RunPhase::kRunning;
  if (!record.run.status.start_time) record.run.status.start_time = WallNow(clock_);
  record.run.status.observed_generation = run.metadata.generation;
  api::Condition progressing;
  progressing.type = api::condition::kProgressing;
  progressing.status = api::ConditionStatus::kTrue;
  progressing.reason = resumed ? api::reason::kResumed : api::reason::kStarted;
  progressing.message =
      std::to_string(state.finished.size()) + " of " + std::to_string(state.cells.size()) + " cells finished";
  progressing.observed_generation = run.metadata.generation;
  api::SetCondition(record.run.status.conditions, progressing, WallNow(clock_));
  state.UpdateProgress();
  if (Status s = Persist(state); !s.ok()) return s;
  if (!state.finished.empty()) {
    Message("resuming: " + std::to_string(state.finished.size()) + " of " + std::to_string(state.cells.size()) +
            " cells kept from the interrupted run");
  }
  if (api::EffectiveRepetitionOrder(run.spec) == api::RepetitionOrder::kInterleaved) {
    Message("repetitions interleaved: " + std::to_string(record.schedule.rounds.size()) +
            " rounds, targets in a random order drawn from seed " + std::to_string(record.schedule.seed));
  }
  return Status::Ok();
}

// One visit, tried again while its target loses the load slot (up to
// slot_attempts times; then its remaining cells fail with SlotLost).
Status Orchestrator::VisitTarget(RunState& state, const Visit& visit) {
  for (int attempt = 1;; ++attempt) {
    const std::vector<const api::Cell*> todo = state.Unfinished(visit.target, visit.repetition);
    if (todo.empty() || cancelled()) return Status::Ok();
    if (attempt > options_.slot_attempts) {
      for (const api::Cell* c : todo) {
        report::CellRecord rec = NotRunRecord(*c, CellState::kFailed, CellReason::kSlotLost,
                                              "the load slot was lost " + std::to_string(options_.slot_attempts) +
                                                  " times while this target was under load");
        state.Put(c->index, std::move(rec));
      }
      return Persist(state);
    }
    Status error;
    const TargetOutcome outcome = RunTarget(state, visit.target, todo, &error);
    if (!error.ok()) return error;
    Describe(state);
    if (outcome != TargetOutcome::kSlotLost) return Status::Ok();
    Message("target " + state.run.spec.targets[visit.target].name + ": the load slot was lost; waiting for it again");
  }
}

// The run's end: Cancelled (saying why and where it stopped), or Succeeded
// or Failed by its cells; saved.
Status Orchestrator::Finish(RunState& state) {
  const api::BenchmarkRun& run = state.run;
  report::RunRecord& record = state.record;
  state.UpdateProgress();
  size_t failed = 0, skipped = 0;
  for (const report::CellRecord& c : record.cells) {
    failed += c.result.state == CellState::kFailed;
    skipped += c.result.state == CellState::kSkipped;
  }
  const size_t total = state.cells.size();
  api::Condition progressing;
  progressing.type = api::condition::kProgressing;
  progressing.observed_generation = run.metadata.generation;
  progressing.status = api::ConditionStatus::kFalse;
  if (cancelled()) {
    record.run.status.phase = api::RunPhase::kCancelled;
    progressing.reason = api::reason::kCancelled;
    std::string why;
    {
      MutexLock lock(cancel_reason_->mu);
      why = cancel_reason_->text.empty() ? "cancelled" : cancel_reason_->text;
    }
    progressing.message =
        why + WhereStopped() + "; " + std::to_string(record.cells.size()) + " of " + std::to_string(total) +
        " cells finished" +
        (record.cells.size() < total ? " (an interrupted cell is not recorded: a resume runs it again)" : "");
    Message("run " + run.metadata.name + ": " + progressing.message);
  } else {
    const bool all_ok = failed + skipped == 0;
    record.run.status.phase = all_ok ? api::RunPhase::kSucceeded : api::RunPhase::kFailed;
    record.run.status.completion_time = WallNow(clock_);
    progressing.reason = api::reason::kFinished;
    progressing.message = "all " + std::to_string(total) + " cells finished";
    api::Condition done;
    done.observed_generation = run.metadata.generation;
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
  return Persist(state);
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
  job.scheme = where.scheme;
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
  search.objective = ObjectiveText(slo);

  std::optional<report::CellRecord> best;
  int64_t pass_rate = 0, fail_rate = 0;
  // One trial: the cell measured at `rate`; false and `failed` set when
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
    const report::CapacityTrial t = JudgeTrial(slo, rate, rec.result);
    if (rec.result.errors.Total() > 0 && (search.errors_began_at == 0 || t.offered < search.errors_began_at)) {
      search.errors_began_at = t.offered;
    }
    search.trials.push_back(t);
    if (t.pass && rate > pass_rate) {
      pass_rate = rate;
      best = std::move(rec);
    }
    if (!t.pass && (fail_rate == 0 || rate < fail_rate)) fail_rate = rate;
    return true;
  };
  // The ladder: double until the objective fails; then bisect.
  int steps = 0;
  for (int64_t rate = slo.start_rate; steps < slo.max_steps && fail_rate == 0; rate *= 2, ++steps) {
    if (!trial(rate) || stop_.stop_requested()) break;
  }
  while (!failed && !stop_.stop_requested() && steps < slo.max_steps && pass_rate > 0 && fail_rate > 0 &&
         static_cast<double>(fail_rate - pass_rate) > 0.02 * static_cast<double>(pass_rate) &&
         fail_rate - pass_rate > 1) {
    if (!trial((pass_rate + fail_rate) / 2)) break;
    ++steps;
  }
  if (failed) {
    failed->capacity = search;
    return std::move(*failed);
  }
  search.rate = static_cast<double>(pass_rate);
  search.bounded = fail_rate > 0;
  return CapacityRecord(cell, slo, std::move(search), std::move(best), fail_rate);
}

}  // namespace fairbench::controller
