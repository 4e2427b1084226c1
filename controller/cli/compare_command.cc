#include "controller/cli/compare_command.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "controller/report/compare.h"
#include "controller/report/html.h"
#include "controller/report/markdown.h"
#include "controller/report/run_record.h"

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

// A run given as its folder stands for the results.json inside it.
std::string ResultsPath(const std::string& path) {
  std::error_code error;
  return std::filesystem::is_directory(path, error) ? (std::filesystem::path(path) / "results.json").string() : path;
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
  cmd->add_option("BASE", flags.base, "The earlier run's results.json (or its folder)")->required();
  cmd->add_option("NEW", flags.next, "The later run's results.json (or its folder)")->required();
  auto* html = cmd->add_flag("--html", flags.html, "HTML on stdout instead of Markdown");
  cmd->add_flag("--json", flags.json, "JSON on stdout instead of Markdown")->excludes(html);
  cmd->add_option("--fail-on-regression", flags.fail_on_regression,
                  "Exit 1 when a cell's requests/s dropped by at least this much, significantly (e.g. 5%)");
  cmd->add_option("--fail-on-p99-regression", flags.fail_on_p99_regression,
                  "Exit 1 when a cell's p99 rose by at least this much, significantly (e.g. 10%)");
  cmd->add_option("--calibrate-with", flags.calibrate_with,
                  "Two or more runs of the same thing (results.json or its folder): every pair is compared with "
                  "the same gate, and the report states how often it failed (its false-positive rate)")
      ->expected(1, -1);
  cmd->add_flag("--repeat-split", flags.repeat_split,
                "Measure the gate's false-positive rate on each run's own repetitions, split in halves "
                "(four or more per cell)");
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
  auto base = LoadResultsFile(ResultsPath(flags.base));
  if (!base.ok()) return Bad(base.status().message());
  auto next = LoadResultsFile(ResultsPath(flags.next));
  if (!next.ok()) return Bad(next.status().message());
  auto comparison = report::Compare(*base, *next, options);
  if (!comparison.ok()) return Bad(flags.base + " and " + flags.next + ": " + comparison.status().message());
  if (!flags.calibrate_with.empty() || flags.repeat_split) {
    if (!options.fail_on_regression && !options.fail_on_p99_regression) {
      return Bad(
          "--calibrate-with and --repeat-split measure a gate's false-positive rate: give "
          "--fail-on-regression or --fail-on-p99-regression too");
    }
    std::vector<report::SameRuns> groups;
    if (!flags.calibrate_with.empty()) {
      report::SameRuns same;
      for (const std::string& arg : flags.calibrate_with) {
        auto record = LoadResultsFile(ResultsPath(arg));
        if (!record.ok()) return Bad(record.status().message());
        same.names.push_back(arg);
        same.records.push_back(std::move(*record));
      }
      groups.push_back(std::move(same));
    }
    if (flags.repeat_split) {
      for (const auto& [record, name] : {std::pair{&*base, flags.base}, std::pair{&*next, flags.next}}) {
        auto halves = report::SplitRepetitions(*comparison, *record, name);
        if (!halves.ok()) return Bad("--repeat-split: " + halves.status().message());
        groups.push_back(std::move(*halves));
      }
    }
    auto calibration = report::CalibrateGate(*comparison, groups, options);
    if (!calibration.ok()) return Bad(calibration.status().message());
    comparison->calibration = std::move(*calibration);
  }
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
