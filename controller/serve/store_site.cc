#include "controller/serve/store_site.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <vector>

#include "api/time_text.h"
#include "controller/report/compare.h"
#include "controller/report/format.h"
#include "controller/report/html.h"
#include "controller/results/run_index.h"
#include "controller/results/series_changes.h"
#include "controller/serve/series_chart.h"

namespace fairbench::serve {
namespace {

using report::EscapeHtml;

constexpr const char* kStyle =
    "body{font:15px/1.45 system-ui,sans-serif;color:#222;margin:0 auto;max-width:1040px;padding:0 1.2em 3em}"
    "header{border-bottom:1px solid #ddd;margin-bottom:1em}header nav{font-size:14px;padding:.6em 0}"
    "h1{font-size:1.5em;margin:.4em 0}h2{font-size:1.2em;margin-top:1.6em}"
    "table{border-collapse:collapse;font-size:14px;margin:.5em 0}"
    "th,td{border-bottom:1px solid #e4e4e4;padding:.25em .6em;text-align:left;vertical-align:top}"
    "td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}"
    ".wrap{overflow-x:auto;max-width:100%}a{color:#0b62a4}"
    "code{font-size:13px}.muted{color:#666}form{margin:.6em 0}"
    "form label{margin-right:.8em}input[type=text]{width:9em}input[type=number]{width:6em}"
    "svg.series-chart{max-width:100%;height:auto;display:block;margin:.5em 0}"
    "li.regression{color:#a3271a}li.improvement{color:#176b38}";

// The page's own policy: nothing but its inline style, links within the
// site, forms that stay on it.
std::string Shell(const std::string& title, const std::string& body) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
         "form-action 'self'; base-uri 'none'\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
         "<meta name=\"generator\" content=\"fairbench serve\">\n<title>" +
         EscapeHtml(title) + "</title>\n<style>" + kStyle +
         "</style>\n</head>\n<body>\n<header><nav><a href=\"/\">Runs and series</a></nav></header>\n<main>\n" + body +
         "</main>\n</body>\n</html>\n";
}

// The report's pages (a run, a comparison) are the report's own HTML: a
// line to get back to the rest of the store goes at the top of its body.
std::string WithNav(std::string html, const std::string& links) {
  const std::string nav =
      "<nav style=\"font:14px system-ui,sans-serif;padding:.6em 0\"><a href=\"/\">Runs and series</a>" + links +
      "</nav>\n";
  const size_t at = html.find("<body>\n");
  if (at != std::string::npos) html.insert(at + 7, nav);
  return html;
}

Page FromStatus(const Status& s) {
  switch (s.code()) {
    case Status::Code::kNotFound: return ErrorPage(404, s.message());
    case Status::Code::kInvalidArgument: return ErrorPage(400, s.message());
    case Status::Code::kUnavailable: return ErrorPage(503, s.message());
    default: return ErrorPage(500, s.message());
  }
}

Status BadParameter(const std::string& name, const std::string& why) {
  return Status::InvalidArgument("parameter '" + name + "': " + why);
}

std::optional<std::string> Param(const Params& params, const std::string& name) {
  auto it = params.find(name);
  if (it == params.end()) return std::nullopt;
  return it->second;
}

// A whole number in [min, 10^15]; `what` names what it must be.
Result<int64_t> WholeNumber(const std::string& name, const std::string& text, int64_t min, const std::string& what) {
  const std::string bad = "expected " + what + ", got '" + text + "'";
  if (text.empty() || text.size() > 15) return BadParameter(name, bad);
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return BadParameter(name, bad);
    v = v * 10 + (c - '0');
  }
  if (v < min) return BadParameter(name, bad);
  return v;
}

Result<int64_t> RunId(const std::string& name, const std::string& text) {
  return WholeNumber(name, text, 1, "a run id (a positive whole number)");
}

std::string TimeText(const std::optional<int64_t>& ns) {
  if (!ns) return "-";
  return api::FormatTimeSeconds(api::Time(std::chrono::nanoseconds(*ns)));
}

std::string RunHref(int64_t id) { return "/runs/" + std::to_string(id); }

std::string Link(const std::string& href, const std::string& text) {
  return "<a href=\"" + EscapeHtml(href) + "\">" + EscapeHtml(text) + "</a>";
}

