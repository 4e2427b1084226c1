#include "controller/report/document.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "api/cells.h"
#include "api/cpu_list.h"
#include "api/quantity.h"
#include "api/time_text.h"
#include "common/base64.h"
#include "common/histogram.h"
#include "controller/report/analysis.h"
#include "controller/report/cell_checks.h"
#include "controller/report/format.h"
#include "controller/report/limiter.h"
#include "controller/report/stats.h"
#include "common/units.h"

namespace fairbench::report {
namespace {

// Marks a flagged cell in the ranking tables.
constexpr const char* kFlagMark = " ⚑";

// ---------------------------------------------------------------- small builders

Span Plain(std::string text) { return Span{Span::Style::kPlain, std::move(text)}; }
Span Strong(std::string text) { return Span{Span::Style::kStrong, std::move(text)}; }
Span Code(std::string text) { return Span{Span::Style::kCode, std::move(text)}; }
Paragraph P(std::vector<Span> spans) { return Paragraph{std::move(spans)}; }
Paragraph P(std::string text) { return Paragraph{{Plain(std::move(text))}}; }

std::string Conns(int64_t connections) { return FormatCount(static_cast<double>(connections)); }
std::string ConnsText(int64_t connections) {
  return Conns(connections) + (connections == 1 ? " connection" : " connections");
}
std::string Rate(double v) { return v > 0 ? FormatRate(v) : kMissing; }
std::string Latency(double us) { return us > 0 ? FormatLatency(us) : kMissing; }
std::string Bytes(double b) { return b > 0 ? FormatBytes(b) : kMissing; }
std::string Count(uint64_t v) { return FormatCount(static_cast<double>(v)); }

std::string Lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

// "hello @ 1,000", for column headers that name a cell group.
std::string GroupLabel(const std::string& scenario, int64_t connections) {
  return scenario + " @ " + Conns(connections);
}

// "GET /", "POST /api/echo", "mix of 3 requests", "script post_echo.lua",
// "gRPC fairbench.echo.v1.Echo/Unary".
std::string RequestText(const api::Scenario* s) {
  if (s == nullptr) return kMissing;
  if (s->grpc) return "gRPC " + s->grpc->method;
  if (s->script) {
    std::string text = "wrk script " + s->script->Name(s->name);
    for (const std::string& a : s->script->args) text += " " + a;
    return text;
  }
  if (s->request) return s->request->method + " " + s->request->path;
  if (s->requests.size() == 1) return s->requests[0].request.method + " " + s->requests[0].request.path;
  return "mix of " + std::to_string(s->requests.size()) + " requests";
}

std::string StateText(const api::CellResult& r) {
  std::string s = Lowercase(api::ToString(r.state));
  if (r.reason) s += " (" + std::string(api::ToString(r.reason)) + ")";
  return s;
}

struct Context {
  const RunRecord& record;
  const RunIndex& index;
  bool show_repetition;  // a repetition column is needed
  bool show_limiter;     // some cell carries a limiter verdict (records before them carry none)
  bool show_rate;        // some cell ran at a rate level of scenarios[].rates
  std::vector<std::string> ranked_targets;
  std::map<std::string, int> slots;  // target → colour slot
};

// The first columns of a per-cell table.
std::vector<std::string> CellColumns(const Context& ctx) {
  std::vector<std::string> h{"target", "scenario", "connections"};
  if (ctx.show_rate) h.push_back("rate");
  if (ctx.show_repetition) h.push_back("repetition");
  return h;
}
// A cell's rate level as written, with what it resolved to: "2,000/s",
// "50 % = 5,120/s"; "closed loop" for the others.
std::string RateText(const api::CellResult& r) {
  if (!r.rate_level) return r.offered_rate ? FormatRate(*r.offered_rate) + "/s" : "closed loop";
  if (!r.rate_level->is_share()) return FormatRate(static_cast<double>(r.rate_level->per_second)) + "/s";
  std::string text = std::to_string(r.rate_level->percent) + " % of capacity";
  if (r.offered_rate) text += " = " + FormatRate(*r.offered_rate) + "/s";
  return text;
}
std::vector<std::string> CellCells(const Context& ctx, const api::CellResult& r) {
  std::vector<std::string> row{r.target, r.scenario, Conns(r.connections)};
  if (ctx.show_rate) row.push_back(RateText(r));
  if (ctx.show_repetition) row.push_back(std::to_string(r.repetition));
  return row;
}
std::vector<Align> Aligns(size_t left, size_t right) {
  std::vector<Align> a(left, Align::kLeft);
  a.insert(a.end(), right, Align::kRight);
  return a;
}

// The succeeded repetitions' requests/s and p99 of one group.
struct GroupEstimates {
  Estimate rate, p99;
};
GroupEstimates EstimatesOf(const RunIndex& index, const std::string& target, const std::string& scenario,
                           int64_t level) {
  std::vector<double> rates, p99s;
  for (const CellRecord* c : index.Cells(target, scenario, level)) {
    if (c->result.state != api::CellState::kSucceeded) continue;
    rates.push_back(c->result.requests_per_second);
    p99s.push_back(c->result.latency.p99);
  }
  return {Estimate95(rates), Estimate95(p99s)};
}

// An environment note about one target: "target NAME: KEY: VALUE" (what the
// orchestrator read back from it); empty fields for any other note.
struct TargetNote {
  std::string target, key, value;
};
TargetNote SplitTargetNote(const std::string& note) {
  constexpr std::string_view kTarget = "target ";
  if (note.rfind(kTarget, 0) != 0) return {};
  const size_t name_end = note.find(": ", kTarget.size());
  if (name_end == std::string::npos) return {};
  const size_t key_end = note.find(": ", name_end + 2);
  if (key_end == std::string::npos) return {};
  return {note.substr(kTarget.size(), name_end - kTarget.size()), note.substr(name_end + 2, key_end - name_end - 2),
          note.substr(key_end + 2)};
}

// (scenario, level) pairs in report order.
std::vector<std::pair<std::string, int64_t>> Groups(const RunIndex& index) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const std::string& s : index.scenarios()) {
    for (int64_t c : index.Levels(s)) out.emplace_back(s, c);
  }
  return out;
}

// Every cell, grouped by scenario and level in report order, targets by
// rank within a group, repetitions in record order.
std::vector<const CellRecord*> CellsInReportOrder(const Context& ctx) {
  std::vector<const CellRecord*> out;
  for (const auto& [scenario, level] : Groups(ctx.index)) {
    for (const std::string& target : ctx.ranked_targets) {
      for (const CellRecord* c : ctx.index.Cells(target, scenario, level)) out.push_back(c);
    }
  }
  out.insert(out.end(), ctx.index.RateCells().begin(), ctx.index.RateCells().end());
  return out;
}

// "the average latency spans 2.2×, the maximum 26.1×" over the
// representative cells of one group: the study's reminder that averages hide
// tails, computed over every target that has the cell. (The study's own
// "1.8×" at 10,000 connections spans only the four frameworks whose
// Little's-law figure it found plausible; over all six the averages span
// 2.2×.)
std::string TailSpread(const Context& ctx, const std::string& scenario, int64_t connections) {
  double min_avg = 0, max_avg = 0, min_max = 0, max_max = 0;
  int n = 0;
  for (const std::string& t : ctx.index.targets()) {
    const CellRecord* c = ctx.index.Representative(t, scenario, connections);
    if (c == nullptr || c->result.latency.mean <= 0 || c->result.latency.max <= 0) continue;
    const api::Latency& l = c->result.latency;
    min_avg = n == 0 ? l.mean : std::min(min_avg, l.mean);
    max_avg = n == 0 ? l.mean : std::max(max_avg, l.mean);
    min_max = n == 0 ? l.max : std::min(min_max, l.max);
    max_max = n == 0 ? l.max : std::max(max_max, l.max);
    ++n;
  }
  if (n < 2) return "";
  return "Across " + std::to_string(n) + " targets the average latency spans " + FormatFactor(max_avg / min_avg) +
         ", the maximum " + FormatFactor(max_max / min_max) + ".";
}

// The kind of a cell's limiter verdict, or kMissing.
std::string LimiterText(const api::CellResult& r) {
  return r.limiter ? std::string(api::ToString(r.limiter->kind)) : kMissing;
}

// ---------------------------------------------------------------- preamble

std::vector<Paragraph> Preamble(const Context& ctx) {
  std::vector<Paragraph> out;
  const api::BenchmarkRun& run = ctx.record.run;
  if (const auto it = run.metadata.annotations.find(api::annotation::kDescription);
      it != run.metadata.annotations.end()) {
    out.push_back(P(it->second));
  }
  size_t succeeded = 0, failed = 0, skipped = 0;
  for (const CellRecord& c : ctx.record.cells) {
    switch (c.result.state) {
      case api::CellState::kSucceeded: ++succeeded; break;
      case api::CellState::kFailed: ++failed; break;
      case api::CellState::kSkipped: ++skipped; break;
    }
  }
  const size_t total =
      run.status.progress.total > 0 ? static_cast<size_t>(run.status.progress.total) : api::CountCells(run.spec);
  const std::string phase = run.status.phase ? std::string(api::ToString(*run.status.phase)) : "not started";
  std::string counts = std::to_string(ctx.record.cells.size()) + " of " + std::to_string(total) +
                       " cells finished: " + std::to_string(succeeded) + " succeeded, " + std::to_string(failed) +
                       " failed, " + std::to_string(skipped) + " skipped.";
  std::vector<Span> spans{Plain("Run "), Strong(run.metadata.name.empty() ? "(unnamed)" : run.metadata.name)};
  if (!run.metadata.namespace_.empty()) spans.push_back(Plain(" in namespace " + run.metadata.namespace_));
  spans.push_back(Plain(": " + phase + ". " + counts));
  if (run.status.start_time) {
    std::string when = " Started " + api::FormatTime(*run.status.start_time);
    if (run.status.completion_time) when += ", completed " + api::FormatTime(*run.status.completion_time);
    spans.push_back(Plain(when + "."));
  }
  out.push_back(P(std::move(spans)));
  for (const api::Condition& c : run.status.conditions) {
    if (c.type == api::condition::kFailed && c.status == api::ConditionStatus::kTrue) {
      out.push_back(
          P({Strong("The run failed"), Plain(": " + c.reason + (c.message.empty() ? "" : " — " + c.message))}));
    }
    // Where an interrupted run stopped ("interrupted by SIGTERM during cell …").
    if (c.type == api::condition::kProgressing && c.reason == api::reason::kCancelled &&
        run.status.phase == api::RunPhase::kCancelled && !c.message.empty()) {
      out.push_back(P({Strong("The run was stopped"), Plain(": " + c.message + ".")}));
    }
  }
  return out;
}

// ---------------------------------------------------------------- environment and method

