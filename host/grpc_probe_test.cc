// GrpcHealthCheck and GrpcProbeCall against real gRPC C++ servers in this
// process: the reference target (targets/grpc/, whose own counts are the
// truth) and, for what it cannot be made to do (NOT_SERVING, no health
// service, recording the metadata it got), small servers built here with
// gRPC's own ServerBuilder and default health service.
#include "host/grpc_probe.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "common/grpc_message.h"
#include "echo.grpc.pb.h"
#include "targets/grpc/echo_server.h"
#include "testing/support/ports.h"
#include "testing/support/test_certs.h"
#include "testing/support/time_scale.h"

namespace fairbench::host {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

constexpr const char* kHost = "127.0.0.1";

struct Target {
  targets::RequestCounter counter;
  std::unique_ptr<targets::EchoServer> server;

  // The synchronous API: the probe is what these tests are about, and the
  // callback API's reactor plumbing (inline in grpcpp's headers, handed
  // between threads by gRPC's uninstrumented core) is what ThreadSanitizer
  // cannot see ordered in this one process.
  explicit Target(targets::EchoServerOptions o = {}) {
    o.api = targets::GrpcApi::kSync;
    o.threads = 1;
    server = std::make_unique<targets::EchoServer>(o, &counter);
    const Status st = server->Start();
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  uint16_t port() const { return server->port(); }
};

// A server built here: the given service (a server needs one), gRPC's default health service
// on or off, bound to a free port.
struct OwnServer {
  std::unique_ptr<grpc::Server> server;
  int port = 0;

  OwnServer(bool health, grpc::Service* service) {
    grpc::EnableDefaultHealthCheckService(health);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service);
    server = builder.BuildAndStart();
    EXPECT_NE(server, nullptr);
    EXPECT_NE(port, 0);
  }
  ~OwnServer() {
    if (server != nullptr) server->Shutdown(std::chrono::system_clock::now() + 1s);
  }
};

DescriptorSet Echo() {
  auto set = ReadDescriptorSetFile(FAIRBENCH_ECHO_DESCRIPTOR_SET);
  EXPECT_TRUE(set.ok()) << set.status().ToString();
  return std::move(*set);
}

GrpcProbeRequest Request(uint16_t port, const std::string& method, std::string message) {
  GrpcProbeRequest r;
  r.host = kHost;
  r.port = port;
  r.method = method;
  r.message = std::move(message);
  r.deadline = 5s;
  return r;
}

// SERVING for the server as a whole ("") and for the service the target
// names (catches the request or the reply's status field misread: the
// default UNKNOWN would come back).
TEST(GrpcProbeTest, HealthServingForTheServerAndItsService) {
  Target t;
  for (const std::string service : {"", "fairbench.echo.v1.Echo"}) {
    auto h = GrpcHealthCheck(kHost, t.port(), false, service, 5s);
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    EXPECT_EQ(h->grpc_code, 0) << service << ": " << h->grpc_message;
    EXPECT_EQ(h->serving, ServingStatus::kServing) << service;
    EXPECT_TRUE(h->ok());
    EXPECT_EQ(h->Describe(), "service healthy");
  }
  EXPECT_EQ(t.server->counts().unary.load(), 0u) << "a health check is not an echo call";
}

// A service the health service does not know: gRPC's default health
// service answers Check with NOT_FOUND (SERVICE_UNKNOWN is Watch's answer)
// (catches the service name not sent: "" is SERVING).
TEST(GrpcProbeTest, HealthOfAnUnknownServiceIsNotFound) {
  Target t;
  auto h = GrpcHealthCheck(kHost, t.port(), false, "no.such.Service", 5s);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->grpc_code, 5);
  EXPECT_FALSE(h->ok());
  EXPECT_EQ(h->Describe().rfind("error: health rpc probe failed: rpc error: code = NotFound", 0), 0u) << h->Describe();
}

