#include "controller/hub/grpc_server.h"

namespace fairbench::controller {

Result<GrpcServer> StartGrpcServer(grpc::Service* service, const std::string& address) {
  grpc::ServerBuilder builder;
  GrpcServer out;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &out.port);
  builder.RegisterService(service);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 1000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 1000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 100);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  builder.SetMaxReceiveMessageSize(64 * 1024 * 1024);
  // One process per agent port: with SO_REUSEPORT a second controller could
  // bind it too and the kernel would split the agents between the two.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  out.server = builder.BuildAndStart();
  if (!out.server || out.port == 0) return Status::Unavailable("cannot listen for agents on " + address);
  return out;
}

}  // namespace fairbench::controller
