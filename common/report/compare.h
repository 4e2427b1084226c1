// Compare: two runs' records, cell by cell — requests/s and p99 with their
// change, and a verdict that accounts for each side's measured noise.
//
// Cells match by (target, scenario, connections). Each side's samples are
// its succeeded repetitions when both sides have two or more; otherwise the
// per-second intervals of the measured window of its one repetition (the
// method says which). The verdict is Welch's t-test at the 5 % level: a
// change is reported as faster/slower only when it is significant.
// Differences of environment and spec come first, since they may explain
// any change.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/report/document.h"
#include "common/report/run_record.h"
#include "common/report/stats.h"
#include "common/status.h"

namespace fairbench::report {

struct CompareOptions {
  double alpha = 0.05;
  // Fail when requests/s dropped by at least this share (0.05: 5 %) and the
  // drop is significant; likewise when p99 rose by at least its share.
  std::optional<double> fail_on_regression;
  std::optional<double> fail_on_p99_regression;
};

struct CellComparison {
  std::string target, scenario;
  int64_t connections = 0;
  std::string method;  // how the samples were taken, for the reader
  Estimate base_rate, new_rate, base_p99, new_p99;
  std::optional<double> rate_change, p99_change;  // new ÷ base − 1
  TTest rate_test, p99_test;
  std::string rate_verdict, p99_verdict;
  bool regression = false;  // a gate of the options failed on this cell
};

struct Comparison {
  std::vector<std::string> differences;  // environment and spec, one per line
  std::vector<CellComparison> cells;
  std::vector<std::string> only_in_base, only_in_new;  // "target/scenario/c100"
  std::vector<std::string> regressions;                // why the gates failed, one per line
};

// InvalidArgument when the two records have no succeeded cell in common.
Result<Comparison> Compare(const RunRecord& base, const RunRecord& next, const CompareOptions& options = {});

Document CompareDocument(const Comparison& c, const std::string& base_name, const std::string& new_name,
                         const CompareOptions& options);
nlohmann::ordered_json CompareJson(const Comparison& c, const CompareOptions& options);

}  // namespace fairbench::report
