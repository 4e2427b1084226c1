// GrpcCall: what `fairbench-agent load --grpc SERVICE/METHOD` sends, built
// once before the load: the HTTP/2 request (POST /SERVICE/METHOD with
// content-type application/grpc, te: trailers, grpc-timeout from
// --deadline, the --metadata fields) whose body is the request message in
// one gRPC frame (agent/grpc_frame.h).
//
// The message is --message-file (binary protobuf, sent as it is) or
// --message-json with --descriptor-set (a `protoc --descriptor_set_out
// --include_imports` file: the JSON is encoded as the method's input type
// with protobuf's own descriptors, DynamicMessage and JSON parser); neither
// is the empty message. With a descriptor set the method must exist in it
// (and be unary or server-streaming), a --message-file must parse as its
// input type, and the call's kind is known (a unary call answered OK must
// carry one message); without one the kind is unknown and not checked.
//
// Every error is one line naming the flag (and the file), for exit code 2
// before the load.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "agent/request.h"
#include "common/protocol.h"
#include "common/status.h"

namespace fairbench::agent {

struct GrpcCallFlags {
  std::string method;  // --grpc: "package.Service/Method" (a leading '/' is allowed)
  std::string message_file;
  std::string message_json;
  std::string descriptor_set;
  std::vector<std::string> metadata;  // 'key: value'
  std::string deadline;               // a duration, e.g. 200ms; empty: none
  std::string max_message_size;       // bytes, k/M suffixes; empty: 4M (gRPC's default)
};

struct GrpcCall {
  RequestSpec request;
  // What `request` was made of (GrpcRequest, agent/request.h): what a job's
  // call carries.
  std::string method;                                         // "package.Service/Method"
  std::string message;                                        // encoded
  std::vector<std::pair<std::string, std::string>> metadata;  // lower-case keys
  GrpcCallKind kind = GrpcCallKind::kUnknown;
  std::string input_type;  // the message's full name, with a descriptor set
  std::chrono::nanoseconds deadline{0};
  uint32_t max_message = 4u << 20;
};

Result<GrpcCall> BuildGrpcCall(const GrpcCallFlags& flags);

}  // namespace fairbench::agent
