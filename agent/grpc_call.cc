#include "agent/grpc_call.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "agent/grpc_frame.h"
#include "common/grpc_message.h"
#include "common/load_rules.h"
#include "common/units.h"

namespace fairbench::agent {
namespace {

Result<std::string> ReadFile(const std::string& path, const std::string& flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::InvalidArgument(flag + ": cannot read '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::InvalidArgument(flag + ": cannot read '" + path + "'");
  return ss.str();
}

Result<uint32_t> ParseSize(const std::string& text) {
  auto n = ParseBinarySize(text);
  if (!n.ok() || *n == 0 || *n > 0xffffffffull) {
    return Status::InvalidArgument("--max-message-size: '" + text + "' is not a size between 1 and 4294967295 bytes");
  }
  return static_cast<uint32_t>(*n);
}

// With a descriptor set: the method's kind and input type, and the message
// (a --message-file checked to parse; else --message-json encoded).
Result<std::string> ResolveMethod(const GrpcCallFlags& f, GrpcCall* call, std::string message) {
  auto set = ReadDescriptorSetFile(f.descriptor_set);
  if (!set.ok()) return Status::InvalidArgument("--descriptor-set: " + set.status().message());
  auto info = set->Method(f.method);
  if (!info.ok()) return Status::InvalidArgument("--grpc: " + info.status().message());
  call->kind = info->kind;
  call->input_type = info->input_type;
  if (!f.message_file.empty()) {
    if (auto st = set->CheckParses(*info, message, f.message_file); !st.ok()) {
      return Status::InvalidArgument("--message-file: " + st.message());
    }
    return message;
  }
  auto encoded = set->EncodeJson(*info, f.message_json.empty() ? "{}" : f.message_json);
  if (!encoded.ok()) return Status::InvalidArgument("--message-json: " + encoded.status().message());
  return std::move(*encoded);
}

}  // namespace

Result<GrpcCall> BuildGrpcCall(const GrpcCallFlags& f) {
  auto parsed = ParseGrpcMethodName(f.method);
  if (!parsed.ok()) return Status::InvalidArgument("--grpc: " + parsed.status().message());
  const std::string name = parsed->service + "/" + parsed->method;
  if (!f.message_file.empty() && !f.message_json.empty()) {
    return Status::InvalidArgument("--message-file and --message-json exclude each other");
  }
  if (!f.message_json.empty() && f.descriptor_set.empty()) {
    return Status::InvalidArgument("--message-json: needs --descriptor-set FILE to encode the message");
  }
  GrpcCall call;
  std::string message;
  if (!f.message_file.empty()) {
    auto bytes = ReadFile(f.message_file, "--message-file");
    if (!bytes.ok()) return bytes.status();
    message = std::move(*bytes);
  }
  if (!f.max_message_size.empty()) {
    auto n = ParseSize(f.max_message_size);
    if (!n.ok()) return n.status();
    call.max_message = *n;
  }
  if (!f.descriptor_set.empty()) {
    auto resolved = ResolveMethod(f, &call, std::move(message));
    if (!resolved.ok()) return resolved.status();
    message = std::move(*resolved);
  }
  if (message.size() > 0xffffffffull) return Status::InvalidArgument("--message-file: over 4 GiB");

  if (!f.deadline.empty()) {
    auto d = ParseDuration(f.deadline);
    if (!d.ok()) return Status::InvalidArgument("--deadline: " + d.status().message());
    if (d->count() <= 0) return Status::InvalidArgument("--deadline: must be > 0");
    call.deadline = *d;
  }
  std::vector<std::pair<std::string, std::string>> metadata;
  for (const std::string& m : f.metadata) {
    auto h = ParseHeader(m);
    if (!h.ok()) return Status::InvalidArgument("--metadata: " + h.status().message());
    std::string key = h->first;
    std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
    if (load_rules::IsGrpcOwnMetadata(key)) {
      return Status::InvalidArgument("--metadata: '" + h->first + "' is gRPC's own (set by --grpc and --deadline)");
    }
    metadata.emplace_back(std::move(key), std::move(h->second));
  }
  call.request = GrpcRequest(name, message, metadata, call.deadline);
  call.method = name;
  call.message = std::move(message);
  call.metadata = std::move(metadata);
  return call;
}

}  // namespace fairbench::agent
