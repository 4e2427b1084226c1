#include "agent/request.h"

#include <gtest/gtest.h>

#include <map>

#include "agent/url.h"

namespace fairbench::agent {
namespace {

TEST(RequestTest, BuildsWrksRequestByteForByte) {
  RequestSpec get;
  EXPECT_EQ(BuildRequest(get, "127.0.0.1:8080", true).bytes, "GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n");

  RequestSpec post;
  post.method = "POST";
  post.target = "/api/echo?x=1";
  post.headers = {{"Content-Type", "application/json"}, {"X-Trace", "a b"}};
  post.body = R"({"name":"Alice","age":30,"email":"alice@example.com"})";
  EXPECT_EQ(BuildRequest(post, "localhost", true).bytes,
            "POST /api/echo?x=1 HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nX-Trace: a b\r\n"
            "Content-Length: 53\r\n\r\n"
            R"({"name":"Alice","age":30,"email":"alice@example.com"})");
}

TEST(RequestTest, ShortConnectionModeAsksTheServerToClose) {
  RequestSpec get;
  EXPECT_EQ(BuildRequest(get, "h", false).bytes, "GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
}

TEST(RequestTest, UserHeadersOverrideOurs) {
  RequestSpec spec;
  spec.method = "PUT";
  spec.headers = {{"host", "example.org"}, {"Content-Length", "3"}, {"Connection", "keep-alive"}};
  spec.body = "abc";
  EXPECT_EQ(BuildRequest(spec, "h:1", false).bytes,
            "PUT / HTTP/1.1\r\nhost: example.org\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\nabc");
}

TEST(RequestTest, HeadRequestsAreMarked) {
  RequestSpec spec;
  spec.method = "HEAD";
  EXPECT_TRUE(BuildRequest(spec, "h", true).head);
  EXPECT_FALSE(BuildRequest(RequestSpec{}, "h", true).head);
}

TEST(RequestTest, ParsesHeaders) {
  auto h = ParseHeader("Accept:   text/plain  ");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->first, "Accept");
  EXPECT_EQ(h->second, "text/plain");
  EXPECT_FALSE(ParseHeader("no colon").ok());
  EXPECT_FALSE(ParseHeader(": value").ok());
  EXPECT_FALSE(ParseHeader("Bad Name: v").ok());
  EXPECT_FALSE(ParseHeader("X: a\r\nInjected: b").ok());
}

TEST(RequestTest, ValidatesMethodAndPath) {
  RequestSpec spec;
  spec.method = "GE T";
  EXPECT_FALSE(ValidateRequest(spec, "").ok());
  spec.method = "GET";
  spec.target = "relative";
  EXPECT_FALSE(ValidateRequest(spec, "").ok());
  spec.target = "/a b";
  EXPECT_FALSE(ValidateRequest(spec, "").ok());
  spec.target = "/ok";
  EXPECT_TRUE(ValidateRequest(spec, "").ok());
}

TEST(RequestScheduleTest, FollowsWeightsExactlyAndSmoothly) {
  RequestSchedule schedule({3, 1, 1});
  std::map<uint32_t, int> counts;
  std::string order;
  for (int i = 0; i < 5; ++i) {
    const uint32_t k = schedule.Next();
    ++counts[k];
    order += static_cast<char>('a' + k);
  }
  EXPECT_EQ(counts[0], 3);
  EXPECT_EQ(counts[1], 1);
  EXPECT_EQ(counts[2], 1);
  EXPECT_EQ(order, "abaca");  // smooth: the heavy one is spread out
  for (int i = 0; i < 5000; ++i) ++counts[schedule.Next()];
  EXPECT_EQ(counts[0], 3003);
  EXPECT_EQ(counts[1], 1001);
}

TEST(UrlTest, ParsesWhatWrkAccepts) {
  auto u = ParseUrl("http://127.0.0.1:8080/api/status?x=1");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, 8080);
  EXPECT_EQ(u->target, "/api/status?x=1");
  EXPECT_EQ(u->HostHeader(), "127.0.0.1:8080");

  u = ParseUrl("http://localhost");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->port, 80);
  EXPECT_EQ(u->target, "/");
  EXPECT_EQ(u->HostHeader(), "localhost");

  u = ParseUrl("HTTPS://example.org/a");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->scheme, Scheme::kHttps);
  EXPECT_EQ(u->port, 443);
  EXPECT_EQ(u->HostHeader(), "example.org");
  u = ParseUrl("https://127.0.0.1:8443");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->scheme, Scheme::kHttps);
  EXPECT_EQ(u->port, 8443);
  EXPECT_EQ(ParseUrl("http://localhost")->scheme, Scheme::kHttp);

  u = ParseUrl("http://[::1]:9000/x#frag");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->target, "/x");
  EXPECT_EQ(u->HostHeader(), "[::1]:9000");

  for (const char* bad :
       {"127.0.0.1:8080/", "ftp://x/", "https://h:0/", "http://:80/", "http://h:0/", "http://h:99999/", "http://h:8x/",
        "http://[::1/", "http://user@h/", "http://h/a b", "http://h o/"}) {
    EXPECT_FALSE(ParseUrl(bad).ok()) << bad;
  }
}

TEST(UrlTest, ResolvesLoopbackAndRejectsUnknownHosts) {
  auto a = Resolve("127.0.0.1", 80);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->front().ToString(), "127.0.0.1:80");
  auto b = Resolve("::1", 8080);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->front().ToString(), "[::1]:8080");
  auto bad = Resolve("no-such-host.invalid", 80);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("cannot resolve host 'no-such-host.invalid'"), std::string::npos);
}

}  // namespace
}  // namespace fairbench::agent
