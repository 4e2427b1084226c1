// What the metrics cost the controller: RunMetrics::OnInterval (called once
// per cell per second on a gRPC thread, with the cell's aggregator locked),
// with and without remote write; a scrape of a busy registry; encoding and
// compressing one interval's remote write request (on the sender thread).
#include <benchmark/benchmark.h>

#include <random>

#include "bench/realistic_snapshot.h"
#include "controller/metrics/exposition.h"
#include "controller/metrics/run_metrics.h"
#include "controller/metrics/write_request.h"

namespace {

using namespace fairbench;
using namespace fairbench::metrics;

Snapshot Realistic(uint64_t sequence) { return fairbench::bench::RealisticSnapshot(sequence); }

class Discard final : public SampleSink {
 public:
  bool Enqueue(std::vector<RemoteSample> batch) override {
    last = std::move(batch);
    return true;
  }
  std::vector<RemoteSample> last;
};

void OnInterval(benchmark::State& state, bool remote) {
  MetricRegistry registry;
  Discard sink;
  RunMetricsOptions o;
  if (remote) o.remote = &sink;
  RunMetrics m(registry, o);
  const Snapshot s = Realistic(2);
  const api::CurrentCell cell{"drogon", "hello", 100, 1, std::nullopt, std::nullopt};
  api::Time end(std::chrono::seconds(1'700'000'000));
  for (auto _ : state) {
    m.OnInterval("study", cell, s, end);
    end += std::chrono::seconds(1);
  }
  state.counters["samples"] = static_cast<double>(sink.last.size());
}
void BM_OnInterval(benchmark::State& state) { OnInterval(state, false); }
void BM_OnIntervalWithRemoteWrite(benchmark::State& state) { OnInterval(state, true); }
BENCHMARK(BM_OnInterval)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_OnIntervalWithRemoteWrite)->Unit(benchmark::kMicrosecond);

// A scrape while a study's results are kept: 6 targets × 4 scenarios × 2
// connection levels.
void BM_Scrape(benchmark::State& state) {
  MetricRegistry registry;
  RunMetrics m(registry, RunMetricsOptions{});
  const Snapshot s = Realistic(2);
  for (const char* t : {"a", "b", "c", "d", "e", "f"}) {
    for (const char* sc : {"hello", "json", "echo", "users"}) {
      for (int64_t c : {100, 1000}) m.OnInterval("study", {t, sc, c, 1, std::nullopt, std::nullopt}, s, api::Time{});
    }
  }
  size_t bytes = 0;
  for (auto _ : state) {
    const std::string text = RenderText(registry.Collect());
    bytes = text.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["series"] = static_cast<double>(registry.series_count());
}
BENCHMARK(BM_Scrape)->Unit(benchmark::kMicrosecond);

void BM_EncodeAndCompressOneInterval(benchmark::State& state) {
  MetricRegistry registry;
  Discard sink;
  RunMetricsOptions o;
  o.remote = &sink;
  RunMetrics m(registry, o);
  m.OnInterval("study", {"drogon", "hello", 100, 1, std::nullopt, std::nullopt}, Realistic(2), api::Time{});
  size_t bytes = 0;
  for (auto _ : state) {
    const std::string body = SnappyCompress(EncodeWriteRequest(sink.last));
    bytes = body.size();
    benchmark::DoNotOptimize(body.data());
  }
  state.counters["samples"] = static_cast<double>(sink.last.size());
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_EncodeAndCompressOneInterval)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
