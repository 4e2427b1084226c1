// The check before the load of a scenario with vary, against the
// misbehaving server's echo modes: "{n}" becomes a number in the request
// and in the expectation, and one answer read to the end of its connection
// shows a Content-Length that disagrees with its body, or a missing Date.
#include <gtest/gtest.h>

#include "controller/orchestrator/verify.h"
#include "testing/support/misbehaving_server_fixture.h"

namespace fairbench::controller {
namespace {

using testing::MisbehavingFixtureOptions;
using testing::MisbehavingMode;
using testing::MisbehavingServerFixture;

api::ScenarioSettings EchoSettings() {
  api::ScenarioSettings s;
  api::WeightedRequest echo;
  echo.request.path = "/echo/{n}";
  s.requests = {echo};
  s.expect.status = 200;
  s.expect.body = "{n}";
  s.vary = api::Vary{42, 10};
  return s;
}

std::unique_ptr<MisbehavingServerFixture> Start(MisbehavingMode mode) {
  MisbehavingFixtureOptions o;
  o.mode = mode;
  auto server = MisbehavingServerFixture::Start(o);
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(*server) : nullptr;
}

// Catches: "{n}" sent as it is by the check before the load (an echo
// would answer "{n}" and a numeric route 404), or an honest answer read to
// its end taken for a bad one.
TEST(VerifyAnswerTest, HonestEcho) {
  auto server = Start(MisbehavingMode::kEcho);
  ASSERT_NE(server, nullptr);
  const Status ok = VerifyScenario("127.0.0.1", server->port(), Scheme::kHttp, EchoSettings());
  EXPECT_TRUE(ok.ok()) << ok.ToString();
  api::ScenarioSettings wrong = EchoSettings();
  wrong.expect.body = "x{n}";
  EXPECT_FALSE(VerifyScenario("127.0.0.1", server->port(), Scheme::kHttp, wrong).ok());
  auto found = ReadAnswerToEnd("127.0.0.1", server->port(), EchoSettings());
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_FALSE(found->content_length.has_value());
  EXPECT_FALSE(found->date_missing);
  auto stats = server->Stop();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->requests_read, 3u);
}

// Catches: a Content-Length that disagrees with the body not seen (the
// answer read through libcurl, which stops at Content-Length), or the
// wrong numbers recorded.
TEST(VerifyAnswerTest, WrongContentLength) {
  auto server = Start(MisbehavingMode::kEchoWrongLength);
  ASSERT_NE(server, nullptr);
  auto found = ReadAnswerToEnd("127.0.0.1", server->port(), EchoSettings());
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  // The server answers the number it was asked for, and one "\n" more.
  const uint64_t digits = VerifyNumber(EchoSettings()).size();
  EXPECT_EQ(found->content_length, digits);
  EXPECT_EQ(found->body_bytes, digits + 1);
  EXPECT_FALSE(found->date_missing);
}

// Catches: a missing Date not seen.
TEST(VerifyAnswerTest, MissingDate) {
  auto server = Start(MisbehavingMode::kEchoNoDate);
  ASSERT_NE(server, nullptr);
  auto found = ReadAnswerToEnd("127.0.0.1", server->port(), EchoSettings());
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_TRUE(found->date_missing);
  EXPECT_FALSE(found->content_length.has_value());
}

// Catches: a target that never answers holding the check (it is bounded).
TEST(VerifyAnswerTest, NoAnswerIsUnavailable) {
  auto port = MisbehavingServerFixture::RefusedPort();
  ASSERT_TRUE(port.ok());
  auto found = ReadAnswerToEnd("127.0.0.1", *port, EchoSettings(), std::chrono::milliseconds(500));
  EXPECT_FALSE(found.ok());
}

}  // namespace
}  // namespace fairbench::controller