std::string SeriesHref(const std::string& target, const std::string& scenario, int64_t connections, int64_t rate,
                       const std::string& fingerprint = "") {
  std::string href = "/series?target=" + UrlEncode(target) + "&scenario=" + UrlEncode(scenario) +
                     "&connections=" + std::to_string(connections);
  if (rate > 0) href += "&rate=" + std::to_string(rate);
  if (rate < 0) href += "&rate=" + std::to_string(-rate) + "%25";
  if (!fingerprint.empty()) href += "&fingerprint=" + UrlEncode(fingerprint);
  return href;
}

std::string SeriesName(const std::string& target, const std::string& scenario, int64_t connections, int64_t rate) {
  return target + "/" + scenario + " at " + std::to_string(connections) + " connections" +
         (rate != 0 ? ", " + results::SeriesRateText(rate) : "");
}

// `cells`: already HTML; `numeric[i]` right-aligns column i.
std::string Table(const std::string& cls, const std::vector<std::string>& header, const std::vector<bool>& numeric,
                  const std::vector<std::vector<std::string>>& rows) {
  auto attr = [&](size_t i) { return i < numeric.size() && numeric[i] ? std::string(" class=\"n\"") : std::string(); };
  std::string out = "<div class=\"wrap\"><table class=\"" + cls + "\">\n<thead><tr>";
  for (size_t i = 0; i < header.size(); ++i) out += "<th" + attr(i) + ">" + EscapeHtml(header[i]) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (const auto& row : rows) {
    out += "<tr>";
    for (size_t i = 0; i < row.size(); ++i) out += "<td" + attr(i) + ">" + row[i] + "</td>";
    out += "</tr>\n";
  }
  return out + "</tbody>\n</table></div>\n";
}

std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

std::string PValue(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", p);
  return buf;
}

std::string RunText(const results::SeriesPoint& p) {
  return "run " + std::to_string(p.run_id) + " (" + p.run_name + ", " + TimeText(p.start_ns) + ")";
}

std::string ChangeText(double percent) {
  return std::isfinite(percent) ? report::FormatChange(percent / 100) : std::string(percent > 0 ? "+∞" : "−∞");
}

// A change as one line for people: what the marker's title and the list
// under the chart say.
std::string FindingText(const results::MetricChanges& m, const results::SeriesFinding& f,
                        const results::Series& series) {
  const results::SeriesPoint& before = series.points[static_cast<size_t>(f.change.x_before)];
  const results::SeriesPoint& after = series.points[static_cast<size_t>(f.change.x_after)];
  const bool regression = f.change.kind == changes::Kind::kRegression;
  const bool rate = m.metric->better == changes::Better::kHigher;
  auto value = [&](double v) { return rate ? report::FormatRate(v) + " requests/s" : report::FormatLatency(v); };
  std::string line = std::string(m.metric->title) + (regression ? " regression " : " improvement ") +
                     ChangeText(f.change.change_percent) + ": " + value(f.change.mean_before) + " → " +
                     value(f.change.mean_after) + ", between " + RunText(before) + " and " + RunText(after) +
                     ", p=" + PValue(f.change.p_value);
  if (f.failing) {
    line +=
        "; fails history check (still " + ChangeText(-f.still_worse_percent * (rate ? 1 : -1)) + " at the newest run)";
  } else if (regression) {
    line += f.in_force ? "; in force, below the threshold" : "; no longer in force";
  }
  return line;
}

// The front page's filters from its query string: target, scenario,
// limit and any number of label=KEY=VALUE.
Result<results::RunFilter> RunFilterFromParams(const Params& params) {
  results::RunFilter filter;
  filter.target = Param(params, "target").value_or("");
  filter.scenario = Param(params, "scenario").value_or("");
  if (auto limit = Param(params, "limit"); limit && !limit->empty()) {
    auto n = WholeNumber("limit", *limit, 0, "a number of runs (0: all)");
    if (!n.ok()) return n.status();
    filter.limit = *n;
  }
  auto [from, to] = params.equal_range("label");
  for (auto it = from; it != to; ++it) {
    if (it->second.empty()) continue;
    const size_t eq = it->second.find('=');
    if (eq == std::string::npos || eq == 0) {
      return BadParameter("label", "expected KEY=VALUE, got '" + it->second + "'");
    }
    filter.labels.emplace_back(it->second.substr(0, eq), it->second.substr(eq + 1));
  }
  return filter;
}

