// RunRecord: everything a finished (or partly finished) run produced, as the
// orchestrator records it and the report renders it.
//
// A CellRecord is one cell (target × scenario × connection level ×
// repetition): its compact result — the very entry that goes into the
// BenchmarkRun's status.results — plus what only the report and
// results.json carry: the per-interval timeline (agents merged), the
// encoded latency histograms, the cell's wrk-style text and the flags that
// tell a reader to look twice (cell_checks.h computes them).
//
// results.json is ToJson(RunRecord):
//
//   {"apiVersion": "fairbench.dev/v1alpha1", "kind": "BenchmarkResults",
//    "histogramEncoding": "...",
//    "run": <the BenchmarkRun as the API codec writes it, status included,
//            except status.results>,
//    "environment": {...},
//    "cells": [{"result": <api CellResult>, "agents": 1, ..., "timeline": [...],
//               "profile": {...}}]}   (profile only for the cells spec.profile selects)
//
// Each cell's compact result is written once, under cells[i].result, not a
// second time under run.status.results: RunRecordFromJson rebuilds
// status.results from the cells. A record round-trips exactly when
// run.status.results mirrors the cells' results, which is the orchestrator's
// invariant. Reading is strict (`fairbench run --resume` must not drop
// data it does not understand): wrong types, unknown fields, a histogram
// that does not decode, a flag with no name — each is an InvalidArgument
// whose message names the field path ("cells[3].timeline[0].requests: …").
//
// Plain values; thread-compatible.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/benchmark_run.h"
#include "common/metrics.h"
#include "controller/report/profile.h"
#include "common/status.h"
#include "common/wrk_summary.h"

