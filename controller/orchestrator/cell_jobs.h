// The steps of one cell that need no waiting, as pure functions: the load
// jobs sent to its agents, and the cell's record made from what they
// reported.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/cells.h"
#include "common/metrics.h"
#include "controller/report/run_record.h"
#include "common/wire_job.h"
#include "common/wrk_summary.h"
#include "controller/platform/platform.h"

namespace fairbench::controller {

// A gRPC scenario's call as jobs carry it (resolved: request_message and
// kind set by api::ResolveGrpcCalls); metadata keys lower-cased.
wire::JobGrpc GrpcJob(const api::GrpcCallSpec& call);

// How long before the load's start the jobs are sent, so that every agent
// has its connections open when it begins (agents open about 50 per
// millisecond per thread, so the lead grows with the connections).
std::chrono::nanoseconds StartLead(int64_t connections, int agents, int threads);

// How long the scenario's agents wait for an answer (load_rules::
// AnswerTimeout: its timeout, or a gRPC deadline's second more), and so
// how long after the load's end the controller waits for their last ones.
std::chrono::nanoseconds AnswerTimeout(const api::ScenarioSettings& settings);

// The vary seed of agent `index` of a cell, from the scenario's seed and
// the cell's key (its target, scenario, connections and repetition): no
// two agents of a cell, and no two cells, draw the same numbers, and the
// same run draws the same numbers again.
uint64_t AgentVarySeed(int64_t seed, const std::string& cell_key, int index);

// One job per agent: the connections split evenly (the first agents get one
// more), threads capped at the agent's connections, the rate split in
// proportion, each agent's connection offset within the cell, the same
// wall-clock start for all.
std::vector<wire::JobSpec> BuildCellJobs(const api::ScenarioSettings& settings, const api::Cell& cell,
                                         const TargetPlacement& target, int agents,
                                         std::chrono::system_clock::time_point start, const std::string& job_id);

// The requests/s a cell of scenarios[].rates is offered: its level, or
// its share of what the closed-loop cell before it (same target,
// scenario, connections and repetition: api::CapacityResult) answered,
// rounded, at least 1. An error, worded for the cell's message, when that
// cell did not succeed or answered nothing.
Result<int64_t> OfferedRate(const api::BenchmarkRunStatus& status, const api::Cell& cell);

// A cell that produced no numbers: skipped, failed, or cancelled.
report::CellRecord NotRunRecord(const api::Cell& cell, api::CellState state, std::optional<api::CellReason> reason,
                                const std::string& message);

// What a finished cell measured.
struct CellMeasurement {
  RunTotals totals;  // the agents' merged intervals
  EndReport end;     // their end reports added up
  bool consistent = true;
  uint64_t missing_snapshots = 0;
  int agents = 1;
  api::Time measure_start{};  // wall clock: the job's start plus the warmup
  std::optional<uint64_t> memory_idle;
  uint64_t memory_max = 0;                             // 0: never sampled
  std::optional<TargetUsage> usage_first, usage_last;  // during the measure phase
  // The distinct times of the fresh usage samples (taken in the measure
  // phase, not carried over from before it), in order.
  std::vector<api::Time> usage_times;
  // A scripted scenario: what each agent's done() printed, by agent id.
  std::map<std::string, std::string> script_outputs;
  // A scenario with vary: what the check before the load found in one
  // answer read to its connection's end (content_length, body_bytes,
  // date_missing).
  std::optional<api::AnswerChecks> answer_headers;
};

// A cell's CPU and memory rest on too few fresh usage samples when fewer
// than two were taken in the measure phase, or when they span less than
// this share of it (a kubelet refreshes its summary every 10–15 s).
inline constexpr double kMinUsageCoverage = 0.5;

// The cell's record: requests/s over the measured time, latency from the
// merged histogram, errors, status classes, memory, target and agent CPU,
// the per-second timeline, the histograms, the text in wrk's layout, flags.
report::CellRecord CellRecordFrom(const api::ScenarioSettings& settings, const api::Cell& cell,
                                  const TargetPlacement& target, const CellMeasurement& m);

}  // namespace fairbench::controller