// NOT_SERVING as the server sets it (catches a reply that parsed to
// SERVING whatever it said).
TEST(GrpcProbeTest, HealthNotServingAsTheServerSaysIt) {
  fairbench::echo::v1::Echo::Service nothing_implemented;  // a server needs one service
  OwnServer s(/*health=*/true, &nothing_implemented);
  s.server->GetHealthCheckService()->SetServingStatus("demo.Down", false);
  s.server->GetHealthCheckService()->SetServingStatus("demo.Up", true);
  auto down = GrpcHealthCheck(kHost, static_cast<uint16_t>(s.port), false, "demo.Down", 5s);
  ASSERT_TRUE(down.ok()) << down.status().ToString();
  EXPECT_EQ(down->grpc_code, 0);
  EXPECT_EQ(down->serving, ServingStatus::kNotServing);
  EXPECT_FALSE(down->ok());
  EXPECT_EQ(down->Describe(), "service unhealthy (responded with \"NOT_SERVING\")");
  auto up = GrpcHealthCheck(kHost, static_cast<uint16_t>(s.port), false, "demo.Up", 5s);
  ASSERT_TRUE(up.ok());
  EXPECT_EQ(up->serving, ServingStatus::kServing);
  // The server as a whole goes NOT_SERVING when it shuts its health service down.
  s.server->GetHealthCheckService()->Shutdown();
  auto all = GrpcHealthCheck(kHost, static_cast<uint16_t>(s.port), false, "", 5s);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->serving, ServingStatus::kNotServing);
}

// A gRPC server without the health service answers UNIMPLEMENTED: a value,
// not Unavailable (catches every gRPC error taken for "nothing answers").
TEST(GrpcProbeTest, ServerWithoutHealthIsUnimplemented) {
  fairbench::echo::v1::Echo::Service nothing_implemented;
  OwnServer s(/*health=*/false, &nothing_implemented);
  auto h = GrpcHealthCheck(kHost, static_cast<uint16_t>(s.port), false, "", 5s);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->grpc_code, 12);
  EXPECT_NE(h->Describe().find("does not implement the grpc health protocol"), std::string::npos) << h->Describe();
}

// Nothing listening: Unavailable, at once rather than at the timeout
// (catches a refused connection waited out, or reported as a value).
TEST(GrpcProbeTest, NothingListeningIsUnavailableAtOnce) {
  auto port = testing::FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  const auto start = Steady::now();
  auto h = GrpcHealthCheck(kHost, *port, false, "", 10s);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), Status::Code::kUnavailable);
  EXPECT_NE(h.status().message().find("127.0.0.1:" + std::to_string(*port)), std::string::npos) << h.status().message();
  auto c = GrpcProbeCall(Request(*port, "fairbench.echo.v1.Echo/Unary", ""));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Status::Code::kUnavailable);
  EXPECT_LT(Steady::now() - start, testing::Scaled(5s));
}

// A probe right after the server starts on a port that refused a moment
// ago is SERVING at once (catches a channel kept from one probe to the
// next: it would still be waiting out gRPC's 1 s reconnect backoff).
TEST(GrpcProbeTest, ServingAtOnceAfterTheServerStarts) {
  auto port = testing::FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  ASSERT_FALSE(GrpcHealthCheck(kHost, *port, false, "", 2s).ok());
  targets::EchoServerOptions o;
  o.port = *port;
  Target t(o);
  ASSERT_EQ(t.port(), *port);
  const auto start = Steady::now();
  auto h = GrpcHealthCheck(kHost, *port, false, "", 5s);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_TRUE(h->ok());
  EXPECT_LT(Steady::now() - start, testing::Scaled(900ms));  // gRPC's first reconnect backoff is 1 s
}

// The unary echo returns the message sent: JSON encoded through the
// descriptor set, the reply decoded back to the same JSON; the target
// counted one call, OK (catches the request bytes not sent, or the reply
// not kept).
TEST(GrpcProbeTest, UnaryEchoReturnsTheMessageSent) {
  Target t;
  const DescriptorSet set = Echo();
  auto m = set.Method("fairbench.echo.v1.Echo/Unary");
  ASSERT_TRUE(m.ok());
  const std::string json = R"({"payload":"aGVsbG8gZ3JwYyBwcm9iZQ=="})";
  auto bytes = set.EncodeJson(*m, json);
  ASSERT_TRUE(bytes.ok());
  auto c = GrpcProbeCall(Request(t.port(), "fairbench.echo.v1.Echo/Unary", *bytes));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->grpc_code, 0) << c->grpc_message;
  ASSERT_EQ(c->messages.size(), 1u);
  EXPECT_EQ(c->message_count, 1u);
  auto reply = set.DecodeToJson(*m, c->messages[0]);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(*reply, json);
  EXPECT_EQ(t.server->counts().unary.load(), 1u);
  EXPECT_EQ(t.server->counts().by_status[0].load(), 1u);
}

