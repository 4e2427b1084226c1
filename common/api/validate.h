// Validate: the rules a BenchmarkRun's spec must satisfy before anything
// runs, checked all at once.
//
// Covers what a type cannot say: required fields, ranges (port 1..65535,
// expect.status 100..599, pipeline ≥ 1, …), names (DNS-1123, HTTP tokens),
// uniqueness, exclusive fields (request or requests, body or bodyFile,
// expect.body or expect.json), and rules between fields (each agent's share of
// connections covers its threads; agents and targets never share CPUs or
// nodes; the run fits in its status). Every diagnostic names a field path;
// the result is sorted in field order. No I/O: reading bodyFile is the
// loader's job (loader.h). The status is not validated; the controller
// writes it.
//
// Thread-safe.
#pragma once

#include <cstdint>

#include "common/api/benchmark_run.h"
#include "common/api/diagnostics.h"

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

// Bounds: beyond these a spec is a typo, or would not fit.
inline constexpr int32_t kMaxThreads = 1024;
inline constexpr int64_t kMaxConnections = 1'000'000;
inline constexpr int32_t kMaxAgents = 256;
inline constexpr int32_t kMaxPipeline = 1024;
inline constexpr int32_t kMaxRepetitions = 100;
inline constexpr int64_t kMaxNofile = 1 << 20;  // fs.nr_open's default
inline constexpr int32_t kMaxProfileFrequency = 10'000;  // Hz; perf's own ceiling is usually lower
// status.results holds one entry per cell and must stay well inside the
// 1.5 MiB an object may take in etcd.
inline constexpr size_t kMaxCells = 1000;

Diagnostics Validate(const BenchmarkRun& run, const ValidateOptions& options = {});

// What a valid spec may still get wrong, one line each, starting with the
// field path: a target's CPU that is not a whole number of CPUs (it can get
// no cores of its own, so other work shares them). Told to the user (a
// Warning event, a line on the terminal); the run goes ahead.
std::vector<std::string> Warnings(const BenchmarkRunSpec& spec);

}  // namespace fairbench::api
