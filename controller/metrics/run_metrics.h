// RunMetrics: what the orchestrator reports, as Prometheus series (and, with
// a RemoteWriter, as remote-written samples with the intervals' own
// timestamps).
//
// Series, all prefixed fairbench_, in base units, labelled by run, target,
// scenario, connections and rate — a cell of scenarios[].rates: its level,
// "2000/s" or "50%"; none for other cells (a cell's repetitions add up in
// the same series):
//   per cell, counting the measurement only (as results.json does):
//     requests_total, read_bytes_total, errors_total{kind},
//     responses_total{status_class}, grpc_calls_total{code} (gRPC cells:
//     calls by grpc-status, and protocol_error), request_duration_seconds (histogram,
//     buckets from latency_buckets.h), agent_cpu_seconds_total;
//   per cell, from the newest interval (warmup included):
//     requests_per_second, request_duration_percentile_seconds{percentile},
//     connections_open;
//   per target: target_memory_bytes, target_cpu_seconds_total; per cell
//     target_memory_peak_bytes (the highest sample during its measurement);
//   orchestration: runs{phase}, queue_length, load_slot_holder{run,target},
//     run_cells{run}, cells_finished_total{run,state}, agents_connected,
//     agent_snapshots_total, agent_snapshots_missing_total,
//     agent_streams_refused_total{reason} (token: a wrong token or a bad
//     Hello; full: max agents connected; pending: too many streams without
//     Hello; hello_timeout: no Hello in time).
// A cell's counters appear at zero when its warmup starts, so that rate()
// sees the whole measurement. A run's series are removed `retention` after
// it ends (checked at every scrape and every change).
//
// Remote write: each interval sends the cell's gauges at the interval's end;
// each measurement interval also sends the counters and the histogram at
// its end, and the first one of a repetition sends them at its start too,
// so the samples of a counter are one interval (one second) apart from the
// measurement's start to its end. Target usage is sent at most once a second
// per target.
//
// Observer calls come from the orchestrator's and gRPC's threads; they take
// one mutex, update the registry and enqueue (never wait for) remote
// samples. Thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "common/mutex.h"
#include "controller/metrics/registry.h"
#include "controller/metrics/sample_sink.h"
#include "controller/orchestrator/run_observer.h"

namespace fairbench::metrics {

struct RunMetricsOptions {
  std::chrono::milliseconds retention{std::chrono::minutes(10)};
  SampleSink* remote = nullptr;  // not owned; null: no remote write
  // Clocks, replaceable in tests.
  std::function<std::chrono::steady_clock::time_point()> now = [] { return std::chrono::steady_clock::now(); };
  std::function<api::Time()> wall_now = [] {
    return std::chrono::time_point_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now());
  };
};

class RunMetrics final : public controller::RunObserver {
 public:
  RunMetrics(MetricRegistry& registry, RunMetricsOptions options);

  // A run that waits for its turn (fairbench run with several files).
  void RunQueued(const std::string& run);
  // Every stored change of a run's record.
  void OnPersist(const report::RunRecord& record) override;
  // The agent hub's numbers, read at scrape time by a collector.
  void SetAgentHub(size_t connected, uint64_t snapshots, uint64_t missing);
  // The hub's refused streams, by reason (see above).
  void SetAgentRefusals(uint64_t token, uint64_t full, uint64_t pending, uint64_t hello_timeout);
  // Drops the series of runs whose retention has passed.
  void Expire();

  void OnStage(const api::BenchmarkRun& run, const api::CurrentCell& current) override;
  void OnLive(const api::CurrentCell&, double, double) override {}
  void OnCellDone(const report::RunRecord& record, const report::CellRecord& cell) override;
  void OnMessage(const std::string&) override {}
  void OnInterval(const std::string& run, const api::CurrentCell& cell, const Snapshot& merged, api::Time end) override;
  void OnTargetUsage(const std::string& run, const api::CurrentCell& cell,
                     const controller::TargetUsage& usage) override;

 private:
  // run, target, scenario, connections, rate level ("" when none)
  using CellKey = std::tuple<std::string, std::string, std::string, int64_t, std::string>;
  struct CellState {
    Counters counters;              // measurement so far
    std::vector<uint64_t> buckets;  // per bound (+ overflow), not cumulative
    uint64_t count = 0;
    double sum_seconds = 0;
    double agent_cpu_seconds = 0;
    int32_t measuring_repetition = 0;  // the repetition whose measurement has begun
  };
  struct RunState {
    api::RunPhase phase = api::RunPhase::kQueued;
    std::optional<std::chrono::steady_clock::time_point> expires;
  };
  struct UsageState {
    std::optional<api::Time> last_sent;
  };

  void PublishCell(const CellKey& key, const CellState& st) REQUIRES(mu_);
  void AppendCellCounters(const CellKey& key, const CellState& st, int64_t ts_ms, std::vector<RemoteSample>& out) const;
  void PublishRuns() REQUIRES(mu_);
  void ExpireLocked() REQUIRES(mu_);
  std::vector<std::string> Labels(const CellKey& key) const;

  MetricRegistry& registry_;
  const RunMetricsOptions options_;
  Mutex mu_;
  std::map<CellKey, CellState> cells_ GUARDED_BY(mu_);
  std::map<std::string, RunState> runs_ GUARDED_BY(mu_);
  std::map<std::pair<std::string, std::string>, UsageState> usage_ GUARDED_BY(mu_);
  std::optional<std::pair<std::string, std::string>> slot_holder_ GUARDED_BY(mu_);

  MetricRegistry::FamilyId requests_, read_bytes_, errors_, responses_, grpc_calls_, duration_, agent_cpu_;
  MetricRegistry::FamilyId rps_, percentile_, connections_open_;
  MetricRegistry::FamilyId target_memory_, target_cpu_, target_memory_peak_;
  MetricRegistry::FamilyId runs_by_phase_, queue_length_, slot_holder_family_, run_cells_, cells_finished_;
  MetricRegistry::FamilyId agents_connected_, agent_snapshots_, agent_missing_, agent_refused_;
};

}  // namespace fairbench::metrics
