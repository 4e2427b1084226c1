#include "controller/orchestrator.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <spdlog/spdlog.h>

#include "common/api/conditions.h"
#include "common/base64.h"
#include "common/report/cell_checks.h"
#include "controller/cell_aggregator.h"
#include "controller/http_probe.h"

namespace fairbench::controller {
namespace {

using Clock = std::chrono::steady_clock;
using api::CellState;
using api::Stage;

api::Time WallNow() {
  return std::chrono::time_point_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now());
}

bool IStartsWith(const std::string& s, const std::string& prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) != std::tolower(static_cast<unsigned char>(prefix[i]))) return false;
  }
  return true;
}

std::string Clip(const std::string& s, size_t n = 80) {
  std::string out = s.size() > n ? s.substr(0, n) + "…" : s;
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

Status WriteFileAtomically(const std::filesystem::path& path, const std::string& text) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) return Status::IoError("cannot write '" + tmp.string() + "'");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Status::IoError("cannot write '" + path.string() + "': " + ec.message());
  return Status::Ok();
}

std::string CellFileName(const api::Cell& cell) {
  std::string key = cell.Key();
  std::replace(key.begin(), key.end(), '/', '_');
  return key;
}

api::Latency LatencyOf(const Histogram& h) {
  api::Latency l;
  l.mean = h.Mean();
  l.stdev = h.Stdev();
  l.max = static_cast<double>(h.max());
  l.p50 = static_cast<double>(h.ValueAtPercentile(50));
  l.p75 = static_cast<double>(h.ValueAtPercentile(75));
  l.p90 = static_cast<double>(h.ValueAtPercentile(90));
  l.p99 = static_cast<double>(h.ValueAtPercentile(99));
  l.p999 = static_cast<double>(h.ValueAtPercentile(99.9));
  l.p9999 = static_cast<double>(h.ValueAtPercentile(99.99));
  return l;
}

}  // namespace

Status VerifyScenario(const std::string& host, uint16_t port, const api::ScenarioSettings& settings) {
  const std::vector<api::WeightedRequest>& requests = settings.requests;
  for (size_t i = 0; i < requests.size(); ++i) {
    const api::Request& r = requests[i].request;
    ProbeRequest p;
    p.method = r.method;
    p.host = host;
    p.port = port;
    p.path = r.path;
    for (const auto& [k, v] : r.headers) p.headers.emplace_back(k, v);
    p.body = r.EffectiveBody();
    p.timeout = std::chrono::seconds(5);
    auto response = HttpProbe(p);
    const std::string what = r.method + " " + r.path + ": ";
    if (!response.ok()) return Status::Unavailable(what + response.status().message());
    const api::Expect& e = settings.expect;
    if (response->status != e.status) {
      return Status::FailedPrecondition(what + "expected status " + std::to_string(e.status) + ", got " +
                                        std::to_string(response->status));
    }
    if (e.content_type && !IStartsWith(response->content_type, *e.content_type)) {
      return Status::FailedPrecondition(what + "expected content type " + *e.content_type + ", got '" +
                                        response->content_type + "'");
    }
    if (i > 0) continue;  // body and JSON expectations describe the scenario's main request
    if (e.body && response->body != *e.body) {
      return Status::FailedPrecondition(what + "expected body '" + Clip(*e.body) + "', got '" + Clip(response->body) + "'");
    }
    if (e.json) {
      const nlohmann::json got = nlohmann::json::parse(response->body, nullptr, false);
      if (got.is_discarded()) return Status::FailedPrecondition(what + "expected JSON, got '" + Clip(response->body) + "'");
      if (got != *e.json) {
        return Status::FailedPrecondition(what + "expected JSON " + Clip(e.json->dump()) + ", got " + Clip(got.dump()));
      }
    }
  }
  return Status::Ok();
}

