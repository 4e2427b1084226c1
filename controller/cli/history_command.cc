#include "controller/cli/history_command.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "api/time_text.h"
#include "controller/changes/change_points.h"
#include "controller/report/format.h"
#include "common/units.h"
#include "controller/cli/store_flag.h"
#include "controller/results/result_store.h"
#include "controller/results/run_index.h"
#include "controller/results/series_changes.h"

namespace fairbench::controller {
namespace {

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "fairbench history: %s\n", message.c_str());
  return code;
}

int ExitCodeFor(const Status& s) { return s.code() == Status::Code::kUnavailable ? 1 : 2; }

// --since: an RFC 3339 time, a date (midnight UTC) or an age.
Result<int64_t> ParseSince(const std::string& text, std::chrono::system_clock::time_point now) {
  if (auto t = api::ParseTime(text); t.ok()) return t->time_since_epoch().count();
  if (text.size() == 10 && text[4] == '-' && text[7] == '-') {
    if (auto t = api::ParseTime(text + "T00:00:00Z"); t.ok()) return t->time_since_epoch().count();
  }
  std::chrono::nanoseconds age{};
  if (!text.empty() && text.back() == 'd') {
    auto days = ParseDuration(text.substr(0, text.size() - 1) + "h");
    if (!days.ok())
      return Status::InvalidArgument(
          "--since: expected a time (2026-12-01T00:00:00Z), a date or an age (36h, 7d), got '" + text + "'");
    age = *days * 24;
  } else {
    auto d = ParseDuration(text);
    if (!d.ok())
      return Status::InvalidArgument(
          "--since: expected a time (2026-12-01T00:00:00Z), a date or an age (36h, 7d), got '" + text + "'");
    age = *d;
  }
  return std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch() - age).count();
}

std::string TimeText(const std::optional<int64_t>& ns) {
  if (!ns) return "-";
  return api::FormatTimeSeconds(api::Time(std::chrono::nanoseconds(*ns)));
}

// "sha256:0123456789ab" of "image sha256:0123…" or "binary /usr/bin/x
// sha256:…": enough to tell builds apart in a column; the whole otherwise.
std::string ShortIdentity(const std::string& identity) {
  const size_t at = identity.rfind("sha256:");
  if (at == std::string::npos) return identity.empty() ? "-" : identity;
  return identity.substr(at, std::string("sha256:").size() + 12);
}

// Columns padded to their widest cell, counted in characters (µs is one).
std::string Table(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right) {
  auto width = [](const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
  };
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], width(row[i]));
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      const std::string pad(widths[i] - width(row[i]), ' ');
      const bool last = i + 1 == row.size();
      line += (i < right.size() && right[i]) ? pad + row[i] : row[i] + (last ? "" : pad);
      if (!last) line += "  ";
    }
    out += line + "\n";
  }
  return out;
}

std::string Join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

nlohmann::ordered_json TimeJson(const std::optional<int64_t>& ns) {
  if (!ns) return nullptr;
  return api::FormatTime(api::Time(std::chrono::nanoseconds(*ns)));
}