// How the agents waited when nothing was ready (IdleWait): the modes the
// cells ran with, the run's setting, and the longest nap (what a nap could
// add to a response's latency). Empty when no cell recorded it.
std::string IdleWaitSummary(const RunRecord& record) {
  std::map<IdleWait, size_t> cells;
  uint64_t max_nap_ns = 0;
  for (const CellRecord& c : record.cells) {
    if (!c.idle) continue;  // not run, or recorded without it
    ++cells[c.idle->mode];
    max_nap_ns = std::max(max_nap_ns, c.idle->max_nap_ns);
  }
  if (cells.empty()) return "";
  std::string out;
  for (const auto& [mode, n] : cells) {
    if (!out.empty()) out += ", ";
    out += std::string(IdleWaitName(mode)) + " in " + std::to_string(n) + (n == 1 ? " cell" : " cells");
  }
  const api::IdleWaitMode setting = record.run.spec.load.idle_wait.value_or(api::IdleWaitMode::kAuto);
  out += " (load.idleWait " + std::string(api::ToString(setting)) + ")";
  if (max_nap_ns > 0) out += "; the longest nap " + FormatTimeUs(static_cast<double>(max_nap_ns) / 1e3);
  return out;
}

BulletList EnvironmentList(const RunRecord& record) {
  const Environment& e = record.environment;
  BulletList env;
  auto item = [&env](const std::string& name, const std::string& value) {
    if (!value.empty()) env.items.push_back(P({Strong(name + ":"), Plain(" " + value)}));
  };
  item("Platform", e.platform);
  item("Host", e.hostname);
  item("Kernel", e.kernel);
  std::string cpu = e.cpu_model;
  if (e.cpus > 0) cpu += (cpu.empty() ? "" : ", ") + std::to_string(e.cpus) + " CPUs";
  item("CPU", cpu);
  item("Memory", e.memory_bytes > 0 ? FormatBytes(static_cast<double>(e.memory_bytes)) : "");
  item("Target CPUs", api::FormatCpuList(api::CpuList{e.target_cpus}));
  item("Agent CPUs", api::FormatCpuList(api::CpuList{e.agent_cpus}));
  item("fairbench", e.fairbench_version);
  item("Generators' idle wait", IdleWaitSummary(record));
  return env;
}

// The environment's notes that belong to one target, by target name.
struct TargetNotes {
  std::map<std::string, nlohmann::json> facts;
  std::map<std::string, std::string> nofile_in_force;
  std::map<std::string, std::string> ports;
};

// Facts the targets reported about their own builds get a table of their own
// below; the file limit in force and the port join the targets' table. Every
// other note is added to `env` as it is.
TargetNotes SortNotes(const Environment& e, BulletList& env) {
  TargetNotes out;
  for (const std::string& note : e.notes) {
    const TargetNote n = SplitTargetNote(note);
    if (n.key == "facts") {
      auto j = nlohmann::json::parse(n.value, nullptr, false);
      if (j.is_object()) {
        out.facts[n.target] = std::move(j);
        continue;
      }
    }
    if (n.key == "nofile in force") out.nofile_in_force[n.target] = n.value.substr(0, n.value.find(','));
    if (n.key == "port") {  // the port the target was given, shown in its table
      out.ports[n.target] = n.value;
      continue;
    }
    env.items.push_back(P(note));
  }
  return out;
}

std::string TargetPort(const api::Target& t, const Environment& e, const TargetNotes& notes) {
  if (auto it = notes.ports.find(t.name); it != notes.ports.end()) return it->second;
  // A local command with "{port}" gets a free port when the target starts.
  if (e.platform == "local" && t.local && !t.local->command.empty() &&
      std::any_of(t.local->command.begin(), t.local->command.end(),
                  [](const std::string& arg) { return arg.find("{port}") != std::string::npos; })) {
    return "chosen at run time";
  }
  return std::to_string(t.port);
}

Table TargetsTable(const api::BenchmarkRunSpec& spec, const Environment& e, const TargetNotes& notes) {
  Table targets{{"target", "runs", "port", "CPU", "memory", "nofile"}, Aligns(2, 4), {}};
  for (const api::Target& t : spec.targets) {
    std::string runs = t.image;
    if (t.local && !t.local->command.empty()) {
      runs.clear();
      for (const std::string& arg : t.local->command) runs += (runs.empty() ? "" : " ") + arg;
    }
    std::string nofile = FormatCount(static_cast<double>(t.nofile));
    if (auto it = notes.nofile_in_force.find(t.name); it != notes.nofile_in_force.end()) {
      nofile += " (in force: " + it->second + ")";
    }
    targets.rows.push_back(
        {t.name, runs.empty() ? kMissing : runs, TargetPort(t, e, notes),
         t.resources.cpu ? api::FormatCpu(*t.resources.cpu) : "no limit",
         t.resources.memory ? FormatBytes(static_cast<double>(t.resources.memory->bytes)) : "no limit", nofile});
  }
  return targets;
}

Table TargetFactsTable(const std::map<std::string, nlohmann::json>& facts) {
  Table t{{"target", "framework", "worker model", "threads", "JSON", "allocator", "compiler and flags",
           "differs from the study's server"},
          Aligns(8, 0),
          {}};
  auto text = [](const nlohmann::json& j, const char* key) -> std::string {
    if (!j.contains(key)) return kMissing;
    const nlohmann::json& v = j[key];
    return v.is_string() ? v.get<std::string>() : v.dump();
  };
  for (const auto& [name, j] : facts) {
    std::string framework = text(j, "framework");
    if (j.contains("version")) framework += " " + text(j, "version");
    std::string build = text(j, "compiler");
    if (j.contains("flags")) build += ", " + text(j, "flags");
    t.rows.push_back({name, framework, text(j, "workerModel"), text(j, "threads"), text(j, "jsonLibrary"),
                      text(j, "allocator"), build, j.contains("study") ? text(j, "study") : ""});
  }
  return t;
}

Table ScenariosTable(const api::BenchmarkRunSpec& spec) {
  Table scenarios{{"scenario", "request", "expected", "connections", "duration"}, Aligns(3, 2), {}};
  for (const api::Scenario& sc : spec.scenarios) {
    const api::ScenarioSettings settings = api::EffectiveSettings(spec, sc);
    std::string request = RequestText(&sc);
    const std::string& body = sc.request ? sc.request->EffectiveBody() : std::string();
    if (!body.empty()) request += " with a " + FormatBytes(static_cast<double>(body.size())) + " body";
    std::string expected = "status " + std::to_string(sc.expect.status);
    if (sc.expect.body) expected += ", body \"" + *sc.expect.body + "\"";
    if (sc.expect.json) expected += ", JSON " + sc.expect.json->dump();
    if (sc.expect.content_type) expected += ", " + *sc.expect.content_type;
    std::string levels;
    for (int64_t c : settings.connections) levels += (levels.empty() ? "" : ", ") + Conns(c);
    scenarios.rows.push_back({sc.name, request, expected, levels, FormatDuration(settings.duration)});
  }
  return scenarios;
}

std::string LoadText(const api::BenchmarkRunSpec& spec) {
  const api::Load& l = spec.load;
  std::string load =
      std::to_string(l.agents) + (l.agents == 1 ? " agent" : " agents") + " × " + std::to_string(l.threads) +
      " threads; each cell measures for " + FormatDuration(l.duration) + " after a " + FormatDuration(l.warmup) +
      " warmup, then the target rests " + FormatDuration(spec.cooldown) + "; request timeout " +
      FormatDuration(l.timeout) + "; " + (l.keep_alive ? "keep-alive" : "a new connection per request") + "; " +
      std::to_string(l.pipeline) + (l.pipeline == 1 ? " request" : " requests") + " in flight per connection; ";
  load += l.rate > 0 ? "a constant rate of " + FormatCount(static_cast<double>(l.rate)) + " requests/s."
                     : "closed loop (each connection sends its next request when the answer arrives).";
  load += " " + std::to_string(spec.repetitions) + (spec.repetitions == 1 ? " repetition" : " repetitions") +
          " per cell. Targets are loaded one at a time, never two at once.";
  return load;
}

// Whether the latencies count coordinated omission: raw, corrected, or mixed.
Paragraph LatencyParagraph(const Context& ctx) {
  size_t corrected = 0;
  for (const CellRecord& c : ctx.record.cells) corrected += c.latency_corrected ? 1 : 0;
  const std::string raw_text =
      "from the first byte of a request written to the last byte of its response read. In a closed loop a slow "
      "response also delays the next request of its connection, and the time that request did not get sent is "
      "not counted (coordinated omission): tails look better than users would see them.";
  const std::string corrected_text =
      "measured from the moment the constant rate scheduled each request, so time spent waiting to be sent "
      "counts (no coordinated omission); results.json also holds the uncorrected latency.";
  if (corrected == 0) return P({Strong("Latency is raw:"), Plain(" " + raw_text)});
  if (corrected == ctx.record.cells.size()) return P({Strong("Latency is corrected:"), Plain(" " + corrected_text)});
  return P({Strong("Latency is corrected"), Plain(" in the " + std::to_string(corrected) + " constant-rate cells (" +
                                                  corrected_text + ") and raw in the others (" + raw_text + ")")});
}

Section Method(const Context& ctx) {
  Section s{"method", "Environment and method", 2, {}};
  const Environment& e = ctx.record.environment;
  const api::BenchmarkRunSpec& spec = ctx.record.run.spec;

  BulletList env = EnvironmentList(ctx.record);
  const TargetNotes notes = SortNotes(e, env);
  if (env.items.empty()) {
    s.blocks.push_back(P("The environment was not recorded."));
  } else {
    s.blocks.push_back(std::move(env));
  }
  Table targets = TargetsTable(spec, e, notes);
  if (!targets.rows.empty()) s.blocks.push_back(std::move(targets));
  if (!notes.facts.empty()) {
    s.blocks.push_back(
        P("What each target reported about its own build when it started (from its source and "
          "build, not from the run file): servers that differ in how they work are compared as "
          "they are, and this says how."));
    s.blocks.push_back(TargetFactsTable(notes.facts));
  }
  Table scenarios = ScenariosTable(spec);
  if (!scenarios.rows.empty()) s.blocks.push_back(std::move(scenarios));
  s.blocks.push_back(P({Strong("Load:"), Plain(" " + LoadText(spec))}));
  s.blocks.push_back(LatencyParagraph(ctx));
  s.blocks.push_back(
      P("Averages hide tails: the tables show the standard deviation, p99, p99.9 and the maximum "
        "next to the average. Missing numbers print as " +
        std::string(kMissing) + "."));
  return s;
}

// ---------------------------------------------------------------- overview and rankings