std::string FilterForm(const results::RunFilter& filter) {
  std::vector<std::string> labels;
  for (const auto& [k, v] : filter.labels) labels.push_back(k + "=" + v);
  const std::string label_text = Join(labels, " ");
  return "<form method=\"get\" action=\"/\" class=\"filters\">"
         "<label>Target <input type=\"text\" name=\"target\" value=\"" +
         EscapeHtml(filter.target) +
         "\"></label>"
         "<label>Scenario <input type=\"text\" name=\"scenario\" value=\"" +
         EscapeHtml(filter.scenario) +
         "\"></label>"
         "<label>Label <input type=\"text\" name=\"label\" placeholder=\"key=value\" value=\"" +
         EscapeHtml(filter.labels.size() == 1 ? label_text : "") +
         "\"></label>"
         "<label>Latest <input type=\"number\" name=\"limit\" min=\"0\" value=\"" +
         std::to_string(filter.limit) + "\"></label><button type=\"submit\">Filter</button></form>\n";
}

// The front page's query string for the same filters without the limit.
std::string AllRunsQuery(const results::RunFilter& filter) {
  std::string q = "limit=0";
  if (!filter.target.empty()) q += "&target=" + UrlEncode(filter.target);
  if (!filter.scenario.empty()) q += "&scenario=" + UrlEncode(filter.scenario);
  for (const auto& [k, v] : filter.labels) q += "&label=" + UrlEncode(k + "=" + v);
  return q;
}

std::string RunsTable(const std::vector<results::StoredRun>& runs) {
  std::vector<std::vector<std::string>> rows;
  for (const results::StoredRun& r : runs) {
    std::vector<std::string> labels;
    for (const auto& [k, v] : r.labels) labels.push_back(EscapeHtml(k + "=" + v));
    rows.push_back(
        {Link(RunHref(r.id), std::to_string(r.id)), EscapeHtml(TimeText(r.start_ns)),
         Link(RunHref(r.id), r.ns.empty() ? r.name : r.ns + "/" + r.name), EscapeHtml(r.phase.empty() ? "-" : r.phase),
         std::to_string(r.cells) + "/" + std::to_string(r.cells_total), EscapeHtml(Join(r.targets, ", ")),
         "<code>" + EscapeHtml(r.fingerprint.substr(0, 12)) + "</code>", labels.empty() ? "-" : Join(labels, "<br>")});
  }
  return Table("runs", {"Run", "Start", "Name", "Phase", "Cells", "Targets", "Fingerprint", "Labels"},
               {true, false, false, false, true}, rows);
}

// The runs as the options of a select, the one at `selected` chosen.
std::string RunOptions(const std::vector<results::StoredRun>& runs, size_t selected) {
  std::string out;
  for (size_t i = 0; i < runs.size(); ++i) {
    const results::StoredRun& r = runs[i];
    out += "<option value=\"" + std::to_string(r.id) + "\"" + (i == selected ? " selected" : "") + ">" +
           EscapeHtml(std::to_string(r.id) + " " + r.name + " (" + TimeText(r.start_ns) + ")") + "</option>";
  }
  return out;
}

std::string RunsSection(const std::vector<results::StoredRun>& runs, const results::RunFilter& filter) {
  std::string body = "<h2 id=\"runs\">Runs</h2>\n";
  if (runs.empty()) return body + "<p>No run matches.</p>\n";
  body += RunsTable(runs);
  if (filter.limit > 0 && static_cast<int64_t>(runs.size()) == filter.limit) {
    body += "<p class=\"muted\">The latest " + std::to_string(filter.limit) + " runs; <a href=\"/?" +
            EscapeHtml(AllRunsQuery(filter)) + "\">all of them</a>.</p>\n";
  }
  // Two runs side by side: the older one is the base.
  body +=
      "<h2 id=\"compare\">Compare two runs</h2>\n<form method=\"get\" action=\"/compare\" class=\"compare\">"
      "<label>Base <select name=\"a\">" +
      RunOptions(runs, runs.size() > 1 ? 1 : 0) +
      "</select></label>"
      "<label>New <select name=\"b\">" +
      RunOptions(runs, 0) +
      "</select></label>"
      "<button type=\"submit\">Compare</button></form>\n";
  return body;
}

std::string SeriesSection(const std::vector<results::SeriesKey>& series) {
  std::string body = "<h2 id=\"series\">Series</h2>\n";
  if (series.empty()) return body + "<p>No series.</p>\n";
  body +=
      "<p class=\"muted\">One target, scenario and load over time, under the environment fingerprint of its "
      "latest run.</p>\n";
  std::vector<std::vector<std::string>> rows;
  for (const results::SeriesKey& k : series) {
    const std::string href = SeriesHref(k.target, k.scenario, k.connections, k.rate);
    rows.push_back({"<a class=\"series\" href=\"" + EscapeHtml(href) + "\">" +
                        EscapeHtml(SeriesName(k.target, k.scenario, k.connections, k.rate)) + "</a>",
                    EscapeHtml(k.target), EscapeHtml(k.scenario), std::to_string(k.connections),
                    k.rate > 0   ? std::to_string(k.rate)
                    : k.rate < 0 ? std::to_string(-k.rate) + "%"
                                 : "-"});
  }
  return body + Table("series", {"Series", "Target", "Scenario", "Connections", "Rate"},
                      {false, false, false, true, true}, rows);
}

