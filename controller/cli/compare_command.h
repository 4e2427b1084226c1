// `fairbench compare BASE.json NEW.json [--html | --json]
//                    [--fail-on-regression 5%] [--fail-on-p99-regression 10%]
//                    [--calibrate-with RUN RUN … | --repeat-split]`:
// two runs' results.json compared cell by cell (report/compare.h), as
// Markdown on stdout, or HTML, or JSON. With same-versus-same runs (files or
// folders holding results.json), or each side's repetitions split in
// halves, the report states the gate's measured false-positive rate.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "controller/report/run_record.h"
#include "common/status.h"

namespace fairbench::controller {

struct CompareFlags {
  std::string base, next;
  bool html = false;
  bool json = false;
  std::string fail_on_regression;           // "5%", "5" (percent) or empty
  std::string fail_on_p99_regression;       // the same, for p99
  std::vector<std::string> calibrate_with;  // runs of the same thing, two or more
  bool repeat_split = false;                // BASE's and NEW's repetitions, halved
};

CLI::App* AddCompareCommand(CLI::App& app, CompareFlags& flags);
// Exit codes: 0 compared (and every gate passed); 1 a gate failed: a
// significant regression past its limit; 2 bad input (a file that is not a
// run record, records with no cell in common, a bad limit, calibration runs
// that cannot calibrate: one alone, one missing a compared cell, no gate) —
// one line on stderr, nothing on stdout. Calibration never changes the exit
// code: it is reported, the gate is still BASE against NEW.
int RunCompareCommand(const CompareFlags& flags);

// A results.json file read as compare and import read it: a file that is
// not a record at all is one line saying so; a damaged record its first
// problem, naming the field, and how many more. InvalidArgument.
Result<report::RunRecord> LoadResultsFile(const std::string& path);

}  // namespace fairbench::controller