// "Fastest: cinatra in 5 of 6 cells, drogon in hello @ 10,000."
std::string Winners(const Context& ctx) {
  std::map<std::string, std::vector<std::string>> won;
  std::vector<std::string> order;
  size_t groups = 0;
  for (const auto& [scenario, level] : Groups(ctx.index)) {
    const std::vector<RankEntry> ranking = Rank(ctx.index, scenario, level);
    if (ranking.empty() || ranking.front().cell == nullptr) continue;
    ++groups;
    const std::string& t = ranking.front().target;
    if (won[t].empty()) order.push_back(t);
    won[t].push_back(GroupLabel(scenario, level));
  }
  if (groups < 2) return "";
  std::stable_sort(order.begin(), order.end(),
                   [&won](const std::string& a, const std::string& b) { return won[a].size() > won[b].size(); });
  std::string out = "Fastest: ";
  for (size_t i = 0; i < order.size(); ++i) {
    const std::vector<std::string>& w = won[order[i]];
    out += (i == 0 ? "" : ", ") + order[i] + " (";
    if (w.size() > 2) {
      out += std::to_string(w.size()) + " of " + std::to_string(groups) + " rows";
    } else {
      for (size_t k = 0; k < w.size(); ++k) out += (k == 0 ? "" : ", ") + w[k];
    }
    out += ")";
  }
  return out + ".";
}

Section Overview(const Context& ctx) {
  Section s{"overview", "Results at a glance", 2, {}};
  const auto groups = Groups(ctx.index);
  std::string order;
  if (!ctx.index.baseline().empty() && !ctx.index.Levels(ctx.index.baseline()).empty()) {
    order = " Targets are ordered by their rank in " + ctx.index.baseline() + " at " +
            ConnsText(ctx.index.Levels(ctx.index.baseline()).front()) + ".";
  }
  s.blocks.push_back(P("Requests per second of each target in each scenario; higher is better." + order));
  Table t{{"scenario", "connections"}, Aligns(1, 1 + ctx.ranked_targets.size()), {}};
  for (const std::string& target : ctx.ranked_targets) t.header.push_back(target);
  BarChart chart;
  chart.title = "Requests per second";
  chart.value_label = "requests/s";
  chart.kind = ValueKind::kRate;
  chart.series = ctx.ranked_targets;
  for (const std::string& target : ctx.ranked_targets) chart.series_slots.push_back(ctx.slots.at(target));
  for (const auto& [scenario, level] : groups) {
    std::vector<std::string> row{scenario, Conns(level)};
    std::vector<std::optional<double>> values;
    for (const std::string& target : ctx.ranked_targets) {
      const CellRecord* c = ctx.index.Representative(target, scenario, level);
      const CellRecord* f = ctx.index.Failure(target, scenario, level);
      row.push_back(c ? Rate(c->result.requests_per_second) : f ? Lowercase(api::ToString(f->result.state)) : kMissing);
      values.push_back(c && c->result.requests_per_second > 0 ? std::optional<double>(c->result.requests_per_second)
                                                              : std::nullopt);
    }
    t.rows.push_back(std::move(row));
    chart.categories.push_back(GroupLabel(scenario, level));
    chart.values.push_back(std::move(values));
  }
  s.blocks.push_back(std::move(t));
  if (const std::string w = Winners(ctx); !w.empty()) s.blocks.push_back(P(w));
  s.blocks.push_back(Chart(std::move(chart)));
  return s;
}

// The latency percentile spectrum of each target's representative cell,
// drawn from its histogram as HdrHistogram's plots do; nullopt when no
// cell of the group carries a histogram.
std::optional<LineChart> Spectrum(const Context& ctx, const std::string& scenario, int64_t connections) {
  static constexpr double kPercentiles[] = {0,    25,   50,    75,    90,    95,     97,     99,      99.5,
                                            99.7, 99.9, 99.95, 99.97, 99.99, 99.995, 99.999, 99.9995, 99.9999};
  LineChart chart;
  chart.title = "Latency by percentile of " + scenario + " at " + ConnsText(connections) + " (log scales)";
  chart.x_label = "percentile";
  chart.y_label = "latency";
  chart.x_kind = ValueKind::kNines;
  chart.y_kind = ValueKind::kLatencyUs;
  chart.log_x = true;
  chart.log_y = true;
  double widest = 1;
  for (const std::string& target : ctx.ranked_targets) {
    const CellRecord* c = ctx.index.Representative(target, scenario, connections);
    if (c == nullptr || c->latency_histogram.empty()) continue;
    const Result<std::string> bytes = Base64Decode(c->latency_histogram);
    if (!bytes.ok()) continue;
    const Result<Histogram> h = Histogram::DecodeCompressed(*bytes);
    if (!h.ok() || h->count() == 0) continue;
    LineSeries line{target, ctx.slots.at(target), {}};
    for (double p : kPercentiles) {
      const double nines = 1 / (1 - p / 100);
      // Beyond one sample in `count` the percentile is just the maximum again.
      if (nines > static_cast<double>(h->count()) * (1 + 1e-9)) break;
      const uint64_t us = h->ValueAtPercentile(p);
      if (us == 0) continue;
      line.points.emplace_back(nines, static_cast<double>(us));
      widest = std::max(widest, nines);
    }
    if (!line.points.empty()) chart.series.push_back(std::move(line));
  }
  if (chart.series.empty()) return std::nullopt;
  for (double t = 1; t <= widest * 1.0001; t *= 10) chart.x_ticks.push_back(t);
  return chart;
}

std::vector<Section> Rankings(const Context& ctx) {
  std::vector<Section> out;
  Section intro{"rankings", "Ranking per scenario", 2, {}};
  intro.blocks.push_back(
      P({Plain("Best requests/s first; "), Strong("vs best"),
         Plain(" is the share of the fastest target's requests/s. Latency columns are the "
               "average, standard deviation, 99th and 99.9th percentiles and maximum." +
               std::string(ctx.show_repetition ? " Each row is the repetition with the median requests/s." : "") +
               std::string(kFlagMark) + " marks a cell listed under Flags." +
               std::string(ctx.show_limiter ? " Limited by: what set the cell's requests/s "
                                              "(see Why not double?)."
                                            : ""))}));
  out.push_back(std::move(intro));
  for (const auto& [scenario, level] : Groups(ctx.index)) {
    Section s{"ranking-" + scenario + "-" + std::to_string(level), scenario + " · " + ConnsText(level), 3, {}};
    s.blocks.push_back(P({Code(RequestText(ctx.index.FindScenario(scenario)))}));
    Table t{{"#", "target", "requests/s", "vs best", "avg", "stdev", "p99", "p99.9", "max"}, Aligns(2, 7), {}};
    t.align[0] = Align::kRight;
    if (ctx.show_limiter) {
      t.header.push_back("limited by");
      t.align.push_back(Align::kLeft);
    }
    LadderChart ladder;
    ladder.title = "Latency of " + scenario + " at " + ConnsText(level) + " (log scale)";
    ladder.marks = {"avg", "p50", "p90", "p99", "p99.9", "max"};
    int rank = 0, shown_rank = 0;
    // With repetitions, a target whose 95 % interval of requests/s overlaps
    // the one ranked above it is tied with it: the order between them is
    // noise, and the table says so instead of ranking it.
    std::optional<Estimate> above;
    std::string above_name;
    std::vector<std::string> ties;
    for (const RankEntry& e : Rank(ctx.index, scenario, level)) {
      if (e.cell == nullptr) {
        const std::string state = e.failure ? StateText(e.failure->result) : "not run";
        t.rows.push_back({kMissing, e.target, state, kMissing, kMissing, kMissing, kMissing, kMissing, kMissing});
        continue;
      }
      const Estimate est = EstimatesOf(ctx.index, e.target, scenario, level).rate;
      ++rank;
      const bool tied = above && Overlap(*above, est);
      if (!tied) shown_rank = rank;
      if (tied) {
        ties.push_back(above_name + " and " + e.target + " (" + FormatRate(above->low) + " – " +
                       FormatRate(above->high) + " and " + FormatRate(est.low) + " – " + FormatRate(est.high) + ")");
      }
      above = est;
      above_name = e.target;
      const api::CellResult& r = e.cell->result;
      const api::Latency& l = r.latency;
      t.rows.push_back({(tied ? "=" : "") + std::to_string(shown_rank),
                        e.target + (e.cell->flags.empty() ? "" : kFlagMark), Rate(r.requests_per_second),
                        e.share_of_best > 0 ? FormatShare(e.share_of_best) : kMissing, Latency(l.mean),
                        Latency(l.stdev), Latency(l.p99), Latency(l.p999), Latency(l.max)});
      if (ctx.show_limiter) t.rows.back().push_back(LimiterText(r));
      ladder.rows.push_back(e.target);
      ladder.row_slots.push_back(ctx.slots.at(e.target));
      std::vector<std::optional<double>> v;
      for (double x : {l.mean, l.p50, l.p90, l.p99, l.p999, l.max})
        v.push_back(x > 0 ? std::optional<double>(x) : std::nullopt);
      ladder.values.push_back(std::move(v));
    }
    s.blocks.push_back(std::move(t));
    if (!ties.empty()) {
      std::string text;
      for (const std::string& tie : ties) text += (text.empty() ? "" : "; ") + tie;
      s.blocks.push_back(
          P("Tied (= in the rank): the 95 % intervals of their requests/s over the repetitions "
            "overlap, so their order is within the noise — " +
            text + "."));
    }
    if (const std::string tails = TailSpread(ctx, scenario, level); !tails.empty()) s.blocks.push_back(P(tails));
    if (!ladder.rows.empty()) s.blocks.push_back(Chart(std::move(ladder)));
    if (std::optional<LineChart> spectrum = Spectrum(ctx, scenario, level))
      s.blocks.push_back(Chart(std::move(*spectrum)));
    out.push_back(std::move(s));
  }
  return out;
}

// ---------------------------------------------------------------- baseline and scaling

std::optional<Section> Baseline(const Context& ctx) {
  const std::string& base = ctx.index.baseline();
  if (base.empty()) return std::nullopt;
  const std::vector<int64_t>& base_levels = ctx.index.Levels(base);
  std::vector<std::pair<std::string, int64_t>> columns;
  for (const auto& [scenario, level] : Groups(ctx.index)) {
    if (scenario != base && std::find(base_levels.begin(), base_levels.end(), level) != base_levels.end()) {
      columns.emplace_back(scenario, level);
    }
  }
  if (columns.empty()) return std::nullopt;
  bool one_level = true;
  for (const auto& c : columns) one_level = one_level && c.second == columns.front().second;

  Section s{"baseline", "Drop versus the hello-world baseline", 2, {}};
  s.blocks.push_back(P({Plain("Requests/s of each scenario relative to the same target's "), Strong(base),
                        Plain(one_level ? " at " + ConnsText(columns.front().second) : " at the same connection level"),
                        Plain(": what the scenario's work (routing, JSON, parsing) costs on top of the framework's "
                              "floor. A large drop points at the component the scenario adds, such as the JSON "
                              "library.")}));
  Table t{{"target", base + (one_level ? "" : " @ " + Conns(columns.front().second)) + " requests/s"},
          Aligns(1, 1 + columns.size()),
          {}};
  for (const auto& [scenario, level] : columns) t.header.push_back(one_level ? scenario : GroupLabel(scenario, level));
  for (const std::string& target : ctx.ranked_targets) {
    const CellRecord* b = ctx.index.Representative(target, base, columns.front().second);
    std::vector<std::string> row{target, b ? Rate(b->result.requests_per_second) : kMissing};
    for (const auto& [scenario, level] : columns) {
      const CellRecord* bl = ctx.index.Representative(target, base, level);
      const CellRecord* c = ctx.index.Representative(target, scenario, level);
      const std::optional<double> change =
          bl && c ? Change(bl->result.requests_per_second, c->result.requests_per_second) : std::nullopt;
      row.push_back(change ? FormatChange(*change) : kMissing);
    }
    t.rows.push_back(std::move(row));
  }
  s.blocks.push_back(std::move(t));
  return s;
}

