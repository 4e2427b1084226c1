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
// A gate's false-positive rate is measured, not assumed: CalibrateGate
// compares every ordered pair of runs of the same thing (same-versus-same,
// where any failure is a false positive) with the same options, and counts
// how often each gate failed, with a Wilson score interval.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "controller/report/document.h"
#include "controller/report/run_record.h"
#include "controller/report/stats.h"
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
  bool regression = false;                                 // a gate of the options failed on this cell
  bool rate_gate_failed = false, p99_gate_failed = false;  // which one
};

// k failures of n trials, with the 95 % Wilson score interval of the rate.
struct FailureRate {
  int failed = 0, pairs = 0;
  double low = 0, high = 0;  // of the share failed, 0 – 1
};
// The Wilson score interval of k of n (0 ≤ k ≤ n, n ≥ 1) at 95 %; {0, 1}
// for n = 0.
FailureRate Wilson95(int failed, int pairs);

// Runs that measured the same thing; only pairs within one group are
// same-versus-same.
struct SameRuns {
  std::vector<std::string> names;
  std::vector<RunRecord> records;
};

struct GateCalibration {
  int runs = 0;
  // Only the gates the options set are counted; `any` is a pair failing at
  // least one of them (the gate as the exit code applies it).
  std::optional<FailureRate> rate, p99;
  FailureRate any;
  std::vector<std::string> failures;  // "base → new: why", one per failing pair, gate and cell
};

struct Comparison {
  std::vector<std::string> differences;  // environment and spec, one per line
  std::vector<CellComparison> cells;
  std::vector<std::string> only_in_base, only_in_new;  // "target/scenario/c100"
  std::vector<std::string> regressions;                // why the gates failed, one per line
  // The gates' measured false-positive rate, when same-versus-same runs were
  // given (CalibrateGate); the report says "not measured" otherwise.
  std::optional<GateCalibration> calibration;
};

// InvalidArgument when the two records have no succeeded cell in common.
Result<Comparison> Compare(const RunRecord& base, const RunRecord& next, const CompareOptions& options = {});

// The gates of `options` applied to every ordered pair (i, j), i ≠ j, of
// runs within each group, over the cells `compared` holds only (so the
// count is of the same gate on the same cells). InvalidArgument, naming the
// run and the cell, when: no gate is set; fewer than two runs in a group; a
// run lacks a succeeded compared cell; a run would be compared by another
// method than `compared` used for that cell (repetitions against per-second
// samples).
Result<GateCalibration> CalibrateGate(const Comparison& compared, const std::vector<SameRuns>& groups,
                                      const CompareOptions& options);

// A record cut into two by repetition, over the cells `compared` holds: the
// first half of each cell's succeeded repetitions, and the rest.
// InvalidArgument when a cell has fewer than four (each half needs two for
// a t-test over repetitions).
Result<SameRuns> SplitRepetitions(const Comparison& compared, const RunRecord& record, const std::string& name);

Document CompareDocument(const Comparison& c, const std::string& base_name, const std::string& new_name,
                         const CompareOptions& options);
nlohmann::ordered_json CompareJson(const Comparison& c, const CompareOptions& options);

}  // namespace fairbench::report
