// The controller's cost to ingest one agent snapshot: decode the protocol
// message (HdrHistogram V2 decompression included) and merge it into the
// cell's aggregate — what happens once per agent per second.
#include <benchmark/benchmark.h>

#include "bench/realistic_snapshot.h"
#include "common/wire.h"
#include "controller/hub/cell_aggregator.h"

namespace {

using fairbench::Snapshot;

fairbench::v1::Snapshot Realistic(uint64_t sequence) {
  fairbench::v1::Snapshot msg;
  fairbench::wire::ToProto(fairbench::bench::RealisticSnapshot(sequence), "job", &msg);
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