std::vector<Section> Scaling(const Context& ctx) {
  std::vector<Section> out;
  for (const std::string& scenario : ctx.index.scenarios()) {
    const std::vector<int64_t>& levels = ctx.index.Levels(scenario);
    if (levels.size() < 2) continue;
    if (out.empty()) {
      Section intro{"scaling", "Scaling with connections", 2, {}};
      intro.blocks.push_back(
          P("Requests/s and latency of the same scenario as connections grow; the change in "
            "parentheses is relative to the lowest level."));
      out.push_back(std::move(intro));
    }
    std::string path;
    for (int64_t c : levels) path += (path.empty() ? "" : " → ") + Conns(c);
    Section s{"scaling-" + scenario, scenario + ": " + path + " connections", 3, {}};
    Table rates{{"target"}, Aligns(1, levels.size()), {}};
    Table latency{{"target"}, Aligns(1, levels.size()), {}};
    for (int64_t c : levels) {
      rates.header.push_back(Conns(c) + " requests/s");
      latency.header.push_back(Conns(c) + " avg / max");
    }
    LineChart chart;
    chart.title = "Requests per second of " + scenario + " by connections";
    chart.x_label = "connections (log scale)";
    chart.y_label = "requests/s";
    chart.x_kind = ValueKind::kCount;
    chart.y_kind = ValueKind::kRate;
    chart.log_x = true;
    for (int64_t c : levels) chart.x_ticks.push_back(static_cast<double>(c));
    for (const std::string& target : ctx.ranked_targets) {
      std::vector<std::string> rate_row{target}, latency_row{target};
      const CellRecord* first = ctx.index.Representative(target, scenario, levels.front());
      LineSeries line{target, ctx.slots.at(target), {}};
      for (int64_t c : levels) {
        const CellRecord* cell = ctx.index.Representative(target, scenario, c);
        if (cell == nullptr) {
          const CellRecord* f = ctx.index.Failure(target, scenario, c);
          rate_row.push_back(f ? StateText(f->result) : kMissing);
          latency_row.push_back(kMissing);
          continue;
        }
        const api::CellResult& r = cell->result;
        std::string text = Rate(r.requests_per_second);
        if (c != levels.front() && first != nullptr) {
          if (const auto change = Change(first->result.requests_per_second, r.requests_per_second)) {
            text += " (" + FormatChange(*change) + ")";
          }
        }
        rate_row.push_back(text);
        latency_row.push_back(Latency(r.latency.mean) + " / " + Latency(r.latency.max));
        if (r.requests_per_second > 0) line.points.emplace_back(static_cast<double>(c), r.requests_per_second);
      }
      rates.rows.push_back(std::move(rate_row));
      latency.rows.push_back(std::move(latency_row));
      if (!line.points.empty()) chart.series.push_back(std::move(line));
    }
    s.blocks.push_back(std::move(rates));
    s.blocks.push_back(std::move(latency));
    if (const std::string tails = TailSpread(ctx, scenario, levels.back()); !tails.empty()) {
      s.blocks.push_back(P("At " + ConnsText(levels.back()) + ": " + Lowercase(tails.substr(0, 1)) + tails.substr(1)));
    }
    s.blocks.push_back(Chart(std::move(chart)));
    out.push_back(std::move(s));
  }
  return out;
}

// ---------------------------------------------------------------- errors, resources, bytes

// Why not double: each cell's limiter verdict with its evidence
// (limiter.h); nullopt for a record whose cells carry none.
std::optional<Section> WhyNotDouble(const Context& ctx) {
  if (!ctx.show_limiter) return std::nullopt;
  Section s{"limiter", "Why not double?", 2, {}};
  const LimiterThresholds th;
  s.blocks.push_back(
      P("What limited each cell's requests/s, judged from what the cell measured against the ceilings its target "
        "and agents read from their kernels: " +
        std::string("Errors (at least ") + FormatShare(th.error_share, 0) +
        " of the requests attempted failed), GeneratorCpu (the agents' CPU at " + FormatShare(th.saturated, 0) +
        " or more of what their threads, CPUs and quotas allow), TargetCpu (the target's CPU at " +
        FormatShare(th.saturated, 0) + " or more of its CPU quota or its CPUs), MemoryLimit (its memory at " +
        FormatShare(th.saturated, 0) +
        " or more of its limit) — named in this order when several hold, the others in the evidence; then, with "
        "nothing at its ceiling, OfferedRate (a constant rate achieved to " +
        FormatShare(th.offered_share, 0) +
        ") or Connections (every connection busy by Little's law — requests/s × mean latency within " +
        FormatShare(th.busy, 0) + " – " + FormatShare(th.busy_high, 0) +
        " of the connections' requests in flight — with room to double: the target's and the agents' CPU measured "
        "below " +
        FormatShare(th.headroom, 0) +
        " of their ceilings, on CPUs not shared: the connections' concurrency set the rate; whether more connections "
        "carry more depends on what the target waited on, which its CPU time per request beside the latency hints "
        "and a higher connection level shows). Unknown when the numbers identify none: never a guess."));
  std::vector<std::string> header = CellColumns(ctx);
  const size_t left = header.size();
  header.push_back("limited by");
  header.push_back("evidence");
  Table t{header, Aligns(left + 2, 0), {}};
  t.align[2] = Align::kRight;
  for (const CellRecord* c : CellsInReportOrder(ctx)) {
    if (c->result.state != api::CellState::kSucceeded) continue;
    std::vector<std::string> row = CellCells(ctx, c->result);
    row.push_back(LimiterText(c->result));
    row.push_back(c->result.limiter ? c->result.limiter->evidence : "not judged");
    t.rows.push_back(std::move(row));
  }
  s.blocks.push_back(std::move(t));
  return s;
}

// spec.calibration: whether the harness measured a stall of known length
// as it happened, on this machine, before the targets ran.
std::optional<Section> CalibrationSection(const Context& ctx) {
  if (!ctx.record.calibration) return std::nullopt;
  const CalibrationRecord& c = *ctx.record.calibration;
  Section s{"calibration", "Calibration: the harness on this machine", 2, {}};
  if (!c.error.empty()) {
    s.blocks.push_back(P("The calibration asked for (spec.calibration) could not be run on " +
                         (c.host.empty() ? std::string("this machine") : c.host) + ": " + c.error +
                         ". Whether this harness measures a stall as it happens is unknown here; `fairbench "
                         "selftest` runs the same test on its own."));
    return s;
  }
  s.blocks.push_back(
      P("Before the targets ran, the project's delay server (answering every request after " +
        FormatDecimal(c.delay_ms, 0) + " ms) was stopped for " + FormatDecimal(c.stall_ms, 1) +
        " ms in the middle of two measured cells: an open model at " + FormatRate(c.rate) +
        " requests/s, which must count every request due during the stall (its max about the stall, half the "
        "delayed requests above half of it), and a closed loop of " +
        std::to_string(c.closed_connections) +
        " connections, which sends nothing while it waits, so that only its requests in flight see the stall "
        "(coordinated omission: its max shows it, its p99 hides it). The harness " +
        (c.passed ? std::string("passed") : std::string("FAILED")) + " on " + c.host + ": " +
        (c.passed ? "every check below is within its bounds, so the latencies of this run are measured as they "
                    "happen, with the error shown."
                  : "a check below is outside its bounds: read this run's latencies with care.") +
        (c.uncorrected_would_pass ? "" : " Timed from each send instead of each due time, the open cell would fail.")));
  Table t{{"cell", "check", "expected", "measured", "error", "verdict"}, Aligns(3, 3), {}};
  for (const CalibrationCheck& k : c.checks) {
    t.rows.push_back({k.cell, k.name, k.expected, FormatDecimal(k.measured, 2) + " " + k.unit,
                      (k.error >= 0 ? "+" : "") + FormatDecimal(k.error, 2) + " " + k.unit,
                      k.passed ? "passed" : "FAILED"});
  }
  s.blocks.push_back(std::move(t));
  return s;
}

// scenarios[].rates: what each target spent to answer a load it was given,
// ranked by CPU time per request, the cells that did not take the load
// named and left out.
std::vector<Section> Efficiency(const Context& ctx) {
  const std::vector<EfficiencyGroup> groups = EfficiencyGroups(ctx.index);
  std::vector<Section> out;
  if (groups.empty()) return out;
  const CheckThresholds th;
  Section s{"efficiency", "Efficiency at fixed rates", 2, {}};
  s.blocks.push_back(P(
      "Each target offered the same constant rate (open model; latency corrected for coordinated omission), and "
      "ranked by the CPU time it spent per request answered — its CPU (cores, mean over the window) ÷ requests/s — "
      "beside its peak memory and tail latency. A rate given as a share of capacity is that share of the requests/s "
      "the same target answered in the closed-loop cell just before it. A cell that answered fewer than " +
      FormatShare(th.offered_rate_share, 0) +
      " of the requests offered is invalid (RateNotAchieved): the server did not take the load, so what it spent says "
      "nothing about its efficiency at that load; it is named below the ranking, never ranked. With repetitions, "
      "the row is the valid repetition with the median CPU per request."));
  for (const EfficiencyGroup& g : groups) {
    const std::string level = g.level.is_share() ? std::to_string(g.level.percent) + " % of capacity"
                                                 : FormatRate(static_cast<double>(g.level.per_second)) + " requests/s";
    Section sub{"efficiency-" + g.scenario + "-c" + std::to_string(g.connections) + "-" +
                    (g.level.is_share() ? std::to_string(g.level.percent) + "pct" : std::to_string(g.level.per_second)),
                g.scenario + " at " + level + ", " + ConnsText(g.connections),
                3,
                {}};
    std::vector<std::string> header{"rank",        "target", "offered", "answered", "CPU per request",
                                    "peak memory", "p99",    "p99.9"};
    if (ctx.show_repetition) header.push_back("valid repetitions");
    Table t{header, Aligns(2, header.size() - 2), {}};
    size_t rank = 0;
    std::vector<std::string> invalid;
    for (const EfficiencyEntry& e : g.entries) {
      if (e.cell == nullptr) {
        const api::CellResult& r = e.invalid->result;
        std::string why;
        if (r.state != api::CellState::kSucceeded) {
          why = StateText(r) + (r.message.empty() ? "" : ": " + r.message);
        } else {
          const double offered = r.offered_rate.value_or(0);
          why = "answered " + FormatRate(r.requests_per_second) + " of " + FormatRate(offered) +
                " requests/s offered (" + FormatShare(offered > 0 ? r.requests_per_second / offered : 0, 1) + ")";
        }
        invalid.push_back(e.target + ": " + why);
        continue;
      }
      const api::CellResult& r = e.cell->result;
      std::vector<std::string> row{
          std::to_string(++rank),
          e.target,
          r.offered_rate ? FormatRate(*r.offered_rate) : "",
          FormatRate(r.requests_per_second),
          e.cpu_us_per_request ? FormatLatency(*e.cpu_us_per_request) : "not measured",
          r.memory_loaded ? FormatBytes(static_cast<double>(*r.memory_loaded)) : "not measured",
          FormatLatency(r.latency.p99),
          FormatLatency(r.latency.p999)};
      if (ctx.show_repetition) row.push_back(std::to_string(e.valid));
      t.rows.push_back(std::move(row));
    }
    if (!t.rows.empty()) sub.blocks.push_back(std::move(t));
    if (!invalid.empty()) {
      BulletList list;
      for (const std::string& line : invalid) list.items.push_back(P("Invalid, not ranked — " + line + "."));
      sub.blocks.push_back(std::move(list));
    }
    out.push_back(std::move(sub));
  }
  out.insert(out.begin(), std::move(s));
  return out;
}

