// The engine against a real nginx (Debian's): nothing lost, nothing invented.
// Every request the engine completed, drained or gave up on after writing
// it must be in nginx's access log, and nothing else may be.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <map>
#include <set>

#include "agent/engine_test_util.h"
#include "testing/support/nginx_fixture.h"

namespace fairbench::agent {
namespace {

using testing::AccessLogEntry;
using testing::NginxFixture;
using testing::NginxOptions;

class EngineNginxTest : public ::testing::Test {
 protected:
  void StartNginx(NginxOptions options = {}) {
    options.worker_connections = std::max(options.worker_connections, 4096);
    nginx_ = std::make_unique<NginxFixture>(options);
    const Status s = nginx_->Start();
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  // Stops nginx gracefully (every line written) and returns its log.
  std::vector<AccessLogEntry> FinalLog() {
    auto log = nginx_->StopAndReadAccessLog();
    EXPECT_TRUE(log.ok()) << log.status().ToString();
    return log.ok() ? std::move(*log) : std::vector<AccessLogEntry>{};
  }
  // nginx must have logged every request the engine saw answered (in the
  // run or in the drain) and nothing it never sent. Requests written but
  // still unanswered when the engine gave up (abandoned) may or may not have
  // been served by then.
  static void ExpectLogMatches(const std::vector<AccessLogEntry>& log, const EngineRun& run) {
    const uint64_t answered = run.all.requests + run.end.drained;
    EXPECT_GE(log.size(), answered) << "nginx served fewer requests than the engine counted";
    EXPECT_LE(log.size(), answered + run.end.abandoned) << "nginx served requests the engine never accounted for";
  }

  std::unique_ptr<NginxFixture> nginx_;
};

TEST_F(EngineNginxTest, KeepAliveCountsEqualTheAccessLog) {
  NginxOptions options;
  options.keepalive_requests = 1000000000;  // every response alike, every connection kept
  StartNginx(options);
  EngineOptions o = TestOptions("127.0.0.1", nginx_->port());
  o.warmup = std::chrono::milliseconds(300);
  o.timeout = std::chrono::seconds(5);  // a slow machine must not turn the drain into a guess
  const EngineRun run = RunEngine(o);
  const auto log = FinalLog();
  ASSERT_GT(run.measure.requests, 100u);
  EXPECT_EQ(run.all.errors, ErrorCounts{});
  EXPECT_EQ(run.end.abandoned, 0u);
  EXPECT_EQ(log.size(), run.all.requests + run.end.drained);
  EXPECT_EQ(run.all.status_classes[2], run.all.requests);
  std::set<uint64_t> connections;
  uint64_t bytes_sent = 0;
  for (const AccessLogEntry& e : log) {
    EXPECT_EQ(e.method, "GET");
    EXPECT_EQ(e.uri, "/");
    EXPECT_EQ(e.status, 200);
    EXPECT_EQ(e.request_length, o.requests[0].bytes.size());
    connections.insert(e.connection);
    bytes_sent += e.bytes_sent;
  }
  EXPECT_EQ(connections.size(), 8u) << "exactly C connections, kept alive";
  EXPECT_EQ(run.all.connects, 8u);
  // Every byte nginx sent was read, except those of the drained responses.
  EXPECT_EQ(run.all.bytes_read, bytes_sent - run.end.drained * (bytes_sent / log.size()));
  EXPECT_EQ(run.end.connections_peak, 8u);
}

TEST_F(EngineNginxTest, ShortConnectionsOpenOneConnectionPerRequest) {
  StartNginx();
  const EngineRun run = RunEngine(TestOptions("127.0.0.1", nginx_->port(), {}, /*keep_alive=*/false));
  const auto log = FinalLog();
  ASSERT_GT(run.all.requests, 50u);
  EXPECT_EQ(run.all.errors, ErrorCounts{});
  ExpectLogMatches(log, run);
  std::set<uint64_t> connections;
  for (const AccessLogEntry& e : log) {
    EXPECT_EQ(e.connection_requests, 1u);
    connections.insert(e.connection);
  }
  EXPECT_EQ(connections.size(), log.size());
  EXPECT_GE(run.all.connects, run.all.requests);
}

TEST_F(EngineNginxTest, PostBodiesArriveWhole) {
  StartNginx();
  RequestSpec post;
  post.method = "POST";
  post.target = "/api/echo";
  post.headers = {{"Content-Type", "application/json"}};
  post.body = R"({"name":"Alice","age":30,"email":"alice@example.com"})";
  const EngineOptions o = TestOptions("127.0.0.1", nginx_->port(), post);
  const EngineRun run = RunEngine(o);
  const auto log = FinalLog();
  ASSERT_GT(run.all.requests, 50u);
  EXPECT_EQ(run.all.errors, ErrorCounts{});
  ExpectLogMatches(log, run);
  for (const AccessLogEntry& e : log) {
    ASSERT_EQ(e.method, "POST");
    ASSERT_EQ(e.request_length, o.requests[0].bytes.size());
  }
}

TEST_F(EngineNginxTest, WeightedMixFollowsTheWeights) {
  StartNginx();
  EngineOptions o = TestOptions("127.0.0.1", nginx_->port());
  o.requests.clear();
  RequestSpec a, b;
  a.target = "/a";
  a.weight = 3;
  b.target = "/b";
  b.method = "HEAD";
  o.requests.push_back(BuildRequest(a, "h", true));
  o.requests.push_back(BuildRequest(b, "h", true));
  const EngineRun run = RunEngine(o);
  const auto log = FinalLog();
  ASSERT_GT(run.all.requests, 100u);
  EXPECT_EQ(run.all.errors, ErrorCounts{});
  ExpectLogMatches(log, run);
  std::map<std::string, uint64_t> by_uri;
  for (const AccessLogEntry& e : log) ++by_uri[e.method + " " + e.uri];
  // Each thread follows the weights exactly; only the last round of each
  // thread can be incomplete.
  const double total = static_cast<double>(log.size());
  EXPECT_NEAR(static_cast<double>(by_uri["GET /a"]), total * 0.75, 2.0 * o.threads * 4);
  EXPECT_NEAR(static_cast<double>(by_uri["HEAD /b"]), total * 0.25, 2.0 * o.threads * 4);
  EXPECT_EQ(by_uri.size(), 2u);
}

TEST_F(EngineNginxTest, PipeliningKeepsEveryResponse) {
  StartNginx();
  EngineOptions o = TestOptions("127.0.0.1", nginx_->port());
  o.pipeline = 4;
  const EngineRun run = RunEngine(o);
  const auto log = FinalLog();
  ASSERT_GT(run.all.requests, 100u);
  EXPECT_EQ(run.all.errors, ErrorCounts{});
  ExpectLogMatches(log, run);
}

TEST_F(EngineNginxTest, ConstantRateSendsOnScheduleAndRecordsBothLatencies) {
  StartNginx();
  EngineOptions o = TestOptions("127.0.0.1", nginx_->port());
  o.rate = 500;  // 400 requests in 0.8 s
  const EngineRun run = RunEngine(o);
  const auto log = FinalLog();
  EXPECT_EQ(run.all.errors, ErrorCounts{});
  EXPECT_NEAR(static_cast<double>(run.all.requests), 400.0, 12.0);
  ExpectLogMatches(log, run);
  uint64_t uncorrected = 0;
  for (const Snapshot& s : run.snapshots) {
    uncorrected += s.stats.uncorrected.count();
    EXPECT_EQ(s.stats.uncorrected.count(), s.stats.latency.count());
  }
  EXPECT_EQ(uncorrected, run.all.requests);
  // The corrected latency runs from the intended send, never after the
  // actual one: request by request it is never below the uncorrected
  // latency, so neither is any percentile or the mean. (How far above is
  // checked against a stalling server in engine_latency_test.)
  ASSERT_EQ(run.uncorrected.count(), run.latency.count());
  ASSERT_GT(run.uncorrected.count(), 0u);
  for (int p = 0; p <= 1000; ++p) {
    EXPECT_GE(run.latency.ValueAtPercentile(p / 10.0), run.uncorrected.ValueAtPercentile(p / 10.0)) << "p" << p / 10.0;
  }
  EXPECT_GE(run.latency.Mean(), run.uncorrected.Mean());
  EXPECT_GT(run.uncorrected.Mean(), 0.0);
  // Requests are spread evenly: no 200 ms interval is far from 100 requests.
  for (size_t i = 0; i + 1 < run.snapshots.size(); ++i) {
    EXPECT_NEAR(static_cast<double>(run.snapshots[i].stats.counters.requests), 100.0, 6.0) << "interval " << i;
  }
}

TEST_F(EngineNginxTest, NginxClosingKeepAliveConnectionsIsNotAnError) {
  NginxOptions options;
  options.keepalive_requests = 10;
  StartNginx(options);
  const EngineRun run = RunEngine(TestOptions("127.0.0.1", nginx_->port()));
  const auto log = FinalLog();
  ASSERT_GT(run.all.requests, 100u);
  EXPECT_EQ(run.all.errors, ErrorCounts{});
  ExpectLogMatches(log, run);
  EXPECT_GE(run.all.closes_by_server, run.all.requests / 10 - 8);
  EXPECT_GE(run.all.connects, run.all.requests / 10);
}

TEST_F(EngineNginxTest, SnapshotsAreContiguousAndTotalsAddUp) {
  StartNginx();
  EngineOptions o = TestOptions("127.0.0.1", nginx_->port());
  o.warmup = std::chrono::milliseconds(300);  // a boundary inside an interval
  o.duration = std::chrono::milliseconds(700);
  const EngineRun run = RunEngine(o);
  FinalLog();
  // Warmup 200 + 100 ms, measure 200 + 200 + 200 + 100 ms.
  ASSERT_EQ(run.snapshots.size(), 6u);
  int64_t last_end = 0;
  for (size_t i = 0; i < run.snapshots.size(); ++i) {
    const Snapshot& s = run.snapshots[i];
    EXPECT_EQ(s.sequence, i + 1);
    EXPECT_EQ(s.phase, i < 2 ? Phase::kWarmup : Phase::kMeasure);
    EXPECT_EQ(s.start_ns, last_end);
    EXPECT_GT(s.end_ns, s.start_ns);
    EXPECT_EQ(s.stats.latency.count(), s.stats.counters.requests);
    last_end = s.end_ns;
  }
  EXPECT_EQ(run.snapshots[1].end_ns, 300'000'000);
  EXPECT_EQ(last_end, 1'000'000'000);
  EXPECT_NEAR(run.end.measure_seconds, 0.7, 1e-9);
}

TEST_F(EngineNginxTest, StopEndsTheRunEarlyWithoutLosingCounts) {
  StartNginx();
  EngineOptions o = TestOptions("127.0.0.1", nginx_->port());
  o.duration = std::chrono::seconds(30);
  const auto begin = std::chrono::steady_clock::now();
  const EngineRun run = RunEngine(o, std::chrono::milliseconds(500));
  const auto took = std::chrono::steady_clock::now() - begin;
  const auto log = FinalLog();
  EXPECT_LT(took, std::chrono::seconds(2));
  EXPECT_TRUE(run.end.stopped_early);
  EXPECT_NEAR(run.end.measure_seconds, 0.5, 0.2);
  ExpectLogMatches(log, run);
}

TEST_F(EngineNginxTest, TenThousandConnectionsOnLoopback) {
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  ASSERT_GE(rl.rlim_cur, 10100u) << "the open-file limit is too low for 10,000 connections";
  NginxOptions options;
  options.worker_rlimit_nofile = 20000;
  options.worker_connections = 20000;
  options.listen_backlog = 4096;
  options.keepalive_requests = 1000000000;
  StartNginx(options);
  EngineOptions o = TestOptions("127.0.0.1", nginx_->port());
  o.connections = 10000;
  o.threads = 2;
  o.duration = std::chrono::seconds(2);
  o.timeout = std::chrono::seconds(2);
  const EngineRun run = RunEngine(o);
  const auto log = FinalLog();
  EXPECT_EQ(run.end.connections_peak, 10000u);
  EXPECT_EQ(run.all.errors, ErrorCounts{});
  ExpectLogMatches(log, run);
}

}  // namespace
}  // namespace fairbench::agent
