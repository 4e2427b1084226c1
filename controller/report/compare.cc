#include "controller/report/compare.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "api/cells.h"
#include "api/cpu_list.h"
#include "controller/report/format.h"

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
    // A fixed rate's cells answer what was offered: their requests/s is
    // the rate, not a figure of the target's to compare.
    if (c.result.rate_level) continue;
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

void AddIfDifferent(std::vector<std::string>& out, const std::string& what, const std::string& a,
                    const std::string& b) {
  if (a != b)
    out.push_back(what + ": " + (a.empty() ? "(not recorded)" : a) + " → " + (b.empty() ? "(not recorded)" : b));
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
  AddIfDifferent(d, "target CPUs", api::FormatCpuList(api::CpuList{x.target_cpus}),
                 api::FormatCpuList(api::CpuList{y.target_cpus}));
  AddIfDifferent(d, "agent CPUs", api::FormatCpuList(api::CpuList{x.agent_cpus}),
                 api::FormatCpuList(api::CpuList{y.agent_cpus}));
  for (const api::Target& t : a.run.spec.targets) {
    for (const api::Target& u : b.run.spec.targets) {
      if (t.name == u.name && !(t == u))
        d.push_back("spec of target " + t.name + " differs (image, command, resources or limits)");
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
    d.push_back("repetitions: " + std::to_string(a.run.spec.repetitions) + " → " +
                std::to_string(b.run.spec.repetitions));
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

bool OverRepetitions(const CellComparison& c) { return c.method.rfind("repetitions", 0) == 0; }

Key KeyOf(const CellComparison& c) { return {c.target, c.scenario, c.connections}; }

// The record with only the cells of `keys` (every repetition, any state).
RunRecord OnlyCells(const RunRecord& r, const std::set<Key>& keys) {
  RunRecord out = r;
  std::erase_if(out.cells, [&keys](const CellRecord& c) {
    return c.result.rate_level || !keys.count({c.result.target, c.result.scenario, c.result.connections});
  });
  return out;
}

std::string Percent(double share) { return FormatDecimal(share * 100, 1); }

// "failed 1 of 12 same-versus-same comparisons (8.3 %, 95 % interval 1.5–35.4 %)"
std::string RateText(const FailureRate& r) {
  return "failed " + std::to_string(r.failed) + " of " + std::to_string(r.pairs) + " same-versus-same comparisons (" +
         Percent(r.pairs ? static_cast<double>(r.failed) / r.pairs : 0) + " %, 95 % interval " + Percent(r.low) + "–" +
         Percent(r.high) + " %)";
}

}  // namespace

FailureRate Wilson95(int failed, int pairs) {
  FailureRate r;
  r.failed = failed;
  r.pairs = pairs;
  if (pairs <= 0) {
    r.low = 0;
    r.high = 1;
    return r;
  }
  constexpr double z = 1.959963984540054;  // the normal distribution's 97.5 % quantile
  const double n = pairs;
  const double p = static_cast<double>(failed) / n;
  const double denominator = 1 + z * z / n;
  const double centre = (p + z * z / (2 * n)) / denominator;
  const double half = z / denominator * std::sqrt(p * (1 - p) / n + z * z / (4 * n * n));
  r.low = std::clamp(centre - half, 0.0, 1.0);
  r.high = std::clamp(centre + half, 0.0, 1.0);
  if (failed == 0) r.low = 0;  // exact at the ends, not 1e-17
  if (failed == pairs) r.high = 1;
  return r;
}

Result<SameRuns> SplitRepetitions(const Comparison& compared, const RunRecord& record, const std::string& name) {
  std::set<Key> keys;
  for (const CellComparison& c : compared.cells) keys.insert(KeyOf(c));
  RunRecord first = OnlyCells(record, {}), second = first;
  const RunRecord compared_cells = OnlyCells(record, keys);  // Groups points into it
  for (const auto& [key, cells] : Groups(compared_cells)) {
    if (cells.size() < 4) {
      return Status::InvalidArgument(name + ": cell " + KeyText(key) + " has " + std::to_string(cells.size()) +
                                     " succeeded repetitions; splitting into same-versus-same halves needs four "
                                     "or more (two per half)");
    }
    std::vector<const CellRecord*> ordered = cells;
    std::stable_sort(ordered.begin(), ordered.end(), [](const CellRecord* a, const CellRecord* b) {
      return a->result.repetition < b->result.repetition;
    });
    const size_t half = ordered.size() / 2;
    for (size_t i = 0; i < ordered.size(); ++i) (i < half ? first : second).cells.push_back(*ordered[i]);
  }
  for (const Key& key : keys) {
    if (first.cells.empty() || !Groups(first).count(key)) {
      return Status::InvalidArgument(name + ": cell " + KeyText(key) + " has no succeeded repetition to split");
    }
  }
  SameRuns out;
  out.names = {name + " (first half of its repetitions)", name + " (second half)"};
  out.records = {std::move(first), std::move(second)};
  return out;
}

Result<GateCalibration> CalibrateGate(const Comparison& compared, const std::vector<SameRuns>& groups,
                                      const CompareOptions& options) {
  if (!options.fail_on_regression && !options.fail_on_p99_regression) {
    return Status::InvalidArgument("no gate to calibrate: set a requests/s or p99 regression limit");
  }
  std::set<Key> keys;
  std::map<Key, bool> over_repetitions;
  for (const CellComparison& c : compared.cells) {
    keys.insert(KeyOf(c));
    over_repetitions[KeyOf(c)] = OverRepetitions(c);
  }
  GateCalibration out;
  int rate_failed = 0, p99_failed = 0, any_failed = 0, pairs = 0;
  for (const SameRuns& group : groups) {
    if (group.records.size() < 2) {
      return Status::InvalidArgument("only one same-versus-same run" +
                                     (group.names.empty() ? std::string() : " (" + group.names[0] + ")") +
                                     ": a false-positive rate needs two or more runs of the same thing");
    }
    std::vector<RunRecord> runs;
    for (size_t i = 0; i < group.records.size(); ++i) {
      runs.push_back(OnlyCells(group.records[i], keys));
      const auto present = Groups(runs.back());
      for (const Key& key : keys) {
        if (!present.count(key)) {
          return Status::InvalidArgument(group.names[i] + ": no succeeded cell " + KeyText(key) +
                                         ", which the comparison has: same-versus-same runs must hold its cells");
        }
      }
    }
    out.runs += static_cast<int>(runs.size());
    for (size_t i = 0; i < runs.size(); ++i) {
      for (size_t j = 0; j < runs.size(); ++j) {
        if (i == j) continue;
        auto c = Compare(runs[i], runs[j], options);
        if (!c.ok())
          return Status::InvalidArgument(group.names[i] + " and " + group.names[j] + ": " + c.status().message());
        bool rate = false, p99 = false;
        for (const CellComparison& x : c->cells) {
          if (OverRepetitions(x) != over_repetitions[KeyOf(x)]) {
            return Status::InvalidArgument(group.names[i] + " and " + group.names[j] + ": cell " + KeyText(KeyOf(x)) +
                                           " is compared over " + x.method + ", the comparison it calibrates over " +
                                           (over_repetitions[KeyOf(x)] ? "repetitions" : "per-second samples") +
                                           ": give same-versus-same runs with as many repetitions");
          }
          rate = rate || x.rate_gate_failed;
          p99 = p99 || x.p99_gate_failed;
        }
        ++pairs;
        rate_failed += rate;
        p99_failed += p99;
        any_failed += rate || p99;
        for (const std::string& why : c->regressions) {
          out.failures.push_back(group.names[i] + " → " + group.names[j] + ": " + why);
        }
      }
    }
  }
  if (pairs == 0) return Status::InvalidArgument("no same-versus-same runs given");
  if (options.fail_on_regression) out.rate = Wilson95(rate_failed, pairs);
  if (options.fail_on_p99_regression) out.p99 = Wilson95(p99_failed, pairs);
  out.any = Wilson95(any_failed, pairs);
  return out;
}

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
    c.rate_verdict = !c.rate_test.valid                    ? "not testable (no spread measured)"
                     : !rate_sig                           ? "no significant change"
                     : c.rate_change && *c.rate_change > 0 ? "faster"
                                                           : "slower";
    c.p99_verdict = !c.p99_test.valid                   ? "not testable (no spread measured)"
                    : !p99_sig                          ? "no significant change"
                    : c.p99_change && *c.p99_change > 0 ? "higher (worse)"
                                                        : "lower (better)";
    if (options.fail_on_regression && rate_sig && c.rate_change && *c.rate_change <= -*options.fail_on_regression) {
      c.regression = c.rate_gate_failed = true;
      out.regressions.push_back(KeyText(key) + ": requests/s " + Pct(c.rate_change) + " (p = " + PValue(c.rate_test) +
                                "), past the " + FormatShare(*options.fail_on_regression) + " allowed");
    }
    if (options.fail_on_p99_regression && p99_sig && c.p99_change && *c.p99_change >= *options.fail_on_p99_regression) {
      c.regression = c.p99_gate_failed = true;
      out.regressions.push_back(KeyText(key) + ": p99 " + Pct(c.p99_change) + " (p = " + PValue(c.p99_test) +
                                "), past the " + FormatShare(*options.fail_on_p99_regression) + " allowed");
    }
    out.cells.push_back(std::move(c));
  }
  if (out.cells.empty()) {
    return Status::InvalidArgument(
        "the two records have no succeeded cell in common (same target, scenario and "
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
    t.rows.push_back({x.target, x.scenario, FormatCount(static_cast<double>(x.connections)),
                      Interval(x.base_rate, false), Interval(x.new_rate, false), Pct(x.rate_change),
                      PValue(x.rate_test), x.rate_verdict + (x.regression ? " — REGRESSION" : ""),
                      Interval(x.base_p99, true), Interval(x.new_p99, true), Pct(x.p99_change), x.p99_verdict,
                      x.method});
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
      gate.blocks.push_back(
          Paragraph{{Span{Span::Style::kPlain, "Passed: no significant regression past the limits."}}});
    } else {
      BulletList list;
      for (const std::string& r : c.regressions) list.items.push_back(Paragraph{{Span{Span::Style::kPlain, r}}});
      gate.blocks.push_back(std::move(list));
    }
    if (!c.calibration) {
      gate.blocks.push_back(Paragraph{
          {Span{Span::Style::kPlain,
                "False-positive rate not measured: no same-versus-same runs given (--calibrate-with RUN RUN … or "
                "--repeat-split), so how often this gate fails on noise alone is unknown."}}});
    } else {
      const GateCalibration& k = *c.calibration;
      BulletList list;
      auto line = [&list](const std::string& text) {
        list.items.push_back(Paragraph{{Span{Span::Style::kPlain, text}}});
      };
      if (k.rate)
        line("The requests/s gate at " + FormatShare(*options.fail_on_regression) + " " + RateText(*k.rate) + ".");
      if (k.p99) line("The p99 gate at " + FormatShare(*options.fail_on_p99_regression) + " " + RateText(*k.p99) + ".");
      if (k.rate && k.p99) line("Either gate (as the exit code applies them) " + RateText(k.any) + ".");
      gate.blocks.push_back(Paragraph{{Span{
          Span::Style::kPlain,
          "False-positive rate, measured: " + std::to_string(k.runs) +
              " runs of the same thing, every ordered pair within them compared as base and new with the same "
              "gate on the same cells — any failure there is a false positive. The 95 % interval is Wilson's; the "
              "pairs share runs, so it is narrower than their true uncertainty."}}});
      gate.blocks.push_back(std::move(list));
      if (!k.failures.empty()) {
        BulletList why;
        constexpr size_t kShown = 10;
        for (size_t i = 0; i < k.failures.size() && i < kShown; ++i) {
          why.items.push_back(Paragraph{{Span{Span::Style::kPlain, "false positive: " + k.failures[i]}}});
        }
        if (k.failures.size() > kShown) {
          why.items.push_back(Paragraph{{Span{
              Span::Style::kPlain, "and " + std::to_string(k.failures.size() - kShown) + " more (all in --json)"}}});
        }
        gate.blocks.push_back(std::move(why));
      }
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
                       {{"base", est(x.base_rate)},
                        {"new", est(x.new_rate)},
                        {"change", change(x.rate_change)},
                        {"test", test(x.rate_test)},
                        {"verdict", x.rate_verdict}}},
                      {"p99Us",
                       {{"base", est(x.base_p99)},
                        {"new", est(x.new_p99)},
                        {"change", change(x.p99_change)},
                        {"test", test(x.p99_test)},
                        {"verdict", x.p99_verdict}}},
                      {"regression", x.regression}});
  }
  J out{{"alpha", options.alpha},       {"differences", c.differences}, {"cells", cells},
        {"onlyInBase", c.only_in_base}, {"onlyInNew", c.only_in_new},   {"regressions", c.regressions}};
  if (options.fail_on_regression || options.fail_on_p99_regression) {
    auto rate = [](const FailureRate& r) {
      return J{{"failed", r.failed},
               {"pairs", r.pairs},
               {"rate", r.pairs ? static_cast<double>(r.failed) / r.pairs : 0.0},
               {"low95", r.low},
               {"high95", r.high}};
    };
    auto limit = [](std::optional<double> v) { return v ? J(*v) : J(nullptr); };
    J gate{{"requestsPerSecondLimit", limit(options.fail_on_regression)},
           {"p99Limit", limit(options.fail_on_p99_regression)},
           {"falsePositiveRate", nullptr}};
    if (c.calibration) {
      const GateCalibration& k = *c.calibration;
      gate["falsePositiveRate"] = J{{"runs", k.runs},
                                    {"requestsPerSecond", k.rate ? rate(*k.rate) : J(nullptr)},
                                    {"p99Us", k.p99 ? rate(*k.p99) : J(nullptr)},
                                    {"any", rate(k.any)},
                                    {"failures", k.failures}};
    }
    out["gate"] = std::move(gate);
  }
  return out;
}

}  // namespace fairbench::report
