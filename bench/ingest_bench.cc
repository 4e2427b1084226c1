// The controller's cost to ingest one agent snapshot: decode the protocol
// message (HdrHistogram V2 decompression included) and merge it into the
// cell's aggregate — what happens once per agent per second.
#include <benchmark/benchmark.h>

#include <random>

#include "common/wire.h"
#include "controller/cell_aggregator.h"

namespace {

using fairbench::Snapshot;

// A busy one-second snapshot: 100,000 latencies spread like a real server's
// (a lognormal body around 300 µs and a 1 % tail up to seconds).
fairbench::v1::Snapshot Realistic(uint64_t sequence) {
  Snapshot s;
  s.sequence = sequence;
  s.phase = fairbench::Phase::kMeasure;
  s.start_ns = static_cast<int64_t>(sequence - 1) * 1'000'000'000;
  s.end_ns = static_cast<int64_t>(sequence) * 1'000'000'000;
  std::mt19937_64 rng(sequence);
  std::lognormal_distribution<double> body(std::log(300.0), 0.6);
  std::uniform_real_distribution<double> tail(0, 1);
  for (int i = 0; i < 100000; ++i) {
    double v = body(rng);
    if (tail(rng) < 0.01) v *= 100;
    s.stats.latency.Record(static_cast<int64_t>(v));
  }
  s.stats.counters.requests = 100000;
  s.stats.counters.bytes_read = 100000 * 160;
  s.stats.counters.status_classes[2] = 100000;
  for (int i = 0; i < 40; ++i) s.stats.rate_samples.push_back(100000.0 + i);
  s.connections_open = 100;
  s.cpu_seconds = 0.9;
  fairbench::v1::Snapshot msg;
  fairbench::wire::ToProto(s, "job", &msg);
  return msg;
}

void BM_DecodeSnapshot(benchmark::State& state) {
  const fairbench::v1::Snapshot msg = Realistic(1);
  state.counters["hdr_bytes"] = static_cast<double>(msg.latency().hdr().size());
  for (auto _ : state) {
    auto s = fairbench::wire::FromProto(msg);
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_DecodeSnapshot);

void BM_IngestSnapshot(benchmark::State& state) {
  // Parse the bytes as they come off the wire, decode, and merge into a
  // cell aggregate of four agents.
  std::string bytes;
  Realistic(1).SerializeToString(&bytes);
  auto agg = std::make_shared<fairbench::controller::CellAggregator>(4);
  uint64_t seq = 1;
  int agent = 0;
  for (auto _ : state) {
    fairbench::v1::Snapshot msg;
    msg.ParseFromString(bytes);
    msg.set_sequence(seq);
    auto s = fairbench::wire::FromProto(msg);
    agg->OnSnapshot("agent-" + std::to_string(agent), std::move(*s));
    if (++agent == 4) {
      agent = 0;
      ++seq;
    }
  }
}
BENCHMARK(BM_IngestSnapshot);

void BM_EncodeSnapshot(benchmark::State& state) {
  Snapshot s;
  auto msg = Realistic(1);
  auto decoded = fairbench::wire::FromProto(msg);
  for (auto _ : state) {
    fairbench::v1::Snapshot out;
    fairbench::wire::ToProto(*decoded, "job", &out);
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_EncodeSnapshot);

}  // namespace

BENCHMARK_MAIN();
