// The HTTP/2 client codec's cost, in memory, no sockets.
//
//   BM_H2Pair/S        H2Connection and nghttp2's server session (the test
//                      peer) exchanging GETs with S streams in flight:
//                      requests/s of the pair, the server's work included.
//   BM_H2ClientOnly/S  the client alone: the server's bytes of such an
//                      exchange recorded once, then replayed to fresh
//                      clients that submit at the same points (so the
//                      stream ids match): requests/s of the codec itself,
//                      the bound on what one core can drive through it.
//
// Each iteration is one connection carrying kRequests requests.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "agent/h2_connection.h"
#include "agent/h2_test_server.h"

namespace fairbench::agent {
namespace {

constexpr uint64_t kRequests = 10000;

const H2Request& Get() {
  static const std::unique_ptr<H2Request> req = [] {
    RequestSpec spec;
    return H2Request::Build(spec, "http", "127.0.0.1:8080").value();
  }();
  return *req;
}

std::unique_ptr<H2Connection> Client(uint32_t streams) {
  H2Options o;
  o.max_streams = streams;
  auto c = H2Connection::Create(o);
  if (!c.ok()) std::abort();
  return std::move(c).value();
}

// Runs a client against the server; with `script`, records per round how
// many requests the client submitted and the server bytes it then got.
struct Round {
  uint32_t submits = 0;
  std::vector<uint8_t> down;
};

uint64_t Exchange(uint32_t streams, std::vector<Round>* script) {
  H2TestServer server;
  auto c = Client(streams);
  uint64_t submitted = 0, done = 0;
  for (int guard = 0; guard < 10'000'000; ++guard) {
    Round round;
    while (submitted < kRequests && c->CanSubmit()) {
      c->Submit(Get(), 0, submitted);
      ++submitted;
      ++round.submits;
    }
    bool moved = false;
    auto up = c->Output();
    if (!up.empty()) {
      moved = true;
      server.Receive(up.data(), up.size());
      c->Consumed(up.size());
    }
    auto down = server.Output();
    if (!down.empty()) {
      moved = true;
      if (script != nullptr) round.down.assign(down.begin(), down.end());
      c->Receive(down.data(), down.size());
      server.Consumed(down.size());
    }
    done += c->outcomes().size();
    c->outcomes().clear();
    if (script != nullptr) script->push_back(std::move(round));
    if (!moved) break;
  }
  return done;
}

void BM_H2Pair(benchmark::State& state) {
  const auto streams = static_cast<uint32_t>(state.range(0));
  uint64_t responses = 0;
  for (auto _ : state) responses += Exchange(streams, nullptr);
  if (responses != kRequests * state.iterations()) state.SkipWithError("responses lost");
  state.SetItemsProcessed(static_cast<int64_t>(responses));
}
BENCHMARK(BM_H2Pair)->Arg(1)->Arg(10)->Arg(100)->Unit(benchmark::kMillisecond);

void BM_H2ClientOnly(benchmark::State& state) {
  const auto streams = static_cast<uint32_t>(state.range(0));
  std::vector<Round> script;
  if (Exchange(streams, &script) != kRequests) {
    state.SkipWithError("the recorded exchange lost responses");
    return;
  }
  uint64_t responses = 0;
  uint64_t bytes = 0;
  for (auto _ : state) {
    auto c = Client(streams);
    for (const Round& r : script) {
      for (uint32_t i = 0; i < r.submits; ++i) c->Submit(Get(), 0, i);
      auto up = c->Output();
      c->Consumed(up.size());
      if (!r.down.empty()) c->Receive(r.down.data(), r.down.size());
      responses += c->outcomes().size();
      c->outcomes().clear();
      bytes += r.down.size();
    }
  }
  if (responses != kRequests * state.iterations()) state.SkipWithError("the replay lost responses");
  state.SetItemsProcessed(static_cast<int64_t>(responses));
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
}
BENCHMARK(BM_H2ClientOnly)->Arg(1)->Arg(10)->Arg(100)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fairbench::agent

BENCHMARK_MAIN();
