#include "agent/h2_request.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace fairbench::agent {
namespace {

std::vector<std::pair<std::string, std::string>> Fields(const H2Request& r) {
  std::vector<std::pair<std::string, std::string>> f;
  for (size_t i = 0; i < r.header_count(); ++i) {
    const nghttp2_nv& nv = r.headers()[i];
    f.emplace_back(std::string(reinterpret_cast<const char*>(nv.name), nv.namelen),
                   std::string(reinterpret_cast<const char*>(nv.value), nv.valuelen));
  }
  return f;
}

TEST(H2RequestTest, PseudoHeadersFirstThenLowercasedHeadersThenContentLength) {
  RequestSpec spec;
  spec.method = "POST";
  spec.target = "/api?x=1";
  spec.headers = {{"Content-Type", "application/json"}, {"X-Trace", "a b"}};
  spec.body = "{}";
  auto r = H2Request::Build(spec, "http", "example.com:8080");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::vector<std::pair<std::string, std::string>> want = {{":method", "POST"},
                                                                 {":scheme", "http"},
                                                                 {":authority", "example.com:8080"},
                                                                 {":path", "/api?x=1"},
                                                                 {"content-type", "application/json"},
                                                                 {"x-trace", "a b"},
                                                                 {"content-length", "2"}};
  EXPECT_EQ(Fields(**r), want);
  EXPECT_EQ((*r)->body(), "{}");
  EXPECT_FALSE((*r)->head());
}

TEST(H2RequestTest, HostBecomesAuthorityAndTheUsersContentLengthIsKept) {
  RequestSpec spec;
  spec.method = "PUT";
  spec.headers = {{"Host", "virtual.test"}, {"Content-Length", "3"}};
  spec.body = "abc";
  auto r = H2Request::Build(spec, "https", "127.0.0.1:443");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto f = Fields(**r);
  EXPECT_EQ(f[1], (std::pair<std::string, std::string>{":scheme", "https"}));
  EXPECT_EQ(f[2], (std::pair<std::string, std::string>{":authority", "virtual.test"}));
  size_t lengths = 0;
  for (const auto& [n, v] : f) {
    EXPECT_NE(n, "host");
    if (n == "content-length") ++lengths;
  }
  EXPECT_EQ(lengths, 1u);
}

TEST(H2RequestTest, ConnectionSpecificHeadersAreRefusedByName) {
  for (const char* name : {"Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade"}) {
    RequestSpec spec;
    spec.headers = {{name, "x"}};
    auto r = H2Request::Build(spec, "http", "h");
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_NE(r.status().message().find(std::string("'") + name + "'"), std::string::npos) << r.status().message();
  }
  RequestSpec te;
  te.headers = {{"TE", "gzip"}};
  EXPECT_FALSE(H2Request::Build(te, "http", "h").ok());
  te.headers = {{"TE", "trailers"}};
  EXPECT_TRUE(H2Request::Build(te, "http", "h").ok());
}

TEST(H2RequestTest, BadMethodPathSchemeOrValueIsRefused) {
  RequestSpec spec;
  spec.method = "GE T";
  EXPECT_NE(H2Request::Build(spec, "http", "h").status().message().find("method"), std::string::npos);
  spec = {};
  spec.target = "x";
  EXPECT_NE(H2Request::Build(spec, "http", "h").status().message().find("path"), std::string::npos);
  spec = {};
  EXPECT_NE(H2Request::Build(spec, "ftp", "h").status().message().find("scheme"), std::string::npos);
  spec.headers = {{"X-A", std::string("a\0b", 3)}};
  EXPECT_NE(H2Request::Build(spec, "http", "h").status().message().find("'X-A'"), std::string::npos);
  spec = {};
  EXPECT_FALSE(H2Request::Build(spec, "http", "").ok());
}

}  // namespace
}  // namespace fairbench::agent
