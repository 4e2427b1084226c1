// The load engine's per-response user-space costs: parsing a response and
// recording its latency. Compare with the ~5-7 µs of kernel time a request
// costs on loopback (bench/agent_vs_wrk.py): these should be a few percent.
#include <benchmark/benchmark.h>

#include <string>

#include "agent/response_parser.h"
#include "common/histogram.h"

namespace {

using fairbench::agent::ResponseParser;

const std::string kNginxHello =
    "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Mon, 30 Nov 2026 02:20:48 GMT\r\nContent-Type: text/plain\r\n"
    "Content-Length: 13\r\nConnection: keep-alive\r\n\r\nHello, World!";
const std::string kChunked =
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n"
    "1a\r\n{\"status\":\"running\",\"x\":1}\r\n0\r\n\r\n";

void Parse(benchmark::State& state, const std::string& response) {
  ResponseParser parser;
  for (auto _ : state) {
    parser.Reset(false);
    size_t used = 0;
    auto outcome = parser.Feed(response.data(), response.size(), &used);
    benchmark::DoNotOptimize(outcome);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * response.size()));
}
void BM_ParseNginxResponse(benchmark::State& state) { Parse(state, kNginxHello); }
void BM_ParseChunkedResponse(benchmark::State& state) { Parse(state, kChunked); }
BENCHMARK(BM_ParseNginxResponse);
BENCHMARK(BM_ParseChunkedResponse);

void BM_ParseNginxResponseSplit(benchmark::State& state) {
  // The same response arriving in two reads, split inside a header.
  ResponseParser parser;
  const size_t cut = kNginxHello.find("Length") + 3;
  for (auto _ : state) {
    parser.Reset(false);
    size_t used = 0;
    parser.Feed(kNginxHello.data(), cut, &used);
    auto outcome = parser.Feed(kNginxHello.data() + cut, kNginxHello.size() - cut, &used);
    benchmark::DoNotOptimize(outcome);
  }
}
BENCHMARK(BM_ParseNginxResponseSplit);

void BM_RecordLatency(benchmark::State& state) {
  fairbench::Histogram h;
  int64_t v = 1;
  for (auto _ : state) {
    h.Record(v);
    v = (v * 1103515245 + 12345) & 0xfffff;
  }
  benchmark::DoNotOptimize(h.count());
}
BENCHMARK(BM_RecordLatency);

}  // namespace

BENCHMARK_MAIN();
