// Orchestrator::CellRun: one measurement of one cell with the run's agents.
// Its steps, in the order Run() takes them: get the agents, judge the
// target's CPUs beside them, start the jobs, watch the load to its end, make
// the record. A step that fails the cell returns the record that says why;
// the load is stopped first when it had started.
#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "controller/report/limiter.h"
#include "controller/hub/cell_aggregator.h"
#include "controller/orchestrator/cell_jobs.h"
#include "controller/orchestrator/cell_phase.h"
#include "controller/orchestrator/cell_profiling.h"
#include "controller/orchestrator/cpu_verdict.h"
#include "controller/orchestrator/orchestrator.h"
#include "controller/orchestrator/run_state.h"

namespace fairbench::controller {
namespace {

using api::CellReason;
using api::CellState;
using api::Stage;

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

class Orchestrator::CellRun {
 public:
  CellRun(Orchestrator& o, RunState& state, const api::Cell& cell, TargetInstance& instance, const LoadSlot& slot,
          std::optional<uint64_t> memory_idle, std::optional<int64_t> rate);

  report::CellRecord Run();

 private:
  using Failed = std::optional<report::CellRecord>;
  Failed GetAgents();
  Failed JudgeCpusWithAgents();
  Failed StartJobs();
  Failed Watch();
  Failed Interrupted(CellPhase phase, Clock::Steady now);
  void Observe(CellPhase phase, Clock::Steady now);
  Failed JudgeEnd(CellAggregator::Outcome outcome);
  report::CellRecord Record();

  report::CellRecord NotRun(CellState s, CellReason reason, const std::string& message) const {
    return NotRunRecord(cell_, s, reason, message);
  }
  report::CellRecord TargetExited(const report::TargetExit& exit) const;
  void CancelAll(const std::string& why);
  // Stops the load and waits briefly for the agents to say they stopped.
  void Abort(const std::string& why);

  Orchestrator& o_;
  RunState& state_;
  const api::BenchmarkRun& run_;
  const api::Cell& cell_;
  TargetInstance& instance_;
  const LoadSlot& slot_;
  const std::stop_token stop_;
  api::ScenarioSettings settings_;
  const int agents_;
  TargetPlacement where_;
  const api::CurrentCell this_cell_;

