// StartGrpcServer: the controller's gRPC listener for the agent hub, with the
// keepalive settings the agents rely on (they ping every 500 ms so that a
// dead link stops their load within about a second; the server must accept
// pings that often instead of answering "too many pings").
//
// Plain text by default; with HubTls the agents' stream is TLS, and with a
// client CA the agents must also show a certificate signed by it (mutual
// TLS: a handshake without one is refused before the hub sees a stream).
// The files are read once, when the listener starts: a rotated certificate
// takes effect when the controller restarts (the chart's pods roll when the
// certificate Secret they were rendered with changes).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "common/status.h"

namespace fairbench::controller {

// The hub's side of the agents' TLS: PEM files.
struct HubTls {
  std::string cert_file;       // the hub's certificate (chain); empty: plain text
  std::string key_file;        // its private key
  std::string client_ca_file;  // set: agents must present a certificate signed by it
  bool enabled() const { return !cert_file.empty(); }
};

// The largest message the hub reads from an agent. An agent's biggest
// message is a snapshot of one interval: a busy second
// (bench/realistic_snapshot.h, 100,000 latencies) encodes to 2.9 KB, one
// with every bucket of both histograms counted to 139 KB
// (agent_hub_security_test measures both). Its bound: two latency
// histograms of 23,552 counts (Histogram::kCountsLen) at most 9 bytes
// each, 212 KB apiece even if zlib gains nothing, and one 8-byte rate
// sample per worker thread per 100 ms (1,024 threads: 80 KB) — under
// 0.5 MiB. 4 MiB (gRPC's
// own default) is 8 times that, and a hostile or broken agent cannot make
// the controller buffer more.
inline constexpr int kDefaultMaxAgentMessageBytes = 4 << 20;

struct GrpcServerOptions {
  HubTls tls;
  int max_receive_message_bytes = kDefaultMaxAgentMessageBytes;
  // A connection that has not finished its TLS handshake (or HTTP/2 preface)
  // by then is closed.
  std::chrono::milliseconds handshake_timeout{5000};
};

struct GrpcServer {
  std::unique_ptr<grpc::Server> server;
  int port = 0;  // the port actually bound (useful with ":0")
};

// The server credentials for `tls`: insecure when it is not enabled. The
// files are read and checked here (errors name the flags --hub-tls-cert,
// --hub-tls-key and --hub-tls-client-ca).
Result<std::shared_ptr<grpc::ServerCredentials>> HubCredentials(const HubTls& tls);

// `address` is host:port; port 0 picks a free one.
Result<GrpcServer> StartGrpcServer(grpc::Service* service, const std::string& address,
                                   const GrpcServerOptions& options = {});

}  // namespace fairbench::controller