namespace fairbench::report {

inline constexpr std::string_view kResultsKind = "BenchmarkResults";

// Why a cell deserves a second look. Spelt in the report and results.json
// by FlagName(): "GeneratorSaturated", … The thresholds are in cell_checks.h.
enum class CellFlag {
  kGeneratorSaturated,  // the agents' threads were busy nearly all the time
  kLittlesLawMismatch,  // requests/s × mean latency is far from the connections
  kFewerConnections,    // fewer connections were established than asked
  kSnapshotGap,         // an agent's interval went missing (set by the orchestrator)
  kSparseUsage,         // the target's CPU and memory rest on too few fresh samples (set by the orchestrator)
  kSharedCpus,          // the target's CPUs were not its own (run.status.cpus; set by the orchestrator)
  kErrors,              // socket errors or unexpected statuses
  kRateNotAchieved,     // a constant rate: achieved < 98 % of the rate offered; the cell is invalid, never ranked
  // Scenarios with vary (result.answers):
  kContentLengthMismatch,  // an answer's Content-Length disagreed with the bytes of its body
  kDateMissing,            // answers without a Date header
  kDateFrozen,             // the same Date in answers more than 2 s apart
  kAnswersUnsampled,       // no answer was sampled (fewer requests per connection than verifyEvery)
};
const char* FlagName(CellFlag flag);
std::optional<CellFlag> FlagFromName(std::string_view name);

// One constant-rate trial of a capacity search.
struct CapacityTrial {
  double offered = 0;                          // requests/s asked for
  double achieved = 0;                         // requests/s answered
  double p50 = 0, p90 = 0, p99 = 0, p999 = 0;  // µs, corrected for coordinated omission
  double error_rate = 0;                       // errors ÷ requests
  bool pass = false;
  friend bool operator==(const CapacityTrial&, const CapacityTrial&) = default;
};

// A cell of a scenario with an objective: the search and its outcome.
struct CapacitySearch {
  std::string objective;              // "p99 ≤ 10ms"
  double rate = 0;                    // the highest offered rate that met it; 0: none did
  bool bounded = false;               // a rate that failed it was found above `rate`
  double errors_began_at = 0;         // the lowest offered rate with errors; 0: none
  std::vector<CapacityTrial> trials;  // in the order run
  friend bool operator==(const CapacitySearch&, const CapacitySearch&) = default;
};

// How a target ended, as its platform saw it (TargetInstance::Gone in
// controller/platform/platform.h).
struct TargetExit {
  std::optional<int> exit_code;  // it exited with this code (a container's, which may be 128 + a signal)
  std::optional<int> signal;     // it was killed by this signal
  bool oom_killed = false;       // by the kernel's OOM killer (its memory limit)
  // For messages: "exited with code 1", "was OOMKilled (exit code 137)",
  // "was deleted (pod ns/name)".
  std::string text;
  friend bool operator==(const TargetExit&, const TargetExit&) = default;
};

struct ScriptOutput {
  std::string agent;
  std::string text;
  friend bool operator==(const ScriptOutput&, const ScriptOutput&) = default;
};

struct CellRecord {
  api::CellResult result;
  std::vector<TimelinePoint> timeline;  // every interval, warmup included
  std::string latency_histogram;        // base64 of HdrHistogram V2 (µs), measure phase
  std::string uncorrected_histogram;    // same, constant-rate runs only
  bool latency_corrected = false;       // true with a constant rate
  std::string wrk_text;                 // the cell's summary in wrk's layout
  uint32_t agents = 0;                  // 0: not recorded (figures imported from elsewhere)
  uint32_t connections_peak = 0;        // summed over agents
  uint64_t drained = 0;
  uint64_t abandoned = 0;
  double measure_seconds = 0;
  std::optional<IdleReport> idle;      // what the agents' idle waiting did (summed); unset: not recorded
  double littles_law_connections = 0;  // requests/s × mean latency; 0 when either is unknown
  // What a closed loop keeps in flight: connections × streams (HTTP/2 and
  // gRPC targets) or × pipeline; 0: not recorded.
  double littles_law_in_flight = 0;
  uint32_t usage_samples = 0;              // fresh target usage samples in the measure phase
  double usage_span_seconds = 0;           // from the first of them to the last
  std::vector<CellFlag> flags;             // in enum order, each at most once
  std::optional<CapacitySearch> capacity;  // scenarios with an objective (slo)
  std::optional<CellProfile> profile;      // spec.profile selected this cell (profile.h)
  // Reason TargetExited: how the target ended. Not in results.json (the
  // message says it): for whoever watches the run as it goes.
  std::optional<TargetExit> target_exit;
  // A scripted scenario: what each agent's done() printed (with the error
  // that stopped its load, if one did), in agent order.
  std::vector<ScriptOutput> script_output;
};

// Where the run ran: printed in the report so that numbers are never read
// without their context.
struct Environment {
  std::string hostname;
  std::string kernel;
  std::string cpu_model;
  int cpus = 0;
  uint64_t memory_bytes = 0;
  std::string platform;  // "local" or "kubernetes"
  std::string fairbench_version;
  std::vector<int> target_cpus;
  std::vector<int> agent_cpus;
  // Anything else a reader needs to weigh the numbers, one fact per line:
  // the hypervisor, the NIC model, sysctls, the container runtime.
  std::vector<std::string> notes;
};

// The order the targets were deployed in: with interleaved repetitions,
// round r deployed targets rounds[r-1] in that order (a permutation drawn
// from the seed); sequentially, one round of every target in spec order.
struct Schedule {
  std::string order;  // "Sequential" or "Interleaved"; empty: not recorded
  int64_t seed = 0;
  std::vector<std::vector<std::string>> rounds;
  friend bool operator==(const Schedule&, const Schedule&) = default;
};

// spec.calibration: the harness tested on this machine before the run
// (controller/cli/calibration.h) — a stall of known length injected into
// the delay server mid-cell — and whether the open and the closed model
// showed it as they must. One check per bound (selftest_judge.h).
struct CalibrationCheck {
  std::string cell;      // "open" or "closed"
  std::string name;      // "max", "p93.75", "requests >= S/2", "p99"
  std::string expected;  // the bounds in words
  std::string unit;      // "ms" or "requests"
  double measured = 0, low = 0, high = 0;
  double error = 0;  // measured − the theoretical value
  bool passed = false;
  friend bool operator==(const CalibrationCheck&, const CalibrationCheck&) = default;
};
struct CalibrationRecord {
  bool passed = false;
  std::string host;
  double stall_ms = 0;  // as injected in the open cell
  double delay_ms = 0;  // the server's own, on every request
  double rate = 0;      // the open model's offered requests/s
  int64_t closed_connections = 0;
  bool uncorrected_would_pass = false;  // the open cell timed from each send would pass too
  std::vector<CalibrationCheck> checks;
  std::string error;  // set: the calibration could not be run (and checks is empty)
  friend bool operator==(const CalibrationRecord&, const CalibrationRecord&) = default;
};

struct RunRecord {
  api::BenchmarkRun run;  // spec and status (status.results mirrors cells[i].result)
  Environment environment;
  Schedule schedule;
  std::optional<CalibrationRecord> calibration;  // spec.calibration
  std::vector<CellRecord> cells;                 // finished cells, in cell order
};

// results.json, in the layout above; "results" is left out of run.status.
nlohmann::ordered_json ToJson(const RunRecord& record);
// ToJson(record).dump(1) + "\n", byte for byte, built one cell at a time: the
// record is rewritten after every cell, and a whole run's JSON tree costs
// tens of KiB per cell, so the stores write this text instead (the tree of
// one cell at a time, freed before the next).
std::string ToJsonText(const RunRecord& record);
// The same text handed to `sink` in pieces (the head, then a cell at a
// time): whoever writes it to a file never holds more than one cell's text.
void WriteJsonText(const RunRecord& record, const std::function<void(std::string_view)>& sink);
// The inverse of ToJson. Errors are InvalidArgument, prefixed "results.json: ".
Result<RunRecord> RunRecordFromJson(const nlohmann::json& json);
// The same from the file's text; syntax errors name line and column:
// "SOURCE:3:14: invalid JSON: …"; other errors are prefixed "SOURCE: ".
Result<RunRecord> RunRecordFromJsonText(std::string_view text, std::string_view source);

}  // namespace fairbench::report
