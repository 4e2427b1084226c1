// H2Connection makes no heap allocation of its own per request once warm:
// operator new is counted while the client (and only the client) runs.
// nghttp2 allocates through malloc, which is not counted: its per-stream
// state is its own business.
#include <gtest/gtest.h>

#include <cstdlib>
#include <new>

#include "agent/h2_connection.h"
#include "agent/h2_test_server.h"

namespace {
bool counting = false;
uint64_t allocations = 0;
}  // namespace

// These replace the global operators, so new and delete meet malloc and
// free by design; GCC, seeing both inlined, warns about the pairing.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(std::size_t n) {
  if (counting) ++allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace fairbench::agent {
namespace {

struct Counting {
  Counting() { counting = true; }
  ~Counting() { counting = false; }
};

uint64_t RunRequests(H2Connection& c, H2TestServer& server, const H2Request& req, uint64_t total) {
  uint64_t submitted = 0, done = 0;
  for (int guard = 0; guard < 1'000'000 && done < total; ++guard) {
    std::span<const uint8_t> up;
    {
      Counting on;
      while (submitted < total && c.CanSubmit()) c.Submit(req, 0, submitted++);
      up = c.Output();
    }
    server.Receive(up.data(), up.size());
    {
      Counting on;
      c.Consumed(up.size());
    }
    auto down = server.Output();
    {
      Counting on;
      c.Receive(down.data(), down.size());
      done += c.outcomes().size();
      c.outcomes().clear();
    }
    server.Consumed(down.size());
  }
  return done;
}

TEST(H2AllocationTest, NoAllocationPerRequestOnceWarm) {
  H2TestServer server({.response_body = 3000});
  RequestSpec spec;
  spec.method = "POST";
  spec.headers = {{"content-type", "text/plain"}};
  spec.body.assign(1000, 'x');
  auto req = H2Request::Build(spec, "http", "alloc.test");
  ASSERT_TRUE(req.ok());
  auto c = H2Connection::Create({.max_streams = 16});
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(RunRequests(**c, server, **req, 200), 200u);  // warm: buffers at their size
  allocations = 0;
  ASSERT_EQ(RunRequests(**c, server, **req, 5000), 5000u);
  EXPECT_EQ(allocations, 0u) << "operator new calls by the client over 5000 requests";
}

// The same in gRPC mode: reading each response's messages and the
// trailers' grpc-status costs no allocation either (catches header fields
// kept per stream when nothing asked for them).
TEST(H2AllocationTest, NoAllocationPerGrpcCallOnceWarm) {
  H2TestServerOptions so;
  so.raw = true;
  so.raw_body = std::string("\0\0\0\0\x05hello", 10);
  so.headers = {{"content-type", "application/grpc"}};
  so.trailers = {{"grpc-status", "0"}, {"grpc-message", "fine"}};
  H2TestServer server(so);
  RequestSpec spec;
  spec.method = "POST";
  spec.target = "/fairbench.echo.v1.Echo/Unary";
  spec.headers = {{"content-type", "application/grpc"}, {"te", "trailers"}};
  spec.body = std::string("\0\0\0\0\x02hi", 7);
  auto req = H2Request::Build(spec, "http", "alloc.test");
  ASSERT_TRUE(req.ok());
  H2Options options;
  options.max_streams = 16;
  options.grpc = true;
  auto c = H2Connection::Create(options);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(RunRequests(**c, server, **req, 200), 200u);
  allocations = 0;
  ASSERT_EQ(RunRequests(**c, server, **req, 5000), 5000u);
  EXPECT_EQ(allocations, 0u) << "operator new calls by the client over 5000 gRPC calls";
}

}  // namespace
}  // namespace fairbench::agent
