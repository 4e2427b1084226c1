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
//   fairbench history check --store PATH [--target T] [--scenario S]
//                     [--label k=v]... [--since TIME] [--threshold 5%]
//                     [--metric rps|p99|both] [--format text|json|junit]
//                     [--min-change 1%] [--output FILE]
//     every series (as `history series` makes it: the latest fingerprint
//     of each) through change-point detection (controller/changes/) on
//     requests/s and p99: each change with its size, regression or
//     improvement, the runs before and after and its p-value. Fails (exit
//     1) when a regression of at least the threshold is still in force at
//     the newest run: the series' newest segment is still at least the
//     threshold worse than the segment before the change. --label and
//     --since keep the runs they match in each series.
//
//   fairbench history prune --store PATH [--older-than AGE|TIME] [--keep N]
//                     [--dry-run]
//     removes the runs started before --older-than, and those that are
//     not among the newest N runs of any series of theirs (--keep), in
//     one transaction; --dry-run says which would go.
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
  std::string rate = "0";  // "2000", "2k", "50%" (results::ParseSeriesRate)
  std::string fingerprint;
  bool series_json = false;
  // history check
  std::string check_store;
  std::string check_target, check_scenario;
  std::vector<std::string> check_labels;
  std::string check_since;
  std::string threshold = "5%";
  std::string min_change = "1%";
  std::string metric = "both";
  std::string format = "text";
  std::string output;
  // history prune
  std::string prune_store;
  std::string older_than;
  int64_t keep = 0;
  bool dry_run = false;
};

struct HistoryCommand {
  CLI::App* history = nullptr;
  CLI::App* series = nullptr;
  CLI::App* check = nullptr;
  CLI::App* prune = nullptr;
};

HistoryCommand AddHistoryCommand(CLI::App& app, HistoryFlags& flags);
// Exit codes: 0 listed (an empty list too), or no regression in force;
// 1 the store cannot be opened or read, or (check) a regression in force;
// 2 bad input: a bad flag, no such series. Failures are one line on stderr.
int RunHistoryCommand(const HistoryCommand& command, const HistoryFlags& flags);

}  // namespace fairbench::controller
