// `fairbench history`: what a result store holds (controller/results/).
//
//   fairbench history --store PATH [--target T] [--scenario S]
//                     [--label k=v]... [--since TIME] [--limit N] [--json]
//     the runs, latest first: id, start, name, phase, cells, targets,
//     environment fingerprint (its first 12 hex digits), labels;
//   fairbench history series --store PATH --target T --scenario S
//                     --connections N [--rate R] [--fingerprint F] [--json]
//     one target, scenario and load over time under one environment
//     fingerprint (by default that of the latest run with the series; the
//     runs under others are counted, not mixed in), oldest first: per run
//     the mean requests/s and p99 over its succeeded repetitions and the
//     errors of all of them.
//
// --since takes an RFC 3339 time (2026-12-01T00:00:00Z), a date
// (2026-12-01, UTC) or an age (36h, 7d). The store must exist: history
// never creates one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace fairbench::controller {

struct HistoryFlags {
  std::string store;
  std::string target, scenario;
  std::vector<std::string> labels;  // "k=v"
  std::string since;
  int64_t limit = 50;
  bool json = false;
  // history series
  std::string series_store;
  std::string series_target, series_scenario;
  int64_t connections = 0;
  int64_t rate = 0;
  std::string fingerprint;
  bool series_json = false;
};

struct HistoryCommand {
  CLI::App* history = nullptr;
  CLI::App* series = nullptr;
};

HistoryCommand AddHistoryCommand(CLI::App& app, HistoryFlags& flags);
// Exit codes: 0 listed (an empty list too); 1 the store cannot be opened
// or read; 2 bad input: a bad flag, no such series. Failures are one line
// on stderr.
int RunHistoryCommand(const HistoryCommand& command, const HistoryFlags& flags);

}  // namespace fairbench::controller
