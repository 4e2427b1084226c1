#include "agent/request.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include <unistd.h>

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

class MixFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("fairbench-mix-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const auto p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  std::filesystem::path dir_;
};

TEST_F(MixFileTest, LoadsAWeightedMixWithBodyFiles) {
  Write("body.json", R"({"k":1})");
  const std::string path = Write("mix.yaml", R"(requests:
  - name: hello
    path: /
    weight: 3
  - method: POST
    path: /api/echo
    headers: {Content-Type: application/json}
    bodyFile: body.json
)");
  auto mix = LoadRequestMix(path);
  ASSERT_TRUE(mix.ok()) << mix.status().ToString();
  ASSERT_EQ(mix->size(), 2u);
  EXPECT_EQ((*mix)[0].name, "hello");
  EXPECT_EQ((*mix)[0].weight, 3u);
  EXPECT_EQ((*mix)[1].method, "POST");
  EXPECT_EQ((*mix)[1].body, R"({"k":1})");
  EXPECT_EQ((*mix)[1].headers.at(0).first, "Content-Type");
}

TEST_F(MixFileTest, ErrorsNameTheLineAndField) {
  auto bad_yaml = LoadRequestMix(Write("a.yaml", "requests:\n  - path: /\n    weight: [1\n"));
  ASSERT_FALSE(bad_yaml.ok());
  EXPECT_NE(bad_yaml.status().message().find("a.yaml:"), std::string::npos) << bad_yaml.status().message();

  auto unknown = LoadRequestMix(Write("b.yaml", "requests:\n  - path: /\n    wieght: 2\n"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("b.yaml:3:5: requests[0].wieght: unknown field"), std::string::npos)
      << unknown.status().message();

  auto no_path = LoadRequestMix(Write("c.yaml", "requests:\n  - method: GET\n"));
  ASSERT_FALSE(no_path.ok());
  EXPECT_NE(no_path.status().message().find("requests[0].path: required"), std::string::npos);

  auto bad_weight = LoadRequestMix(Write("d.yaml", "requests:\n  - path: /\n    weight: 0\n"));
  ASSERT_FALSE(bad_weight.ok());
  EXPECT_NE(bad_weight.status().message().find("d.yaml:3:13: requests[0].weight: must be between 1"), std::string::npos)
      << bad_weight.status().message();

  auto missing_body = LoadRequestMix(Write("e.yaml", "requests:\n  - path: /\n    bodyFile: nope.json\n"));
  ASSERT_FALSE(missing_body.ok());
  EXPECT_NE(missing_body.status().message().find("cannot read"), std::string::npos);

  EXPECT_FALSE(LoadRequestMix((dir_ / "absent.yaml").string()).ok());
  EXPECT_FALSE(LoadRequestMix(Write("f.yaml", "requests: []\n")).ok());
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

  u = ParseUrl("http://[::1]:9000/x#frag");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->target, "/x");
  EXPECT_EQ(u->HostHeader(), "[::1]:9000");

  for (const char* bad : {"127.0.0.1:8080/", "https://example.org/", "ftp://x/", "http://:80/", "http://h:0/",
                          "http://h:99999/", "http://h:8x/", "http://[::1/", "http://user@h/", "http://h/a b",
                          "http://h o/"}) {
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
