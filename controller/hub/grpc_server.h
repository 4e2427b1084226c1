// StartGrpcServer: the controller's gRPC listener for the agent hub, with the
// keepalive settings the agents rely on (they ping every 500 ms so that a
// dead link stops their load within about a second; the server must accept
// pings that often instead of answering "too many pings").
#pragma once

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "common/status.h"

namespace fairbench::controller {

struct GrpcServer {
  std::unique_ptr<grpc::Server> server;
  int port = 0;  // the port actually bound (useful with ":0")
};

// `address` is host:port; port 0 picks a free one.
Result<GrpcServer> StartGrpcServer(grpc::Service* service, const std::string& address);

}  // namespace fairbench::controller
