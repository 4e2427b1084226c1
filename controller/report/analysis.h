// Analysis: the comparisons a framework shoot-out makes, computed once from
// a RunRecord so that the Markdown and the HTML report say the same thing.
//
// Cells are grouped by (target, scenario, connections); a group holds its
// repetitions. Cells of a scenario's fixed rates (scenarios[].rates) are in
// no group: they measure what a load costs, not how much load a target
// takes, and are never ranked by requests/s (EfficiencyGroups has them). Each table shows one repetition per group, the
// *representative*: the succeeded repetition with the median requests/s
// (the lower of the two middle ones for an even count), so that all numbers
// in a row come from one measurement; the run-to-run spread is reported
// separately (Spread). The hello-world baseline is the scenario named
// "hello", else the first scenario of the spec.
//
// Targets and scenarios come in spec order; a target or scenario that has
// cells but is missing from the spec (a record whose spec was edited) is
// appended in the order of its first cell, so nothing recorded is hidden.
//
// A RunIndex points into the RunRecord it was built from, which must
// outlive it. Read-only after construction; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "controller/report/run_record.h"

namespace fairbench::report {

inline constexpr std::string_view kBaselineName = "hello";

class RunIndex {
 public:
  explicit RunIndex(const RunRecord& record);

  const RunRecord& record() const { return record_; }
  const std::vector<std::string>& targets() const { return targets_; }
  const std::vector<std::string>& scenarios() const { return scenarios_; }
  // Ascending: the scenario's levels from the spec plus any seen in cells.
  const std::vector<int64_t>& Levels(std::string_view scenario) const;
  // The spec's scenario of that name, or nullptr.
  const api::Scenario* FindScenario(std::string_view scenario) const;
  const api::Target* FindTarget(std::string_view target) const;

  // Every cell of a group, in record order.
  const std::vector<const CellRecord*>& Cells(std::string_view target, std::string_view scenario,
                                              int64_t connections) const;
  // The representative repetition, or nullptr when none succeeded.
  const CellRecord* Representative(std::string_view target, std::string_view scenario, int64_t connections) const;
  // A failed or skipped cell of a group that has no success, for its reason.
  const CellRecord* Failure(std::string_view target, std::string_view scenario, int64_t connections) const;

  // The baseline scenario ("" when the run has none).
  const std::string& baseline() const { return baseline_; }
  // Targets by requests/s in the baseline at its lowest level, best first;
  // targets without a result there follow in spec order.
  std::vector<std::string> TargetsByBaselineRank() const;

  // The most repetitions any group has (the cells of a fixed rate: the
  // highest repetition number among them).
  size_t MaxRepetitions() const;

  // The cells of scenarios[].rates, in record order.
  const std::vector<const CellRecord*>& RateCells() const { return rate_cells_; }

 private:
  using Key = std::tuple<std::string, std::string, int64_t>;
  const RunRecord& record_;
  std::vector<std::string> targets_;
  std::vector<std::string> scenarios_;
  std::map<std::string, std::vector<int64_t>, std::less<>> levels_;
  std::map<Key, std::vector<const CellRecord*>> groups_;
  std::vector<const CellRecord*> rate_cells_;
  std::string baseline_;
};

// Efficiency at a fixed rate: the cells of one (scenario, connections, rate
// level), per target. A cell is valid when it succeeded and is not flagged
// RateNotAchieved; only valid cells are ranked, by the target's CPU time
// per request (ascending; targets whose CPU was not measured follow).
struct EfficiencyEntry {
  std::string target;
  // The valid repetition with the median CPU per request (the lower middle
  // one of an even count); nullptr when none was valid.
  const CellRecord* cell = nullptr;
  size_t valid = 0;  // valid repetitions
  // When none was valid: the repetition that came nearest its offered rate
  // (or the first that did not succeed), for the reason.
  const CellRecord* invalid = nullptr;
  std::optional<double> cpu_us_per_request;  // the representative's
};
struct EfficiencyGroup {
  std::string scenario;
  int64_t connections = 0;
  api::RateLevel level;
  std::vector<EfficiencyEntry> entries;  // ranked, then the targets without a valid cell (spec order)
};
// In record order of each group's first cell.
std::vector<EfficiencyGroup> EfficiencyGroups(const RunIndex& index);
// Whether the cell counts in EfficiencyGroups' ranking.
bool ValidAtRate(const CellRecord& cell);
// Target CPU µs per request answered; unset without both figures.
std::optional<double> CpuMicrosPerRequest(const api::CellResult& r);

struct RankEntry {
  std::string target;
  const CellRecord* cell = nullptr;     // representative; nullptr when no repetition succeeded
  const CellRecord* failure = nullptr;  // set when cell is nullptr and a cell failed or was skipped
  double share_of_best = 0;             // requests/s ÷ the best's; 0 without a cell
};

// Targets with a result, best requests/s first (ties: spec order), then the
// failed ones, then those with no cell at all — every target of the run.
std::vector<RankEntry> Rank(const RunIndex& index, std::string_view scenario, int64_t connections);

// to ÷ from − 1; nullopt unless both are positive.
std::optional<double> Change(double from, double to);

// Run-to-run spread of one number over repetitions.
struct Spread {
  size_t count = 0;
  double min = 0, median = 0, max = 0, mean = 0;
  double cv = 0;  // coefficient of variation: sample stdev ÷ mean; 0 for fewer than 2 values
};
Spread ComputeSpread(std::vector<double> values);

}  // namespace fairbench::report
