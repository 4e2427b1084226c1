#include "controller/cli/history_command.h"

#include <chrono>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "common/api/time_text.h"
#include "common/report/format.h"
#include "common/units.h"
#include "controller/cli/store_flag.h"
#include "controller/results/result_store.h"

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
    if (!days.ok()) return Status::InvalidArgument("--since: expected a time (2026-12-01T00:00:00Z), a date or an age (36h, 7d), got '" + text + "'");
    age = *days * 24;
  } else {
    auto d = ParseDuration(text);
    if (!d.ok()) return Status::InvalidArgument("--since: expected a time (2026-12-01T00:00:00Z), a date or an age (36h, 7d), got '" + text + "'");
    age = *d;
  }
  return std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch() - age).count();
}

std::string TimeText(const std::optional<int64_t>& ns) {
  if (!ns) return "-";
  return api::FormatTimeSeconds(api::Time(std::chrono::nanoseconds(*ns)));
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
  q.rate = f.rate;
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
      points.push_back(std::move(pj));
    }
    j["points"] = points;
    j["otherFingerprints"] = series->other_fingerprints;
    j["runsUnderOtherFingerprints"] = series->runs_elsewhere;
    out = j.dump(2) + "\n";
  } else {
    out = q.target + "/" + q.scenario + " at " + std::to_string(q.connections) + " connections" +
          (q.rate > 0 ? ", " + std::to_string(q.rate) + " requests/s" : "") + ", fingerprint " +
          series->fingerprint.substr(0, 12) + ": " + std::to_string(series->points.size()) + " runs\n";
    std::vector<std::vector<std::string>> rows = {{"RUN", "STARTED", "NAME", "REQUESTS/S", "P99", "ERRORS", "REPS"}};
    for (const results::SeriesPoint& p : series->points) {
      const bool any = p.succeeded > 0;
      rows.push_back({std::to_string(p.run_id), TimeText(p.start_ns), p.run_name,
                      any ? report::FormatRate(p.requests_per_second) : "failed",
                      any ? report::FormatLatency(p.p99_us) : "-", report::FormatCount(static_cast<double>(p.errors)),
                      std::to_string(p.succeeded) + "/" + std::to_string(p.repetitions)});
    }
    out += Table(rows, {true, false, false, true, true, true, true});
    if (series->runs_elsewhere > 0) {
      std::vector<std::string> shorts;
      for (const std::string& fp : series->other_fingerprints) shorts.push_back(fp.substr(0, 12));
      out += std::to_string(series->runs_elsewhere) + " runs under other fingerprints left out (" +
             Join(shorts, ", ") + "): --fingerprint chooses\n";
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace

HistoryCommand AddHistoryCommand(CLI::App& app, HistoryFlags& f) {
  HistoryCommand c;
  c.history = app.add_subcommand("history", "List the runs of a result store, or one series over time");
  c.history->require_subcommand(0, 1);
  AddStoreOption(*c.history, f.store, "The result store", false);
  c.history->add_option("--target", f.target, "Runs with this target");
  c.history->add_option("--scenario", f.scenario, "Runs with this scenario");
  c.history->add_option("--label", f.labels, "Runs with this label, KEY=VALUE (repeat: all of them)")->allow_extra_args(false);
  c.history->add_option("--since", f.since, "Runs started since: a time (2026-12-01T00:00:00Z), a date or an age (7d)");
  c.history->add_option("--limit", f.limit, "The latest N runs (default 50; 0: all)")->check(CLI::NonNegativeNumber);
  c.history->add_flag("--json", f.json, "JSON on stdout instead of a table");

  c.series = c.history->add_subcommand("series", "One target, scenario and load over time, under one fingerprint");
  AddStoreOption(*c.series, f.series_store, "The result store", false);
  c.series->add_option("--target", f.series_target, "The target")->required();
  c.series->add_option("--scenario", f.series_scenario, "The scenario")->required();
  c.series->add_option("--connections", f.connections, "The connection level")->required()->check(CLI::PositiveNumber);
  c.series->add_option("--rate", f.rate, "The offered rate of constant-rate runs (default 0: closed loop)")
      ->check(CLI::NonNegativeNumber);
  c.series->add_option("--fingerprint", f.fingerprint,
                       "The environment fingerprint (a prefix, as history prints it; default: the latest run's)");
  c.series->add_flag("--json", f.series_json, "JSON on stdout instead of a table");
  return c;
}

int RunHistoryCommand(const HistoryCommand& c, const HistoryFlags& f) {
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
