#include "controller/cli/compare_command.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/report/compare.h"
#include "common/report/html.h"
#include "common/report/markdown.h"
#include "common/report/run_record.h"

namespace fairbench::controller {
namespace {

int Bad(const std::string& message) {
  std::fprintf(stderr, "fairbench compare: %s\n", message.c_str());
  return 2;
}

// "5%", "5 %" or "5" → 0.05; a share must be in (0, 100] percent.
Result<std::optional<double>> ParseLimit(const std::string& text, const std::string& flag) {
  if (text.empty()) return std::optional<double>();
  std::string digits = text;
  while (!digits.empty() && (digits.back() == '%' || digits.back() == ' ')) digits.pop_back();
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(digits, &used);
  } catch (...) {
    used = 0;
  }
  if (digits.empty() || used != digits.size() || !(v > 0) || v > 100) {
    return Status::InvalidArgument(flag + ": expected a percentage such as 5%, got '" + text + "'");
  }
  return std::optional<double>(v / 100);
}

}  // namespace

Result<report::RunRecord> LoadResultsFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::InvalidArgument(path + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  auto record = report::RunRecordFromJsonText(text.str(), path);
  if (record.ok()) return record;
  // Not a record at all: one line that says so, not every field it lacks.
  const auto json = nlohmann::json::parse(text.str(), nullptr, false);
  if (!json.is_discarded() && (!json.is_object() || json.value("kind", "") != "BenchmarkResults")) {
    return Status::InvalidArgument(path + ": not a fairbench results.json (no \"kind\": \"BenchmarkResults\")");
  }
  // A damaged record: its first problem, and how many more.
  const std::string& all = record.status().message();
  const size_t lines = static_cast<size_t>(std::count(all.begin(), all.end(), '\n')) + 1;
  std::string first = all.substr(0, all.find('\n'));
  if (lines > 1) first += " (and " + std::to_string(lines - 1) + " more problems)";
  return Status::InvalidArgument(first);
}

CLI::App* AddCompareCommand(CLI::App& app, CompareFlags& flags) {
  CLI::App* cmd = app.add_subcommand("compare", "Compare two runs' results.json cell by cell, with their noise");
  cmd->add_option("BASE", flags.base, "The earlier run's results.json")->required();
  cmd->add_option("NEW", flags.next, "The later run's results.json")->required();
  auto* html = cmd->add_flag("--html", flags.html, "HTML on stdout instead of Markdown");
  cmd->add_flag("--json", flags.json, "JSON on stdout instead of Markdown")->excludes(html);
  cmd->add_option("--fail-on-regression", flags.fail_on_regression,
                  "Exit 1 when a cell's requests/s dropped by at least this much, significantly (e.g. 5%)");
  cmd->add_option("--fail-on-p99-regression", flags.fail_on_p99_regression,
                  "Exit 1 when a cell's p99 rose by at least this much, significantly (e.g. 10%)");
  return cmd;
}

int RunCompareCommand(const CompareFlags& flags) {
  report::CompareOptions options;
  auto rate_limit = ParseLimit(flags.fail_on_regression, "--fail-on-regression");
  if (!rate_limit.ok()) return Bad(rate_limit.status().message());
  auto p99_limit = ParseLimit(flags.fail_on_p99_regression, "--fail-on-p99-regression");
  if (!p99_limit.ok()) return Bad(p99_limit.status().message());
  options.fail_on_regression = *rate_limit;
  options.fail_on_p99_regression = *p99_limit;
  auto base = LoadResultsFile(flags.base);
  if (!base.ok()) return Bad(base.status().message());
  auto next = LoadResultsFile(flags.next);
  if (!next.ok()) return Bad(next.status().message());
  auto comparison = report::Compare(*base, *next, options);
  if (!comparison.ok()) return Bad(flags.base + " and " + flags.next + ": " + comparison.status().message());
  std::string out;
  if (flags.json) {
    out = report::CompareJson(*comparison, options).dump(2) + "\n";
  } else {
    const report::Document d = report::CompareDocument(*comparison, flags.base, flags.next, options);
    out = flags.html ? report::RenderHtml(d) : report::RenderMarkdown(d);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  if (!comparison->regressions.empty()) {
    for (const std::string& r : comparison->regressions) std::fprintf(stderr, "regression: %s\n", r.c_str());
    return 1;
  }
  return 0;
}

}  // namespace fairbench::controller
