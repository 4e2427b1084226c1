// For tests: an agent played by the test over real gRPC — one stream of its
// own (no shared subchannel), messages written by hand, so that a test can
// be the hostile or sloppy agent a real fairbench-agent never is.
// Not thread-safe: one test thread per RawAgent.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "fairbench/v1/agent.grpc.pb.h"

namespace fairbench::controller {

struct RawAgent {
  std::unique_ptr<v1::AgentHub::Stub> stub;
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReaderWriter<v1::AgentMessage, v1::ControllerMessage>> stream;

  // Opens the stream (30 s deadline); plain text without `credentials`.
  static std::unique_ptr<RawAgent> Dial(const std::string& address,
                                        std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr,
                                        const std::string& server_name = "") {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own
    if (!server_name.empty()) args.SetSslTargetNameOverride(server_name);
    auto channel =
        grpc::CreateCustomChannel(address, credentials ? credentials : grpc::InsecureChannelCredentials(), args);
    auto a = std::make_unique<RawAgent>();
    a->stub = v1::AgentHub::NewStub(channel);
    a->context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    a->stream = a->stub->Connect(&a->context);
    return a;
  }
  bool Hello(const std::string& id, const std::string& token = "secret") {
    v1::AgentMessage m;
    m.mutable_hello()->set_agent_id(id);
    m.mutable_hello()->set_token(token);
    return stream->Write(m);
  }
  // True when the controller's first message is its Welcome.
  bool Welcomed() {
    v1::ControllerMessage m;
    return stream->Read(&m) && m.has_welcome();
  }
  // Reads until the stream ends; its status.
  grpc::Status End() {
    v1::ControllerMessage m;
    while (stream->Read(&m)) {
    }
    return stream->Finish();
  }
};

}  // namespace fairbench::controller