struct Orchestrator::TargetContext {
  const api::Target* target = nullptr;
  TargetInstance* instance = nullptr;
  std::optional<uint64_t> memory_idle;
};

Orchestrator::Orchestrator(Platform& platform, AgentHub& hub, OrchestratorOptions options, RunObserver* observer)
    : platform_(platform), hub_(hub), options_(std::move(options)), observer_(observer) {}

void Orchestrator::Cancel() { cancelled_ = true; }

bool Orchestrator::SleepUnlessCancelled(std::chrono::milliseconds d) {
  const auto until = Clock::now() + d;
  while (Clock::now() < until) {
    if (cancelled_) return false;
    std::this_thread::sleep_for(std::min<Clock::duration>(std::chrono::milliseconds(50), until - Clock::now()));
  }
  return !cancelled_;
}

void Orchestrator::SetStage(const api::BenchmarkRun& run, const api::Cell& cell, Stage stage) {
  if (observer_ == nullptr) return;
  api::CurrentCell c;
  c.target = cell.target;
  c.scenario = cell.scenario;
  c.connections = cell.connections;
  c.repetition = cell.repetition;
  c.stage = stage;
  observer_->OnStage(run, c);
}

Status Orchestrator::Persist(const report::RunRecord& record) {
  if (options_.on_persist) options_.on_persist(record);
  if (options_.output_dir.empty()) return Status::Ok();
  return WriteFileAtomically(std::filesystem::path(options_.output_dir) / "results.json",
                             report::ToJson(record).dump(1) + "\n");
}

report::CellRecord Orchestrator::NotRun(const api::Cell& cell, CellState state, const std::string& reason,
                                        const std::string& message) {
  report::CellRecord rec;
  rec.result.target = cell.target;
  rec.result.scenario = cell.scenario;
  rec.result.connections = cell.connections;
  rec.result.repetition = cell.repetition;
  rec.result.state = state;
  rec.result.reason = reason;
  rec.result.message = message;
  return rec;
}