Section Errors(const Context& ctx) {
  Section s{"errors", "Errors", 2, {}};
  s.blocks.push_back(P(
      "Socket errors by kind — connect, read (including a connection closed mid-response), write, "
      "timeout (no complete response within the timeout), port exhaustion (the load generator ran "
      "out of ephemeral ports), TLS handshake (https targets: a handshake that failed), and for HTTP/2 targets the streams "
      "refused by a GOAWAY, reset by the server (RST_STREAM) or lost to a protocol error, for gRPC "
      "targets the calls that broke gRPC's rules — and responses (gRPC: calls) whose status differed "
      "from the expected one."));
  // The handshake column only when some cell was over TLS.
  bool tls = false;
  for (const CellRecord* c : CellsInReportOrder(ctx)) tls = tls || c->result.tls || c->result.errors.handshake > 0;
  std::vector<std::string> header = CellColumns(ctx);
  const size_t left = header.size();
  for (const char* h : {"connect", "read", "write", "timeout", "status", "port exhaustion"}) header.push_back(h);
  if (tls) header.push_back("handshake");
  // The HTTP/2 columns only when some cell had such an error.
  bool h2 = false;
  for (const CellRecord* c : CellsInReportOrder(ctx)) {
    const api::ErrorCounts& e = c->result.errors;
    h2 = h2 || e.goaway + e.rst_stream + e.h2_protocol > 0;
  }
  if (h2) {
    for (const char* h : {"goaway", "rst_stream", "h2 protocol"}) header.push_back(h);
  }
  // The script column only when a cell's script failed.
  bool script = false;
  for (const CellRecord* c : CellsInReportOrder(ctx)) script = script || c->result.errors.script > 0;
  if (script) header.push_back("script");
  // The gRPC column only when a call broke gRPC's rules (by kind under gRPC calls).
  bool grpc = false;
  for (const CellRecord* c : CellsInReportOrder(ctx)) grpc = grpc || c->result.errors.grpc_protocol > 0;
  if (grpc) header.push_back("grpc protocol");
  header.push_back("requests");
  Table t{header, Aligns(left, header.size() - left), {}};
  t.align[2] = Align::kRight;
  for (const CellRecord* c : CellsInReportOrder(ctx)) {
    const api::ErrorCounts& e = c->result.errors;
    if (e.Total() == 0) continue;
    std::vector<std::string> row = CellCells(ctx, c->result);
    for (uint64_t v : {e.connect, e.read, e.write, e.timeout, e.status, e.port_exhaustion}) row.push_back(Count(v));
    if (tls) row.push_back(Count(e.handshake));
    if (h2) {
      for (uint64_t v : {e.goaway, e.rst_stream, e.h2_protocol}) row.push_back(Count(v));
    }
    if (script) row.push_back(Count(e.script));
    if (grpc) row.push_back(Count(e.grpc_protocol));
    row.push_back(c->result.requests > 0 ? Count(c->result.requests) : kMissing);
    t.rows.push_back(std::move(row));
  }
  if (t.rows.empty()) {
    s.blocks.push_back(P("No cell had a socket error or an unexpected status."));
  } else {
    s.blocks.push_back(std::move(t));
    s.blocks.push_back(P("Every other cell had none."));
  }
  return s;
}

// https targets: what TLS costs, apart from request latency. With short
// connections every request pays a handshake, so this is where the cost of
// TLS shows; with keep-alive there is one per connection.
std::optional<Section> TlsSection(const Context& ctx) {
  Section s{"tls", "TLS handshakes", 2, {}};
  s.blocks.push_back(
      P("For https targets: TLS handshakes completed in the measurement window, how many resumed an "
        "earlier session, their mean time (from the TCP connect to the end of the handshake; not part "
        "of the latency above) and their rate. Failed handshakes are under Errors."));
  std::vector<std::string> header = CellColumns(ctx);
  const size_t left = header.size();
  for (const char* h : {"handshakes", "resumed", "mean", "per second", "requests"}) header.push_back(h);
  Table t{header, Aligns(left, header.size() - left), {}};
  for (const CellRecord* c : CellsInReportOrder(ctx)) {
    if (!c->result.tls) continue;
    const api::TlsHandshakes& h = *c->result.tls;
    std::vector<std::string> row = CellCells(ctx, c->result);
    row.push_back(Count(h.count));
    row.push_back(Count(h.resumed));
    row.push_back(h.count > 0 ? FormatLatency(h.mean) : kMissing);
    row.push_back(FormatDecimal(h.per_second, 1));
    row.push_back(c->result.requests > 0 ? Count(c->result.requests) : kMissing);
    t.rows.push_back(std::move(row));
  }
  if (t.rows.empty()) return std::nullopt;
  s.blocks.push_back(std::move(t));
  return s;
}

// gRPC targets: how the calls ended, by grpc-status, and the calls the
// server answered in a way gRPC does not allow, by kind.
std::optional<Section> GrpcSection(const Context& ctx) {
  Section s{"grpc", "gRPC calls", 2, {}};
  s.blocks.push_back(
      P("For gRPC targets: the calls of the measurement window by the grpc-status they ended with "
        "(a call that ended other than as the scenario expects is a status error under Errors), the "
        "response messages they carried, and protocol errors — a call answered without a grpc-status, "
        "with a malformed one, with a message cut short, not in gRPC framing, over the size limit, or a "
        "unary call answered OK with no message or several. For server-streaming calls, the latency "
        "from the call's start to its first and to its last message."));
  std::vector<std::string> header = CellColumns(ctx);
  const size_t left = header.size();
  for (const char* h : {"calls by status", "messages", "protocol errors"}) header.push_back(h);
  // Server-streaming cells: latency to the first and to the last message.
  bool streaming = false;
  for (const CellRecord* c : CellsInReportOrder(ctx))
    streaming = streaming || (c->result.grpc && c->result.grpc->first_message_latency);
  if (streaming) {
    for (const char* h : {"first message p50", "first message p99", "last message p99"}) header.push_back(h);
  }
  Table t{header, Aligns(left, header.size() - left), {}};
  t.align[left] = Align::kLeft;
  for (const CellRecord* c : CellsInReportOrder(ctx)) {
    if (!c->result.grpc) continue;
    const api::GrpcCalls& g = *c->result.grpc;
    std::vector<std::string> row = CellCells(ctx, c->result);
    std::string statuses;
    for (const api::GrpcStatusCount& n : g.statuses) {
      statuses += (statuses.empty() ? "" : ", ") + std::string(api::ToString(n.code)) + " " + Count(n.calls);
    }
    if (g.status_other > 0) statuses += (statuses.empty() ? "" : ", ") + std::string("other ") + Count(g.status_other);
    row.push_back(statuses.empty() ? kMissing : statuses);
    row.push_back(Count(g.messages));
    std::string protocol;
    const std::pair<const char*, uint64_t> kinds[] = {{"no status", g.no_status}, {"bad status", g.bad_status},
                                                      {"truncated", g.truncated}, {"bad framing", g.bad_flag},
                                                      {"too large", g.too_large}, {"unary messages", g.unary_messages}};
    for (const auto& [name, n] : kinds) {
      if (n > 0) protocol += (protocol.empty() ? "" : ", ") + std::string(name) + " " + Count(n);
    }
    row.push_back(protocol.empty() ? "0" : protocol);
    if (streaming) {
      const auto& first = g.first_message_latency;
      const auto& last = g.last_message_latency;
      row.push_back(first ? FormatLatency(first->p50) : kMissing);
      row.push_back(first ? FormatLatency(first->p99) : kMissing);
      row.push_back(last ? FormatLatency(last->p99) : kMissing);
    }
    t.rows.push_back(std::move(row));
  }
  if (t.rows.empty()) return std::nullopt;
  s.blocks.push_back(std::move(t));
  return s;
}

// The target's CPU time per request it served (cores ÷ requests/s), or
// kMissing where either is unknown.
std::string TargetCpuPerRequest(const CellRecord* c) {
  if (c == nullptr || !c->result.target_cpu.has_value() || c->result.requests_per_second <= 0) return kMissing;
  return FormatDecimal(*c->result.target_cpu / c->result.requests_per_second * 1e6, 1) + " µs";
}