// A status chosen on purpose comes back as that code and message, with no
// reply; UNAVAILABLE from the server is a value too (catches the code or
// message dropped, or a server's UNAVAILABLE taken for no connection).
TEST(GrpcProbeTest, ChosenStatusComesBackAsThatCode) {
  Target t;
  const DescriptorSet set = Echo();
  auto m = set.Method("fairbench.echo.v1.Echo/Unary");
  ASSERT_TRUE(m.ok());
  for (const int code : {7, 14, 3}) {
    auto bytes = set.EncodeJson(
        *m, R"({"status":)" + std::to_string(code) + R"(,"errorMessage":"chosen )" + std::to_string(code) + "\"}");
    ASSERT_TRUE(bytes.ok());
    auto c = GrpcProbeCall(Request(t.port(), "fairbench.echo.v1.Echo/Unary", *bytes));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->grpc_code, code);
    EXPECT_EQ(c->grpc_message, "chosen " + std::to_string(code));
    EXPECT_TRUE(c->messages.empty());
    EXPECT_EQ(t.server->counts().by_status[static_cast<size_t>(code)].load(), 1u);
  }
}

// Server streaming returns every message, in order, as many as asked and
// as the target counted (catches a stream read to its first message only).
TEST(GrpcProbeTest, ServerStreamingReturnsEveryMessage) {
  Target t;
  const DescriptorSet set = Echo();
  auto m = set.Method("fairbench.echo.v1.Echo/ServerStream");
  ASSERT_TRUE(m.ok());
  auto bytes = set.EncodeJson(*m, R"({"payload":"eA==","messages":7})");
  ASSERT_TRUE(bytes.ok());
  GrpcProbeRequest r = Request(t.port(), "fairbench.echo.v1.Echo/ServerStream", *bytes);
  r.server_streaming = true;
  auto c = GrpcProbeCall(r);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->grpc_code, 0) << c->grpc_message;
  ASSERT_EQ(c->messages.size(), 7u);
  EXPECT_EQ(c->message_count, 7u);
  for (size_t i = 0; i < c->messages.size(); ++i) {
    auto reply = set.DecodeToJson(*m, c->messages[i]);
    ASSERT_TRUE(reply.ok());
    EXPECT_EQ(*reply, i == 0 ? std::string(R"({"payload":"eA=="})")
                             : R"({"payload":"eA==","index":)" + std::to_string(i) + "}");
  }
  EXPECT_EQ(t.server->counts().stream_messages.load(), 7u);
  // Its status ends the stream: a chosen one after no message.
  auto failed = set.EncodeJson(*m, R"({"status":9})");
  ASSERT_TRUE(failed.ok());
  r.message = *failed;
  auto f = GrpcProbeCall(r);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->grpc_code, 9);
  EXPECT_EQ(f->message_count, 0u);
}

// The deadline bounds the call and goes out as grpc-timeout: a reply the
// server delays past it is DEADLINE_EXCEEDED, in about the deadline
// (catches the deadline not set: the call would wait the 1 s delay).
TEST(GrpcProbeTest, DeadlineEndsASlowCall) {
  targets::EchoServerOptions o;
  o.delay_ms = 1000;
  Target t(o);
  GrpcProbeRequest r = Request(t.port(), "fairbench.echo.v1.Echo/Unary", "");
  r.deadline = 200ms;
  const auto start = Steady::now();
  auto c = GrpcProbeCall(r);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->grpc_code, 4);
  EXPECT_LT(Steady::now() - start, 200ms + testing::Scaled(600ms));
}

