#include "agent/engine_test_util.h"

#include <gtest/gtest.h>

#include <thread>

namespace fairbench::agent {

EngineOptions TestOptions(const std::string& host, uint16_t port, RequestSpec spec, bool keep_alive) {
  EngineOptions o;
  auto addrs = Resolve(host, port);
  EXPECT_TRUE(addrs.ok()) << addrs.status().ToString();
  if (addrs.ok()) o.addresses = *addrs;
  const std::string host_header = host + ":" + std::to_string(port);
  o.requests.push_back(BuildRequest(spec, host_header, keep_alive));
  o.keep_alive = keep_alive;
  o.threads = 2;
  o.connections = 8;
  o.duration = std::chrono::milliseconds(800);
  o.interval = std::chrono::milliseconds(200);
  o.timeout = std::chrono::milliseconds(500);
  return o;
}

EngineRun RunEngine(EngineOptions options, std::chrono::milliseconds stop_after) {
  EngineRun run;
  Engine engine(std::move(options));
  const Status started = engine.Start();
  EXPECT_TRUE(started.ok()) << started.ToString();
  if (!started.ok()) return run;
  std::thread stopper;
  if (stop_after.count() > 0) {
    stopper = std::thread([&engine, stop_after] {
      std::this_thread::sleep_for(stop_after);
      engine.Stop();
    });
  }
  while (auto s = engine.NextSnapshot()) {
    run.all.Add(s->stats.counters);
    if (s->phase == Phase::kMeasure) {
      run.measure.Add(s->stats.counters);
      run.latency.Merge(s->stats.latency);
      run.uncorrected.Merge(s->stats.uncorrected);
    }
    run.snapshots.push_back(std::move(*s));
  }
  run.end = engine.Finish();
  if (stopper.joinable()) stopper.join();
  return run;
}

}  // namespace fairbench::agent
