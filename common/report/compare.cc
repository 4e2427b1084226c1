#include "common/report/compare.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "common/api/cells.h"
#include "common/api/cpu_list.h"
#include "common/report/format.h"

namespace fairbench::report {
namespace {

using Key = std::tuple<std::string, std::string, int64_t>;

std::string KeyText(const Key& k) {
  return std::get<0>(k) + "/" + std::get<1>(k) + "/c" + std::to_string(std::get<2>(k));
}

std::map<Key, std::vector<const CellRecord*>> Groups(const RunRecord& r) {
  std::map<Key, std::vector<const CellRecord*>> out;
  for (const CellRecord& c : r.cells) {
    if (c.result.state != api::CellState::kSucceeded) continue;
    out[{c.result.target, c.result.scenario, c.result.connections}].push_back(&c);
  }
  return out;
}

struct Samples {
  std::vector<double> rate, p99;
};

Samples PerRepetition(const std::vector<const CellRecord*>& cells) {
  Samples s;
  for (const CellRecord* c : cells) {
    s.rate.push_back(c->result.requests_per_second);
    s.p99.push_back(c->result.latency.p99);
  }
  return s;
}

// The per-second intervals of the measured window (warmup left out).
Samples PerSecond(const std::vector<const CellRecord*>& cells) {
  Samples s;
  for (const CellRecord* c : cells) {
    for (const TimelinePoint& p : c->timeline) {
      const double secs = p.end_s - p.start_s;
      if (p.phase != Phase::kMeasure || secs <= 0) continue;
      s.rate.push_back(static_cast<double>(p.counters.requests) / secs);
      s.p99.push_back(static_cast<double>(p.p99_us));
    }
  }
  return s;
}

std::optional<double> ChangeOf(double from, double to) {
  if (!(from > 0) || !(to > 0)) return std::nullopt;
  return to / from - 1;
}

void AddIfDifferent(std::vector<std::string>& out, const std::string& what, const std::string& a, const std::string& b) {
  if (a != b) out.push_back(what + ": " + (a.empty() ? "(not recorded)" : a) + " → " + (b.empty() ? "(not recorded)" : b));
}

std::vector<std::string> Differences(const RunRecord& a, const RunRecord& b) {
  std::vector<std::string> d;
  const Environment& x = a.environment;
  const Environment& y = b.environment;
  AddIfDifferent(d, "platform", x.platform, y.platform);
  AddIfDifferent(d, "host", x.hostname, y.hostname);
  AddIfDifferent(d, "kernel", x.kernel, y.kernel);
  AddIfDifferent(d, "CPU", x.cpu_model, y.cpu_model);
  AddIfDifferent(d, "CPUs", std::to_string(x.cpus), std::to_string(y.cpus));
  AddIfDifferent(d, "memory", std::to_string(x.memory_bytes), std::to_string(y.memory_bytes));
  AddIfDifferent(d, "fairbench", x.fairbench_version, y.fairbench_version);
  AddIfDifferent(d, "target CPUs", api::FormatCpuList(api::CpuList{x.target_cpus}), api::FormatCpuList(api::CpuList{y.target_cpus}));
  AddIfDifferent(d, "agent CPUs", api::FormatCpuList(api::CpuList{x.agent_cpus}), api::FormatCpuList(api::CpuList{y.agent_cpus}));
  for (const api::Target& t : a.run.spec.targets) {
    for (const api::Target& u : b.run.spec.targets) {
      if (t.name == u.name && !(t == u)) d.push_back("spec of target " + t.name + " differs (image, command, resources or limits)");
    }
  }
  for (const api::Scenario& s : a.run.spec.scenarios) {
    for (const api::Scenario& u : b.run.spec.scenarios) {
      if (s.name != u.name) continue;
      const api::ScenarioSettings p = api::EffectiveSettings(a.run.spec, s);
      const api::ScenarioSettings q = api::EffectiveSettings(b.run.spec, u);
      if (p == q) continue;
      std::string what;
      if (p.duration != q.duration) what += " duration";
      if (p.warmup != q.warmup) what += " warmup";
      if (p.threads != q.threads || p.agents != q.agents) what += " threads/agents";
      if (p.rate != q.rate) what += " rate";
      if (p.pipeline != q.pipeline || p.keep_alive != q.keep_alive) what += " pipeline/keep-alive";
      if (!(p.requests == q.requests) || !(p.expect == q.expect)) what += " requests/expectations";
      if (what.empty()) what = " connection levels";
      d.push_back("settings of scenario " + s.name + " differ:" + what);
    }
  }
  if (a.run.spec.repetitions != b.run.spec.repetitions) {
    d.push_back("repetitions: " + std::to_string(a.run.spec.repetitions) + " → " + std::to_string(b.run.spec.repetitions));
  }
  return d;
}

std::string Pct(std::optional<double> change) {
  if (!change) return kMissing;
  const double v = *change * 100;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f %%", v);
  return buf;
}

std::string PValue(const TTest& t) {
  if (!t.valid) return kMissing;
  if (t.p < 0.0001) return "< 0.0001";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", t.p);
  return buf;
}

std::string Interval(const Estimate& e, bool latency) {
  auto f = [latency](double v) { return latency ? FormatLatency(std::max(v, 0.0)) : FormatRate(std::max(v, 0.0)); };
  if (e.n < 2) return f(e.mean);
  return f(e.mean) + " (" + f(e.low) + " – " + f(e.high) + ")";
}

}  // namespace

Result<Comparison> Compare(const RunRecord& base, const RunRecord& next, const CompareOptions& options) {
  Comparison out;
  out.differences = Differences(base, next);
  const auto a = Groups(base);
  const auto b = Groups(next);
  for (const auto& [key, cells] : a) {
    if (!b.count(key)) out.only_in_base.push_back(KeyText(key));
  }
  for (const auto& [key, cells] : b) {
    if (!a.count(key)) out.only_in_new.push_back(KeyText(key));
  }
  for (const auto& [key, base_cells] : a) {
    const auto it = b.find(key);
    if (it == b.end()) continue;
    const auto& new_cells = it->second;
    CellComparison c;
    std::tie(c.target, c.scenario, c.connections) = key;
    const bool repetitions = base_cells.size() >= 2 && new_cells.size() >= 2;
    const Samples sa = repetitions ? PerRepetition(base_cells) : PerSecond(base_cells);
    const Samples sb = repetitions ? PerRepetition(new_cells) : PerSecond(new_cells);
    c.method = repetitions ? "repetitions (n = " + std::to_string(sa.rate.size()) + " and " +
                                 std::to_string(sb.rate.size()) + ")"
                           : "per-second samples of one repetition (n = " + std::to_string(sa.rate.size()) + " and " +
                                 std::to_string(sb.rate.size()) + ")";
    c.base_rate = Estimate95(sa.rate);
    c.new_rate = Estimate95(sb.rate);
    c.base_p99 = Estimate95(sa.p99);
    c.new_p99 = Estimate95(sb.p99);
    // The changes are of the cells' own figures (the mean over repetitions,
    // or the one repetition's result), the test is over the samples.
    const Samples ra = repetitions ? sa : PerRepetition(base_cells);
    const Samples rb = repetitions ? sb : PerRepetition(new_cells);
    c.rate_change = ChangeOf(Estimate95(ra.rate).mean, Estimate95(rb.rate).mean);
    c.p99_change = ChangeOf(Estimate95(ra.p99).mean, Estimate95(rb.p99).mean);
    c.rate_test = WelchTest(sa.rate, sb.rate);
    c.p99_test = WelchTest(sa.p99, sb.p99);
    const bool rate_sig = c.rate_test.valid && c.rate_test.p < options.alpha;
    const bool p99_sig = c.p99_test.valid && c.p99_test.p < options.alpha;
    c.rate_verdict = !c.rate_test.valid ? "not testable (no spread measured)"
                     : !rate_sig        ? "no significant change"
                     : c.rate_change && *c.rate_change > 0 ? "faster"
                                                           : "slower";
    c.p99_verdict = !c.p99_test.valid ? "not testable (no spread measured)"
                    : !p99_sig        ? "no significant change"
                    : c.p99_change && *c.p99_change > 0 ? "higher (worse)"
                                                        : "lower (better)";
    if (options.fail_on_regression && rate_sig && c.rate_change && *c.rate_change <= -*options.fail_on_regression) {
      c.regression = true;
      out.regressions.push_back(KeyText(key) + ": requests/s " + Pct(c.rate_change) + " (p = " + PValue(c.rate_test) +
                                "), past the " + FormatShare(*options.fail_on_regression) + " allowed");
    }
    if (options.fail_on_p99_regression && p99_sig && c.p99_change && *c.p99_change >= *options.fail_on_p99_regression) {
      c.regression = true;
      out.regressions.push_back(KeyText(key) + ": p99 " + Pct(c.p99_change) + " (p = " + PValue(c.p99_test) +
                                "), past the " + FormatShare(*options.fail_on_p99_regression) + " allowed");
    }
    out.cells.push_back(std::move(c));
  }
  if (out.cells.empty()) {
    return Status::InvalidArgument("the two records have no succeeded cell in common (same target, scenario and "
                                   "connections): nothing to compare");
  }
  return out;
}

Document CompareDocument(const Comparison& c, const std::string& base_name, const std::string& new_name,
                         const CompareOptions& options) {
  Document d;
  d.title = "fairbench compare";
  d.preamble.push_back(Paragraph{{Span{Span::Style::kPlain, "Base: "}, Span{Span::Style::kCode, base_name},
                                  Span{Span::Style::kPlain, ". New: "}, Span{Span::Style::kCode, new_name},
                                  Span{Span::Style::kPlain, "."}}});
  Section env{"differences", "Differences of environment and spec", 2, {}};
  if (c.differences.empty()) {
    env.blocks.push_back(Paragraph{{Span{Span::Style::kPlain, "None recorded: same machine, same settings."}}});
  } else {
    BulletList list;
    for (const std::string& line : c.differences) list.items.push_back(Paragraph{{Span{Span::Style::kPlain, line}}});
    env.blocks.push_back(std::move(list));
  }
  d.sections.push_back(std::move(env));

  Section cells{"cells", "Cell by cell", 2, {}};
  cells.blocks.push_back(Paragraph{{Span{
      Span::Style::kPlain,
      "Each figure is the mean with its 95 % confidence interval. A change is called faster or slower only when "
      "Welch's t-test finds it significant at the " +
          FormatShare(options.alpha, 0) +
          " level, over the repetitions when both runs have two or more, otherwise over the per-second samples of "
          "the measured window (which sees noise within a run, not between runs)."}}});
  Table t{{"target", "scenario", "connections", "requests/s base", "requests/s new", "change", "p", "verdict",
           "p99 base", "p99 new", "p99 change", "p99 verdict", "samples"},
          {Align::kLeft, Align::kLeft, Align::kRight, Align::kRight, Align::kRight, Align::kRight, Align::kRight,
           Align::kLeft, Align::kRight, Align::kRight, Align::kRight, Align::kLeft, Align::kLeft},
          {}};
  for (const CellComparison& x : c.cells) {
    t.rows.push_back({x.target, x.scenario, FormatCount(static_cast<double>(x.connections)), Interval(x.base_rate, false),
                      Interval(x.new_rate, false), Pct(x.rate_change), PValue(x.rate_test),
                      x.rate_verdict + (x.regression ? " — REGRESSION" : ""), Interval(x.base_p99, true),
                      Interval(x.new_p99, true), Pct(x.p99_change), x.p99_verdict, x.method});
  }
  cells.blocks.push_back(std::move(t));
  if (!c.only_in_base.empty() || !c.only_in_new.empty()) {
    std::string text = "Not compared (succeeded on one side only):";
    for (const std::string& k : c.only_in_base) text += " " + k + " (base)";
    for (const std::string& k : c.only_in_new) text += " " + k + " (new)";
    cells.blocks.push_back(Paragraph{{Span{Span::Style::kPlain, text + "."}}});
  }
  d.sections.push_back(std::move(cells));
  if (options.fail_on_regression || options.fail_on_p99_regression) {
    Section gate{"gate", "Regression gate", 2, {}};
    if (c.regressions.empty()) {
      gate.blocks.push_back(Paragraph{{Span{Span::Style::kPlain, "Passed: no significant regression past the limits."}}});
    } else {
      BulletList list;
      for (const std::string& r : c.regressions) list.items.push_back(Paragraph{{Span{Span::Style::kPlain, r}}});
      gate.blocks.push_back(std::move(list));
    }
    d.sections.push_back(std::move(gate));
  }
  return d;
}

nlohmann::ordered_json CompareJson(const Comparison& c, const CompareOptions& options) {
  using J = nlohmann::ordered_json;
  auto est = [](const Estimate& e) {
    return J{{"n", e.n}, {"mean", e.mean}, {"stdev", e.stdev}, {"low95", e.low}, {"high95", e.high}};
  };
  auto test = [](const TTest& t) {
    return t.valid ? J{{"t", std::isfinite(t.t) ? J(t.t) : J(nullptr)}, {"df", t.df}, {"p", t.p}} : J(nullptr);
  };
  auto change = [](std::optional<double> v) { return v ? J(*v) : J(nullptr); };
  J cells = J::array();
  for (const CellComparison& x : c.cells) {
    cells.push_back(J{{"target", x.target},
                      {"scenario", x.scenario},
                      {"connections", x.connections},
                      {"samples", x.method},
                      {"requestsPerSecond",
                       {{"base", est(x.base_rate)}, {"new", est(x.new_rate)}, {"change", change(x.rate_change)},
                        {"test", test(x.rate_test)}, {"verdict", x.rate_verdict}}},
                      {"p99Us",
                       {{"base", est(x.base_p99)}, {"new", est(x.new_p99)}, {"change", change(x.p99_change)},
                        {"test", test(x.p99_test)}, {"verdict", x.p99_verdict}}},
                      {"regression", x.regression}});
  }
  J out{{"alpha", options.alpha}, {"differences", c.differences}, {"cells", cells}, {"onlyInBase", c.only_in_base},
        {"onlyInNew", c.only_in_new}, {"regressions", c.regressions}};
  return out;
}

}  // namespace fairbench::report
