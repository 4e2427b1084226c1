#include "testing/support/nginx_fixture.h"

#include <gtest/gtest.h>

#include "testing/support/http_client.h"

namespace fairbench::testing {
namespace {

using std::chrono::seconds;

TEST(NginxFixtureTest, ServesEndpointsAndLogsEveryRequest) {
  NginxFixture nginx;
  Status started = nginx.Start();
  ASSERT_TRUE(started.ok()) << started.ToString();
  ASSERT_GT(nginx.port(), 0);

  auto c = HttpConnection::Connect(nginx.host(), nginx.port());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto hello = c->RoundTrip(BuildRequest("GET", "/", "x"));
  ASSERT_TRUE(hello.ok()) << hello.status().ToString();
  EXPECT_EQ(hello->status, 200);
  EXPECT_EQ(hello->body, "Hello, World!");
  EXPECT_EQ(hello->Header("Content-Type"), "text/plain");

  auto teapot = c->RoundTrip(BuildRequest("GET", "/status/418", "x"));
  ASSERT_TRUE(teapot.ok());
  EXPECT_EQ(teapot->status, 418);
  auto unavailable = c->RoundTrip(BuildRequest("GET", "/status/503", "x"));
  ASSERT_TRUE(unavailable.ok());
  EXPECT_EQ(unavailable->status, 503);

  const std::string body(20000, 'b');
  auto post = c->RoundTrip(BuildRequest("POST", "/anything?q=1", "x", {}, body));
  ASSERT_TRUE(post.ok()) << post.status().ToString();
  EXPECT_EQ(post->status, 200);
  EXPECT_EQ(post->body, "ok");

  auto other = HttpConnection::Connect(nginx.host(), nginx.port());
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(other->RoundTrip(BuildRequest("GET", "/", "x")).ok());

  auto log = nginx.WaitForAccessLog(5);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ASSERT_EQ(log->size(), 5u);
  const auto& e = *log;
  EXPECT_EQ(e[0].method, "GET");
  EXPECT_EQ(e[0].uri, "/");
  EXPECT_EQ(e[0].status, 200);
  EXPECT_EQ(e[0].connection_requests, 1u);
  EXPECT_EQ(e[1].status, 418);
  EXPECT_EQ(e[2].status, 503);
  EXPECT_EQ(e[3].method, "POST");
  EXPECT_EQ(e[3].uri, "/anything?q=1");
  EXPECT_GT(e[3].request_length, body.size());
  EXPECT_EQ(e[3].connection_requests, 4u);
  EXPECT_EQ(e[3].connection, e[0].connection);
  EXPECT_NE(e[4].connection, e[0].connection);
  EXPECT_EQ(e[4].connection_requests, 1u);
  EXPECT_EQ(e[0].bytes_sent, hello->wire_bytes);

  Status stopped = nginx.Stop();
  EXPECT_TRUE(stopped.ok()) << stopped.ToString();
  EXPECT_FALSE(nginx.running());
}

TEST(NginxFixtureTest, CountsAreExactAfterStop) {
  NginxOptions options;
  options.keepalive_requests = 10;
  NginxFixture nginx(options);
  ASSERT_TRUE(nginx.Start().ok());
  int sent = 0;
  for (int conn = 0; conn < 3; ++conn) {
    auto c = HttpConnection::Connect(nginx.host(), nginx.port());
    ASSERT_TRUE(c.ok());
    for (int i = 0; i < 10; ++i, ++sent) ASSERT_TRUE(c->RoundTrip(BuildRequest("GET", "/", "x")).ok());
    // keepalive_requests 10: nginx closes after the tenth response.
    EXPECT_TRUE(c->WaitForClose(seconds(2)));
  }
  ASSERT_TRUE(nginx.Stop().ok());
  auto log = nginx.AccessLog();
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log->size(), static_cast<size_t>(sent));
  EXPECT_EQ(log->back().connection_requests, 10u);
}

TEST(NginxFixtureTest, ConfigCarriesTheOptions) {
  NginxOptions o;
  o.worker_processes = 2;
  o.worker_cpu_affinity = "auto";
  o.worker_connections = 4096;
  o.worker_rlimit_nofile = 8192;
  o.keepalive_requests = 77;
  o.keepalive_timeout = seconds(9);
  o.listen_backlog = 123;
  std::string conf = NginxFixture::RenderConfig(o, 4242, "/tmp/d");
  for (const char* want : {"daemon off;", "master_process on;", "worker_processes 2;", "worker_cpu_affinity auto;",
                           "worker_connections 4096;", "worker_rlimit_nofile 8192;", "keepalive_requests 77;",
                           "keepalive_timeout 9s;", "listen 127.0.0.1:4242 backlog=123;", "pid /tmp/d/nginx.pid;",
                           "access_log /tmp/d/access.log fairbench;", "error_log /tmp/d/error.log"}) {
    EXPECT_NE(conf.find(want), std::string::npos) << want;
  }

  NginxFixture nginx(o);
  Status started = nginx.Start();
  ASSERT_TRUE(started.ok()) << started.ToString() << "\n" << nginx.ErrorLog();
  auto c = HttpConnection::Connect(nginx.host(), nginx.port());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->RoundTrip(BuildRequest("GET", "/", "x"))->status, 200);
  EXPECT_TRUE(nginx.Stop().ok());
}

TEST(NginxFixtureTest, MissingBinaryFailsClearly) {
  NginxOptions options;
  options.nginx_path = "/nonexistent/nginx";
  NginxFixture nginx(options);
  Status s = nginx.Start();
  EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("/nonexistent/nginx"), std::string::npos);
}

TEST(NginxFixtureTest, ParsesLogLines) {
  auto e = ParseAccessLogLine("1700000000.123\tGET\t/x\t200\t89\t150\t7\t3");
  ASSERT_TRUE(e.ok());
  EXPECT_DOUBLE_EQ(e->msec, 1700000000.123);
  EXPECT_EQ(e->connection, 7u);
  EXPECT_EQ(e->connection_requests, 3u);
  EXPECT_FALSE(ParseAccessLogLine("garbage").ok());
}

}  // namespace
}  // namespace fairbench::testing