// The series page's query: target, scenario and connections required,
// rate and a fingerprint (a prefix of lower-case hex digits) optional.
Result<results::SeriesQuery> SeriesQueryFromParams(const Params& params) {
  results::SeriesQuery q;
  for (const char* name : {"target", "scenario", "connections"}) {
    if (Param(params, name).value_or("").empty()) return BadParameter(name, "required");
  }
  q.target = *Param(params, "target");
  q.scenario = *Param(params, "scenario");
  auto connections = WholeNumber("connections", *Param(params, "connections"), 1, "a positive whole number");
  if (!connections.ok()) return connections.status();
  q.connections = *connections;
  if (auto rate = Param(params, "rate"); rate && !rate->empty()) {
    auto r = results::ParseSeriesRate(*rate);
    if (!r.ok()) return BadParameter("rate", r.status().message());
    q.rate = *r;
  }
  q.fingerprint = Param(params, "fingerprint").value_or("");
  if (q.fingerprint.size() > 64 || q.fingerprint.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return BadParameter("fingerprint", "expected lower-case hex digits (a prefix of one), got '" + q.fingerprint + "'");
  }
  return q;
}

// The series page above its charts: the series' name, its fingerprint with
// links to the same series under other fingerprints, and how change points
// are found.
std::string SeriesHeader(const std::string& name, const results::SeriesQuery& q, const results::Series& series,
                         const changes::Options& options, double threshold) {
  std::string body = "<h1>" + EscapeHtml(name) + "</h1>\n<p>Environment fingerprint <code>" +
                     EscapeHtml(series.fingerprint) + "</code>; " + std::to_string(series.points.size()) +
                     " runs, oldest first.</p>\n";
  if (series.runs_elsewhere > 0) {
    std::vector<std::string> others;
    for (const std::string& fp : series.other_fingerprints) {
      others.push_back("<a href=\"" + EscapeHtml(SeriesHref(q.target, q.scenario, q.connections, q.rate, fp)) +
                       "\"><code>" + EscapeHtml(fp.substr(0, 12)) + "</code></a>");
    }
    body += "<p class=\"muted\">" + std::to_string(series.runs_elsewhere) +
            " runs of this series under other fingerprints are left out: " + Join(others, ", ") + ".</p>\n";
  }
  body +=
      "<p class=\"muted\">Change points as <code>fairbench history check</code> finds them at its defaults: "
      "E-Divisive means, segments of at least " +
      std::to_string(options.min_segment) + " runs, significance " + PValue(options.significance) + " over " +
      std::to_string(options.permutations) + " permutations, changes of at least " +
      PValue(options.min_change_percent) + " %; a regression of " + PValue(threshold) +
      " % or more still in force fails the check.</p>\n";
  return body;
}

// One metric of the series as a chart: a point per run (linked to it), a
// marker per change point and the mean level between them.
SeriesChart MetricChart(const results::MetricChanges& m, const results::Series& series, const char* title,
                        const char* y_label, report::ValueKind kind) {
  SeriesChart c;
  c.title = title;
  c.y_label = y_label;
  c.kind = kind;
  for (const results::SeriesPoint& p : series.points) {
    ChartPoint cp;
    cp.run_id = p.run_id;
    cp.label = std::to_string(p.run_id);
    cp.href = RunHref(p.run_id);
    if (p.succeeded > 0) cp.value = p.*(m.metric->field);
    cp.title = "run " + std::to_string(p.run_id) + " " + p.run_name + " (" + TimeText(p.start_ns) + "): " +
               (cp.value ? (kind == report::ValueKind::kRate ? report::FormatRate(*cp.value) + " requests/s"
                                                             : report::FormatLatency(*cp.value))
                         : std::string("failed"));
    c.points.push_back(std::move(cp));
  }
  size_t first = 0;
  for (const results::SeriesFinding& f : m.findings) {
    ChartChange ch;
    ch.index = f.change.index;
    ch.regression = f.change.kind == changes::Kind::kRegression;
    ch.title = FindingText(m, f, series);
    c.changes.push_back(std::move(ch));
    c.levels.push_back({first, f.change.index - 1, f.change.mean_before});
    first = f.change.index;
  }
  if (!m.findings.empty()) c.levels.push_back({first, series.points.size() - 1, m.findings.back().change.mean_after});
  return c;
}

