// gRPC probes from the controller (and the test kubelet): real gRPC calls
// with grpc++'s generic API — grpc.health.v1.Health/Check for readiness, and
// one call of any unary or server-streaming method for verifying a scenario
// before its target is loaded.
//
// Each call has its own channel and its own connection (no subchannel
// shared with an earlier probe, so a server that has just started is seen
// at once), plaintext h2c or TLS; with TLS the server's certificate is not
// verified (as the agents do). One `timeout`/`deadline` bounds the whole
// call, connection included. A connection refused or a failed handshake
// ends the probe at once, as curl's does.
//
// Results: Unavailable when no gRPC connection could be made (nothing
// listening, not gRPC, a TLS handshake that failed, or not connected within
// the time); otherwise what the server answered — a gRPC status code with
// its message is a value, not an error (UNIMPLEMENTED from a server without
// the health service, NOT_FOUND for a service its health service does not
// know, any status a method ends with).
//
// Blocking; never call it from an event loop. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace fairbench::host {

// grpc.health.v1.HealthCheckResponse.ServingStatus; other numbers are kept
// as they came.
enum class ServingStatus : int { kUnknown = 0, kServing = 1, kNotServing = 2, kServiceUnknown = 3 };
// "SERVING", ...; the number for one the protocol does not name.
std::string ServingStatusName(ServingStatus status);

struct HealthStatus {
  int grpc_code = 0;                                // the Check call's status: 0 OK, 12 UNIMPLEMENTED, 5 NOT_FOUND, ...
  std::string grpc_message;                         // its grpc-message
  ServingStatus serving = ServingStatus::kUnknown;  // the answer, when grpc_code is 0
  std::chrono::milliseconds timeout{0};             // the check's, for Describe()
  bool ok() const { return grpc_code == 0 && serving == ServingStatus::kServing; }
  // One line, as the kubelet says it: "service healthy", "service unhealthy
  // (responded with \"NOT_SERVING\")", "... does not implement the grpc
  // health protocol ...".
  std::string Describe() const;
};

// grpc.health.v1.Health/Check {service} on host:port; `service` "" asks
// about the server as a whole.
Result<HealthStatus> GrpcHealthCheck(const std::string& host, uint16_t port, bool tls, const std::string& service,
                                     std::chrono::milliseconds timeout);

struct GrpcProbeRequest {
  std::string host;
  uint16_t port = 0;
  bool tls = false;
  std::string method;                                         // "package.Service/Method" (a leading '/' allowed)
  std::string message;                                        // the request, binary protobuf
  std::vector<std::pair<std::string, std::string>> metadata;  // keys lower case, as gRPC requires
  std::chrono::milliseconds deadline{2000};                   // > 0: also sent as grpc-timeout
  bool server_streaming = false;  // read every reply; else a unary call (exactly one reply when OK)
};

struct GrpcCallResult {
  int grpc_code = 0;
  std::string grpc_message;
  std::vector<std::string> messages;  // the replies, binary, in order (at most kMaxKeptMessages)
  uint64_t message_count = 0;         // every reply, kept or not
  static constexpr size_t kMaxKeptMessages = 1024;
};

// InvalidArgument for a method that is not SERVICE/METHOD, metadata gRPC
// refuses, or a deadline <= 0.
Result<GrpcCallResult> GrpcProbeCall(const GrpcProbeRequest& request);

}  // namespace fairbench::host
