#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>

#include <thread>

#include "testing/support/http_client.h"
#include "testing/support/misbehaving_server_fixture.h"

namespace fairbench::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const std::string kGet = BuildRequest("GET", "/", "127.0.0.1");

std::unique_ptr<MisbehavingServerFixture> StartServer(MisbehavingMode mode, milliseconds delay = milliseconds(1000)) {
  MisbehavingFixtureOptions options;
  options.mode = mode;
  options.delay = delay;
  auto server = MisbehavingServerFixture::Start(options);
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(*server) : nullptr;
}

HttpConnection MustConnect(const MisbehavingServerFixture& s) {
  auto c = HttpConnection::Connect(s.host(), s.port());
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(*c);
}

MisbehavingStats MustStop(MisbehavingServerFixture& s) {
  auto stats = s.Stop();
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  return stats.ok() ? *stats : MisbehavingStats{};
}

TEST(MisbehavingServerTest, OkKeepsAliveAndCountsPipelinedRequests) {
  auto s = StartServer(MisbehavingMode::kOk);
  ASSERT_TRUE(s);
  auto c = MustConnect(*s);
  for (int i = 0; i < 3; ++i) {
    auto r = c.RoundTrip(kGet);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "Hello, World!");
    EXPECT_EQ(r->Header("Content-Type"), "text/plain");
  }
  ASSERT_TRUE(c.Send(kGet + kGet).ok());  // pipelined
  EXPECT_EQ(c.ReadResponse()->body, "Hello, World!");
  EXPECT_EQ(c.ReadResponse()->body, "Hello, World!");

  auto mid = s->Stats();
  ASSERT_TRUE(mid.ok()) << mid.status().ToString();
  EXPECT_EQ(mid->requests_read, 5u);
  EXPECT_EQ(mid->responses_written, 5u);
  auto again = s->Stats();
  ASSERT_TRUE(again.ok());
  EXPECT_GT(again->snapshot, mid->snapshot);

  auto last = MustStop(*s);
  EXPECT_EQ(last.mode, "ok");
  EXPECT_TRUE(last.settled);
  EXPECT_EQ(last.connections_accepted, 1u);
  EXPECT_EQ(last.requests_read, 5u);
  EXPECT_EQ(last.responses_written, 5u);
  EXPECT_EQ(last.partial_responses, 0u);
}

TEST(MisbehavingServerTest, OkHonoursConnectionClose) {
  auto s = StartServer(MisbehavingMode::kOk);
  ASSERT_TRUE(s);
  auto c = MustConnect(*s);
  auto r = c.RoundTrip(BuildRequest("GET", "/", "x", {{"Connection", "close"}}));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(c.WaitForClose(seconds(2)));
}

TEST(MisbehavingServerTest, ResetMidResponseGivesConnectionReset) {
  auto s = StartServer(MisbehavingMode::kResetMidResponse);
  ASSERT_TRUE(s);
  for (int i = 0; i < 3; ++i) {
    auto c = MustConnect(*s);
    auto r = c.RoundTrip(kGet);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Status::Code::kIoError);
    EXPECT_NE(r.status().message().find("Connection reset"), std::string::npos) << r.status().message();
  }
  auto st = MustStop(*s);
  EXPECT_EQ(st.connections_accepted, 3u);
  EXPECT_EQ(st.requests_read, 3u);
  EXPECT_EQ(st.responses_written, 0u);
  EXPECT_EQ(st.partial_responses, 3u);
}

TEST(MisbehavingServerTest, CloseEarlyClosesWithoutAnswer) {
  auto s = StartServer(MisbehavingMode::kCloseEarly);
  ASSERT_TRUE(s);
  auto c = MustConnect(*s);
  auto r = c.RoundTrip(kGet);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "closed by peer after 0 bytes");
  auto st = MustStop(*s);
  EXPECT_EQ(st.requests_read, 1u);
  EXPECT_EQ(st.responses_written, 0u);
}

TEST(MisbehavingServerTest, CloseAfterHeadersCutsTheBody) {
  auto s = StartServer(MisbehavingMode::kCloseAfterHeaders);
  ASSERT_TRUE(s);
  auto c = MustConnect(*s);
  auto r = c.RoundTrip(kGet);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kIoError);
  EXPECT_NE(r.status().message().find("closed by peer"), std::string::npos);
  EXPECT_EQ(c.buffered().substr(c.buffered().size() - 14), "\r\n\r\n0123456789");
  auto st = MustStop(*s);
  EXPECT_EQ(st.partial_responses, 1u);
  EXPECT_EQ(st.responses_written, 0u);
}