Result<report::RunRecord> Orchestrator::Run(const api::BenchmarkRun& run, std::optional<report::RunRecord> resume_from) {
  report::RunRecord record;
  record.run = run;
  record.run.status = api::BenchmarkRunStatus();
  record.environment = options_.environment;
  const std::vector<api::Cell> cells = api::ExpandCells(run.spec);
  std::map<size_t, report::CellRecord> finished;  // by cell index
  if (resume_from) {
    if (!(resume_from->run.spec == run.spec)) {
      return Status::FailedPrecondition("the run's spec differs from the one in results.json: resuming would mix two "
                                        "different runs (use a new --output directory, or the original run file)");
    }
    for (report::CellRecord& c : resume_from->cells) {
      for (const api::Cell& cell : cells) {
        if (cell.Matches(c.result)) finished[cell.index] = std::move(c);
      }
    }
    record.run.status.start_time = resume_from->run.status.start_time;
    record.run.status.conditions = resume_from->run.status.conditions;
  }
  if (!options_.output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(options_.output_dir) / "cells", ec);
    if (ec) return Status::IoError("cannot create '" + options_.output_dir + "': " + ec.message());
  }

  auto rebuild = [&]() {
    record.cells.clear();
    record.run.status.results.clear();
    for (auto& [index, c] : finished) {
      record.cells.push_back(c);
      record.run.status.results.push_back(c.result);
    }
    record.run.status.progress.completed = static_cast<int64_t>(finished.size());
    record.run.status.progress.total = static_cast<int64_t>(cells.size());
  };
  record.run.status.phase = api::RunPhase::kRunning;
  if (!record.run.status.start_time) record.run.status.start_time = WallNow();
  record.run.status.observed_generation = run.metadata.generation;
  api::Condition progressing;
  progressing.type = "Progressing";
  progressing.status = api::ConditionStatus::kTrue;
  progressing.reason = resume_from ? "Resumed" : "Started";
  progressing.message = std::to_string(finished.size()) + " of " + std::to_string(cells.size()) + " cells finished";
  progressing.observed_generation = run.metadata.generation;
  api::SetCondition(record.run.status.conditions, progressing, WallNow());
  rebuild();
  if (Status s = Persist(record); !s.ok()) return s;
  if (!finished.empty() && observer_ != nullptr) {
    observer_->OnMessage("resuming: " + std::to_string(finished.size()) + " of " + std::to_string(cells.size()) +
                         " cells kept from the interrupted run");
  }

  auto record_cell = [&](const api::Cell& cell, report::CellRecord rec) -> Status {
    if (!options_.output_dir.empty() && !rec.wrk_text.empty()) {
      const auto path = std::filesystem::path(options_.output_dir) / "cells" / (CellFileName(cell) + ".txt");
      if (Status s = WriteFileAtomically(path, rec.wrk_text); !s.ok()) return s;
    }
    finished[cell.index] = std::move(rec);
    rebuild();
    if (observer_ != nullptr) observer_->OnCellDone(record, finished[cell.index]);
    return Persist(record);
  };

  for (size_t t = 0; t < run.spec.targets.size() && !cancelled_; ++t) {
    const api::Target& target = run.spec.targets[t];
    std::vector<const api::Cell*> todo;
    for (const api::Cell& c : cells) {
      if (c.target_index == t && finished.count(c.index) == 0) todo.push_back(&c);
    }
    if (todo.empty()) continue;
    auto fail_rest = [&](size_t from, CellState state, const std::string& reason, const std::string& message) -> Status {
      for (size_t i = from; i < todo.size(); ++i) {
        if (Status s = record_cell(*todo[i], NotRun(*todo[i], state, reason, message)); !s.ok()) return s;
      }
      return Status::Ok();
    };

    SetStage(record.run, *todo.front(), Stage::kWaitingForSlot);
    auto slot = platform_.AcquireSlot(run.metadata.name + "/" + target.name, options_.slot_timeout);
    if (!slot.ok()) {
      if (Status s = fail_rest(0, CellState::kFailed, "SlotUnavailable", slot.status().message()); !s.ok()) return s;
      continue;
    }
    SetStage(record.run, *todo.front(), Stage::kDeploying);
    auto instance = platform_.Deploy(target);
    if (!instance.ok()) {
      if (Status s = fail_rest(0, CellState::kFailed, "DeployFailed", instance.status().message()); !s.ok()) return s;
      continue;
    }
    TargetContext ctx;
    ctx.target = &target;
    ctx.instance = instance->get();
    const auto ready_timeout = target.local ? target.local->ready_timeout : std::chrono::seconds(30);
    if (Status s = ctx.instance->WaitReady(Clock::now() + ready_timeout); !s.ok()) {
      ctx.instance->Teardown();
      if (Status f = fail_rest(0, CellState::kFailed, "NotReady", s.message()); !f.ok()) return f;
      continue;
    }
    if (observer_ != nullptr) {
      observer_->OnMessage("target " + target.name + " is ready on " + ctx.instance->host() + ":" +
                           std::to_string(ctx.instance->port()));
    }

    SetStage(record.run, *todo.front(), Stage::kVerifying);
    std::map<size_t, std::string> broken;  // scenario index → why
    for (const api::Cell* c : todo) {
      if (broken.count(c->scenario_index) || c->repetition != todo.front()->repetition) continue;
      const api::Scenario& sc = run.spec.scenarios[c->scenario_index];
      if (Status s = VerifyScenario(ctx.instance->host(), ctx.instance->port(), api::EffectiveSettings(run.spec, sc)); !s.ok()) {
        broken[c->scenario_index] = s.message();
        if (observer_ != nullptr) observer_->OnMessage("target " + target.name + " fails scenario " + sc.name + ": " + s.message());
      } else {
        broken[c->scenario_index] = "";
      }
    }

    SetStage(record.run, *todo.front(), Stage::kSamplingIdle);
    SleepUnlessCancelled(std::chrono::milliseconds(500));
    if (auto u = ctx.instance->Usage(); u.ok()) {
      ctx.memory_idle = u->memory_bytes;
      if (observer_ != nullptr) {
        api::CurrentCell idle{target.name, todo.front()->scenario, todo.front()->connections, todo.front()->repetition,
                              Stage::kSamplingIdle};
        observer_->OnTargetUsage(run.metadata.name, idle, *u);
      }
    }

    for (size_t i = 0; i < todo.size() && !cancelled_; ++i) {
      const api::Cell& cell = *todo[i];
      if (auto gone = ctx.instance->Gone()) {
        const std::string msg = "target " + target.name + " " + *gone + " earlier (see " + ctx.instance->LogLocation() + ")";
        if (Status s = fail_rest(i, CellState::kSkipped, "TargetExited", msg); !s.ok()) return s;
        break;
      }
      if (!broken[cell.scenario_index].empty()) {
        if (Status s = record_cell(cell, NotRun(cell, CellState::kSkipped, "VerificationFailed", broken[cell.scenario_index]));
            !s.ok()) {
          return s;
        }
        continue;
      }
      report::CellRecord rec = RunCell(record.run, cell, ctx);
      if (cancelled_) break;  // an interrupted cell is not a result: a resume runs it again
      if (Status s = record_cell(cell, std::move(rec)); !s.ok()) return s;
      const bool last = i + 1 == todo.size();
      if (!last) {
        const api::ScenarioSettings settings = api::EffectiveSettings(run.spec, run.spec.scenarios[cell.scenario_index]);
        SetStage(record.run, cell, Stage::kCoolingDown);
        SleepUnlessCancelled(std::chrono::duration_cast<std::chrono::milliseconds>(settings.cooldown));
      }
    }
    SetStage(record.run, *todo.front(), Stage::kTearingDown);
    ctx.instance->Teardown();
  }

  rebuild();
  size_t failed = 0, skipped = 0;
  for (const report::CellRecord& c : record.cells) {
    failed += c.result.state == CellState::kFailed;
    skipped += c.result.state == CellState::kSkipped;
  }
  api::Condition done;
  done.observed_generation = run.metadata.generation;
  progressing.status = api::ConditionStatus::kFalse;
  if (cancelled_) {
    record.run.status.phase = api::RunPhase::kCancelled;
    progressing.reason = "Cancelled";
    progressing.message = "cancelled after " + std::to_string(record.cells.size()) + " of " + std::to_string(cells.size()) + " cells";
  } else {
    record.run.status.phase = failed + skipped == 0 ? api::RunPhase::kSucceeded : api::RunPhase::kFailed;
    record.run.status.completion_time = WallNow();
    progressing.reason = "Finished";
    progressing.message = "all " + std::to_string(cells.size()) + " cells finished";
    done.type = failed + skipped == 0 ? "Complete" : "Failed";
    done.status = api::ConditionStatus::kTrue;
    done.reason = failed + skipped == 0 ? "AllCellsSucceeded" : "CellsFailed";
    done.message = failed + skipped == 0 ? "every cell succeeded"
                                         : std::to_string(failed) + " failed and " + std::to_string(skipped) +
                                               " skipped of " + std::to_string(cells.size()) + " cells";
    api::SetCondition(record.run.status.conditions, done, WallNow());
  }
  api::SetCondition(record.run.status.conditions, progressing, WallNow());
  record.run.status.current.reset();
  if (Status s = Persist(record); !s.ok()) return s;
  return record;
}

