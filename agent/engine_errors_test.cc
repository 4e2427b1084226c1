// The engine against a deliberately bad server: every kind of error is
// counted, exactly, and as the right kind. The server counts what it did;
// the engine's counts must match them one for one. Requests still in
// flight when the run ends are not errors: they are reported as drained or
// abandoned, and the identities below include them.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include "agent/engine_test_util.h"
#include "testing/support/misbehaving_server_fixture.h"

namespace fairbench::agent {
namespace {

using testing::MisbehavingFixtureOptions;
using testing::MisbehavingMode;
using testing::MisbehavingServerFixture;
using testing::MisbehavingStats;

class EngineErrorsTest : public ::testing::Test {
 protected:
  // Runs the engine against a server in `mode`; returns the server's final counts.
  MisbehavingStats Run(MisbehavingMode mode, EngineOptions* options_out = nullptr,
                       std::chrono::milliseconds delay = std::chrono::milliseconds(1000)) {
    MisbehavingFixtureOptions fo;
    fo.mode = mode;
    fo.delay = delay;
    auto server = MisbehavingServerFixture::Start(fo);
    EXPECT_TRUE(server.ok()) << server.status().ToString();
    if (!server.ok()) return {};
    EngineOptions o = TestOptions("127.0.0.1", (*server)->port());
    o.connections = 4;
    if (options_out != nullptr) {
      options_out->addresses = o.addresses;
      options_out->requests = o.requests;
      o = *options_out;
    }
    run_ = RunEngine(o);
    auto stats = (*server)->Stop();
    EXPECT_TRUE(stats.ok()) << stats.status().ToString() << "\n" << (*server)->Output();
    return stats.ok() ? *stats : MisbehavingStats{};
  }
  EngineRun run_;
};

TEST_F(EngineErrorsTest, RefusedConnectionsAreConnectErrorsWithBackoff) {
  auto port = MisbehavingServerFixture::RefusedPort();
  ASSERT_TRUE(port.ok());
  EngineOptions o = TestOptions("127.0.0.1", *port);
  o.connections = 4;
  o.duration = std::chrono::seconds(1);
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  run_ = RunEngine(o);
  getrusage(RUSAGE_SELF, &after);
  const ErrorCounts& e = run_.all.errors;
  EXPECT_GT(e.connect, 4u);
  EXPECT_EQ(e.read, 0u);
  EXPECT_EQ(e.write, 0u);
  EXPECT_EQ(e.timeout, 0u);
  EXPECT_EQ(run_.all.requests, 0u);
  // Backing off: at most a few dozen attempts per connection per second,
  // where a reconnect loop without backoff makes tens of thousands.
  EXPECT_LT(e.connect, 4u * 40);
  const double cpu = static_cast<double>(after.ru_utime.tv_sec - before.ru_utime.tv_sec + after.ru_stime.tv_sec -
                                         before.ru_stime.tv_sec) +
                     static_cast<double>(after.ru_utime.tv_usec - before.ru_utime.tv_usec + after.ru_stime.tv_usec -
                                         before.ru_stime.tv_usec) /
                         1e6;
  EXPECT_LT(cpu, 0.3) << "a dead target must not make the engine spin";
  EXPECT_EQ(run_.end.connections_peak, 0u);
}

TEST_F(EngineErrorsTest, ResetMidResponseIsAReadError) {
  const MisbehavingStats s = Run(MisbehavingMode::kResetMidResponse);
  ASSERT_GT(s.partial_responses, 4u);
  EXPECT_EQ(run_.all.requests, 0u);
  EXPECT_EQ(run_.all.errors.read + run_.end.abandoned, s.partial_responses);
  EXPECT_EQ(run_.all.errors.connect + run_.all.errors.write + run_.all.errors.timeout, 0u);
}

TEST_F(EngineErrorsTest, CloseWithoutAnswerIsAReadError) {
  const MisbehavingStats s = Run(MisbehavingMode::kCloseEarly);
  ASSERT_GT(s.requests_read, 4u);
  EXPECT_EQ(run_.all.requests, 0u);
  EXPECT_EQ(run_.all.errors.read + run_.end.abandoned, s.requests_read);
  EXPECT_EQ(run_.all.errors.connect + run_.all.errors.write + run_.all.errors.timeout, 0u);
}

TEST_F(EngineErrorsTest, BodyCutShortIsAReadError) {
  const MisbehavingStats s = Run(MisbehavingMode::kCloseAfterHeaders);
  ASSERT_GT(s.partial_responses, 4u);
  EXPECT_EQ(run_.all.requests, 0u);
  EXPECT_EQ(run_.all.errors.read + run_.end.abandoned, s.partial_responses);
}

TEST_F(EngineErrorsTest, NoAnswerInTimeIsATimeoutAndTheConnectionIsReplaced) {
  EngineOptions o;
  o.threads = 1;
  o.connections = 2;
  o.timeout = std::chrono::milliseconds(200);
  o.duration = std::chrono::milliseconds(900);
  o.interval = std::chrono::milliseconds(300);
  const MisbehavingStats s = Run(MisbehavingMode::kDelay, &o, std::chrono::milliseconds(2000));
  // Each connection times out at 200, 400, 600, 800 ms (a new connection
  // each time); the last request is cut by the end of the run.
  EXPECT_EQ(run_.all.errors.timeout, 8u);
  EXPECT_EQ(run_.all.requests, 0u);
  EXPECT_EQ(run_.all.errors.timeout + run_.end.abandoned, s.requests_read);
  EXPECT_EQ(s.connections_accepted, 2u * 5);
  EXPECT_EQ(run_.all.errors.read + run_.all.errors.connect, 0u);
}

TEST_F(EngineErrorsTest, ServerErrorsAreStatusErrors) {
  const MisbehavingStats s = Run(MisbehavingMode::kStatus500);
  ASSERT_GT(run_.all.requests, 20u);
  EXPECT_EQ(run_.all.errors.status, run_.all.requests);
  EXPECT_EQ(run_.all.status_classes[5], run_.all.requests);
  EXPECT_EQ(run_.all.errors.SocketErrors(), 0u);
  EXPECT_EQ(run_.all.requests + run_.end.drained, s.responses_written);
}

TEST_F(EngineErrorsTest, StatusClassesAreCountedOneByOne) {
  const MisbehavingStats s = Run(MisbehavingMode::kStatusMix);
  const Counters& k = run_.all;
  ASSERT_GT(k.requests, 40u);
  EXPECT_EQ(k.requests + run_.end.drained, s.responses_written);
  EXPECT_EQ(k.errors.SocketErrors(), 0u);
  EXPECT_EQ(k.errors.status, k.status_classes[4] + k.status_classes[5]);
  EXPECT_EQ(k.status_classes[2] + k.status_classes[3] + k.status_classes[4] + k.status_classes[5], k.requests);
  // 200, 301, 404, 503 in turn on each of the 4 connections.
  for (int c : {2, 3, 4, 5})
    EXPECT_NEAR(static_cast<double>(k.status_classes[c]), static_cast<double>(k.requests) / 4.0, 4.0) << c << "xx";
}

TEST_F(EngineErrorsTest, ChunkedResponsesAreComplete) {
  const MisbehavingStats s = Run(MisbehavingMode::kChunked);
  ASSERT_GT(run_.all.requests, 20u);
  EXPECT_EQ(run_.all.errors, ErrorCounts{});
  EXPECT_EQ(run_.all.requests + run_.end.drained, s.responses_written);
}

TEST_F(EngineErrorsTest, ConnectionCloseMeansANewConnectionNotAnError) {
  const MisbehavingStats s = Run(MisbehavingMode::kConnectionClose);
  ASSERT_GT(run_.all.requests, 20u);
  EXPECT_EQ(run_.all.errors, ErrorCounts{});
  EXPECT_EQ(run_.all.requests + run_.end.drained, s.responses_written);
  EXPECT_EQ(run_.all.closes_by_server, run_.all.requests);
  EXPECT_EQ(s.connections_accepted,
            s.responses_written + run_.end.abandoned + (s.connections_accepted - s.requests_read));
}

TEST_F(EngineErrorsTest, CloseDelimitedBodiesEndAtTheClose) {
  const MisbehavingStats s = Run(MisbehavingMode::kCloseDelimited);
  ASSERT_GT(run_.all.requests, 20u);
  EXPECT_EQ(run_.all.errors, ErrorCounts{});
  EXPECT_EQ(run_.all.requests + run_.end.drained, s.responses_written);
  // 13 bytes of body and the headers, every time (a response still being
  // read when the run ended adds its first bytes).
  EXPECT_GE(run_.all.bytes_read, run_.all.requests * 13);
}

TEST_F(EngineErrorsTest, MalformedResponsesAreReadErrors) {
  const MisbehavingStats s = Run(MisbehavingMode::kGarbage);
  ASSERT_GT(s.responses_written, 4u);
  EXPECT_EQ(run_.all.requests, 0u);
  EXPECT_EQ(run_.all.errors.read + run_.end.abandoned, s.responses_written);
}

TEST_F(EngineErrorsTest, AServerThatNeverAcceptsGivesConnectErrorsAndTimeouts) {
  EngineOptions o;
  o.threads = 1;
  o.connections = 8;
  o.timeout = std::chrono::milliseconds(300);
  o.duration = std::chrono::milliseconds(1000);
  o.interval = std::chrono::milliseconds(500);
  Run(MisbehavingMode::kSlowAccept, &o);
  EXPECT_EQ(run_.all.requests, 0u);
  // The backlog holds a couple of handshakes: those connections time out
  // waiting for an answer; the others never connect.
  EXPECT_GT(run_.all.errors.connect, 0u);
  EXPECT_GT(run_.all.errors.timeout, 0u);
  EXPECT_EQ(run_.all.errors.read, 0u);
}

}  // namespace
}  // namespace fairbench::agent
