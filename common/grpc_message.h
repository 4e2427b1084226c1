// gRPC messages through a descriptor set: a `protoc --descriptor_set_out
// --include_imports` file (a FileDescriptorSet) turned into protobuf's own
// descriptors, so a method named "package.Service/Method" is found, its
// request written from JSON (protobuf's JSON mapping, DynamicMessage) and
// its reply read back as JSON — without generated code. What the agent's
// --grpc --descriptor-set and the controller's scenarios[].grpc share.
//
// Every error is one line naming `what` (the file, or where the bytes came
// from, e.g. "configmap/NAME/KEY") and the method or the JSON's problem;
// callers put their field or flag in front.
//
// A DescriptorSet owns its descriptors; MethodInfo is plain data (names),
// valid with any DescriptorSet that holds the method. A DescriptorSet is
// immutable once loaded: its const methods are thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/protocol.h"
#include "common/status.h"

namespace fairbench {

// "package.Service/Method" (a leading '/' allowed) split in two; no
// whitespace, '?' or '#'.
struct GrpcMethodName {
  std::string service;  // "package.Service"
  std::string method;   // "Method"
  std::string path() const { return "/" + service + "/" + method; }
};
Result<GrpcMethodName> ParseGrpcMethodName(std::string_view text);

struct MethodInfo {
  GrpcMethodName name;
  GrpcCallKind kind = GrpcCallKind::kUnary;  // never kUnknown
  std::string input_type;                    // full names, e.g. "fairbench.echo.v1.EchoRequest"
  std::string output_type;
};

struct JsonOutputOptions {
  bool print_default_values = false;  // proto3 fields at their default value printed too
  bool proto_field_names = false;     // "reply_bytes" instead of "replyBytes"
};

class DescriptorSet {
 public:
  DescriptorSet(DescriptorSet&&) noexcept;
  DescriptorSet& operator=(DescriptorSet&&) noexcept;
  ~DescriptorSet();

  const std::string& what() const;

  // Every method of every service in the set, "package.Service/Method", in
  // the files' order.
  std::vector<std::string> Methods() const;

  // The method, with its kind; a client-streaming or bidirectional method
  // is an error (only unary and server-streaming calls are made).
  Result<MethodInfo> Method(std::string_view name) const;

  // The JSON as the method's input type, encoded (binary protobuf).
  // Unknown fields and values of the wrong type are errors.
  Result<std::string> EncodeJson(const MethodInfo& method, std::string_view json) const;
  // OK when the JSON is a message of the method's output type (a reply
  // expected as JSON).
  Status CheckReplyJson(const MethodInfo& method, std::string_view json) const;
  // Binary bytes of the method's output type, as JSON (one line).
  Result<std::string> DecodeToJson(const MethodInfo& method, std::string_view bytes,
                                   const JsonOutputOptions& options = {}) const;
  // OK when `bytes` parse as the method's input type; `source` names them
  // in the error (e.g. the message file).
  Status CheckParses(const MethodInfo& method, std::string_view bytes, std::string_view source) const;

 private:
  friend Result<DescriptorSet> LoadDescriptorSet(std::string bytes, std::string what);
  struct Impl;
  explicit DescriptorSet(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Every file of the set is built (so a file missing from it, for want of
// --include_imports, is found here, not at the first call).
Result<DescriptorSet> LoadDescriptorSet(std::string bytes, std::string what);
// The file at `path` (what = the path); "cannot read 'PATH'" when it cannot.
Result<DescriptorSet> ReadDescriptorSetFile(const std::string& path);

}  // namespace fairbench
