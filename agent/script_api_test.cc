// The Lua side of wrk scripts in process: what response() is handed, and
// what done()'s statistics objects answer for a histogram of known values.
#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <cstring>

#include "agent/script.h"

namespace fairbench::agent {
namespace {

ScriptOptions Options(const std::string& text) {
  ScriptOptions o;
  o.source = ScriptSource{"t.lua", text};
  o.host = "127.0.0.1";
  o.port = "8080";
  o.url = "http://127.0.0.1:8080/";
  SocketAddress a;
  auto* in = reinterpret_cast<sockaddr_in*>(&a.storage);
  in->sin_family = AF_INET;
  in->sin_port = htons(8080);
  in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.length = sizeof(sockaddr_in);
  o.addresses = {a};
  return o;
}

// response() gets the final response's status, headers and body, with the
// interim 100 Continue skipped and a chunked body joined. Catches: the
// interim response's headers handed on, chunk sizes left in the body.
TEST(ScriptApiTest, ResponseGetsTheFinalResponseDechunked) {
  auto script = Script::Create(Options(R"(
local seen = "none"
function response(status, headers, body) seen = status .. "-" .. headers["X-A"] .. "-" .. body end
function request() return wrk.format(nil, "/" .. seen) end
)"));
  ASSERT_TRUE(script.ok()) << script.status().ToString();
  ScriptThread& t = (*script)->thread(0);
  std::string text;
  uint32_t count = 0;
  ASSERT_TRUE(t.Request(&text, &count));
  EXPECT_EQ(text.rfind("GET /none HTTP/1.1\r\n", 0), 0u) << text;
  ASSERT_TRUE(t.ResponseRaw(200,
                            "HTTP/1.1 100 Continue\r\nX-A: interim\r\n\r\n"
                            "HTTP/1.1 200 OK\r\nX-A: b\r\nTransfer-Encoding: chunked\r\n\r\n"
                            "3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\n\r\n"));
  ASSERT_TRUE(t.Request(&text, &count));
  EXPECT_EQ(text.rfind("GET /200-b-abcde HTTP/1.1\r\n", 0), 0u) << text;
}

// As in wrk (wrk.c calls script_verify_request for thread 0 alone):
// request() is called once before the load in thread 0 only, its text is
// what the endpoint check gets, and it is not sent: thread 0's first
// request in the load is its second request() text, thread 1's its first.
// Catches: the checked text sent as the first request, every thread's
// request() called before the load.
TEST(ScriptApiTest, OnlyThreadZerosRequestIsCheckedAndThatTextIsNotSent) {
  ScriptOptions o = Options(R"(
local n = 0
function request()
  n = n + 1
  return wrk.format(nil, "/" .. n)
end
)");
  o.threads = 2;
  auto script = Script::Create(o);
  ASSERT_TRUE(script.ok()) << script.status().ToString();
  EXPECT_EQ((*script)->FirstRequestText().rfind("GET /1 HTTP/1.1\r\n", 0), 0u) << (*script)->FirstRequestText();
  std::string text;
  uint32_t count = 0;
  ASSERT_TRUE((*script)->thread(0).Request(&text, &count));
  EXPECT_EQ(text.rfind("GET /2 HTTP/1.1\r\n", 0), 0u) << text;
  ASSERT_TRUE((*script)->thread(1).Request(&text, &count));
  EXPECT_EQ(text.rfind("GET /1 HTTP/1.1\r\n", 0), 0u) << text;
  EXPECT_EQ(count, 1u);
}

// Without request(), each thread sends what wrk.request() returns: the
// request wrk.init formatted after init(), with the Host header set before
// init() from wrk.host and wrk.port as the script left them (wrk.lua's
// order). Catches: Host taken from the URL, the static request formatted
// before init() ran.
TEST(ScriptApiTest, StaticRequestIsWrkRequestAfterInit) {
  auto script = Script::Create(Options(R"(
wrk.host = "example.test"
function init(args)
  wrk.path = "/after-init"
end
)"));
  ASSERT_TRUE(script.ok()) << script.status().ToString();
  const std::string text = (*script)->FirstRequestText();
  EXPECT_EQ(text.rfind("GET /after-init HTTP/1.1\r\n", 0), 0u) << text;
  EXPECT_NE(text.find("Host: example.test:8080\r\n"), std::string::npos) << text;
}

// done()'s latency object over the values 1..100 µs (one each): extremes,
// mean, the percentile rank round(p/100·n), the distinct values and their
// counts. Catches: percentile off by one rank, stats(i) not 1-based, #stats
// counting samples instead of distinct values.
TEST(ScriptApiTest, DoneStatisticsOfKnownValues) {
  auto script = Script::Create(Options(R"(
function done(summary, latency, requests)
  local v1, c1 = latency(1)
  local v100, c100 = latency(100)
  io.write(string.format("%d %d %.1f %d %d %d %d %d %d %d %d|%d %d|%d", latency.min, latency.max, latency.mean,
    latency:percentile(50), latency:percentile(99), latency:percentile(100), #latency, v1, c1, v100, c100,
    #requests, requests.max, summary.requests))
end
)"));
  ASSERT_TRUE(script.ok()) << script.status().ToString();
  ScriptSummary s;
  for (int v = 1; v <= 100; ++v) s.latency.Record(v);
  s.rate_samples = {10.4, 20.0, 20.2};
  s.requests = 100;
  std::string out;
  ASSERT_TRUE((*script)->Done(s, &out).ok());
  EXPECT_EQ(out, "1 100 50.5 50 99 100 100 1 1 100 1|2 20|100");
}

}  // namespace
}  // namespace fairbench::agent