Section Resources(const Context& ctx) {
  Section s{"resources", "Memory and CPU", 2, {}};
  const auto groups = Groups(ctx.index);
  Table memory{{"target", "idle"}, Aligns(1, 1 + groups.size()), {}};
  Table cpu{{"target"}, Aligns(1, groups.size()), {}};
  Table per_request{{"target"}, Aligns(1, groups.size()), {}};
  for (const auto& [scenario, level] : groups) {
    memory.header.push_back(GroupLabel(scenario, level));
    cpu.header.push_back(GroupLabel(scenario, level));
    per_request.header.push_back(GroupLabel(scenario, level));
  }
  bool any_memory = false, any_cpu = false, any_per_request = false;
  for (const std::string& target : ctx.ranked_targets) {
    std::optional<uint64_t> idle;
    for (const CellRecord& c : ctx.record.cells) {
      if (c.result.target == target && c.result.memory_idle && !idle) idle = c.result.memory_idle;
    }
    std::vector<std::string> mem_row{target, idle ? FormatBytes(static_cast<double>(*idle)) : kMissing};
    std::vector<std::string> cpu_row{target};
    std::vector<std::string> per_request_row{target};
    any_memory = any_memory || idle.has_value();
    for (const auto& [scenario, level] : groups) {
      const CellRecord* c = ctx.index.Representative(target, scenario, level);
      const auto& loaded = c ? c->result.memory_loaded : std::optional<uint64_t>();
      mem_row.push_back(loaded ? FormatBytes(static_cast<double>(*loaded)) : kMissing);
      any_memory = any_memory || loaded.has_value();
      const std::optional<double> tc = c ? c->result.target_cpu : std::nullopt;
      const std::optional<double> ac = c ? c->result.agent_cpu : std::nullopt;
      cpu_row.push_back((tc ? FormatDecimal(*tc, 2) : kMissing) + " / " + (ac ? FormatDecimal(*ac, 2) : kMissing));
      any_cpu = any_cpu || tc || ac;
      const std::string per = TargetCpuPerRequest(c);
      any_per_request = any_per_request || per != kMissing;
      per_request_row.push_back(per);
    }
    memory.rows.push_back(std::move(mem_row));
    cpu.rows.push_back(std::move(cpu_row));
    per_request.rows.push_back(std::move(per_request_row));
  }
  if (any_memory) {
    s.blocks.push_back(
        P("Memory of the target's processes: idle, before any load, and loaded, at the end of each "
          "cell's measurement — sampled while only this target was under load."));
    s.blocks.push_back(std::move(memory));
  } else {
    s.blocks.push_back(P("Memory was not recorded."));
  }
  if (any_cpu) {
    s.blocks.push_back(
        P("CPU in cores, averaged over each measurement: the target / the load agents. Agents near "
          "their thread count may have limited the load (see Flags)."));
    s.blocks.push_back(std::move(cpu));
  } else {
    s.blocks.push_back(P("CPU use was not recorded."));
  }
  if (any_per_request) {
    s.blocks.push_back(
        P("The target's CPU time per request served (its cores ÷ requests/s): what each request cost "
          "the server. Compared across load tools or runs of the same server, a higher figure means "
          "the traffic, not the server, made it work harder."));
    s.blocks.push_back(std::move(per_request));
  }
  return s;
}

// What each target really got, read from inside it (run.status.cpus), and
// whether its CPUs were its own.
std::optional<Section> CpusSection(const Context& ctx) {
  const std::vector<api::TargetCpus>& all = ctx.record.run.status.cpus;
  if (all.empty()) return std::nullopt;
  Section s{"cpus", "CPUs each target got", 2, {}};
  s.blocks.push_back(
      P("Read from inside each target (its pod's cgroup and /proc, or its process): the CPUs it may "
        "run on, of those online on its machine, its CPU quota and memory limit, and the verdicts — "
        "exclusive (nothing else may run on its CPUs: on Kubernetes, a kubelet with the static CPU "
        "manager policy and whole CPUs), disjoint from the agents on its machine, as many as asked. "
        "Cells of a target whose CPUs were shared are flagged SharedCpus."));
  Table t{{"target", "node", "CPUs", "of", "asked", "quota", "memory limit", "CPU manager", "exclusive",
           "disjoint from agents", "as many as asked"},
          Aligns(11, 0),
          {}};
  BulletList why;
  for (const api::TargetCpus& c : all) {
    t.rows.push_back({c.target, c.node.empty() ? kMissing : c.node, c.cpus.empty() ? kMissing : c.cpus,
                      c.node_cpus.empty() ? kMissing : c.node_cpus, c.asked ? api::FormatCpu(*c.asked) : kMissing,
                      c.cpu_quota ? api::FormatCpu(*c.cpu_quota) : "none",
                      c.memory_limit ? FormatBytes(static_cast<double>(c.memory_limit->bytes)) : "none",
                      c.cpu_manager_policy.empty() ? kMissing : c.cpu_manager_policy,
                      std::string(api::ToString(c.exclusive)), std::string(api::ToString(c.disjoint_from_agents)),
                      std::string(api::ToString(c.as_many_as_asked))});
    std::string agents;
    for (const api::AgentCpus& a : c.agents) {
      agents += (agents.empty() ? "" : ", ") + a.agent + (a.node.empty() ? "" : " on " + a.node) + ": " +
                (a.cpus.empty() ? "not said" : "CPUs " + a.cpus) + (a.same_machine ? " (same machine)" : "");
    }
    why.items.push_back(
        P({Code(c.target), Plain(": " + c.message + (agents.empty() ? "" : ". Agents: " + agents) + ".")}));
  }
  s.blocks.push_back(std::move(t));
  s.blocks.push_back(std::move(why));
  return s;
}

Section BytesSection(const Context& ctx) {
  Section s{"bytes", "Bytes per response and transfer", 2, {}};
  const auto groups = Groups(ctx.index);
  // Bytes per response do not depend on the load: one column per scenario, at its lowest level.
  std::vector<std::pair<std::string, int64_t>> lowest;
  for (const std::string& sc : ctx.index.scenarios()) {
    if (!ctx.index.Levels(sc).empty()) lowest.emplace_back(sc, ctx.index.Levels(sc).front());
  }
  std::string caveat =
      "Throughput comparisons must be read against bytes per response (headers included, as read from the wire): "
      "a server that sends fewer or shorter headers does less work per request.";
  if (!ctx.index.baseline().empty() && !ctx.index.Levels(ctx.index.baseline()).empty()) {
    const std::string& base = ctx.index.baseline();
    const int64_t level = ctx.index.Levels(base).front();
    const CellRecord *small = nullptr, *large = nullptr;
    for (const std::string& t : ctx.ranked_targets) {
      const CellRecord* c = ctx.index.Representative(t, base, level);
      if (c == nullptr || c->result.bytes_per_response <= 0) continue;
      if (!small || c->result.bytes_per_response < small->result.bytes_per_response) small = c;
      if (!large || c->result.bytes_per_response > large->result.bytes_per_response) large = c;
    }
    const std::vector<RankEntry> ranking = Rank(ctx.index, base, level);
    if (ranking.size() >= 2 && ranking[0].cell && ranking[1].cell) {
      const api::CellResult& first = ranking[0].cell->result;
      const api::CellResult& second = ranking[1].cell->result;
      const std::optional<double> lead = Change(second.requests_per_second, first.requests_per_second);
      const std::optional<double> more = Change(first.bytes_per_response, second.bytes_per_response);
      if (lead && more && *more > 0) {
        caveat += " In " + base + " at " + ConnsText(level) + ", " + first.target + " answers " + FormatShare(*lead) +
                  " more requests/s than " + second.target + ", but " + second.target + " sends " +
                  FormatShare(*more, 0) + " more bytes per response (" + Bytes(second.bytes_per_response) + " vs " +
                  Bytes(first.bytes_per_response) + ").";
      }
    }
    if (small && large && small != large) {
      const double more = large->result.bytes_per_response / small->result.bytes_per_response - 1;
      caveat += " Across targets, " + large->result.target + " sends " + FormatShare(more, 0) + " more bytes per " +
                "response than " + small->result.target + " (" + Bytes(large->result.bytes_per_response) + " vs " +
                Bytes(small->result.bytes_per_response) + ").";
    }
  }
  s.blocks.push_back(P(caveat));
  Table per_response{{"target"}, Aligns(1, lowest.size()), {}};
  for (const auto& [sc, level] : lowest) per_response.header.push_back(sc);
  Table transfer{{"target"}, Aligns(1, groups.size()), {}};
  for (const auto& [sc, level] : groups) transfer.header.push_back(GroupLabel(sc, level));
  bool any = false;
  for (const std::string& target : ctx.ranked_targets) {
    std::vector<std::string> a{target}, b{target};
    for (const auto& [sc, level] : lowest) {
      const CellRecord* c = ctx.index.Representative(target, sc, level);
      a.push_back(c ? Bytes(c->result.bytes_per_response) : kMissing);
      any = any || (c && c->result.bytes_per_response > 0);
    }
    for (const auto& [sc, level] : groups) {
      const CellRecord* c = ctx.index.Representative(target, sc, level);
      b.push_back(c && c->result.transfer_per_second > 0 ? FormatByteRate(c->result.transfer_per_second) : kMissing);
    }
    per_response.rows.push_back(std::move(a));
    transfer.rows.push_back(std::move(b));
  }
  if (!any) {
    s.blocks.push_back(P("Bytes per response were not recorded."));
    return s;
  }
  s.blocks.push_back(P({Strong("Bytes per response"), Plain(" (each scenario at its lowest connection level):")}));
  s.blocks.push_back(std::move(per_response));
  s.blocks.push_back(P({Strong("Transfer per second"), Plain(" (bytes read from the target):")}));
  s.blocks.push_back(std::move(transfer));
  return s;
}

// ---------------------------------------------------------------- flags, repetitions, failures

std::string FlagDetail(const Context& ctx, const CellRecord& c, CellFlag flag) {
  const api::CellResult& r = c.result;
  switch (flag) {
    case CellFlag::kGeneratorSaturated:
      return r.agent_cpu ? "the agents used " + FormatDecimal(*r.agent_cpu, 2) + " cores" : "the agents were saturated";
    case CellFlag::kLittlesLawMismatch: {
      // A record without the figure is from before streams counted: its
      // connections were the requests in flight.
      const double expected =
          c.littles_law_in_flight > 0 ? c.littles_law_in_flight : static_cast<double>(r.connections);
      const double ratio = c.littles_law_connections / expected;
      std::string carried = ConnsText(r.connections);
      if (expected != static_cast<double>(r.connections)) {
        carried = FormatCount(expected) + " (" + carried + " × " +
                  FormatCount(expected / static_cast<double>(r.connections)) + ")";
      }
      return "requests/s × mean latency = " + FormatCount(c.littles_law_connections) + " requests in flight for " +
             carried + " (" + FormatFactor(ratio) + "): " +
             (ratio > 1 ? "more than the connections can carry; the latency or the rate is off"
                        : "connections sat idle; reconnects, errors or a busy generator");
    }
    case CellFlag::kFewerConnections:
      return "at most " + Count(c.connections_peak) + " of " + Conns(r.connections) + " connections were open";
    case CellFlag::kSnapshotGap: return "an agent's interval went missing; the totals lack it";
    case CellFlag::kSparseUsage:
      return "the target's CPU and memory rest on " + Count(c.usage_samples) +
             (c.usage_samples == 1 ? " fresh sample" : " fresh samples") + " spanning " +
             FormatDecimal(c.usage_span_seconds, 1) + " s of the " + FormatDecimal(c.measure_seconds, 1) +
             " s measured: read them as rough";
    case CellFlag::kSharedCpus: {
      for (const api::TargetCpus& t : ctx.record.run.status.cpus) {
        if (t.target == r.target) return "the target's CPUs were not its own: " + t.message + " (see CPUs)";
      }
      return "the target's CPUs were not its own (see CPUs)";
    }
    case CellFlag::kErrors: {
      const api::ErrorCounts& e = r.errors;
      const uint64_t socket = e.connect + e.read + e.write + e.timeout + e.port_exhaustion + e.handshake + e.goaway +
                              e.rst_stream + e.h2_protocol;
      std::string out;
      if (socket > 0) out = Count(socket) + (socket == 1 ? " socket error" : " socket errors");
      if (e.status > 0) out += (out.empty() ? "" : ", ") + Count(e.status) + " unexpected statuses";
      if (e.script > 0) out += (out.empty() ? "" : ", ") + Count(e.script) + " script errors";
      return out + " (see Errors)";
    }
    case CellFlag::kRateNotAchieved: {
      const double offered = r.offered_rate.value_or(0);
      return FormatRate(r.requests_per_second) + " requests/s answered of " + FormatRate(offered) + " offered (" +
             FormatShare(offered > 0 ? r.requests_per_second / offered : 0, 1) + "): invalid, not ranked";
    }
    case CellFlag::kContentLengthMismatch: {
      const api::AnswerChecks a = r.answers.value_or(api::AnswerChecks{});
      return "an answer said Content-Length " + Count(a.content_length.value_or(0)) + " and its body had " +
             Count(a.body_bytes.value_or(0)) + " bytes (read to the end of its connection before the load)";
    }
    case CellFlag::kDateMissing: {
      const api::AnswerChecks a = r.answers.value_or(api::AnswerChecks{});
      std::string out = a.date_missing ? "the answer read before the load had no Date header" : "";
      if (a.without_date > 0) {
        out += (out.empty() ? "" : "; ") + Count(a.without_date) + " of " + Count(a.verified) +
               " sampled answers had no Date header";
      }
      return out;
    }
    case CellFlag::kDateFrozen:
      return "sampled answers carried the same Date more than 2 s apart: the server's clock, or its answers, stood still";
    case CellFlag::kAnswersUnsampled:
      return "no answer was sampled: fewer requests per connection than vary.verifyEvery; lower it to check answers";
  }
  return "";
}

