// Calibration: the harness tested on this machine — the project's delay
// server (answering every request after 1 ms) run as a local target
// through the real orchestrator, twice: an open-model cell at a constant
// rate and a closed-loop cell of a few connections, the server stopped
// (SIGSTOP) for a known time in the middle of each measurement, then
// resumed (SIGCONT). JudgeStall (selftest_judge.h) says whether the cells'
// histograms show that stall as they must. `fairbench selftest` prints the
// verdict; `fairbench run` with spec.calibration runs it before the run's
// targets and keeps it in results.json and the report.
//
// Blocking; the command's thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "api/benchmark_run.h"
#include "common/histogram.h"
#include "controller/report/run_record.h"
#include "common/status.h"
#include "controller/cli/local_run.h"
#include "controller/cli/selftest_judge.h"

namespace fairbench::controller {

inline constexpr const char* kServerProgram = "fairbench-test-delay-server";
inline constexpr std::chrono::milliseconds kServerDelay{1};

// The open model's connections, C = R·S/5 (10 to 1000). Each sends one
// request every C/R, so during the stall only C requests go out on time —
// the first due on each connection — and the rest wait unsent: a harness
// timing from the send (uncorrected) sees C < R·S/2 requests above S/2 and
// fails, by a factor 2.5. When the server resumes each connection has R·S/C
// = 5 requests queued, sent one after the other, which adds a few round
// trips to the requests at the tail of its backlog.
inline int64_t OpenConnections(int64_t rate, std::chrono::nanoseconds stall) {
  const auto c = static_cast<int64_t>(static_cast<double>(rate) * std::chrono::duration<double>(stall).count() / 5);
  return std::clamp<int64_t>(c, 10, 1000);
}
inline constexpr int64_t kClosedConnections = 4;  // "a few": each sees the stall once

// What happened to the stall of one cell.
struct StallDone {
  bool injected = false;
  std::chrono::nanoseconds length{0};  // from SIGSTOP to SIGCONT, as sent
  std::string error;
};

struct CellOutcome {
  Histogram latency, uncorrected;
  report::CellRecord record;
  StallDone stall;
};

// spec.calibration or `fairbench selftest`'s flags, within
// api::CheckCalibration's bounds.
struct CalibrationSettings {
  std::chrono::nanoseconds stall{std::chrono::milliseconds(500)};
  std::chrono::nanoseconds duration{std::chrono::seconds(4)};  // each cell's measurement
  std::string duration_text = "4s";                            // the same, as the cells' run files say it
  int64_t rate = 1000;                                         // the open model's requests/s
  std::string lock_file;                                       // the machine's load slot
};

struct CalibrationOutcome {
  CellOutcome open, closed;
  StallExpectation expectation;
  StallVerdict verdict;  // the cells' corrected latencies
  StallVerdict naive;    // the open cell timed from each send instead (uncorrected)
};

// Runs the two cells (their run folders under `output`) with `base`'s
// hub, agents and signals, then judges them. An error when a cell could
// not be run (its reason, the folder to look in); *exit_code as
// CarryOutRun sets it for the cells' runs.
Result<CalibrationOutcome> RunCalibration(const CalibrationSettings& s, const std::string& output,
                                          const LocalRunContext& base, Progress& progress, int* exit_code);

// The outcome as results.json and the report keep it.
report::CalibrationRecord CalibrationRecordOf(const CalibrationOutcome& o, const std::string& host);

}  // namespace fairbench::controller
