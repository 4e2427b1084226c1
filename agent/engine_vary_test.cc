// The engine with vary against fairbench-test-misbehaving-server's echo
// modes: a server that answers /echo/N with N passes, one that caches its
// first answer fails every sampled answer, and the Date checks see a
// server without Date and one whose Date stands still. The sample count is
// checked against the server's own count of requests.
#include <gtest/gtest.h>

#include <iostream>

#include "agent/engine_test_util.h"
#include "testing/support/misbehaving_server_fixture.h"

namespace fairbench::agent {
namespace {

using testing::MisbehavingFixtureOptions;
using testing::MisbehavingMode;
using testing::MisbehavingServerFixture;
using testing::MisbehavingStats;

constexpr uint32_t kConnections = 4;
constexpr uint32_t kVerifyEvery = 10;

class EngineVaryTest : public ::testing::Test {
 protected:
  // Runs GET /echo/{n} with vary against a server in `mode`; returns the
  // server's final counts.
  MisbehavingStats Run(MisbehavingMode mode, std::chrono::milliseconds duration = std::chrono::milliseconds(1000)) {
    MisbehavingFixtureOptions fo;
    fo.mode = mode;
    auto server = MisbehavingServerFixture::Start(fo);
    EXPECT_TRUE(server.ok()) << server.status().ToString();
    if (!server.ok()) return {};
    RequestSpec spec;
    spec.target = "/echo/{n}";
    EngineOptions o = TestOptions("127.0.0.1", (*server)->port(), spec);
    o.connections = kConnections;
    o.duration = duration;
    auto plan = std::make_shared<VaryPlan>();
    plan->seed = 1234;
    plan->verify_every = kVerifyEvery;
    plan->request = VaryRequest(spec, "127.0.0.1:" + std::to_string((*server)->port()), true);
    plan->expect = VaryExpect(VaryExpect::Kind::kBody, "{n}");
    o.vary = std::move(plan);
    run_ = RunEngine(o);
    auto stats = (*server)->Stop();
    EXPECT_TRUE(stats.ok()) << stats.status().ToString() << "\n" << (*server)->Output();
    return stats.ok() ? *stats : MisbehavingStats{};
  }
  EngineRun run_;
};

// Catches: answers not sampled every verifyEvery-th per connection (too
// many, too few, or none), a request sent with "{n}" unreplaced (the echo
// would then fail), or an honest answer judged wrong.
TEST_F(EngineVaryTest, HonestServerPassesWithOneSampleInVerifyEvery) {
  const MisbehavingStats s = Run(MisbehavingMode::kEcho);
  const AnswerCounts& a = run_.all.answers;
  ASSERT_GT(s.requests_read, 10u * kVerifyEvery);
  EXPECT_EQ(run_.all.errors.status, 0u);
  EXPECT_EQ(a.failed, 0u);
  EXPECT_EQ(a.without_date, 0u);
  EXPECT_EQ(a.date_frozen, 0u);
  // Each connection samples floor(its requests / k); the server counted
  // every request, including at most one per connection whose answer came
  // while draining (not sampled) or never came.
  const double expected = static_cast<double>(s.requests_read) / kVerifyEvery;
  std::cout << a.verified << " answers verified; the server read " << s.requests_read << " requests" << std::endl;
  EXPECT_GE(static_cast<double>(a.verified), expected - 2.0 * kConnections) << "server requests " << s.requests_read;
  EXPECT_LE(static_cast<double>(a.verified), expected + kConnections) << "server requests " << s.requests_read;
}

// Catches: answers compared without the request's own number (a server
// that caches passes), or samples that are not checked at all.
TEST_F(EngineVaryTest, CachingServerFailsEverySample) {
  const MisbehavingStats s = Run(MisbehavingMode::kEchoCached);
  const AnswerCounts& a = run_.all.answers;
  ASSERT_GT(s.requests_read, 10u * kVerifyEvery);
  ASSERT_GT(a.verified, 0u);
  EXPECT_EQ(a.failed, a.verified);
  EXPECT_EQ(run_.all.errors.status, 0u) << "a cached answer is a 200: only verification can tell";
}

// Catches: a Date header looked for in the wrong place, or missing Dates
// not counted.
TEST_F(EngineVaryTest, MissingDateIsCounted) {
  Run(MisbehavingMode::kEchoNoDate);
  const AnswerCounts& a = run_.all.answers;
  ASSERT_GT(a.verified, 0u);
  EXPECT_EQ(a.without_date, a.verified);
  EXPECT_EQ(a.failed, 0u);
}

// Catches: a frozen Date missed (the same value over more than 2 s), or an
// honest Date taken for frozen.
TEST_F(EngineVaryTest, FrozenDateIsCounted) {
  Run(MisbehavingMode::kEchoFrozenDate, std::chrono::milliseconds(3200));
  EXPECT_GT(run_.all.answers.date_frozen, 0u);
  EXPECT_EQ(run_.all.answers.failed, 0u);
  Run(MisbehavingMode::kEcho, std::chrono::milliseconds(3200));
  EXPECT_EQ(run_.all.answers.date_frozen, 0u);
  EXPECT_GT(run_.all.answers.verified, 0u);
}

// Catches: vary let through where the engine cannot vary each request.
TEST(EngineVaryOptionsTest, RefusesWhatItCannotVary) {
  EngineOptions o = TestOptions("127.0.0.1", 9);
  o.vary = std::make_shared<VaryPlan>();
  EXPECT_TRUE(ValidateOptions(o).ok());
  o.pipeline = 2;
  EXPECT_FALSE(ValidateOptions(o).ok());
  o.pipeline = 1;
  o.requests.push_back(o.requests.front());
  EXPECT_FALSE(ValidateOptions(o).ok());
}

}  // namespace
}  // namespace fairbench::agent
