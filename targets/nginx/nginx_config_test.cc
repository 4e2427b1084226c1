#include "targets/nginx/nginx_config.h"

#include <gtest/gtest.h>

#include "targets/nginx/access_log_tail.h"

namespace fairbench::targets {
namespace {

TEST(NginxConfigTest, FillsEveryPlaceholder) {
  NginxTargetConfig c;
  c.port = 18123;
  c.workers = 3;
  c.dir = "/tmp/x";
  auto text = RenderNginxConfig(c);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(text->find("{{"), std::string::npos);
  EXPECT_NE(text->find("listen 127.0.0.1:18123 backlog=4096;"), std::string::npos);
  EXPECT_NE(text->find("worker_processes 3;"), std::string::npos);
  EXPECT_NE(text->find("access_log off;"), std::string::npos);
  EXPECT_NE(text->find("pid /tmp/x/nginx.pid;"), std::string::npos);

  c.access_log = true;
  c.host = "::1";
  text = RenderNginxConfig(c);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("access_log /tmp/x/access.log fairbench_count;"), std::string::npos);
  EXPECT_NE(text->find("listen [::1]:18123 backlog=4096;"), std::string::npos);
  EXPECT_EQ(text->find("ssl_"), std::string::npos);
}

// Catches: a protocol flag that does not reach the listen line, TLS without
// its certificate lines.
TEST(NginxConfigTest, TlsAndHttp2ReachTheListenLine) {
  NginxTargetConfig c;
  c.port = 8443;
  c.dir = "/tmp/x";
  c.tls = true;
  EXPECT_FALSE(RenderNginxConfig(c).ok());  // no certificate
  c.cert_file = "/tmp/x/tls.crt";
  c.key_file = "/tmp/x/tls.key";
  auto text = RenderNginxConfig(c);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_NE(text->find("listen 127.0.0.1:8443 ssl backlog=4096;"), std::string::npos) << *text;
  EXPECT_NE(text->find("ssl_certificate /tmp/x/tls.crt;"), std::string::npos);
  EXPECT_NE(text->find("ssl_certificate_key /tmp/x/tls.key;"), std::string::npos);
  c.http2 = true;
  text = RenderNginxConfig(c);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("listen 127.0.0.1:8443 ssl http2 backlog=4096;"), std::string::npos);
  c.tls = false;
  text = RenderNginxConfig(c);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("listen 127.0.0.1:8443 http2 backlog=4096;"), std::string::npos);
  EXPECT_EQ(text->find("ssl_"), std::string::npos);
}

TEST(NginxConfigTest, UnknownPlaceholderIsAnError) {
  EXPECT_EQ(*FillPlaceholders("a {{x}} b {{x}}", {{"x", "1"}}), "a 1 b 1");
  EXPECT_FALSE(FillPlaceholders("{{y}}", {{"x", "1"}}).ok());
  EXPECT_FALSE(FillPlaceholders("{{x", {{"x", "1"}}).ok());
}

TEST(NginxConfigTest, ParsesMsec) {
  EXPECT_EQ(*ParseMsec("1796005913.555"), 1796005913555);
  EXPECT_FALSE(ParseMsec("1796005913.55").ok());
  EXPECT_FALSE(ParseMsec("17960x5913.555").ok());
  EXPECT_FALSE(ParseMsec("").ok());
}

}  // namespace
}  // namespace fairbench::targets
