#include "testing/support/http_client.h"

#include <gtest/gtest.h>

namespace fairbench::testing {
namespace {

TEST(HttpClientTest, BuildRequestAddsOnlyHostAndContentLength) {
  EXPECT_EQ(BuildRequest("GET", "/users/42", "127.0.0.1:8080"),
            "GET /users/42 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n");
  EXPECT_EQ(BuildRequest("POST", "/api/echo", "h", {{"Content-Type", "application/json"}}, "{}"),
            "POST /api/echo HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
  EXPECT_EQ(BuildRequest("POST", "/", "h"), "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n");
}

TEST(HttpClientTest, HeaderLookupIgnoresCase) {
  HttpResponse r;
  r.headers = {{"Content-Type", "text/plain"}, {"X-A", "1"}, {"x-a", "2"}};
  EXPECT_EQ(r.Header("content-type"), "text/plain");
  EXPECT_EQ(r.Header("X-A"), "1");
  EXPECT_TRUE(r.HasHeader("CONTENT-TYPE"));
  EXPECT_FALSE(r.HasHeader("Content-Length"));
}

}  // namespace
}  // namespace fairbench::testing