int ListRuns(const HistoryFlags& f) {
  results::RunFilter filter;
  filter.target = f.target;
  filter.scenario = f.scenario;
  filter.limit = f.limit;
  for (const std::string& l : f.labels) {
    const size_t eq = l.find('=');
    if (eq == std::string::npos || eq == 0) return Fail(2, "--label: expected KEY=VALUE, got '" + l + "'");
    filter.labels.emplace_back(l.substr(0, eq), l.substr(eq + 1));
  }
  if (!f.since.empty()) {
    auto since = ParseSince(f.since, std::chrono::system_clock::now());
    if (!since.ok()) return Fail(2, since.status().message());
    filter.since_ns = *since;
  }
  results::OpenOptions oo;
  oo.create = false;
  auto store = results::OpenResultStore(f.store, oo);
  if (!store.ok()) return Fail(ExitCodeFor(store.status()), store.status().message());
  auto runs = (*store)->ListRuns(filter);
  if (!runs.ok()) return Fail(ExitCodeFor(runs.status()), runs.status().message());

  std::string out;
  if (f.json) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const results::StoredRun& r : *runs) {
      nlohmann::ordered_json j;
      j["id"] = r.id;
      j["name"] = r.name;
      j["uid"] = r.uid;
      j["namespace"] = r.ns;
      j["phase"] = r.phase;
      j["startTime"] = TimeJson(r.start_ns);
      j["completionTime"] = TimeJson(r.end_ns);
      j["platform"] = r.platform;
      j["fingerprint"] = r.fingerprint;
      j["labels"] = r.labels;
      j["cells"] = r.cells;
      j["totalCells"] = r.cells_total;
      j["targets"] = r.targets;
      nlohmann::ordered_json builds = nlohmann::ordered_json::object();
      for (size_t i = 0; i < r.targets.size() && i < r.identities.size(); ++i) {
        if (!r.identities[i].empty()) builds[r.targets[i]] = r.identities[i];
      }
      j["identities"] = builds;
      list.push_back(std::move(j));
    }
    out = nlohmann::ordered_json{{"runs", list}}.dump(2) + "\n";
  } else if (runs->empty()) {
    out = "no runs match\n";
  } else {
    std::vector<std::vector<std::string>> rows = {
        {"RUN", "STARTED", "NAME", "PHASE", "CELLS", "TARGETS", "FINGERPRINT", "LABELS"}};
    for (const results::StoredRun& r : *runs) {
      std::vector<std::string> labels;
      for (const auto& [k, v] : r.labels) labels.push_back(k + "=" + v);
      rows.push_back({std::to_string(r.id), TimeText(r.start_ns), r.ns.empty() ? r.name : r.ns + "/" + r.name,
                      r.phase.empty() ? "-" : r.phase, std::to_string(r.cells) + "/" + std::to_string(r.cells_total),
                      Join(r.targets, ","), r.fingerprint.substr(0, 12), labels.empty() ? "-" : Join(labels, ",")});
    }
    out = Table(rows, {true, false, false, false, true, false, false, false});
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  return 0;
}