// What the chart's change points say, as a list under it.
std::string FindingsList(const results::MetricChanges& m, const results::Series& series,
                         const changes::Options& options) {
  if (!m.judged) {
    return "<p class=\"muted\">" + std::to_string(m.points) + " runs measured, fewer than " +
           std::to_string(2 * options.min_segment) + ": too few to judge.</p>\n";
  }
  if (m.findings.empty()) return "<p class=\"muted\">No change point.</p>\n";
  std::string out = "<ul class=\"changes\">\n";
  for (const results::SeriesFinding& f : m.findings) {
    out += "<li class=\"" + std::string(f.change.kind == changes::Kind::kRegression ? "regression" : "improvement") +
           "\">" + EscapeHtml(FindingText(m, f, series)) + "</li>\n";
  }
  return out + "</ul>\n";
}

std::string MetricSection(const results::MetricChanges& m, const results::Series& series,
                          const changes::Options& options, const char* title, const char* y_label,
                          report::ValueKind kind, const char* id) {
  return RenderSeriesChart(MetricChart(m, series, title, y_label, kind), id) + FindingsList(m, series, options);
}

std::string SeriesRunsTable(const results::Series& series) {
  std::vector<std::vector<std::string>> rows;
  for (const results::SeriesPoint& p : series.points) {
    const bool any = p.succeeded > 0;
    rows.push_back({Link(RunHref(p.run_id), std::to_string(p.run_id)), EscapeHtml(TimeText(p.start_ns)),
                    Link(RunHref(p.run_id), p.run_name), any ? report::FormatRate(p.requests_per_second) : "failed",
                    any ? EscapeHtml(report::FormatLatency(p.p99_us)) : "-",
                    report::FormatCount(static_cast<double>(p.errors)),
                    std::to_string(p.succeeded) + "/" + std::to_string(p.repetitions)});
  }
  return Table("points", {"Run", "Start", "Name", "Requests/s", "p99", "Errors", "Repetitions"},
               {true, false, false, true, true, true, true}, rows);
}

}  // namespace

