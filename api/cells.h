// Cells: the units of work a BenchmarkRun expands into, and the settings
// that apply to each.
//
// A cell is (target, scenario, connection level, rate level, repetition).
// ExpandCells lists them in run order — target outermost (a target is
// deployed once for all its cells), then scenario in spec order, then
// connection level in the order written, then the scenario's rates in the
// order written (after a closed-loop cell when one is a share of capacity),
// then repetition innermost. The orchestrator runs them in
// this order and resumes at the first cell without a result; reports use
// the same order. EffectiveSettings resolves a scenario's overrides against
// spec.load, so nothing downstream re-implements "scenario value, else load
// value".
//
// Pure functions over the model; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/benchmark_run.h"

namespace fairbench::api {

struct Cell {
  size_t index = 0;  // position in run order, 0-based
  size_t target_index = 0;
  size_t scenario_index = 0;
  std::string target;
  std::string scenario;
  int64_t connections = 0;
  std::optional<RateLevel> rate;  // a level of scenarios[].rates; unset: closed loop (or spec.load.rate)
  int32_t repetition = 1;         // 1-based, as in status.results

  // "drogon/hello/c1000/r1", "drogon/hello/c1000/q2000/r1",
  // "drogon/hello/c1000/q50pct/r1": stable across restarts, for logs and
  // file names.
  std::string Key() const;
  bool Matches(const CellResult& result) const;
  friend bool operator==(const Cell&, const Cell&) = default;
};

std::vector<Cell> ExpandCells(const BenchmarkRunSpec& spec);
// The cell a result or status.current names (index, target_index and
// scenario_index left 0): for its Key().
Cell CellOf(const CellResult& result);
Cell CellOf(const CurrentCell& current);

// The order targets are deployed in, as rounds of target indices. Sequential:
// one round, every target in spec order (each runs all its repetitions).
// Interleaved: spec.repetitions rounds; round r deploys every target once, in
// a random order drawn from `seed`, and runs its cells of repetition r. The
// same seed gives the same rounds on every machine (a Mersenne Twister and
// a Fisher–Yates shuffle written out, not the library's shuffle).
std::vector<std::vector<size_t>> TargetRounds(const BenchmarkRunSpec& spec, RepetitionOrder order, int64_t seed);
// ExpandCells(spec).size(), without building the list.
size_t CountCells(const BenchmarkRunSpec& spec);

// A scenario's wrk script as the agents get it: the name its errors carry,
// its text, init()'s arguments.
struct ScenarioScript {
  std::string name;
  std::string text;
  std::vector<std::string> args;
  friend bool operator==(const ScenarioScript&, const ScenarioScript&) = default;
};

// Everything one scenario runs with, overrides resolved.
struct ScenarioSettings {
  std::vector<WeightedRequest> requests;  // `request` becomes one entry of weight 1; empty with a script
  std::optional<ScenarioScript> script;   // the requests come from this wrk script
  std::optional<GrpcCallSpec> grpc;       // gRPC scenarios: the call (resolved: request_message and kind set)
  Expect expect;
  // scenarios[].vary with its seed resolved (vary.seed, else spec.seed,
  // else kDefaultVarySeed).
  std::optional<Vary> vary;
  std::vector<int64_t> connections;  // levels
  Duration duration{};
  Duration warmup{};
  Duration timeout{};
  Duration cooldown{};
  int32_t threads = 0;  // per agent
  int32_t pipeline = 0;
  int32_t streams = 1;  // HTTP/2 targets: streams per connection
  int32_t agents = 0;
  bool keep_alive = true;
  int64_t rate = 0;  // over all agents; 0: closed loop
  IdleWaitMode idle_wait = IdleWaitMode::kAuto;
  friend bool operator==(const ScenarioSettings&, const ScenarioSettings&) = default;
};

ScenarioSettings EffectiveSettings(const BenchmarkRunSpec& spec, const Scenario& scenario);

// The target's protocol (http1 when unset).
Protocol EffectiveProtocol(const Target& target);

// The target's readiness: spec.targets[].readiness, else the local one
// (local.readyPath, local.readyTimeout), else the defaults.
Readiness EffectiveReadiness(const Target& target);

// `total` over `parts` as evenly as possible, larger shares first:
// (10, 3) → {4, 3, 3}. How connections and rate are spread over agents.
std::vector<int64_t> SplitEvenly(int64_t total, int32_t parts);

// Replaces every "{port}" in `text` (local.command, local.env values).
std::string SubstitutePort(std::string_view text, int32_t port);

// Whether spec.profile asks for `cell` to be profiled (every repetition of
// a selected cell is).
bool IsProfiled(const BenchmarkRunSpec& spec, const Cell& cell);

// The result recorded for `cell`, or nullptr.
const CellResult* FindResult(const BenchmarkRunStatus& status, const Cell& cell);
// The closed-loop cell that measured the capacity a share-of-capacity rate
// level of `cell` is taken of (same target, scenario, connections and
// repetition), or nullptr.
const CellResult* CapacityResult(const BenchmarkRunStatus& status, const Cell& cell);

}  // namespace fairbench::api
