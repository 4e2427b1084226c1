// The scenario check before load over TLS: an https target is verified
// with an https request (nginx with a self-signed certificate; the check,
// like the agents, does not verify it), and the same check over plain HTTP
// fails there — nginx answers 400 to plain HTTP on its TLS port.
#include <gtest/gtest.h>

#include "controller/orchestrator/verify.h"
#include "testing/support/nginx_fixture.h"
#include "testing/support/temp_dir.h"
#include "testing/support/test_certs.h"

namespace fairbench::controller {
namespace {

TEST(VerifyHttpsTest, HttpsTargetsAreCheckedOverTls) {
  auto dir = testing::TempDir::Create("fairbench-verify-tls");
  ASSERT_TRUE(dir.ok());
  auto certs = testing::MakeTestCertificates(dir->path().string());
  ASSERT_TRUE(certs.ok()) << certs.status().ToString();
  testing::NginxOptions o;
  o.tls.emplace();
  o.tls->certificate = certs->self_cert;
  o.tls->certificate_key = certs->self_key;
  testing::NginxFixture nginx(o);
  ASSERT_TRUE(nginx.Start().ok());

  api::ScenarioSettings settings;
  api::WeightedRequest hello;
  hello.request.path = "/";
  settings.requests = {hello};
  settings.expect.status = 200;
  settings.expect.body = "Hello, World!";
  const Status ok = VerifyScenario("127.0.0.1", nginx.port(), Scheme::kHttps, settings);
  EXPECT_TRUE(ok.ok()) << ok.ToString();
  const Status plain = VerifyScenario("127.0.0.1", nginx.port(), Scheme::kHttp, settings);
  EXPECT_FALSE(plain.ok());
  EXPECT_NE(plain.message().find("got 400"), std::string::npos) << plain.message();
  ASSERT_TRUE(nginx.Stop().ok());
  auto log = nginx.AccessLog();
  ASSERT_TRUE(log.ok());
  ASSERT_EQ(log->size(), 2u);
  EXPECT_EQ((*log)[0].ssl_protocol.rfind("TLSv1.", 0), 0u) << (*log)[0].ssl_protocol;
  EXPECT_EQ((*log)[1].ssl_protocol, "-");  // the plain request
}

// HTTP/2 targets are checked in HTTP/2, as the agents will load them: an
// h2c listener answers a prior-knowledge request (an HTTP/1.1 one fails
// there), an h2 listener one chosen by ALPN, and a TLS listener without h2
// fails the h2 check (libcurl would silently fall back to HTTP/1.1).
TEST(VerifyHttpsTest, Http2TargetsAreCheckedInHttp2) {
  auto dir = testing::TempDir::Create("fairbench-verify-h2");
  ASSERT_TRUE(dir.ok());
  auto certs = testing::MakeTestCertificates(dir->path().string());
  ASSERT_TRUE(certs.ok()) << certs.status().ToString();
  api::ScenarioSettings settings;
  api::WeightedRequest hello;
  hello.request.path = "/";
  settings.requests = {hello};
  settings.expect.status = 200;
  settings.expect.body = "Hello, World!";

  testing::NginxOptions h2c;
  h2c.http2 = true;
  testing::NginxFixture plain(h2c);
  ASSERT_TRUE(plain.Start().ok());
  const Status ok = VerifyScenario("127.0.0.1", plain.port(), Scheme::kHttp, settings, Protocol::kH2c);
  EXPECT_TRUE(ok.ok()) << ok.ToString();
  EXPECT_FALSE(VerifyScenario("127.0.0.1", plain.port(), Scheme::kHttp, settings, Protocol::kHttp1).ok());

  for (const bool http2 : {true, false}) {
    testing::NginxOptions o;
    o.http2 = http2;
    o.tls.emplace();
    o.tls->certificate = certs->self_cert;
    o.tls->certificate_key = certs->self_key;
    testing::NginxFixture nginx(o);
    ASSERT_TRUE(nginx.Start().ok());
    const Status s = VerifyScenario("127.0.0.1", nginx.port(), Scheme::kHttps, settings, Protocol::kH2);
    EXPECT_EQ(s.ok(), http2) << s.ToString();
  }
}

}  // namespace
}  // namespace fairbench::controller
