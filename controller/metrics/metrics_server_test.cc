#include "controller/metrics/metrics_server.h"

#include <gtest/gtest.h>

#include <atomic>

#include "testing/support/http_client.h"

namespace fairbench::metrics {
namespace {

using testing::BuildRequest;
using testing::HttpConnection;

class MetricsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MetricsServerOptions o;
    o.address = "127.0.0.1:0";
    o.render = [this] { return "fairbench_x " + std::to_string(++scrapes_) + "\n"; };
    o.ready = [this] { return ready_.load(); };
    auto s = MetricsServer::Start(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
  }
  testing::HttpResponse Get(const std::string& path, const std::string& method = "GET") {
    auto c = HttpConnection::Connect("127.0.0.1", server_->port());
    EXPECT_TRUE(c.ok());
    auto r = c->RoundTrip(BuildRequest(method, path, "127.0.0.1"));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : testing::HttpResponse{};
  }

  std::atomic<int> scrapes_{0};
  std::atomic<bool> ready_{true};
  std::unique_ptr<MetricsServer> server_;
};

TEST_F(MetricsServerTest, ServesMetricsInTextFormat) {
  EXPECT_GT(server_->port(), 0);
  auto r = Get("/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(r.body, "fairbench_x 1\n");
  EXPECT_EQ(Get("/metrics").body, "fairbench_x 2\n");
}

TEST_F(MetricsServerTest, KeepAliveServesSeveralScrapesOnOneConnection) {
  auto c = HttpConnection::Connect("127.0.0.1", server_->port());
  ASSERT_TRUE(c.ok());
  for (int i = 1; i <= 3; ++i) {
    auto r = c->RoundTrip(BuildRequest("GET", "/metrics", "127.0.0.1"));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->body, "fairbench_x " + std::to_string(i) + "\n");
  }
}

TEST_F(MetricsServerTest, HealthAndReadiness) {
  EXPECT_EQ(Get("/healthz").status, 200);
  EXPECT_EQ(Get("/readyz").status, 200);
  ready_ = false;
  EXPECT_EQ(Get("/readyz").status, 503);
  EXPECT_EQ(Get("/healthz").status, 200);
}

TEST_F(MetricsServerTest, UnknownPathsAndMethods) {
  EXPECT_EQ(Get("/nope").status, 404);
  EXPECT_EQ(Get("/metrics", "POST").status, 405);
}

TEST(MetricsServerAddressTest, BadOrBusyAddressesAreErrors) {
  std::string host;
  uint16_t port = 0;
  EXPECT_TRUE(SplitHostPort("[::1]:9100", &host, &port).ok());
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 9100);
  EXPECT_FALSE(SplitHostPort("9100", &host, &port).ok());
  EXPECT_FALSE(SplitHostPort(":9100", &host, &port).ok());
  EXPECT_FALSE(SplitHostPort("localhost:99999", &host, &port).ok());
  EXPECT_FALSE(SplitHostPort("localhost:http", &host, &port).ok());

  MetricsServerOptions o;
  o.address = "127.0.0.1:0";
  o.render = [] { return std::string(); };
  auto first = MetricsServer::Start(o);
  ASSERT_TRUE(first.ok());
  o.address = "127.0.0.1:" + std::to_string((*first)->port());
  auto second = MetricsServer::Start(o);
  EXPECT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Status::Code::kUnavailable);
  (*first)->Stop();
  (*first)->Stop();  // idempotent
}

}  // namespace
}  // namespace fairbench::metrics
