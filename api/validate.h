// Validate: the rules a BenchmarkRun's spec must satisfy before anything
// runs, checked all at once.
//
// Covers what a type cannot say: required fields, ranges (port 1..65535,
// expect.status 100..599, pipeline ≥ 1, …), names (DNS-1123, HTTP tokens),
// uniqueness, exclusive fields (request or requests, body or bodyFile,
// expect.body or expect.json), and rules between fields (each agent's share of
// connections covers its threads; agents and targets never share CPUs or
// nodes; a constant rate never pipelines; HTTP/2 requests carry no
// connection-specific headers; the run fits in its status). What the agent
// would refuse in a cell's load job is refused here, before anything is
// deployed, wherever the spec alone tells (what a script defines is known
// only once an agent runs it). Every diagnostic names a field path;
// the result is sorted in field order. No I/O: reading bodyFile is the
// loader's job (loader.h). The status is not validated; the controller
// writes it.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "api/benchmark_run.h"
#include "api/diagnostics.h"
#include "common/load_rules.h"

namespace fairbench::api {

// Which platform will run the spec, for the rules that differ.
enum class Platform {
  kAny,         // a target needs image or local.command
  kLocal,       // a target needs local.command
  kKubernetes,  // a target needs image; bodyFile is not available
  kDocker,      // `fairbench run --platform docker`: a target needs image
};

struct ValidateOptions {
  Platform platform = Platform::kAny;
};

// Bounds: beyond these a spec is a typo, or would not fit. Those an agent
// also checks come from common/load_rules.h, so that the run file refuses
// what an agent would.
inline constexpr int32_t kMaxThreads = static_cast<int32_t>(load_rules::RangeOf(load_rules::Count::kThreads).max);
inline constexpr int64_t kMaxConnections =
    static_cast<int64_t>(load_rules::RangeOf(load_rules::Count::kConnections).max);
inline constexpr int32_t kMaxAgents = 256;
inline constexpr int32_t kMaxPipeline = static_cast<int32_t>(load_rules::RangeOf(load_rules::Count::kPipeline).max);
inline constexpr int32_t kMaxStreams = static_cast<int32_t>(load_rules::RangeOf(load_rules::Count::kStreams).max);
inline constexpr int32_t kMaxRepetitions = 100;
inline constexpr int64_t kMaxNofile = 1 << 20;           // fs.nr_open's default
inline constexpr int32_t kMaxProfileFrequency = 10'000;  // Hz; perf's own ceiling is usually lower
// status.results holds one entry per cell and must stay well inside the
// 1.5 MiB an object may take in etcd.
inline constexpr size_t kMaxCells = 1000;

// spec.load.pipeline > 1 with spec.load.rate: the message of both Validate
// and the CRD's CEL rule (openapi.cc), so that kubectl apply and `fairbench
// run` refuse the run in the same words.
inline constexpr std::string_view kPipelineWithRate =
    "cannot be combined with load.rate: a constant rate sends one request at a time on each connection "
    "(set pipeline to 1, or remove rate)";

Diagnostics Validate(const BenchmarkRun& run, const ValidateOptions& options = {});

// The bounds of a calibration (spec.calibration, `fairbench selftest`'s
// flags): which of "stall", "duration" and "rate" is wrong, and why.
struct CalibrationProblem {
  std::string_view field;
  std::string message;
};
std::optional<CalibrationProblem> CheckCalibration(Duration stall, Duration duration, int64_t rate);

// What a valid spec may still get wrong, one line each, starting with the
// field path: a target's CPU that is not a whole number of CPUs (it can get
// no cores of its own, so other work shares them). Told to the user (a
// Warning event, a line on the terminal); the run goes ahead.
std::vector<std::string> Warnings(const BenchmarkRunSpec& spec);

}  // namespace fairbench::api
