// Writes the seeds of the histogram and agent_stream fuzzers from the real
// encoders (Histogram::EncodeCompressed, wire::ToProto), so that the seeds
// are what agents send: fuzz_make_seeds <fuzz/corpus directory>.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <zlib.h>

#include "common/histogram.h"
#include "common/wire.h"
#include "fairbench/v1/agent.pb.h"

namespace {

using namespace fairbench;
namespace fs = std::filesystem;

// Both forms of the histogram fuzzer's input: mode 0 and the compressed
// bytes, mode 1 and the inflated V2 bytes.
void WriteHistogram(const fs::path& dir, const std::string& name, const std::string& compressed);

void Write(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
  std::printf("%s: %zu bytes\n", path.c_str(), bytes.size());
}

Histogram Latencies(int n, double median_us, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> d(std::log(median_us), 0.6);
  Histogram h;
  for (int i = 0; i < n; ++i) h.Record(static_cast<int64_t>(d(rng)));
  return h;
}

Snapshot MakeSnapshot(uint64_t seq, Phase phase, int requests, unsigned seed) {
  Snapshot s;
  s.sequence = seq;
  s.phase = phase;
  s.start_ns = static_cast<int64_t>(seq - 1) * 1'000'000'000;
  s.end_ns = static_cast<int64_t>(seq) * 1'000'000'000;
  s.stats.latency = Latencies(requests, 800, seed);
  s.stats.counters.requests = static_cast<uint64_t>(requests);
  s.stats.counters.bytes_read = static_cast<uint64_t>(requests) * 230;
  s.stats.counters.bytes_written = static_cast<uint64_t>(requests) * 40;
  s.stats.counters.status_classes[2] = static_cast<uint64_t>(requests) - 3;
  s.stats.counters.status_classes[5] = 3;
  s.stats.counters.errors.status = 3;
  s.stats.counters.errors.timeout = 1;
  s.stats.counters.connects = 8;
  s.stats.counters.connect_time_us = 8 * 120;
  s.stats.rate_samples = {1000.0 + seq, 990.5, 1011.25};
  s.connections_open = 8;
  s.cpu_seconds = 0.25;
  return s;
}

struct Stream {
  std::string bytes;
  explicit Stream(int agents) { bytes.push_back(static_cast<char>(agents - 1)); }
  void Add(int agent, const v1::AgentMessage& m) {
    const std::string body = m.SerializeAsString();
    bytes.push_back(static_cast<char>(agent));
    bytes.push_back(static_cast<char>(body.size() & 0xff));
    bytes.push_back(static_cast<char>((body.size() >> 8) & 0xff));
    bytes += body;
  }
  void Snap(int agent, const Snapshot& s) {
    v1::AgentMessage m;
    wire::ToProto(s, "j", m.mutable_snapshot());
    Add(agent, m);
  }
  void Done(int agent, uint64_t last, const Counters& totals) {
    v1::AgentMessage m;
    v1::JobDone* d = m.mutable_job_done();
    d->set_job_id("j");
    d->set_last_sequence(last);
    wire::ToProto(totals, d->mutable_totals());
    d->set_drained(2);
    d->set_abandoned(1);
    d->set_connections_peak(8);
    d->set_measure_seconds(2.0);
    Add(agent, m);
  }
};

void WriteHistogram(const fs::path& dir, const std::string& name, const std::string& compressed) {
  Write(dir / (name + ".z"), std::string(1, '\0') + compressed);
  std::string inflated(1 << 20, '\0');
  uLongf len = static_cast<uLongf>(inflated.size());
  if (uncompress(reinterpret_cast<Bytef*>(inflated.data()), &len, reinterpret_cast<const Bytef*>(compressed.data() + 8),
                 static_cast<uLong>(compressed.size() - 8)) != Z_OK) {
    std::fprintf(stderr, "%s: does not inflate\n", name.c_str());
    std::exit(1);
  }
  inflated.resize(len);
  Write(dir / (name + ".v2"), std::string(1, '\1') + inflated);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_seeds <fuzz/corpus directory>\n");
    return 2;
  }
  const fs::path corpus = argv[1];

  Histogram one;
  one.Record(42);
  WriteHistogram(corpus / "histogram", "one-value", one.EncodeCompressed());
  WriteHistogram(corpus / "histogram", "latencies", Latencies(2000, 800, 1).EncodeCompressed());
  Histogram edges;
  edges.Record(0);
  edges.Record(2047);
  edges.Record(2048);
  edges.Record(Histogram::kHighestTrackable);
  edges.Record(Histogram::kHighestTrackable + 5);  // clamped
  WriteHistogram(corpus / "histogram", "edges", edges.EncodeCompressed());

  // One agent, warmup then measure, totals that agree.
  {
    Stream s(1);
    Counters totals;
    for (uint64_t seq = 1; seq <= 3; ++seq) {
      Snapshot snap = MakeSnapshot(seq, seq == 1 ? Phase::kWarmup : Phase::kMeasure, 50, static_cast<unsigned>(seq));
      totals.Add(snap.stats.counters);
      s.Snap(0, snap);
    }
    s.Done(0, 3, totals);
    Write(corpus / "agent_stream" / "one-agent", s.bytes);
  }
  // Two agents interleaved; the second resends one snapshot and skips one.
  {
    Stream s(2);
    Counters a, b;
    const Snapshot a1 = MakeSnapshot(1, Phase::kMeasure, 30, 11), a2 = MakeSnapshot(2, Phase::kMeasure, 30, 12);
    const Snapshot b1 = MakeSnapshot(1, Phase::kMeasure, 20, 21), b3 = MakeSnapshot(3, Phase::kMeasure, 20, 23);
    s.Snap(0, a1);
    s.Snap(1, b1);
    s.Snap(1, b1);  // a duplicate
    s.Snap(0, a2);
    s.Snap(1, b3);  // 2 is missing
    a.Add(a1.stats.counters);
    a.Add(a2.stats.counters);
    b.Add(b1.stats.counters);
    b.Add(b3.stats.counters);
    s.Done(0, 2, a);
    s.Done(1, 3, b);
    Write(corpus / "agent_stream" / "two-agents-duplicate-and-gap", s.bytes);
  }
  // A rate-limited job: corrected and uncorrected latency; then a failure.
  {
    Stream s(2);
    Snapshot snap = MakeSnapshot(1, Phase::kMeasure, 40, 31);
    snap.stats.uncorrected = Latencies(40, 600, 32);
    s.Snap(0, snap);
    v1::AgentMessage failed;
    failed.mutable_job_failed()->set_job_id("j");
    failed.mutable_job_failed()->set_reason("target refused connections");
    s.Add(1, failed);
    Write(corpus / "agent_stream" / "rate-and-failure", s.bytes);
  }
  return 0;
}