int ShowSeries(const HistoryFlags& f) {
  results::SeriesQuery q;
  q.target = f.series_target;
  q.scenario = f.series_scenario;
  q.connections = f.connections;
  Result<int64_t> rate = results::ParseSeriesRate(f.rate);
  if (!rate.ok()) return Fail(2, "--rate: " + rate.status().message());
  q.rate = *rate;
  q.fingerprint = f.fingerprint;
  results::OpenOptions oo;
  oo.create = false;
  auto store = results::OpenResultStore(f.series_store, oo);
  if (!store.ok()) return Fail(ExitCodeFor(store.status()), store.status().message());
  auto series = (*store)->QuerySeries(q);
  if (!series.ok()) return Fail(ExitCodeFor(series.status()), series.status().message());

  std::string out;
  if (f.series_json) {
    nlohmann::ordered_json j;
    j["target"] = q.target;
    j["scenario"] = q.scenario;
    j["connections"] = q.connections;
    j["rate"] = q.rate;
    j["fingerprint"] = series->fingerprint;
    nlohmann::ordered_json points = nlohmann::ordered_json::array();
    for (const results::SeriesPoint& p : series->points) {
      nlohmann::ordered_json pj;
      pj["run"] = p.run_id;
      pj["name"] = p.run_name;
      pj["startTime"] = TimeJson(p.start_ns);
      pj["repetitions"] = p.repetitions;
      pj["succeeded"] = p.succeeded;
      if (p.succeeded > 0) {
        pj["requestsPerSecond"] = p.requests_per_second;
        pj["p99Us"] = p.p99_us;
      } else {
        pj["requestsPerSecond"] = nullptr;
        pj["p99Us"] = nullptr;
      }
      pj["errors"] = p.errors;
      pj["identity"] = p.identity;
      points.push_back(std::move(pj));
    }
    j["points"] = points;
    j["otherFingerprints"] = series->other_fingerprints;
    j["runsUnderOtherFingerprints"] = series->runs_elsewhere;
    out = j.dump(2) + "\n";
  } else {
    out = q.target + "/" + q.scenario + " at " + std::to_string(q.connections) + " connections" +
          (q.rate != 0 ? ", " + results::SeriesRateText(q.rate) : "") + ", fingerprint " +
          series->fingerprint.substr(0, 12) + ": " + std::to_string(series->points.size()) + " runs\n";
    std::vector<std::vector<std::string>> rows = {{"RUN", "STARTED", "NAME", "REQUESTS/S", "P99", "ERRORS", "REPS"}};
    // Which build ran, when the runs say: a change of build beside a change
    // of the numbers.
    const bool builds = std::any_of(series->points.begin(), series->points.end(),
                                    [](const results::SeriesPoint& p) { return !p.identity.empty(); });
    if (builds) rows[0].push_back("BUILD");
    for (const results::SeriesPoint& p : series->points) {
      const bool any = p.succeeded > 0;
      rows.push_back({std::to_string(p.run_id), TimeText(p.start_ns), p.run_name,
                      any ? report::FormatRate(p.requests_per_second) : "failed",
                      any ? report::FormatLatency(p.p99_us) : "-", report::FormatCount(static_cast<double>(p.errors)),
                      std::to_string(p.succeeded) + "/" + std::to_string(p.repetitions)});
      if (builds) rows.back().push_back(ShortIdentity(p.identity));
    }
    std::vector<bool> right = {true, false, false, true, true, true, true};
    if (builds) right.push_back(false);
    out += Table(rows, right);
    if (series->runs_elsewhere > 0) {
      std::vector<std::string> shorts;
      for (const std::string& fp : series->other_fingerprints) shorts.push_back(fp.substr(0, 12));
      out += std::to_string(series->runs_elsewhere) + " runs under other fingerprints left out (" + Join(shorts, ", ") +
             "): --fingerprint chooses\n";
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  return 0;
}

// history check ------------------------------------------------------------

// The analysis of one series is results::FindSeriesChanges, shared with
// `fairbench serve`'s series page.
using Metric = results::SeriesMetric;
using Finding = results::SeriesFinding;
using MetricCheck = results::MetricChanges;
constexpr const Metric& kRps = results::kRequestsPerSecondMetric;
constexpr const Metric& kP99 = results::kP99Metric;

struct SeriesCheck {
  results::SeriesKey key;
  results::Series series;  // the points kept (--label, --since)
  std::vector<MetricCheck> metrics;
};

struct RunFacts {
  std::string uid;
};

std::string SeriesName(const results::SeriesKey& k) {
  return k.target + "/" + k.scenario + " at " + std::to_string(k.connections) + " connections" +
         (k.rate != 0 ? ", " + results::SeriesRateText(k.rate) : "");
}

std::string LoadName(const results::SeriesKey& k) {
  return std::to_string(k.connections) + (k.rate > 0   ? "@" + std::to_string(k.rate)
                                          : k.rate < 0 ? "@" + std::to_string(-k.rate) + "%"
                                                       : "");
}

std::string Percent(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f %%", p);
  return buf;
}

std::string PValue(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", p);
  return buf;
}

// "5%", "5 %", "5", "2.5%": a percentage, at least 0.
Result<double> ParsePercent(const char* flag, std::string text) {
  const std::string bad = std::string(flag) + ": expected a percentage such as 5%, got '" + text + "'";
  while (!text.empty() && (text.back() == '%' || text.back() == ' ')) text.pop_back();
  if (text.empty()) return Status::InvalidArgument(bad);
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (...) {
    return Status::InvalidArgument(bad);
  }
  if (used != text.size() || !std::isfinite(v) || v < 0) return Status::InvalidArgument(bad);
  return v;
}

std::string XmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

struct CheckReport {
  std::vector<SeriesCheck> series;
  std::map<int64_t, RunFacts> runs;
  double threshold = 0;
  changes::Options options;
  int failures = 0;
};

// "the target's build changed: image sha256:aaa… → image sha256:bbb…" when
// the runs on either side of a change ran different builds; "" otherwise
// (the same build, or one of them not recorded).
std::string BuildChange(const results::SeriesPoint& before, const results::SeriesPoint& after) {
  if (before.identity.empty() || after.identity.empty() || before.identity == after.identity) return "";
  return "the target's build changed: " + before.identity + " -> " + after.identity;
}

std::string RunText(const results::SeriesPoint& p) {
  return "run " + std::to_string(p.run_id) + " " + p.run_name + " (" + TimeText(p.start_ns) + ")";
}

std::string FindingLine(const SeriesCheck& s, const MetricCheck& m, const Finding& f, double threshold) {
  const results::SeriesPoint& before = s.series.points[static_cast<size_t>(f.change.x_before)];
  const results::SeriesPoint& after = s.series.points[static_cast<size_t>(f.change.x_after)];
  const std::string build = BuildChange(before, after);
  const bool regression = f.change.kind == changes::Kind::kRegression;
  std::string line = std::string(m.metric->title) + " " + (regression ? "regression " : "improvement ") +
                     Percent(f.change.change_percent) + " between " + RunText(before) + " and " + RunText(after) +
                     ", p=" + PValue(f.change.p_value);
  if (f.failing) {
    line += ": FAIL, still " + Percent(-f.still_worse_percent * (f.change.change_percent < 0 ? 1 : -1)) +
            " at the newest run";
  } else if (regression) {
    line += f.in_force ? " (in force, below the " + PValue(threshold) + " % threshold)" : " (no longer in force)";
  }
  if (!build.empty()) line += "; " + build;
  return line;
}

std::string CheckText(const CheckReport& r) {
  std::string out;
  int judged = 0, unjudged = 0, changed = 0;
  for (const SeriesCheck& s : r.series) {
    std::vector<std::string> lines;
    for (const MetricCheck& m : s.metrics) {
      (m.judged ? judged : unjudged) += 1;
      for (const Finding& f : m.findings) lines.push_back("  " + FindingLine(s, m, f, r.threshold));
    }
    if (lines.empty()) continue;
    ++changed;
    out += SeriesName(s.key) + ", fingerprint " + s.series.fingerprint.substr(0, 12) + ", " +
           std::to_string(s.series.points.size()) + " runs:\n";
    for (const std::string& l : lines) out += l + "\n";
  }
  out += std::to_string(r.series.size()) + " series, " + std::to_string(judged) + " metrics checked";
  if (unjudged > 0) {
    out += " (" + std::to_string(unjudged) + " more with fewer than " + std::to_string(2 * r.options.min_segment) +
           " runs: not judged)";
  }
  out += "; changes in " + std::to_string(changed) + " series; ";
  out += r.failures == 0 ? "no regression of " + PValue(r.threshold) + " % or more in force: passed\n"
                         : std::to_string(r.failures) + " regression" + (r.failures == 1 ? "" : "s") + " of " +
                               PValue(r.threshold) + " % or more in force: failed\n";
  return out;
}

nlohmann::ordered_json RunJson(const CheckReport& r, const results::SeriesPoint& p) {
  nlohmann::ordered_json j;
  j["run"] = p.run_id;
  j["name"] = p.run_name;
  auto it = r.runs.find(p.run_id);
  j["uid"] = it == r.runs.end() ? "" : it->second.uid;
  j["startTime"] = TimeJson(p.start_ns);
  j["identity"] = p.identity;
  return j;
}

std::string CheckJson(const CheckReport& r) {
  nlohmann::ordered_json j;
  j["threshold"] = r.threshold;
  j["minSegment"] = r.options.min_segment;
  j["significance"] = r.options.significance;
  j["permutations"] = r.options.permutations;
  j["minChangePercent"] = r.options.min_change_percent;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const SeriesCheck& s : r.series) {
    nlohmann::ordered_json sj;
    sj["target"] = s.key.target;
    sj["scenario"] = s.key.scenario;
    sj["connections"] = s.key.connections;
    sj["rate"] = s.key.rate;
    sj["fingerprint"] = s.series.fingerprint;
    sj["runs"] = s.series.points.size();
    sj["runsUnderOtherFingerprints"] = s.series.runs_elsewhere;
    nlohmann::ordered_json metrics = nlohmann::ordered_json::array();
    for (const MetricCheck& m : s.metrics) {
      nlohmann::ordered_json mj;
      mj["metric"] = m.metric->json;
      mj["points"] = m.points;
      mj["judged"] = m.judged;
      mj["failed"] = m.failed;
      nlohmann::ordered_json cs = nlohmann::ordered_json::array();
      for (const Finding& f : m.findings) {
        nlohmann::ordered_json c;
        c["kind"] = f.change.kind == changes::Kind::kRegression ? "regression" : "improvement";
        c["changePercent"] = std::isfinite(f.change.change_percent) ? nlohmann::ordered_json(f.change.change_percent)
                                                                    : nlohmann::ordered_json(nullptr);
        c["meanBefore"] = f.change.mean_before;
        c["meanAfter"] = f.change.mean_after;
        c["pValue"] = f.change.p_value;
        c["inForce"] = f.in_force;
        c["stillWorsePercent"] = f.still_worse_percent;
        c["failing"] = f.failing;
        c["before"] = RunJson(r, s.series.points[static_cast<size_t>(f.change.x_before)]);
        c["after"] = RunJson(r, s.series.points[static_cast<size_t>(f.change.x_after)]);
        c["buildChanged"] = !BuildChange(s.series.points[static_cast<size_t>(f.change.x_before)],
                                         s.series.points[static_cast<size_t>(f.change.x_after)])
                                 .empty();
        cs.push_back(std::move(c));
      }
      mj["changes"] = cs;
      metrics.push_back(std::move(mj));
    }
    sj["metrics"] = metrics;
    list.push_back(std::move(sj));
  }
  j["series"] = list;
  j["failures"] = r.failures;
  j["passed"] = r.failures == 0;
  return j.dump(2) + "\n";
}

std::string CheckJunit(const CheckReport& r) {
  int tests = 0, skipped = 0;
  std::string cases;
  for (const SeriesCheck& s : r.series) {
    for (const MetricCheck& m : s.metrics) {
      ++tests;
      cases += "    <testcase classname=\"" + XmlEscape(s.key.target + "/" + s.key.scenario) + "\" name=\"" +
               XmlEscape(LoadName(s.key) + "/" + m.metric->flag) + "\">\n";
      if (!m.judged) {
        ++skipped;
        cases +=
            "      <skipped message=\"" +
            XmlEscape(std::to_string(m.points) + " runs, fewer than " + std::to_string(2 * r.options.min_segment)) +
            "\"/>\n";
      }
      std::string lines;
      for (const Finding& f : m.findings) lines += FindingLine(s, m, f, r.threshold) + "\n";
      for (const Finding& f : m.findings) {
        if (!f.failing) continue;
        cases +=
            "      <failure type=\"regression\" message=\"" +
            XmlEscape(std::string(m.metric->title) + " regression " + Percent(f.change.change_percent) + " in force") +
            "\">" + XmlEscape(lines) + "</failure>\n";
        break;
      }
      if (!lines.empty()) cases += "      <system-out>" + XmlEscape(lines) + "</system-out>\n";
      cases += "    </testcase>\n";
    }
  }
  const std::string counts = "tests=\"" + std::to_string(tests) + "\" failures=\"" + std::to_string(r.failures) +
                             "\" errors=\"0\" skipped=\"" + std::to_string(skipped) + "\"";
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"fairbench history check\" " + counts +
         ">\n  <testsuite name=\"fairbench history check\" " + counts + ">\n" + cases +
         "  </testsuite>\n</testsuites>\n";
}

int CheckSeries(const HistoryFlags& f) {
  auto threshold = ParsePercent("--threshold", f.threshold);
  if (!threshold.ok()) return Fail(2, threshold.status().message());
  auto min_change = ParsePercent("--min-change", f.min_change);
  if (!min_change.ok()) return Fail(2, min_change.status().message());
  std::vector<const Metric*> metrics;
  if (f.metric == "rps" || f.metric == "both") metrics.push_back(&kRps);
  if (f.metric == "p99" || f.metric == "both") metrics.push_back(&kP99);
  if (metrics.empty()) return Fail(2, "--metric: expected rps, p99 or both, got '" + f.metric + "'");
  if (f.format != "text" && f.format != "json" && f.format != "junit") {
    return Fail(2, "--format: expected text, json or junit, got '" + f.format + "'");
  }
  results::RunFilter filter;
  filter.limit = 0;
  for (const std::string& l : f.check_labels) {
    const size_t eq = l.find('=');
    if (eq == std::string::npos || eq == 0) return Fail(2, "--label: expected KEY=VALUE, got '" + l + "'");
    filter.labels.emplace_back(l.substr(0, eq), l.substr(eq + 1));
  }
  if (!f.check_since.empty()) {
    auto since = ParseSince(f.check_since, std::chrono::system_clock::now());
    if (!since.ok()) return Fail(2, since.status().message());
    filter.since_ns = *since;
  }

  results::OpenOptions oo;
  oo.create = false;
  auto store = results::OpenResultStore(f.check_store, oo);
  if (!store.ok()) return Fail(ExitCodeFor(store.status()), store.status().message());
  auto keys = (*store)->ListSeries(f.check_target, f.check_scenario);
  if (!keys.ok()) return Fail(ExitCodeFor(keys.status()), keys.status().message());
  if (keys->empty() && (!f.check_target.empty() || !f.check_scenario.empty())) {
    return Fail(2, "no stored run has " + (f.check_target.empty() ? std::string("any target") : f.check_target) + "/" +
                       (f.check_scenario.empty() ? std::string("any scenario") : f.check_scenario));
  }
  // The runs --label and --since keep, and every run's uid.
  auto runs = (*store)->ListRuns(filter);
  if (!runs.ok()) return Fail(ExitCodeFor(runs.status()), runs.status().message());
  CheckReport report;
  report.threshold = *threshold;
  report.options.min_change_percent = *min_change;
  for (const results::StoredRun& r : *runs) report.runs[r.id] = RunFacts{r.uid};
  const bool filtered = !filter.labels.empty() || filter.since_ns.has_value();

  for (const results::SeriesKey& k : *keys) {
    results::SeriesQuery q;
    q.target = k.target;
    q.scenario = k.scenario;
    q.connections = k.connections;
    q.rate = k.rate;
    auto series = (*store)->QuerySeries(q);
    if (!series.ok()) return Fail(ExitCodeFor(series.status()), series.status().message());
    SeriesCheck sc;
    sc.key = k;
    sc.series = std::move(*series);
    if (filtered) {
      std::erase_if(sc.series.points, [&](const results::SeriesPoint& p) { return !report.runs.contains(p.run_id); });
      if (sc.series.points.empty()) continue;
    }
    sc.metrics.resize(metrics.size());
    report.series.push_back(std::move(sc));
  }
  // The analysis is pure and most of the time (1,000 series of 300 runs:
  // seconds): one series and metric at a time per core.
  const size_t jobs = report.series.size() * metrics.size();
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < jobs; i = next++) {
      SeriesCheck& sc = report.series[i / metrics.size()];
      sc.metrics[i % metrics.size()] =
          results::FindSeriesChanges(*metrics[i % metrics.size()], sc.series, report.threshold, report.options);
    }
  };
  std::vector<std::thread> workers;
  const size_t cores = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 16);
  for (size_t t = 1; t < std::min(cores, jobs); ++t) workers.emplace_back(work);
  work();
  for (std::thread& t : workers) t.join();
  for (const SeriesCheck& sc : report.series) {
    for (const MetricCheck& m : sc.metrics) report.failures += m.failed ? 1 : 0;
  }

  const std::string text = CheckText(report);
  const std::string formatted = f.format == "json"    ? CheckJson(report)
                                : f.format == "junit" ? CheckJunit(report)
                                                      : text;
  if (!f.output.empty()) {
    std::ofstream out(f.output, std::ios::binary | std::ios::trunc);
    out << formatted;
    out.close();
    if (!out) return Fail(2, "--output: cannot write " + f.output);
  }
  // With --output, the text still goes to stdout for the CI log, unless the
  // file holds it already.
  if (f.output.empty() || f.format != "text") {
    const std::string& shown = f.output.empty() ? formatted : text;
    std::fwrite(shown.data(), 1, shown.size(), stdout);
    std::fflush(stdout);
  }
  return report.failures > 0 ? 1 : 0;
}

