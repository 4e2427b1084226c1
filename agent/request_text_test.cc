// Request texts (what a script's request() returns) counted and split.
#include "agent/request_text.h"

#include <gtest/gtest.h>

namespace fairbench::agent {
namespace {

// Each request of a pipelined text is counted, bodies by their
// Content-Length. Catches: a text counted as one request, a body's bytes
// read as the next request's start.
TEST(RequestTextTest, CountsEveryRequestOfAText) {
  const std::string get = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::string post = "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\nGET / HTTP/1.1\r\n\r\n\r\n";
  EXPECT_EQ(*CountRequests(get), 1u);
  EXPECT_EQ(*CountRequests(get + post + get), 3u);
  EXPECT_EQ(*CountRequests("GET / HTTP/1.0\n\n"), 1u) << "bare LF line ends, as HTTP parsers accept";
}

// What is not a request is refused with why, and the text shown cut short.
// Catches: garbage accepted as a request (the server would see it), a
// message without the text.
TEST(RequestTextTest, RefusesWhatIsNotARequest) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty text"},
      {"hello", "incomplete request line"},
      {"GET /\r\n\r\n", "not 'METHOD target HTTP/1.1'"},
      {"GET / HTTP/2\r\n\r\n", "not HTTP/1.1 or HTTP/1.0"},
      {"G(T / HTTP/1.1\r\n\r\n", "method is not a token"},
      {"GET / HTTP/1.1\r\nHost x\r\n\r\n", "not 'Name: value'"},
      {"GET / HTTP/1.1\r\nHost: x\r\n", "no blank line"},
      {"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab", "shorter than its Content-Length"},
      {"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n", "not a number"},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "chunked"},
      {"GET / HTTP/1.1\r\n\r\nGET /", "request 2: incomplete request line"},
  };
  for (const auto& [text, why] : cases) {
    auto n = CountRequests(text);
    ASSERT_FALSE(n.ok()) << text;
    EXPECT_NE(n.status().message().find(why), std::string::npos) << n.status().message();
    EXPECT_FALSE(SplitRequests(text).ok()) << text;
  }
  const std::string long_text(500, 'x');
  const std::string msg = CountRequests(long_text).status().message();
  EXPECT_LT(msg.size(), 200u) << "the text is cut short";
  EXPECT_NE(msg.find("…"), std::string::npos);
  EXPECT_EQ(QuoteText("a\r\nb\x01\""), "\"a\\r\\nb\\x01\\\"\"");
}

// The parts of each request, for HTTP/2 streams. Catches: headers dropped
// or reordered, Content-Length kept (HTTP/2 derives its own), a body cut.
TEST(RequestTextTest, SplitsIntoMethodTargetHeadersAndBody) {
  auto specs = SplitRequests(
      "POST /echo?x=1 HTTP/1.1\r\nHost: h:1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
      "HEAD / HTTP/1.1\r\nX-A:  b \r\n\r\n");
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  ASSERT_EQ(specs->size(), 2u);
  const RequestSpec& a = (*specs)[0];
  EXPECT_EQ(a.method, "POST");
  EXPECT_EQ(a.target, "/echo?x=1");
  EXPECT_EQ(a.body, "{}");
  ASSERT_EQ(a.headers.size(), 2u);
  EXPECT_EQ(a.headers[0], (std::pair<std::string, std::string>{"Host", "h:1"}));
  EXPECT_EQ(a.headers[1], (std::pair<std::string, std::string>{"Content-Type", "application/json"}));
  EXPECT_EQ((*specs)[1].method, "HEAD");
  EXPECT_EQ((*specs)[1].headers[0].second, "b");
}

}  // namespace
}  // namespace fairbench::agent
