// TargetMain: what every target's main() does the same way, so that a
// server's <framework>_main.cc holds only its framework's part (routes, threads, how it
// stops):
//   - the command line: TargetFlags (target_flags.h) plus --describe, which
//     prints the server's fairness facts as one JSON object and exits 0
//     (--port is then optional);
//   - the facts every server reports alike: the compiler, the allocator
//     (glibc's malloc, or what LD_PRELOAD puts in front of it), and the
//     build's own (ThisBuild(): the flags, the framework's pin and how the
//     framework was built, from the macros the build defines —
//     targets/common/framework.cmake for the study's frameworks);
//   - --request-log: requests counted from any thread (CountRequest), the
//     file written by a background sampler (request_log.h);
//   - the study's /users/{id}: which ids exist (ParseUserId).
// The JSON of the facts is each server's own (built with its framework's
// JSON, as frameworks_test checks). Thread-safe: CountRequest from any
// thread; the rest from main() only.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "targets/common/request_log.h"
#include "targets/common/target_flags.h"

// Defined by the build (framework.cmake) for the study's frameworks.
#ifndef FAIRBENCH_FRAMEWORK_VERSION
#define FAIRBENCH_FRAMEWORK_VERSION "unknown"
#endif
#ifndef FAIRBENCH_FRAMEWORK_REVISION
#define FAIRBENCH_FRAMEWORK_REVISION "unknown"
#endif
#ifndef FAIRBENCH_FRAMEWORK_BUILD
#define FAIRBENCH_FRAMEWORK_BUILD "unknown"
#endif
#ifndef FAIRBENCH_CXX_FLAGS
#define FAIRBENCH_CXX_FLAGS "unknown"
#endif

namespace fairbench::targets {

// Decimal digits that fit in 64 bits ("007" is 7); anything else (empty, a
// sign, a letter, 2^64) is no id: the target answers 404.
std::optional<uint64_t> ParseUserId(std::string_view text);

// "gcc 12.2.0", "clang 14.0.6 …": the compiler of the file that calls it.
#if defined(__clang__)
#define FAIRBENCH_COMPILER "clang " __clang_version__
#else
#define FAIRBENCH_COMPILER "gcc " __VERSION__
#endif

// The facts of this build, from the macros above (as the <framework>_main.cc that
// includes this header was compiled) and the running process.
struct BuildFacts {
  std::string version;          // the framework's pinned version, where its source has no macro
  std::string revision;         // the framework's pinned tag and commit
  std::string framework_build;  // how the framework itself was built
  std::string flags;            // the flags this server was compiled with
  std::string compiler;
  std::string allocator;
};
std::string AllocatorFact();
inline BuildFacts ThisBuild() {
  return BuildFacts{FAIRBENCH_FRAMEWORK_VERSION, FAIRBENCH_FRAMEWORK_REVISION, FAIRBENCH_FRAMEWORK_BUILD,
                    FAIRBENCH_CXX_FLAGS,         FAIRBENCH_COMPILER,           AllocatorFact()};
}

// Parses the command line into `flags` (the target's own options added to
// `app` before). nullopt: serve. Else the process ends with that code:
// --help, a bad flag (CLI11's message and code), --describe (`facts` of the
// parsed flags printed on stdout, 0).
std::optional<int> ParseTargetCommandLine(CLI::App& app, int argc, char** argv, TargetFlags* flags,
                                          const std::function<std::string(const TargetFlags&)>& facts);

// The line the orchestrator reads the facts back from (a pod's log, the
// log file locally): "fairbench-target-facts: <json>", flushed.
void PrintFacts(const std::string& facts_json);

// Ignores SIGPIPE (a client that goes away costs an EPIPE, not the process)
// and starts --request-log when `path` is given: from then on CountRequest
// counts. nullptr when no log was asked for; an error names the file. Call
// before the server starts; Stop() the log (or destroy it) after the last
// request, to write its total.
Result<std::unique_ptr<SampledRequestLog>> StartServing(const std::string& path);

// A request answered (any status), from any thread; nothing without
// --request-log.
void CountRequest();

}  // namespace fairbench::targets