TEST(MisbehavingServerTest, DelayOutlastsAClientTimeoutAndCountsAbandoned) {
  auto s = StartServer(MisbehavingMode::kDelay, milliseconds(300));
  ASSERT_TRUE(s);
  {
    auto impatient = MustConnect(*s);
    auto r = impatient.RoundTrip(kGet, milliseconds(50));
    EXPECT_EQ(r.status().code(), Status::Code::kDeadlineExceeded);
  }  // closed before the answer is due
  auto patient = MustConnect(*s);
  auto t0 = std::chrono::steady_clock::now();
  auto r = patient.RoundTrip(kGet, seconds(3));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GE(std::chrono::steady_clock::now() - t0, milliseconds(290));
  EXPECT_EQ(r->body, "Hello, World!");
  auto st = MustStop(*s);
  EXPECT_EQ(st.requests_read, 2u);
  EXPECT_EQ(st.responses_written, 1u);
  EXPECT_EQ(st.abandoned_responses, 1u);
}

TEST(MisbehavingServerTest, Status500) {
  auto s = StartServer(MisbehavingMode::kStatus500);
  ASSERT_TRUE(s);
  auto c = MustConnect(*s);
  for (int i = 0; i < 2; ++i) {
    auto r = c.RoundTrip(kGet);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 500);
    EXPECT_EQ(r->body, "Internal Server Error");
  }
  EXPECT_EQ(MustStop(*s).responses_written, 2u);
}

TEST(MisbehavingServerTest, StatusMixCyclesPerConnection) {
  auto s = StartServer(MisbehavingMode::kStatusMix);
  ASSERT_TRUE(s);
  auto a = MustConnect(*s);
  std::vector<int> seen;
  for (int i = 0; i < 5; ++i) seen.push_back(a.RoundTrip(kGet)->status);
  EXPECT_EQ(seen, (std::vector<int>{200, 301, 404, 503, 200}));
  auto b = MustConnect(*s);
  EXPECT_EQ(b.RoundTrip(kGet)->status, 200);
  EXPECT_EQ(MustStop(*s).responses_written, 6u);
}

TEST(MisbehavingServerTest, ChunkedWithExtensionsAndTrailer) {
  auto s = StartServer(MisbehavingMode::kChunked);
  ASSERT_TRUE(s);
  auto c = MustConnect(*s);
  for (int i = 0; i < 2; ++i) {
    auto r = c.RoundTrip(kGet);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r->chunked);
    EXPECT_EQ(r->body, "Hello, World!");
    ASSERT_EQ(r->trailers.size(), 1u);
    EXPECT_EQ(r->trailers[0].first, "X-Checksum");
    EXPECT_EQ(r->trailers[0].second, "13");
  }
}

TEST(MisbehavingServerTest, ConnectionCloseAnswersOncePerConnection) {
  auto s = StartServer(MisbehavingMode::kConnectionClose);
  ASSERT_TRUE(s);
  for (int i = 0; i < 2; ++i) {
    auto c = MustConnect(*s);
    auto r = c.RoundTrip(kGet);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->Header("Connection"), "close");
    EXPECT_EQ(r->body, "Hello, World!");
    EXPECT_TRUE(c.WaitForClose(seconds(2)));
  }
  auto st = MustStop(*s);
  EXPECT_EQ(st.connections_accepted, 2u);
  EXPECT_EQ(st.responses_written, 2u);
}

TEST(MisbehavingServerTest, CloseDelimitedBody) {
  auto s = StartServer(MisbehavingMode::kCloseDelimited);
  ASSERT_TRUE(s);
  auto c = MustConnect(*s);
  auto r = c.RoundTrip(kGet);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->close_delimited);
  EXPECT_FALSE(r->HasHeader("Content-Length"));
  EXPECT_EQ(r->body, "Hello, World!");
}

TEST(MisbehavingServerTest, GarbageStatusLine) {
  auto s = StartServer(MisbehavingMode::kGarbage);
  ASSERT_TRUE(s);
  auto c = MustConnect(*s);
  auto r = c.RoundTrip(kGet);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(MustStop(*s).responses_written, 1u);
}

TEST(MisbehavingServerTest, SlowAcceptNeverAnswers) {
  auto s = StartServer(MisbehavingMode::kSlowAccept);
  ASSERT_TRUE(s);
  // The accept queue holds two connections; after that, handshakes stall.
  std::vector<HttpConnection> queued;
  bool stalled = false;
  for (int i = 0; i < 4 && !stalled; ++i) {
    auto c = HttpConnection::Connect(s->host(), s->port(), milliseconds(300));
    if (c.ok()) {
      queued.push_back(std::move(*c));
    } else {
      EXPECT_EQ(c.status().code(), Status::Code::kDeadlineExceeded) << c.status().ToString();
      stalled = true;
    }
  }
  EXPECT_TRUE(stalled);
  ASSERT_FALSE(queued.empty());
  auto r = queued[0].RoundTrip(kGet, milliseconds(100));
  EXPECT_EQ(r.status().code(), Status::Code::kDeadlineExceeded);
  auto st = MustStop(*s);
  EXPECT_EQ(st.connections_accepted, 0u);
  EXPECT_EQ(st.requests_read, 0u);
}