Section Flags(const Context& ctx) {
  Section s{"flags", "Flags: cells that need a second look", 2, {}};
  const CheckThresholds th;
  BulletList legend;
  legend.items.push_back(
      P({Code(FlagName(CellFlag::kLittlesLawMismatch)),
         Plain(": requests/s × mean latency (the requests in flight, by Little's law) is more than " +
               FormatShare(th.littles_law_tolerance, 0) +
               " away from what the connections keep in flight (× streams on HTTP/2 and gRPC, × pipeline). In a "
               "closed loop they must agree; when they do not, "
               "the measurement, not the server, needs a look.")}));
  legend.items.push_back(P({Code(FlagName(CellFlag::kGeneratorSaturated)),
                            Plain(": the agents used at least " + FormatShare(th.generator_saturated_share, 0) +
                                  " of their threads' CPU; the load generator may have set the pace.")}));
  legend.items.push_back(
      P({Code(FlagName(CellFlag::kFewerConnections)), Plain(": fewer connections were open at once than asked for.")}));
  legend.items.push_back(P({Code(FlagName(CellFlag::kSnapshotGap)), Plain(": an agent's interval went missing.")}));
  legend.items.push_back(P({Code(FlagName(CellFlag::kSparseUsage)),
                            Plain(": the target's CPU and memory rest on fewer than two fresh samples, or on samples "
                                  "spanning less than half the measured time (a kubelet refreshes its figures every "
                                  "10–15 s: cells longer than 30 s avoid this).")}));
  legend.items.push_back(P({Code(FlagName(CellFlag::kSharedCpus)),
                            Plain(": the target's CPUs were not its own — an agent or the controller could run on "
                                  "them, or its node's kubelet gave it shared CPUs (see CPUs).")}));
  legend.items.push_back(
      P({Code(FlagName(CellFlag::kErrors)), Plain(": socket errors or responses with an unexpected status.")}));
  legend.items.push_back(
      P({Code(FlagName(CellFlag::kRateNotAchieved)),
         Plain(": a constant rate, and fewer than " + FormatShare(th.offered_rate_share, 0) +
               " of the requests offered were answered: the server did not take the load, so the "
               "cell's efficiency is not a figure to rank (it is left out of the efficiency tables).")}));
  legend.items.push_back(P({Code(FlagName(CellFlag::kContentLengthMismatch)),
                            Plain(": scenarios with vary: an answer read to the end of its connection had a "
                                  "Content-Length other than the bytes of its body.")}));
  legend.items.push_back(P({Code(FlagName(CellFlag::kDateMissing)),
                            Plain(": scenarios with vary: answers without a Date header (HTTP requires one from a "
                                  "server with a clock).")}));
  legend.items.push_back(
      P({Code(FlagName(CellFlag::kDateFrozen)),
         Plain(": scenarios with vary: sampled answers carried the same Date more than 2 s apart.")}));
  legend.items.push_back(P({Code(FlagName(CellFlag::kAnswersUnsampled)),
                            Plain(": scenarios with vary: no answer was sampled and checked.")}));
  s.blocks.push_back(std::move(legend));

  std::vector<std::string> header = CellColumns(ctx);
  const size_t left = header.size();
  header.push_back("flag");
  header.push_back("detail");
  Table t{header, Aligns(left + 2, 0), {}};
  t.align[2] = Align::kRight;
  for (const CellRecord* c : CellsInReportOrder(ctx)) {
    for (CellFlag f : c->flags) {
      std::vector<std::string> row = CellCells(ctx, c->result);
      row.push_back(FlagName(f));
      row.push_back(FlagDetail(ctx, *c, f));
      t.rows.push_back(std::move(row));
    }
  }
  if (t.rows.empty()) {
    s.blocks.push_back(P("No cell was flagged."));
  } else {
    s.blocks.push_back(std::move(t));
  }
  return s;
}

// Scenarios with an objective: the highest constant rate that met it, and
// the curve of latency against the offered rate that led there.
std::optional<Section> Capacity(const Context& ctx) {
  std::vector<const CellRecord*> cells;
  for (const CellRecord& c : ctx.record.cells) {
    if (c.capacity) cells.push_back(&c);
  }
  if (cells.empty()) return std::nullopt;
  Section s{"capacity", "Capacity under a latency objective", 2, {}};
  s.blocks.push_back(
      P("For a scenario with an objective (spec.scenarios[].slo), each cell searched the highest "
        "constant request rate that still met it: rates doubling from the start rate until the "
        "objective failed, then bisecting. Latency at a constant rate is measured from when each "
        "request was due (corrected for coordinated omission). A rate the server answered less than "
        "90 % of fails too."));
  Table t{{"target", "scenario", "connections", "objective", "capacity (requests/s)", "p99 there", "errors began at",
           "trials: offered requests/s → p99"},
          Aligns(4, 3),
          {}};
  t.align.push_back(Align::kLeft);
  for (const CellRecord* c : cells) {
    const CapacitySearch& cap = *c->capacity;
    std::vector<CapacityTrial> sorted = cap.trials;
    std::sort(sorted.begin(), sorted.end(),
              [](const CapacityTrial& a, const CapacityTrial& b) { return a.offered < b.offered; });
    std::string curve;
    double p99_there = 0;
    for (const CapacityTrial& tr : sorted) {
      curve += (curve.empty() ? "" : ", ") + FormatRate(tr.offered) + " → " + FormatLatency(tr.p99) +
               (tr.pass ? " ✓" : " ✗");
      if (tr.offered == cap.rate) p99_there = tr.p99;
    }
    std::string capacity = cap.rate > 0 ? FormatRate(cap.rate) + (cap.bounded ? "" : " or more") : "none met it";
    t.rows.push_back({c->result.target, c->result.scenario, Conns(c->result.connections), cap.objective, capacity,
                      p99_there > 0 ? Latency(p99_there) : kMissing,
                      cap.errors_began_at > 0 ? FormatRate(cap.errors_began_at) : "no errors", curve});
  }
  s.blocks.push_back(std::move(t));
  return s;
}

Section Repetitions(const Context& ctx) {
  Section s{"repetitions", "Repetitions and run-to-run spread", 2, {}};
  if (ctx.index.MaxRepetitions() <= 1) {
    s.blocks.push_back(
        P("Each cell ran once, so the run-to-run spread is unknown. Re-runs of the same benchmark "
          "commonly differ by several percent, and by more at high concurrency: a difference of a few "
          "percent between targets is not a finding. Set spec.repetitions to measure the spread."));
    return s;
  }
  const Schedule& sched = ctx.record.schedule;
  if (sched.order == "Interleaved") {
    std::string rounds;
    for (size_t r = 0; r < sched.rounds.size(); ++r) {
      std::string names;
      for (const std::string& n : sched.rounds[r]) names += (names.empty() ? "" : ", ") + n;
      rounds += (rounds.empty() ? "" : "; ") + std::string("round ") + std::to_string(r + 1) + ": " + names;
    }
    s.blocks.push_back(
        P("Repetitions were interleaved: each round deployed every target afresh, in an order drawn "
          "from seed " +
          std::to_string(sched.seed) + " (" + rounds +
          "), so that a slow drift of the machine spreads over all targets."));
  } else if (sched.order == "Sequential") {
    s.blocks.push_back(
        P("Repetitions ran back to back for each target (spec.repetitionOrder: Sequential): a drift "
          "of the machine during one target's turn lands on that target alone."));
  }
  s.blocks.push_back(
      P("Requests/s and p99 over the succeeded repetitions of each cell: the mean, its 95 % "
        "confidence interval (Student's t), and the coefficient of variation (CV: sample standard "
        "deviation ÷ mean). Noise: quiet up to 5 %, noisy up to 10 %, unreliable above. A difference "
        "between targets whose intervals overlap is not a finding."));
  Table t{{"target", "scenario", "connections", "runs", "requests/s", "95 % interval", "CV", "p99", "p99 95 % interval",
           "noise"},
          Aligns(2, 7),
          {}};
  t.align.push_back(Align::kLeft);
  auto interval = [](const Estimate& e, auto format) {
    return e.n > 1 ? format(e.low) + " – " + format(e.high) : std::string(kMissing);
  };
  for (const std::string& target : ctx.index.targets()) {
    for (const auto& [scenario, level] : Groups(ctx.index)) {
      const GroupEstimates g = EstimatesOf(ctx.index, target, scenario, level);
      if (g.rate.n == 0) continue;
      const bool spread = g.rate.n > 1;
      t.rows.push_back({target, scenario, Conns(level), std::to_string(g.rate.n), Rate(g.rate.mean),
                        interval(g.rate, [](double v) { return FormatRate(std::max(v, 0.0)); }),
                        spread ? FormatShare(g.rate.cv) : kMissing, Latency(g.p99.mean),
                        interval(g.p99, [](double v) { return FormatLatency(std::max(v, 0.0)); }),
                        spread ? NoiseLabel(std::max(g.rate.cv, g.p99.cv)) : kMissing});
    }
  }
  s.blocks.push_back(std::move(t));
  return s;
}

