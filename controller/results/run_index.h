// RunIndex: what a result store indexes of a run record, worked out once
// from the record so that every backend (SQLite now, PostgreSQL later)
// stores the same rows:
//
//   - the run's identity (key): "uid:UID@START" for a run with a uid (the
//     operator's), "name:NAMESPACE/NAME@START" for one without (a local
//     run: its start, to the nanosecond, tells it apart), "sha256:HASH"
//     for a record that never started. START is the run's status.startTime
//     in nanoseconds since the epoch. The same run stored twice has the
//     same key; a resumed run keeps its start, so it keeps its key too;
//   - the content hash: SHA-256 of the record's canonical text
//     (report::ToJsonText — what `fairbench run` writes, byte for byte),
//     so that the same record re-indented is still the same record;
//   - the environment fingerprint: SHA-256 of the facts that make two runs'
//     numbers comparable — platform, CPU model, CPU count, kernel and the
//     CPUs the targets and the agents were pinned to. The host name is left
//     out on purpose: two machines of one kind give comparable numbers;
//   - per target: its image, its local command, the record's notes about
//     it, and its identity (which image or binary ran, with its digest);
//   - per cell: the figures a series is made of.
//
// Pure functions of the record; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "controller/report/run_record.h"

namespace fairbench::results {

struct TargetRow {
  std::string name;
  std::string image;               // empty: none given
  std::string command;             // local.command joined by spaces; empty: none
  std::vector<std::string> facts;  // the environment notes about this target
  // Which build ran, from its "identity:" note: "image sha256:…" (the
  // engine's or the kubelet's id of the image) or "binary /usr/bin/x
  // sha256:…" (the program's bytes); empty: not recorded.
  std::string identity;
};

struct CellRow {
  int32_t position = 0;  // index in the record's cells
  std::string target, scenario;
  int64_t connections = 0;
  int64_t rate = 0;  // SeriesRate: requests/s offered, −P for P % of capacity, 0 closed loop
  int32_t repetition = 1;
  std::string state;  // "Succeeded", "Failed", "Skipped"
  double requests_per_second = 0;
  double p50_us = 0, p90_us = 0, p99_us = 0, p999_us = 0;
  uint64_t errors_total = 0;
  std::optional<double> cpu_us_per_request;     // target CPU ÷ requests/s; unset: not measured
  std::optional<uint64_t> memory_loaded_bytes;  // unset: not measured
  std::string flags;                            // FlagName()s joined by commas, in enum order
};

struct RunIndex {
  std::string key;
  std::string content_sha256;
  std::string name, uid, ns;
  std::string phase;  // "Succeeded", …; empty: none recorded
  std::optional<int64_t> start_ns, end_ns;
  std::string platform;
  std::string fingerprint;       // lower-case hex SHA-256
  std::string environment_json;  // the fingerprinted facts, as a JSON object, for people
  std::string labels_json;       // metadata.labels as a JSON object (keys sorted)
  std::string fairbench_version;
  int64_t cells_total = 0;  // status.progress.total
  std::vector<TargetRow> targets;
  std::vector<CellRow> cells;
};

// `canonical_text` is report::ToJsonText(record) (the caller has it: it is
// what the store keeps).
RunIndex IndexRun(const report::RunRecord& record, const std::string& canonical_text);

// The load a cell's series is keyed by beside its connections: the
// requests/s offered (spec.load.rate, or the cell's rate level); −P for a
// rate level of P % of capacity, whose requests/s differ run by run while
// the share stays; 0 for a closed loop.
int64_t SeriesRate(const api::BenchmarkRunSpec& spec, const api::CellResult& cell);
// How people and --rate write it: "2000 requests/s", "50 % of capacity";
// "" for a closed loop.
std::string SeriesRateText(int64_t rate);
// --rate's text ("2000", "2k", "50%") as SeriesRate encodes it.
Result<int64_t> ParseSeriesRate(std::string_view text);

// The fingerprint alone (IndexRun uses it).
std::string EnvironmentFingerprint(const report::Environment& environment);

}  // namespace fairbench::results