// history prune ------------------------------------------------------------

int Prune(const HistoryFlags& f) {
  if (f.older_than.empty() && f.keep == 0) return Fail(2, "history prune: give --older-than, --keep or both");
  results::PruneRule rule;
  rule.dry_run = f.dry_run;
  if (!f.older_than.empty()) {
    auto before = ParseSince(f.older_than, std::chrono::system_clock::now());
    if (!before.ok()) {
      std::string why = before.status().message();
      if (why.rfind("--since", 0) == 0) why = "--older-than" + why.substr(7);
      return Fail(2, why);
    }
    rule.older_than_ns = *before;
  }
  if (f.keep > 0) rule.keep_per_series = f.keep;
  results::OpenOptions oo;
  oo.create = false;
  auto store = results::OpenResultStore(f.prune_store, oo);
  if (!store.ok()) return Fail(ExitCodeFor(store.status()), store.status().message());
  auto gone = (*store)->Prune(rule);
  if (!gone.ok()) return Fail(ExitCodeFor(gone.status()), gone.status().message());
  std::string out;
  for (const results::PrunedRun& r : *gone) {
    out += (f.dry_run ? "would remove run " : "removed run ") + std::to_string(r.id) + " " + r.name + " (" +
           (r.start_ns ? api::FormatTime(api::Time(std::chrono::nanoseconds(*r.start_ns)))
                       : std::string("never started")) +
           ")\n";
  }
  out += std::to_string(gone->size()) + (gone->size() == 1 ? " run " : " runs ") +
         (f.dry_run ? "would be removed" : "removed") + " from " + (*store)->Describe() + "\n";
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace

HistoryCommand AddHistoryCommand(CLI::App& app, HistoryFlags& f) {
  HistoryCommand c;
  c.history = app.add_subcommand(
      "history", "List the runs of a result store, one series over time, or check every series for changes");
  c.history->require_subcommand(0, 1);
  AddStoreOption(*c.history, f.store, "The result store", false);
  c.history->add_option("--target", f.target, "Runs with this target");
  c.history->add_option("--scenario", f.scenario, "Runs with this scenario");
  c.history->add_option("--label", f.labels, "Runs with this label, KEY=VALUE (repeat: all of them)")
      ->allow_extra_args(false);
  c.history->add_option("--since", f.since, "Runs started since: a time (2026-12-01T00:00:00Z), a date or an age (7d)");
  c.history->add_option("--limit", f.limit, "The latest N runs (default 50; 0: all)")->check(CLI::NonNegativeNumber);
  c.history->add_flag("--json", f.json, "JSON on stdout instead of a table");

  c.series = c.history->add_subcommand("series", "One target, scenario and load over time, under one fingerprint");
  AddStoreOption(*c.series, f.series_store, "The result store", false);
  c.series->add_option("--target", f.series_target, "The target")->required();
  c.series->add_option("--scenario", f.series_scenario, "The scenario")->required();
  c.series->add_option("--connections", f.connections, "The connection level")->required()->check(CLI::PositiveNumber);
  c.series->add_option("--rate", f.rate,
                       "The offered rate of constant-rate cells: requests/s (2000, 2k), or a rate level's share of "
                       "capacity (50%) (default 0: closed loop)");
  c.series->add_option("--fingerprint", f.fingerprint,
                       "The environment fingerprint (a prefix, as history prints it; default: the latest run's)");
  c.series->add_flag("--json", f.series_json, "JSON on stdout instead of a table");

  c.check = c.history->add_subcommand("check", "Change points in every series; fails for a regression still in force");
  AddStoreOption(*c.check, f.check_store, "The result store", false);
  c.check->add_option("--target", f.check_target, "Only this target's series");
  c.check->add_option("--scenario", f.check_scenario, "Only this scenario's series");
  c.check->add_option("--label", f.check_labels, "Only runs with this label, KEY=VALUE (repeat: all of them)")
      ->allow_extra_args(false);
  c.check->add_option("--since", f.check_since, "Only runs started since: a time, a date or an age (30d)");
  c.check->add_option("--threshold", f.threshold, "Fail for a regression of at least this much in force (default 5%)");
  c.check->add_option("--min-change", f.min_change,
                      "Report changes of at least this much (default 1%; smaller ones are the noise's)");
  c.check->add_option("--metric", f.metric, "rps, p99 or both (default)");
  c.check->add_option("--format", f.format, "text (default), json or junit");
  c.check->add_option("--output", f.output, "Write the report here (json, junit: the text still goes to stdout)");

  c.prune = c.history->add_subcommand("prune", "Remove old runs: by age, or all but the newest N of each series");
  AddStoreOption(*c.prune, f.prune_store, "The result store", false);
  c.prune->add_option("--older-than", f.older_than, "Runs started before this: an age (90d) or a time");
  c.prune->add_option("--keep", f.keep, "Keep the newest N runs of each series; remove runs that are in none's")
      ->check(CLI::PositiveNumber);
  c.prune->add_flag("--dry-run", f.dry_run, "Say which runs would go; remove nothing");
  return c;
}

int RunHistoryCommand(const HistoryCommand& c, const HistoryFlags& f) {
  if (c.prune->parsed()) {
    HistoryFlags prune = f;
    if (prune.prune_store.empty()) prune.prune_store = f.store;
    if (prune.prune_store.empty()) return Fail(2, "--store: required (or set FAIRBENCH_STORE)");
    return Prune(prune);
  }
  if (c.check->parsed()) {
    HistoryFlags check = f;
    if (check.check_store.empty()) check.check_store = f.store;
    if (check.check_store.empty()) return Fail(2, "--store: required (or set FAIRBENCH_STORE)");
    return CheckSeries(check);
  }
  if (c.series->parsed()) {
    HistoryFlags series = f;
    if (series.series_store.empty()) series.series_store = f.store;  // `history --store P series …`
    if (series.series_store.empty()) return Fail(2, "--store: required (or set FAIRBENCH_STORE)");
    return ShowSeries(series);
  }
  if (f.store.empty()) return Fail(2, "--store: required (or set FAIRBENCH_STORE)");
  return ListRuns(f);
}

}  // namespace fairbench::controller