Section Failures(const Context& ctx) {
  Section s{"failures", "Failed and skipped cells", 2, {}};
  std::vector<std::string> header = CellColumns(ctx);
  const size_t left = header.size();
  for (const char* h : {"state", "reason", "message"}) header.push_back(h);
  Table t{header, Aligns(left + 3, 0), {}};
  t.align[2] = Align::kRight;
  for (const CellRecord* c : CellsInReportOrder(ctx)) {
    if (c->result.state == api::CellState::kSucceeded) continue;
    std::vector<std::string> row = CellCells(ctx, c->result);
    row.push_back(Lowercase(api::ToString(c->result.state)));
    row.push_back(c->result.reason ? std::string(api::ToString(c->result.reason)) : kMissing);
    row.push_back(c->result.message.empty() ? kMissing : c->result.message);
    t.rows.push_back(std::move(row));
  }
  const size_t total = ctx.record.run.status.progress.total > 0
                           ? static_cast<size_t>(ctx.record.run.status.progress.total)
                           : api::CountCells(ctx.record.run.spec);
  if (t.rows.empty()) {
    s.blocks.push_back(P("None: every finished cell succeeded."));
  } else {
    s.blocks.push_back(std::move(t));
  }
  if (ctx.record.cells.size() < total) {
    s.blocks.push_back(P(std::to_string(total - ctx.record.cells.size()) + " of " + std::to_string(total) +
                         " cells have not run (yet)."));
  }
  return s;
}

// ---------------------------------------------------------------- profiles

// "epoll_wait_[k] 31.2 %, memcpy 8.0 %": the functions the samples ended in.
std::string HottestFunctions(const CellProfile& p, size_t count) {
  std::map<std::string, uint64_t> self;
  uint64_t total = 0;
  for (const FoldedStack& s : p.stacks) {
    const size_t semi = s.frames.rfind(';');
    self[semi == std::string::npos ? s.frames : s.frames.substr(semi + 1)] += s.samples;
    total += s.samples;
  }
  std::vector<std::pair<std::string, uint64_t>> top(self.begin(), self.end());
  std::stable_sort(top.begin(), top.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  // Template-heavy C++ names run to hundreds of characters: the start names
  // the function; the flame graph and results.json keep it whole.
  constexpr size_t kLongest = 60;
  const auto shorten = [](const std::string& name) {
    if (name.size() <= kLongest) return name;
    size_t cut = kLongest - 1;
    while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
    return name.substr(0, cut) + "…";
  };
  std::string out;
  for (size_t i = 0; i < top.size() && i < count && total > 0; ++i) {
    out += (out.empty() ? "" : ", ") + shorten(top[i].first) + " " +
           FormatShare(static_cast<double>(top[i].second) / static_cast<double>(total));
  }
  return out.empty() ? kMissing : out;
}

std::optional<Section> Profiles(const Context& ctx) {
  const std::optional<api::Profile>& spec = ctx.record.run.spec.profile;
  std::vector<const CellRecord*> cells;
  for (const CellRecord* c : CellsInReportOrder(ctx)) {
    if (c->profile) cells.push_back(c);
  }
  if (!spec && cells.empty()) return std::nullopt;
  Section s{"profiles", "Where the targets spend their CPU", 2, {}};
  s.blocks.push_back(P("The target's processes were sampled with perf" +
                       (spec ? " at " + std::to_string(spec->frequency) + " Hz" : std::string()) +
                       " (call stacks included) during the measured window of each profiled cell only, not its "
                       "warmup. Sampling costs the target a little CPU, so a profiled cell may serve slightly "
                       "fewer requests/s than an unprofiled one. The functions listed are where the samples "
                       "ended (self time); results.json holds every stack, folded."));
  if (cells.empty()) {
    s.blocks.push_back(P("No profiled cell has finished."));
    return s;
  }
  std::vector<std::string> header = CellColumns(ctx);
  const size_t left = header.size();
  header.push_back("profile");
  header.push_back("hottest functions (self)");
  Table t{header, Aligns(left + 2, 0), {}};
  t.align[2] = Align::kRight;
  std::vector<FlameGraph> graphs;
  for (const CellRecord* c : cells) {
    const CellProfile& p = *c->profile;
    std::vector<std::string> row = CellCells(ctx, c->result);
    if (p.state == ProfileState::kRecorded) {
      std::string what = Count(p.samples) + (p.samples == 1 ? " sample" : " samples");
      if (p.seconds > 0) what += " over " + FormatDecimal(p.seconds, 1) + " s";
      if (p.omitted_samples > 0) what += " (" + Count(p.omitted_samples) + " in rare stacks left out)";
      if (!p.message.empty()) what += "; " + p.message;
      row.push_back(what);
      row.push_back(p.samples > 0 ? HottestFunctions(p, 3) : kMissing);
      if (!p.stacks.empty()) {
        const api::CellResult& r = c->result;
        graphs.push_back(FlameGraph{r.target + " · " + r.scenario + " · " + ConnsText(r.connections) +
                                        (ctx.show_repetition ? " · repetition " + std::to_string(r.repetition) : ""),
                                    p});
      }
    } else {
      row.push_back("not recorded: " + (p.message.empty() ? Lowercase(ProfileStateName(p.state)) : p.message));
      row.push_back(kMissing);
    }
    t.rows.push_back(std::move(row));
  }
  s.blocks.push_back(std::move(t));
  for (FlameGraph& g : graphs) s.blocks.push_back(std::move(g));
  return s;
}

// ---------------------------------------------------------------- HTML-only: timelines and raw output

std::optional<Section> Timelines(const Context& ctx) {
  Section s{"timeline", "Requests per second over time", 2, {}, /*html_only=*/true};
  s.blocks.push_back(
      P("Each interval of the representative repetition, warmup shaded; a steady line means a "
        "steady server, a falling one a server that degrades (or a generator that does)."));
  for (const auto& [scenario, level] : Groups(ctx.index)) {
    LineChart chart;
    chart.title = scenario + " · " + ConnsText(level);
    chart.x_label = "seconds since the cell started";
    chart.y_label = "requests/s";
    chart.x_kind = ValueKind::kSeconds;
    chart.y_kind = ValueKind::kRate;
    double warmup_end = 0;
    for (const std::string& target : ctx.ranked_targets) {
      const CellRecord* c = ctx.index.Representative(target, scenario, level);
      if (c == nullptr || c->timeline.empty()) continue;
      LineSeries line{target, ctx.slots.at(target), {}};
      const double start = c->timeline.front().start_s;
      for (const TimelinePoint& p : c->timeline) {
        const double secs = p.end_s - p.start_s;
        if (secs <= 0) continue;
        if (p.phase == Phase::kWarmup) warmup_end = std::max(warmup_end, p.end_s - start);
        line.points.emplace_back(p.end_s - start, static_cast<double>(p.counters.requests) / secs);
      }
      if (!line.points.empty()) chart.series.push_back(std::move(line));
    }
    if (chart.series.empty()) continue;
    if (warmup_end > 0) {
      chart.shade = std::make_pair(0.0, warmup_end);
      chart.shade_label = "warmup";
    }
    s.blocks.push_back(Chart(std::move(chart)));
  }
  if (s.blocks.size() == 1) return std::nullopt;
  return s;
}

// What each agent's script printed in done(), per cell: a script's own
// report (percentiles it chose, counters it kept), as wrk prints it.
std::optional<Section> ScriptOutputs(const Context& ctx) {
  Section s{"script-output", "Script output: done()", 2, {}};
  for (const CellRecord* c : CellsInReportOrder(ctx)) {
    const api::CellResult& r = c->result;
    for (const ScriptOutput& o : c->script_output) {
      s.blocks.push_back(RawText{r.target + " · " + r.scenario + " · " + ConnsText(r.connections) + " · repetition " +
                                     std::to_string(r.repetition) + " · agent " + o.agent,
                                 o.text});
    }
  }
  if (s.blocks.empty()) return std::nullopt;
  s.blocks.insert(s.blocks.begin(), P("What the scenario's wrk script printed in done(), each agent with its own "
                                      "threads' numbers (as wrk would have printed it on that machine)."));
  return s;
}

std::optional<Section> RawOutput(const Context& ctx) {
  Section s{"raw", "Raw output per cell", 2, {}, /*html_only=*/true};
  for (const CellRecord& c : ctx.record.cells) {
    if (c.wrk_text.empty()) continue;
    const api::CellResult& r = c.result;
    s.blocks.push_back(RawText{r.target + " · " + r.scenario + " · " + ConnsText(r.connections) + " · repetition " +
                                   std::to_string(r.repetition),
                               c.wrk_text});
  }
  if (s.blocks.empty()) return std::nullopt;
  return s;
}

}  // namespace

Document BuildDocument(const RunRecord& record) {
  const RunIndex index(record);
  const bool show_limiter = std::any_of(record.cells.begin(), record.cells.end(),
                                        [](const CellRecord& c) { return c.result.limiter.has_value(); });
  const bool show_rate = !index.RateCells().empty();
  Context ctx{record, index, index.MaxRepetitions() > 1, show_limiter, show_rate, index.TargetsByBaselineRank(), {}};
  // Colours follow the baseline ranking, so the leaders get the most distinct ones.
  for (size_t i = 0; i < ctx.ranked_targets.size(); ++i) ctx.slots[ctx.ranked_targets[i]] = static_cast<int>(i);

  Document doc;
  doc.title =
      (record.run.metadata.name.empty() ? std::string("Benchmark") : record.run.metadata.name) + ": benchmark report";
  doc.preamble = Preamble(ctx);
  doc.sections.push_back(Method(ctx));
  if (auto s = CalibrationSection(ctx)) doc.sections.push_back(std::move(*s));
  doc.sections.push_back(Overview(ctx));
  if (auto s = Capacity(ctx)) doc.sections.push_back(std::move(*s));
  for (Section& s : Rankings(ctx)) doc.sections.push_back(std::move(s));
  if (auto s = Baseline(ctx)) doc.sections.push_back(std::move(*s));
  for (Section& s : Scaling(ctx)) doc.sections.push_back(std::move(s));
  for (Section& s : Efficiency(ctx)) doc.sections.push_back(std::move(s));
  if (auto s = WhyNotDouble(ctx)) doc.sections.push_back(std::move(*s));
  doc.sections.push_back(Errors(ctx));
  if (auto s = TlsSection(ctx)) doc.sections.push_back(std::move(*s));
  if (auto s = GrpcSection(ctx)) doc.sections.push_back(std::move(*s));
  doc.sections.push_back(Resources(ctx));
  if (auto s = CpusSection(ctx)) doc.sections.push_back(std::move(*s));
  doc.sections.push_back(BytesSection(ctx));
  doc.sections.push_back(Flags(ctx));
  doc.sections.push_back(Repetitions(ctx));
  doc.sections.push_back(Failures(ctx));
  if (auto s = Profiles(ctx)) doc.sections.push_back(std::move(*s));
  if (auto s = ScriptOutputs(ctx)) doc.sections.push_back(std::move(*s));
  if (auto s = Timelines(ctx)) doc.sections.push_back(std::move(*s));
  if (auto s = RawOutput(ctx)) doc.sections.push_back(std::move(*s));
  return doc;
}

}  // namespace fairbench::report