TEST(MisbehavingServerTest, RefusedPortRefuses) {
  auto port = MisbehavingServerFixture::RefusedPort();
  ASSERT_TRUE(port.ok());
  auto c = HttpConnection::Connect("127.0.0.1", *port);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Status::Code::kUnavailable);
  EXPECT_NE(c.status().message().find("refused"), std::string::npos) << c.status().message();
}

TEST(MisbehavingServerTest, HandlesHundredsOfConnections) {
  auto s = StartServer(MisbehavingMode::kOk);
  ASSERT_TRUE(s);
  constexpr int kConnections = 300;
  std::vector<HttpConnection> conns;
  for (int i = 0; i < kConnections; ++i) conns.push_back(MustConnect(*s));
  for (auto& c : conns) ASSERT_TRUE(c.Send(kGet).ok());
  int ok = 0;
  for (auto& c : conns) ok += c.ReadResponse().ok() ? 1 : 0;
  EXPECT_EQ(ok, kConnections);
  auto st = MustStop(*s);
  EXPECT_EQ(st.connections_accepted, static_cast<uint64_t>(kConnections));
  EXPECT_EQ(st.requests_read, static_cast<uint64_t>(kConnections));
  EXPECT_EQ(st.responses_written, static_cast<uint64_t>(kConnections));
}

TEST(MisbehavingServerTest, UnknownModeFailsToStart) {
  EXPECT_EQ(ParseMode("nope").status().code(), Status::Code::kInvalidArgument);
  for (MisbehavingMode m : AllModes()) EXPECT_EQ(*ParseMode(ModeName(m)), m);
}

// Catches: an echo mode that does not do what the vary tests take it to
// do — the honest one answering anything but N, the caching one answering
// anything but the first N, a Content-Length that is not one short of the
// body, a Date where there should be none or one that moves when frozen.
TEST(MisbehavingServerTest, EchoModes) {
  auto get = [](std::string_view path) { return BuildRequest("GET", path, "127.0.0.1"); };
  {
    auto s = StartServer(MisbehavingMode::kEcho);
    ASSERT_TRUE(s);
    auto c = MustConnect(*s);
    for (const char* n : {"5", "123456"}) {
      auto r = c.RoundTrip(get(std::string("/echo/") + n));
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(r->body, n);
      EXPECT_TRUE(r->HasHeader("Date"));
    }
    EXPECT_EQ(c.RoundTrip(get("/other"))->status, 404);
  }
  {
    auto s = StartServer(MisbehavingMode::kEchoCached);
    ASSERT_TRUE(s);
    auto c = MustConnect(*s);
    EXPECT_EQ(c.RoundTrip(get("/echo/5"))->body, "5");
    EXPECT_EQ(c.RoundTrip(get("/echo/6"))->body, "5");
    auto other = MustConnect(*s);
    EXPECT_EQ(other.RoundTrip(get("/echo/7"))->body, "5");
  }
  {
    auto s = StartServer(MisbehavingMode::kEchoWrongLength);
    ASSERT_TRUE(s);
    auto c = MustConnect(*s);
    ASSERT_TRUE(c.Send(get("/echo/42")).ok());
    auto r = c.ReadResponse();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->Header("Content-Length"), "2");
    EXPECT_EQ(r->body, "42");
    EXPECT_EQ(r->Header("Connection"), "close");
    // The byte past the Content-Length, then the close.
    std::string rest = c.buffered();
    for (;;) {
      pollfd p{c.fd(), POLLIN, 0};
      if (poll(&p, 1, 2000) != 1) break;
      char buf[64];
      const ssize_t n = recv(c.fd(), buf, sizeof buf, 0);
      if (n <= 0) break;
      rest.append(buf, static_cast<size_t>(n));
    }
    EXPECT_EQ(rest, "\n");
  }
  {
    auto s = StartServer(MisbehavingMode::kEchoNoDate);
    ASSERT_TRUE(s);
    auto c = MustConnect(*s);
    auto r = c.RoundTrip(get("/echo/1"));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->body, "1");
    EXPECT_FALSE(r->HasHeader("Date"));
  }
  {
    auto s = StartServer(MisbehavingMode::kEchoFrozenDate);
    ASSERT_TRUE(s);
    auto c = MustConnect(*s);
    const std::string first = c.RoundTrip(get("/echo/1"))->Header("Date");
    std::this_thread::sleep_for(milliseconds(1100));
    const auto r = c.RoundTrip(get("/echo/2"));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->body, "2");
    EXPECT_FALSE(first.empty());
    EXPECT_EQ(r->Header("Date"), first);
  }
}

}  // namespace
}  // namespace fairbench::testing