std::string UrlEncode(const std::string& text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
        c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

Page ErrorPage(int status, const std::string& message) {
  const char* what = status == 400   ? "Bad request"
                     : status == 404 ? "Not found"
                     : status == 405 ? "Method not allowed"
                     : status == 503 ? "Store unavailable"
                                     : "Error";
  Page page;
  page.status = status;
  page.body =
      Shell(std::to_string(status) + " " + what, "<h1>" + std::to_string(status) + " " + what +
                                                     "</h1>\n<p class=\"error\">" + EscapeHtml(message) + "</p>\n");
  return page;
}

Page StoreSite::Index(const Params& params) {
  auto filter = RunFilterFromParams(params);
  if (!filter.ok()) return FromStatus(filter.status());
  auto runs = store_.ListRuns(*filter);
  if (!runs.ok()) return FromStatus(runs.status());
  auto series = store_.ListSeries(filter->target, filter->scenario);
  if (!series.ok()) return FromStatus(series.status());

  std::string body = "<h1>Result store</h1>\n<p class=\"muted\">" + EscapeHtml(store_.Describe()) +
                     ", read only.</p>\n<p><a href=\"#runs\">" + std::to_string(runs->size()) +
                     (runs->size() == 1 ? " run" : " runs") + "</a> · <a href=\"#series\">" +
                     std::to_string(series->size()) + " series</a>" +
                     (runs->size() > 0 ? " · <a href=\"#compare\">compare two runs</a>" : "") + "</p>\n";
  body += FilterForm(*filter);
  body += RunsSection(*runs, *filter);
  body += SeriesSection(*series);
  Page page;
  page.body = Shell("fairbench result store", body);
  return page;
}

Page StoreSite::Run(const std::string& id_text) {
  auto id = RunId("run", id_text);
  if (!id.ok()) return FromStatus(id.status());
  auto text = store_.LoadResultsJson(*id);
  if (!text.ok()) {
    if (text.status().code() == Status::Code::kNotFound) {
      return ErrorPage(404, "no run " + std::to_string(*id) + " in " + store_.Describe());
    }
    return FromStatus(text.status());
  }
  auto record = report::RunRecordFromJsonText(*text, "run " + std::to_string(*id));
  if (!record.ok()) return ErrorPage(500, "the stored record cannot be read: " + record.status().message());
  Page page;
  page.body = WithNav(report::RenderHtml(*record),
                      " · run " + std::to_string(*id) + " · " + Link(RunHref(*id) + "/results.json", "results.json"));
  return page;
}

Page StoreSite::RunJson(const std::string& id_text) {
  auto id = RunId("run", id_text);
  if (!id.ok()) return FromStatus(id.status());
  auto text = store_.LoadResultsJson(*id);
  if (!text.ok()) {
    if (text.status().code() == Status::Code::kNotFound) {
      return ErrorPage(404, "no run " + std::to_string(*id) + " in " + store_.Describe());
    }
    return FromStatus(text.status());
  }
  Page page;
  page.content_type = "application/json";
  page.body = std::move(*text);
  return page;
}

Page StoreSite::SeriesPage(const Params& params) {
  auto query = SeriesQueryFromParams(params);
  if (!query.ok()) return FromStatus(query.status());
  const results::SeriesQuery& q = *query;
  auto series = store_.QuerySeries(q);
  if (!series.ok()) {
    Status s = series.status();
    if (s.code() == Status::Code::kInvalidArgument && s.message().rfind("--fingerprint ", 0) == 0) {
      s = BadParameter("fingerprint", s.message().substr(14));
    }
    return FromStatus(s);
  }

  // As `history check` at its defaults.
  changes::Options options;
  options.min_change_percent = results::kDefaultMinChangePercent;
  const double threshold = results::kDefaultThresholdPercent;
  const results::MetricChanges rps =
      results::FindSeriesChanges(results::kRequestsPerSecondMetric, *series, threshold, options);
  const results::MetricChanges p99 = results::FindSeriesChanges(results::kP99Metric, *series, threshold, options);

  const std::string name = SeriesName(q.target, q.scenario, q.connections, q.rate);
  std::string body = SeriesHeader(name, q, *series, options, threshold);
  body +=
      "<h2 id=\"rps\">Requests per second</h2>\n" +
      MetricSection(rps, *series, options, "Requests per second", "requests/s", report::ValueKind::kRate, "chart-rps");
  body += "<h2 id=\"p99\">p99 latency</h2>\n" +
          MetricSection(p99, *series, options, "p99 latency", "p99", report::ValueKind::kLatencyUs, "chart-p99");
  body += "<h2 id=\"runs\">Runs</h2>\n" + SeriesRunsTable(*series);
  Page page;
  page.body = Shell(name, body);
  return page;
}

Page StoreSite::Compare(const Params& params) {
  int64_t ids[2] = {0, 0};
  const char* names[2] = {"a", "b"};
  report::RunRecord records[2];
  std::string run_names[2];
  for (int i = 0; i < 2; ++i) {
    const std::string text = Param(params, names[i]).value_or("");
    if (text.empty()) return FromStatus(BadParameter(names[i], "required (a run id)"));
    auto id = RunId(names[i], text);
    if (!id.ok()) return FromStatus(id.status());
    ids[i] = *id;
  }
  for (int i = 0; i < 2; ++i) {
    auto json = store_.LoadResultsJson(ids[i]);
    if (!json.ok()) {
      if (json.status().code() == Status::Code::kNotFound) {
        return ErrorPage(404, "no run " + std::to_string(ids[i]) + " in " + store_.Describe());
      }
      return FromStatus(json.status());
    }
    auto record = report::RunRecordFromJsonText(*json, "run " + std::to_string(ids[i]));
    if (!record.ok()) return ErrorPage(500, "the stored record cannot be read: " + record.status().message());
    records[i] = std::move(*record);
    run_names[i] = "run " + std::to_string(ids[i]) + " (" + records[i].run.metadata.name + ")";
  }
  const report::CompareOptions options;
  auto comparison = report::Compare(records[0], records[1], options);
  if (!comparison.ok()) {
    return ErrorPage(400,
                     run_names[0] + " and " + run_names[1] + " cannot be compared: " + comparison.status().message());
  }
  Page page;
  page.body = WithNav(report::RenderHtml(report::CompareDocument(*comparison, run_names[0], run_names[1], options)),
                      " · " + Link(RunHref(ids[0]), run_names[0]) + " against " + Link(RunHref(ids[1]), run_names[1]));
  return page;
}

}  // namespace fairbench::serve