report::CellRecord Orchestrator::RunCell(const api::BenchmarkRun& run, const api::Cell& cell, TargetContext& ctx) {
  const api::Scenario& scenario = run.spec.scenarios[cell.scenario_index];
  const api::ScenarioSettings settings = api::EffectiveSettings(run.spec, scenario);
  const int agents = std::max(1, settings.agents);

  SetStage(run, cell, Stage::kWarmingUp);
  auto ids = platform_.EnsureAgents(agents, settings.threads);
  if (!ids.ok()) return NotRun(cell, CellState::kFailed, "AgentsUnavailable", ids.status().message());
  auto idle = hub_.WaitForAgents(static_cast<size_t>(agents), options_.agent_timeout,
                                 std::set<std::string>(ids->begin(), ids->end()));
  if (!idle.ok()) return NotRun(cell, CellState::kFailed, "AgentsUnavailable", idle.status().message());

  const std::vector<int64_t> shares = api::SplitEvenly(cell.connections, agents);
  // A start a moment ahead, the same for every agent, so that they begin
  // together; their connections open before it (agents open about 50 per
  // millisecond per thread, so the lead grows with the connections).
  const auto lead = std::chrono::milliseconds(100) +
                    std::chrono::microseconds(25 * cell.connections / std::max(1, agents * settings.threads));
  const auto start_wall = std::chrono::system_clock::now() + lead;
  const auto start_steady = Clock::now() + lead;
  auto aggregator = std::make_shared<CellAggregator>(static_cast<size_t>(agents));
  const api::CurrentCell this_cell{cell.target, cell.scenario, cell.connections, cell.repetition, std::nullopt};
  if (observer_ != nullptr) {
    aggregator->SetIntervalCallback([observer = observer_, name = run.metadata.name, c = this_cell,
                                     start = std::chrono::time_point_cast<std::chrono::nanoseconds>(start_wall)](
                                        const Snapshot& s) {
      observer->OnInterval(name, c, s, start + std::chrono::nanoseconds(s.end_ns));
    });
  }
  // Nothing reaches the observer once this cell is over (a cancelled job's
  // late snapshots included).
  struct Unhook {
    CellAggregator* a;
    ~Unhook() { a->SetIntervalCallback(nullptr); }
  } unhook{aggregator.get()};
  const std::string job_id = run.metadata.name + "/" + cell.Key() + "/" + std::to_string(++job_counter_);
  std::vector<std::string> started;
  int64_t offset = 0;
  for (int i = 0; i < agents; ++i) {
    v1::LoadJob job;
    job.set_job_id(job_id);
    job.set_host(ctx.instance->host());
    job.set_port(ctx.instance->port());
    for (const api::WeightedRequest& w : settings.requests) {
      v1::Request* r = job.add_requests();
      r->set_method(w.request.method);
      r->set_target(w.request.path);
      for (const auto& [k, v] : w.request.headers) {
        v1::Header* h = r->add_headers();
        h->set_name(k);
        h->set_value(v);
      }
      r->set_body(w.request.EffectiveBody());
      r->set_weight(static_cast<uint32_t>(w.weight));
    }
    const int64_t conns = shares[static_cast<size_t>(i)];
    job.set_connections(static_cast<uint32_t>(conns));
    job.set_threads(static_cast<uint32_t>(std::min<int64_t>(settings.threads, conns)));
    job.set_warmup_ns(settings.warmup.count());
    job.set_duration_ns(settings.duration.count());
    job.set_timeout_ns(settings.timeout.count());
    job.set_interval_ns(std::chrono::nanoseconds(std::chrono::seconds(1)).count());
    job.set_keep_alive(settings.keep_alive);
    job.set_pipeline(static_cast<uint32_t>(settings.pipeline));
    if (settings.rate > 0) {
      job.set_rate(static_cast<double>(settings.rate) * static_cast<double>(conns) / static_cast<double>(cell.connections));
    }
    job.set_start_unix_ns(std::chrono::duration_cast<std::chrono::nanoseconds>(start_wall.time_since_epoch()).count());
    job.set_connection_offset(static_cast<uint32_t>(offset));
    job.set_total_connections(static_cast<uint32_t>(cell.connections));
    offset += conns;
    const std::string& agent = (*idle)[static_cast<size_t>(i)];
    if (Status s = hub_.StartJob(agent, job, aggregator); !s.ok()) {
      for (const std::string& a : started) hub_.CancelJob(a, job_id, "another agent could not start");
      return NotRun(cell, CellState::kFailed, "AgentsUnavailable", s.message());
    }
    started.push_back(agent);
  }
  auto cancel_all = [&](const std::string& why) {
    for (const std::string& a : started) hub_.CancelJob(a, job_id, why);
  };

  const auto measure_start = start_steady + settings.warmup;
  const auto measure_end = measure_start + settings.duration;
  const auto deadline = measure_end + settings.timeout + options_.job_grace;
  std::optional<TargetUsage> usage_start, usage_end;
  Clock::time_point usage_start_at, usage_end_at;
  uint64_t memory_max = 0;
  bool measuring_announced = false;
  CellAggregator::Outcome outcome = CellAggregator::Outcome::kTimeout;
  for (;;) {
    outcome = aggregator->Wait(std::min(deadline, Clock::now() + options_.sample_period));
    const auto now = Clock::now();
    if (outcome != CellAggregator::Outcome::kTimeout) break;
    if (cancelled_) {
      cancel_all("the run was cancelled");
      aggregator->Wait(Clock::now() + std::chrono::seconds(3));
      return NotRun(cell, CellState::kFailed, "Cancelled", "the run was cancelled during this cell");
    }
    if (auto gone = ctx.instance->Gone()) {
      cancel_all("the target exited");
      aggregator->Wait(Clock::now() + std::chrono::seconds(3));
      return NotRun(cell, CellState::kFailed, "TargetExited",
                    "target " + cell.target + " " + *gone + " during this cell (see " + ctx.instance->LogLocation() + ")");
    }
    if (now >= measure_start && now <= measure_end) {
      if (!measuring_announced) {
        SetStage(run, cell, Stage::kMeasuring);
        measuring_announced = true;
      }
      if (auto u = ctx.instance->Usage(); u.ok()) {
        if (!usage_start) {
          usage_start = *u;
          usage_start_at = now;
        }
        usage_end = *u;
        usage_end_at = now;
        memory_max = std::max(memory_max, u->memory_bytes);
        if (observer_ != nullptr) {
          api::CurrentCell c = this_cell;
          c.stage = Stage::kMeasuring;
          observer_->OnTargetUsage(run.metadata.name, c, *u);
        }
      }
    }
    if (observer_ != nullptr && now >= start_steady) {
      api::CurrentCell c;
      c.target = cell.target;
      c.scenario = cell.scenario;
      c.connections = cell.connections;
      c.repetition = cell.repetition;
      c.stage = now < measure_start ? Stage::kWarmingUp : Stage::kMeasuring;
      observer_->OnLive(c, aggregator->LiveRequestsPerSecond(),
                        std::chrono::duration<double>(now - start_steady).count());
    }
    if (now >= deadline) break;
  }
  if (outcome == CellAggregator::Outcome::kTimeout) {
    cancel_all("the controller gave up waiting");
    return NotRun(cell, CellState::kFailed, "AgentTimeout",
                  "the agents did not finish within " +
                      std::to_string(std::chrono::duration_cast<std::chrono::seconds>(deadline - start_steady).count()) + " s");
  }
  if (outcome == CellAggregator::Outcome::kFailed) {
    cancel_all("another agent of this cell failed");
    std::string why = aggregator->failure();
    if (auto gone = ctx.instance->Gone()) {
      return NotRun(cell, CellState::kFailed, "TargetExited",
                    "target " + cell.target + " " + *gone + " during this cell (see " + ctx.instance->LogLocation() + ")");
    }
    return NotRun(cell, CellState::kFailed, "AgentFailed", why);
  }

  // Done: the cell's numbers.
  const RunTotals totals = aggregator->Totals();
  EndReport end = aggregator->End();
  end.connections_requested = static_cast<uint32_t>(cell.connections);
  const IntervalStats& m = totals.measure();
  const double secs = end.measure_seconds > 0 ? end.measure_seconds : 1e-9;
  report::CellRecord rec = NotRun(cell, CellState::kSucceeded, "", "");
  api::CellResult& r = rec.result;
  r.requests = m.counters.requests;
  r.bytes = m.counters.bytes_read;
  r.requests_per_second = static_cast<double>(m.counters.requests) / secs;
  r.transfer_per_second = static_cast<double>(m.counters.bytes_read) / secs;
  r.bytes_per_response =
      m.counters.requests ? static_cast<double>(m.counters.bytes_read) / static_cast<double>(m.counters.requests) : 0.0;
  r.latency = LatencyOf(m.latency);
  r.errors.connect = m.counters.errors.connect;
  r.errors.read = m.counters.errors.read;
  r.errors.write = m.counters.errors.write;
  r.errors.timeout = m.counters.errors.timeout;
  r.errors.status = m.counters.errors.status;
  r.errors.port_exhaustion = m.counters.errors.port_exhaustion;
  r.status_classes.c1xx = m.counters.status_classes[1];
  r.status_classes.c2xx = m.counters.status_classes[2];
  r.status_classes.c3xx = m.counters.status_classes[3];
  r.status_classes.c4xx = m.counters.status_classes[4];
  r.status_classes.c5xx = m.counters.status_classes[5];
  r.memory_idle = ctx.memory_idle;
  if (memory_max > 0) r.memory_loaded = memory_max;
  if (usage_start && usage_end && usage_end_at > usage_start_at) {
    r.target_cpu = (usage_end->cpu_seconds - usage_start->cpu_seconds) /
                   std::chrono::duration<double>(usage_end_at - usage_start_at).count();
  }
  r.agent_cpu = totals.agent_cpu_seconds() / secs;
  const auto wall_measure_start = std::chrono::time_point_cast<std::chrono::nanoseconds>(start_wall + settings.warmup);
  r.start_time = wall_measure_start;
  r.end_time = wall_measure_start + std::chrono::nanoseconds(static_cast<int64_t>(secs * 1e9));
  rec.timeline = totals.timeline();
  rec.latency_histogram = Base64Encode(m.latency.EncodeCompressed());
  if (settings.rate > 0) rec.uncorrected_histogram = Base64Encode(m.uncorrected.EncodeCompressed());
  rec.latency_corrected = settings.rate > 0;
  SummaryContext sc;
  const std::string path = settings.requests.empty() ? "/" : settings.requests.front().request.path;
  sc.url = "http://" + ctx.instance->host() + ":" + std::to_string(ctx.instance->port()) + path;
  sc.threads = static_cast<uint32_t>(std::min<int64_t>(settings.threads, cell.connections) * agents);
  sc.connections = static_cast<uint32_t>(cell.connections);
  sc.duration_s = std::chrono::duration<double>(settings.duration).count();
  sc.rate = static_cast<double>(settings.rate);
  sc.keep_alive = settings.keep_alive;
  sc.pipeline = static_cast<uint32_t>(settings.pipeline);
  sc.latency_distribution = true;
  rec.wrk_text = RenderText(sc, totals, end);
  rec.agents = static_cast<uint32_t>(agents);
  rec.connections_peak = end.connections_peak;
  rec.drained = end.drained;
  rec.abandoned = end.abandoned;
  rec.measure_seconds = end.measure_seconds;
  if (!aggregator->consistent() || aggregator->missing_snapshots() > 0) rec.flags.push_back(report::CellFlag::kSnapshotGap);
  report::CheckCell(settings, rec);
  return rec;
}

}  // namespace fairbench::controller
