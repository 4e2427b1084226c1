// EchoServer: the reference gRPC target — fairbench.echo.v1.Echo (echo.proto)
// on Debian's gRPC C++, with either of the two server APIs people choose
// between:
//   kCallback  the callback API (Echo::CallbackService: reactors; a delay
//              is an Alarm, no thread waits)
//   kSync      the synchronous API (Echo::Service: a handler thread per
//              call in flight; a delay is a sleep in that thread)
// --threads is the sync API's number of completion queues; the callback
// API runs its reactors on gRPC's own threads (gRPC C++ 1.51 has no knob
// for them).
// Unary echoes the request's payload; ServerStream writes `messages` replies
// (default --stream-messages); each reply comes after `delay_ms` (default
// --delay-ms); the call ends with the request's `status` and
// `error_message`. A call with a non-OK status writes no reply (it ends
// after one delay), so it goes out as a Trailers-Only response (status in
// the only HEADERS frame), as gRPC sends errors. Stats returns the server's own
// counts. The standard health service (grpc.health.v1.Health) answers
// SERVING for "" and for "fairbench.echo.v1.Echo".
//
// Counting: a call is counted (per method, per status) when its handler
// ends it, before the status goes out — a client that saw the status can
// rely on the count including its call. `counter` (for --request-log)
// counts Unary and ServerStream calls. Thread-safe; Stop() is idempotent.
#pragma once

#include <grpcpp/grpcpp.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "targets/common/request_counter.h"

namespace fairbench::targets {

enum class GrpcApi { kCallback, kSync };

struct EchoServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0: a free port (see port())
  int threads = 4;    // kSync: completion queues (handler threads grow with the calls in flight)
  GrpcApi api = GrpcApi::kCallback;
  uint32_t delay_ms = 0;  // before each reply, unless the request says otherwise
  uint32_t stream_messages = 10;
  // TLS (h2 by ALPN, as gRPC speaks it): PEM files; both empty: plaintext (h2c).
  std::string tls_cert{};
  std::string tls_key{};
};

struct EchoCounts {
  std::atomic<uint64_t> unary{0};
  std::atomic<uint64_t> stream{0};
  std::atomic<uint64_t> stream_messages{0};
  std::array<std::atomic<uint64_t>, 17> by_status{};
};

class EchoServer {
 public:
  EchoServer(const EchoServerOptions& options, RequestCounter* counter);
  ~EchoServer();
  EchoServer(const EchoServer&) = delete;
  EchoServer& operator=(const EchoServer&) = delete;

  Status Start();
  void Stop();
  uint16_t port() const { return port_; }
  const EchoCounts& counts() const { return counts_; }

 private:
  EchoServerOptions opt_;
  RequestCounter* counter_;
  EchoCounts counts_;
  std::unique_ptr<grpc::Service> service_;
  std::unique_ptr<grpc::Server> server_;
  uint16_t port_ = 0;
};

}  // namespace fairbench::targets