// A health service slower than the check's timeout: DEADLINE_EXCEEDED, in
// the kubelet's words with the timeout (catches the timeout not bounding
// the call). The server's health service is made slow by a handler that
// waits, registered under the health service's name.
TEST(GrpcProbeTest, HealthCheckSlowerThanItsTimeout) {
  class SlowHealth : public grpc::Service {
   public:
    SlowHealth() {
      AddMethod(new grpc::internal::RpcServiceMethod(
          "/grpc.health.v1.Health/Check", grpc::internal::RpcMethod::NORMAL_RPC,
          new grpc::internal::RpcMethodHandler<SlowHealth, grpc::ByteBuffer, grpc::ByteBuffer, grpc::ByteBuffer,
                                               grpc::ByteBuffer>(
              [](SlowHealth*, grpc::ServerContext* context, const grpc::ByteBuffer*, grpc::ByteBuffer*) {
                const auto until = std::chrono::steady_clock::now() + 2s;
                while (!context->IsCancelled() && std::chrono::steady_clock::now() < until) {
                  std::this_thread::sleep_for(10ms);
                }
                return grpc::Status(grpc::StatusCode::ABORTED, "too late");  // after the client's deadline
              },
              this)));
    }
  } slow;
  OwnServer s(/*health=*/false, &slow);
  const auto start = Steady::now();
  auto h = GrpcHealthCheck(kHost, static_cast<uint16_t>(s.port), false, "", 1500ms);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->grpc_code, 4);
  EXPECT_EQ(h->Describe(), "timeout: health rpc did not complete within 1.5s");
  EXPECT_LT(Steady::now() - start, 1500ms + testing::Scaled(400ms));
}

// Metadata and the deadline reach the server: a server built here records
// what its handler saw (catches metadata dropped, or no grpc-timeout).
TEST(GrpcProbeTest, MetadataAndDeadlineReachTheServer) {
  struct Recorder : fairbench::echo::v1::Echo::Service {
    std::mutex mu;
    std::multimap<std::string, std::string> seen;
    std::chrono::system_clock::time_point deadline;
    grpc::Status Unary(grpc::ServerContext* context, const fairbench::echo::v1::EchoRequest*,
                       fairbench::echo::v1::EchoReply*) override {
      std::lock_guard<std::mutex> lock(mu);
      for (const auto& [k, v] : context->client_metadata())
        seen.emplace(std::string(k.data(), k.size()), std::string(v.data(), v.size()));
      deadline = context->deadline();
      return grpc::Status::OK;
    }
  } recorder;
  OwnServer s(/*health=*/false, &recorder);
  GrpcProbeRequest r = Request(static_cast<uint16_t>(s.port), "fairbench.echo.v1.Echo/Unary", "");
  r.metadata = {{"x-run", "r1"}, {"x-cell", "c 2"}, {"trace-bin", std::string("\x00\xff", 2)}};
  r.deadline = 3s;
  const auto sent = std::chrono::system_clock::now();
  auto c = GrpcProbeCall(r);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->grpc_code, 0);
  std::lock_guard<std::mutex> lock(recorder.mu);
  EXPECT_EQ(recorder.seen.count("x-run"), 1u);
  EXPECT_EQ(recorder.seen.find("x-run")->second, "r1");
  EXPECT_EQ(recorder.seen.find("x-cell")->second, "c 2");
  ASSERT_EQ(recorder.seen.count("trace-bin"), 1u);
  EXPECT_EQ(recorder.seen.find("trace-bin")->second, std::string("\x00\xff", 2));
  EXPECT_GT(recorder.deadline, sent + 2s);
  EXPECT_LT(recorder.deadline, sent + 4s);
}