  std::vector<std::string> idle_;  // the agents that take this cell's jobs
  std::vector<AgentCpuView> agent_cpus_;
  bool shared_cpus_ = false;
  CellTimeline timeline_{};
  api::Time start_time_{};
  std::string job_id_;
  std::vector<std::string> started_;  // agents whose job started
  std::shared_ptr<CellAggregator> aggregator_;
  // Nothing reaches the observer once this cell is over (a cancelled job's
  // late snapshots included).
  struct Unhook {
    CellAggregator* a = nullptr;
    ~Unhook() {
      if (a != nullptr) a->SetIntervalCallback(nullptr);
    }
  } unhook_;
  CellMeasurement m_;
  std::optional<CellProfiling> profiling_;
};

report::CellRecord Orchestrator::RunCell(RunState& state, const api::Cell& cell, TargetInstance& instance,
                                         const LoadSlot& slot, std::optional<uint64_t> memory_idle,
                                         std::optional<int64_t> rate) {
  return CellRun(*this, state, cell, instance, slot, memory_idle, rate).Run();
}

Orchestrator::CellRun::CellRun(Orchestrator& o, RunState& state, const api::Cell& cell, TargetInstance& instance,
                               const LoadSlot& slot, std::optional<uint64_t> memory_idle, std::optional<int64_t> rate)
    : o_(o),
      state_(state),
      run_(state.record.run),
      cell_(cell),
      instance_(instance),
      slot_(slot),
      stop_(o.stop_.get_token()),
      settings_(api::EffectiveSettings(run_.spec, run_.spec.scenarios[cell.scenario_index])),
      agents_(std::max(1, settings_.agents)),
      where_(instance.placement()),
      this_cell_{cell.target, cell.scenario, cell.connections, cell.repetition, std::nullopt, cell.rate} {
  if (rate) settings_.rate = *rate;
  where_.scheme = run_.spec.targets[cell.target_index].scheme;
  where_.protocol = api::EffectiveProtocol(run_.spec.targets[cell.target_index]);
  m_.agents = agents_;
  m_.memory_idle = memory_idle;
}

report::CellRecord Orchestrator::CellRun::Run() {
  o_.SetStage(run_, cell_, Stage::kWarmingUp);
  if (Failed f = GetAgents()) return std::move(*f);
  if (Failed f = JudgeCpusWithAgents()) return std::move(*f);
  if (Failed f = StartJobs()) return std::move(*f);
  if (Failed f = Watch()) return std::move(*f);
  return Record();
}

report::CellRecord Orchestrator::CellRun::TargetExited(const report::TargetExit& exit) const {
  report::CellRecord rec =
      NotRun(CellState::kFailed, CellReason::kTargetExited,
             "target " + cell_.target + " " + exit.text + " during this cell (see " + instance_.LogLocation() + ")");
  rec.target_exit = exit;
  return rec;
}

void Orchestrator::CellRun::CancelAll(const std::string& why) {
  for (const std::string& a : started_) o_.agents_.CancelJob(a, job_id_, why);
}

void Orchestrator::CellRun::Abort(const std::string& why) {
  CancelAll(why);
  aggregator_->Wait(o_.clock_, o_.clock_.Now() + std::chrono::seconds(1));
}

Orchestrator::CellRun::Failed Orchestrator::CellRun::GetAgents() {
  AgentRequest request;
  request.run = RunIdentity{run_.metadata.name, run_.metadata.namespace_, run_.metadata.uid};
  request.count = agents_;
  request.threads = settings_.threads;
  request.target = where_;
  request.placement = run_.spec.placement.agents;
  auto ids = o_.platform_.EnsureAgents(request, stop_);
  if (!ids.ok()) return NotRun(CellState::kFailed, CellReason::kAgentsUnavailable, ids.status().message());
  auto idle = o_.agents_.WaitForAgents(static_cast<size_t>(agents_), o_.options_.agent_timeout,
                                       std::set<std::string>(ids->begin(), ids->end()), stop_);
  if (!idle.ok()) return NotRun(CellState::kFailed, CellReason::kAgentsUnavailable, idle.status().message());
  idle_ = std::move(idle).value();
  return std::nullopt;
}

// The target's CPUs beside this cell's agents.
Orchestrator::CellRun::Failed Orchestrator::CellRun::JudgeCpusWithAgents() {
  for (size_t i = 0; i < static_cast<size_t>(agents_) && i < idle_.size(); ++i) {
    agent_cpus_.push_back(o_.agents_.AgentCpus(idle_[i]));
  }
  const api::TargetCpus cpus =
      JudgeCpus(cell_.target, state_.cpu_facts[cell_.target_index], agent_cpus_, o_.controller_cpus_);
  shared_cpus_ = cpus.exclusive == api::ConditionStatus::kFalse;
  state_.PutCpus(cpus);
  if (run_.spec.placement.require_exclusive_cpus && cpus.exclusive != api::ConditionStatus::kTrue) {
    return NotRun(CellState::kFailed, CellReason::kCpusNotExclusive, CpusNotExclusiveMessage(cpus));
  }
  return std::nullopt;
}

Orchestrator::CellRun::Failed Orchestrator::CellRun::StartJobs() {
  // The jobs go out a lead before the load starts (the agents open their
  // connections meanwhile); the agents read the start on their own clocks.
  const auto lead = StartLead(cell_.connections, agents_, settings_.threads);
  const auto start_wall = o_.clock_.WallNow() + std::chrono::duration_cast<std::chrono::system_clock::duration>(lead);
  timeline_ = MakeCellTimeline(o_.clock_.Now() + lead, settings_.warmup, settings_.duration,
                               AnswerTimeout(settings_) + o_.options_.job_grace);
  job_id_ = run_.metadata.name + "/" + cell_.Key() + "/" + std::to_string(++o_.job_counter_);
  const std::vector<wire::JobSpec> jobs = BuildCellJobs(settings_, cell_, where_, agents_, start_wall, job_id_);

  aggregator_ = std::make_shared<CellAggregator>(static_cast<size_t>(agents_));
  start_time_ = std::chrono::time_point_cast<std::chrono::nanoseconds>(start_wall);
  if (o_.observer_ != nullptr) {
    aggregator_->SetIntervalCallback([observer = o_.observer_, name = run_.metadata.name, c = this_cell_,
                                      start_time = start_time_](const Snapshot& s) {
      observer->OnInterval(name, c, s, start_time + std::chrono::nanoseconds(s.end_ns));
    });
  }
  unhook_.a = aggregator_.get();
  for (size_t i = 0; i < jobs.size(); ++i) {
    const std::string& agent = idle_[i];
    if (Status s = o_.agents_.StartJob(agent, jobs[i], aggregator_); !s.ok()) {
      CancelAll("another agent could not start");
      return NotRun(CellState::kFailed, CellReason::kAgentsUnavailable, s.message());
    }
    started_.push_back(agent);
  }
  return std::nullopt;
}

// Follows the load through its phases until the agents are done, the
// deadline passes, or the cell is interrupted.
Orchestrator::CellRun::Failed Orchestrator::CellRun::Watch() {
  m_.measure_start = start_time_ + settings_.warmup;
  // spec.profile: the target is sampled during the measured window only.
  profiling_.emplace(instance_, api::IsProfiled(run_.spec, cell_), run_.spec.profile ? run_.spec.profile->frequency : 0,
                     timeline_.measure_start, timeline_.measure_end);
  CellPhase phase = CellPhase::kScheduled;
  CellAggregator::Outcome outcome = CellAggregator::Outcome::kTimeout;
  for (;;) {
    outcome = aggregator_->Wait(
        o_.clock_, std::min({timeline_.deadline, o_.clock_.Now() + o_.options_.sample_period, profiling_->NextEdge()}),
        stop_);
    const Clock::Steady now = o_.clock_.Now();
    profiling_->Tick(now, stop_);
    if (outcome != CellAggregator::Outcome::kTimeout) break;
    for (CellPhase next = NextPhase(phase, timeline_, now); next != phase; next = NextPhase(phase, timeline_, now)) {
      phase = next;
      if (phase == CellPhase::kMeasuring) o_.SetStage(run_, cell_, Stage::kMeasuring);
    }
    if (Failed f = Interrupted(phase, now)) return f;
    Observe(phase, now);
    if (now >= timeline_.deadline) break;
  }
  return JudgeEnd(outcome);
}

// Cancelled, the slot lost, or the target gone while the load runs: the
// load is stopped at once and the cell fails.
Orchestrator::CellRun::Failed Orchestrator::CellRun::Interrupted(CellPhase phase, Clock::Steady now) {
  if (stop_.stop_requested()) {
    // How far the cell got, for the record of the interrupted run.
    o_.position_stage_ = StageOf(phase);
    o_.position_detail_ = Progress(phase, timeline_, now);
    Abort("the run was cancelled");
    return NotRun(CellState::kFailed, CellReason::kCancelled, "the run was cancelled during this cell");
  }
  if (!slot_.held()) {
    Abort("the load slot was lost");
    return NotRun(CellState::kFailed, CellReason::kSlotLost,
                  "the load slot was lost during this cell (another target may have been under load): its load "
                  "was stopped and its numbers discarded");
  }
  if (auto gone = instance_.Gone()) {
    Abort("the target exited");
    return TargetExited(*gone);
  }
  return std::nullopt;
}

// The target's usage while measured, and the live rate for the observer.
void Orchestrator::CellRun::Observe(CellPhase phase, Clock::Steady now) {
  switch (phase) {
    case CellPhase::kScheduled: break;
    case CellPhase::kMeasuring:
      if (auto u = instance_.Usage(); u.ok()) SampleUsage(o_.observer_, run_.metadata.name, this_cell_, *u, m_);
      [[fallthrough]];
    case CellPhase::kWarmingUp:
    case CellPhase::kDraining:
      if (o_.observer_ != nullptr) {
        api::CurrentCell c = this_cell_;
        c.stage = StageOf(phase);
        o_.observer_->OnLive(c, aggregator_->LiveRequestsPerSecond(),
                             std::chrono::duration<double>(now - timeline_.start).count());
      }
      break;
  }
}

Orchestrator::CellRun::Failed Orchestrator::CellRun::JudgeEnd(CellAggregator::Outcome outcome) {
  if (outcome == CellAggregator::Outcome::kTimeout) {
    CancelAll("the controller gave up waiting");
    return NotRun(
        CellState::kFailed, CellReason::kAgentTimeout,
        "the agents did not finish within " +
            std::to_string(
                std::chrono::duration_cast<std::chrono::seconds>(timeline_.deadline - timeline_.start).count()) +
            " s");
  }
  if (outcome == CellAggregator::Outcome::kFailed) {
    CancelAll("another agent of this cell failed");
    if (auto gone = instance_.Gone()) return TargetExited(*gone);
    if (!slot_.held()) {
      return NotRun(CellState::kFailed, CellReason::kSlotLost,
                    "the load slot was lost during this cell: its numbers were discarded");
    }
    return NotRun(CellState::kFailed, CellReason::kAgentFailed, aggregator_->failure());
  }
  // The whole measurement happened while the slot was ours, or it is not a result.
  if (!slot_.held()) {
    return NotRun(CellState::kFailed, CellReason::kSlotLost,
                  "the load slot was lost during this cell: its numbers were discarded");
  }
  return std::nullopt;
}

report::CellRecord Orchestrator::CellRun::Record() {
  m_.totals = aggregator_->Totals();
  m_.end = aggregator_->End();
  m_.consistent = aggregator_->consistent();
  m_.missing_snapshots = aggregator_->missing_snapshots();
  m_.script_outputs = aggregator_->ScriptOutputs();
  if (auto found = state_.answer_headers.find(cell_.scenario_index); found != state_.answer_headers.end()) {
    m_.answer_headers = found->second;
  }
  report::CellRecord rec = CellRecordFrom(settings_, cell_, where_, m_);
  if (shared_cpus_ && rec.result.state == CellState::kSucceeded) {
    rec.flags.push_back(report::CellFlag::kSharedCpus);
    std::sort(rec.flags.begin(), rec.flags.end());
  }
  // Why not double: judged here, where every platform's cells end, from
  // the ceilings the target and the agents read from their kernels.
  std::vector<std::optional<CpuView>> agent_views;
  for (const AgentCpuView& a : agent_cpus_) agent_views.push_back(a.view);
  rec.result.limiter = report::JudgeLimiter(
      rec,
      report::LimiterContextFor(settings_, cell_.connections, state_.cpu_facts[cell_.target_index].view, agent_views));
  rec.profile = profiling_->Finish(stop_);
  if (rec.profile && rec.profile->state != report::ProfileState::kRecorded &&
      state_.profile_messages.insert(rec.profile->message).second) {
    o_.Message("target " + cell_.target + ": no profile: " + rec.profile->message);
  }
  return rec;
}

}  // namespace fairbench::controller