// TLS (h2 by ALPN) against the target's self-signed certificate, which is
// not verified; plaintext to a TLS server and TLS to a plaintext one make
// no connection (catches tls ignored, or the certificate verified).
TEST(GrpcProbeTest, TlsTargetWithItsCertificateUnverified) {
  auto certs = testing::SharedTestCertificates();
  ASSERT_TRUE(certs.ok()) << certs.status().ToString();
  targets::EchoServerOptions o;
  o.tls_cert = (*certs)->self_cert;
  o.tls_key = (*certs)->self_key;
  Target tls(o);
  auto h = GrpcHealthCheck(kHost, tls.port(), true, "", 5s);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_TRUE(h->ok());
  GrpcProbeRequest r = Request(tls.port(), "fairbench.echo.v1.Echo/Unary", std::string("\x0a\x02hi", 4));
  r.tls = true;
  auto c = GrpcProbeCall(r);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->grpc_code, 0) << c->grpc_message;
  ASSERT_EQ(c->messages.size(), 1u);
  EXPECT_EQ(c->messages[0], std::string("\x0a\x02hi", 4));
  EXPECT_EQ(tls.server->counts().unary.load(), 1u);

  auto plain_to_tls = GrpcHealthCheck(kHost, tls.port(), false, "", 3s);
  ASSERT_FALSE(plain_to_tls.ok());
  EXPECT_EQ(plain_to_tls.status().code(), Status::Code::kUnavailable);
  Target plain;
  auto tls_to_plain = GrpcHealthCheck(kHost, plain.port(), true, "", 3s);
  ASSERT_FALSE(tls_to_plain.ok());
  EXPECT_EQ(tls_to_plain.status().code(), Status::Code::kUnavailable);
}

// Thread-safe: calls from 8 threads at once each get their own message
// back, and the target counted every one (catches state shared between
// calls: a channel, a completion queue or a reply buffer).
TEST(GrpcProbeTest, ConcurrentCallsEachGetTheirOwnReply) {
  Target t;
  const DescriptorSet set = Echo();
  auto m = set.Method("fairbench.echo.v1.Echo/Unary");
  ASSERT_TRUE(m.ok());
  constexpr int kThreads = 8, kCalls = 5;
  std::atomic<int> right{0};
  std::mutex mu;
  std::vector<std::string> wrong;  // what each call that went wrong said
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int j = 0; j < kCalls; ++j) {
        const std::string payload = "call " + std::to_string(i) + "." + std::to_string(j);
        GrpcProbeRequest r = Request(t.port(), "fairbench.echo.v1.Echo/Unary", "");
        r.message = std::string{'\x0a', static_cast<char>(payload.size())} + payload;  // EchoRequest{payload}
        auto c = GrpcProbeCall(r);
        if (c.ok() && c->grpc_code == 0 && c->messages.size() == 1 && c->messages[0] == r.message) {
          ++right;
          continue;
        }
        std::lock_guard<std::mutex> lock(mu);
        wrong.push_back(payload + ": " +
                        (c.ok() ? "grpc " + std::to_string(c->grpc_code) + " " + c->grpc_message + ", " +
                                      std::to_string(c->messages.size()) + " messages"
                                : c.status().ToString()));
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(right.load(), kThreads * kCalls) << ::testing::PrintToString(wrong);
  EXPECT_EQ(t.server->counts().unary.load(), static_cast<uint64_t>(kThreads * kCalls));
}

// Bad input: one line, InvalidArgument, before any connection (catches a
// method without its service, or metadata gRPC would refuse mid-call).
TEST(GrpcProbeTest, BadRequestsAreRefusedUpFront) {
  GrpcProbeRequest r = Request(9, "Unary", "");
  EXPECT_EQ(GrpcProbeCall(r).status().code(), Status::Code::kInvalidArgument);
  r.method = "fairbench.echo.v1.Echo/Unary";
  for (const auto& md : std::vector<std::pair<std::string, std::string>>{
           {"X-Upper", "v"}, {"grpc-timeout", "1S"}, {"x-ok", "line\nbreak"}, {"", "v"}, {"two\nlines", "v"}}) {
    r.metadata = {md};
    auto c = GrpcProbeCall(r);
    EXPECT_EQ(c.status().code(), Status::Code::kInvalidArgument) << md.first;
    EXPECT_EQ(c.status().message().find('\n'), std::string::npos) << c.status().message();
  }
  r.metadata.clear();
  r.deadline = 0ms;
  EXPECT_EQ(GrpcProbeCall(r).status().code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace fairbench::host
