#include "agent/grpc_call.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/descriptor_database.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>

#include "agent/grpc_frame.h"
#include "common/units.h"

namespace fairbench::agent {
namespace {

namespace pb = google::protobuf;

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

// What a descriptor set says about the method.
struct MethodInfo {
  GrpcCallKind kind = GrpcCallKind::kUnknown;
  std::string input_type;
  std::string message;  // the encoded message, when it came from JSON
};

std::string Names(int n, const std::function<std::string(int)>& name) {
  std::string out;
  for (int i = 0; i < n && i < 20; ++i) out += (i ? ", " : "") + name(i);
  return out.empty() ? "none" : out;
}

Result<MethodInfo> ResolveMethod(const GrpcCallFlags& f, const std::string& service, const std::string& method,
                                 const std::string* message_bytes) {
  auto bytes = ReadFile(f.descriptor_set, "--descriptor-set");
  if (!bytes.ok()) return bytes.status();
  pb::FileDescriptorSet set;
  if (!set.ParseFromString(*bytes) || set.file_size() == 0) {
    return Status::InvalidArgument("--descriptor-set: '" + f.descriptor_set +
                                   "' is not a FileDescriptorSet (make one with protoc --descriptor_set_out=FILE "
                                   "--include_imports)");
  }
  pb::SimpleDescriptorDatabase db;
  for (const pb::FileDescriptorProto& file : set.file()) {
    if (!db.Add(file)) {
      return Status::InvalidArgument("--descriptor-set: '" + f.descriptor_set + "': " + file.name() +
                                     " appears twice or is malformed");
    }
  }
  pb::DescriptorPool pool(&db);
  const pb::ServiceDescriptor* sd = pool.FindServiceByName(service);
  if (sd == nullptr) {
    std::vector<std::string> services;
    for (const pb::FileDescriptorProto& file : set.file()) {
      for (const auto& s : file.service()) {
        services.push_back(file.package().empty() ? s.name() : file.package() + "." + s.name());
      }
    }
    return Status::InvalidArgument("--grpc: no service '" + service + "' in '" + f.descriptor_set + "' (services: " +
                                   Names(static_cast<int>(services.size()), [&](int i) { return services[static_cast<size_t>(i)]; }) +
                                   "; or it needs files missing from the set: use --include_imports)");
  }
  const pb::MethodDescriptor* md = sd->FindMethodByName(method);
  if (md == nullptr) {
    return Status::InvalidArgument("--grpc: service " + service + " has no method '" + method + "' (methods: " +
                                   Names(sd->method_count(), [&](int i) { return sd->method(i)->name(); }) + ")");
  }
  if (md->client_streaming()) {
    return Status::InvalidArgument("--grpc: " + service + "/" + method +
                                   " is client-streaming; only unary and server-streaming calls are supported");
  }
  MethodInfo info;
  info.kind = md->server_streaming() ? GrpcCallKind::kServerStreaming : GrpcCallKind::kUnary;
  info.input_type = md->input_type()->full_name();
  pb::DynamicMessageFactory factory(&pool);
  std::unique_ptr<pb::Message> msg(factory.GetPrototype(md->input_type())->New());
  if (message_bytes != nullptr) {
    if (!msg->ParseFromString(*message_bytes)) {
      return Status::InvalidArgument("--message-file: '" + f.message_file + "' is not a binary " + info.input_type);
    }
    return info;
  }
  if (!f.message_json.empty()) {
    const auto st = pb::util::JsonStringToMessage(f.message_json, msg.get());
    if (!st.ok()) {
      std::string why(st.message());
      std::replace(why.begin(), why.end(), '\n', ' ');
      return Status::InvalidArgument("--message-json: not a " + info.input_type + ": " + why);
    }
  }
  if (!msg->SerializeToString(&info.message)) {
    return Status::InvalidArgument("--message-json: cannot encode it as " + info.input_type);
  }
  return info;
}

}  // namespace

Result<GrpcCall> BuildGrpcCall(const GrpcCallFlags& f) {
  std::string name = f.method;
  if (!name.empty() && name.front() == '/') name.erase(0, 1);
  const size_t slash = name.find('/');
  const auto bad_char = [](char c) { return std::isspace(static_cast<unsigned char>(c)) || c == '?' || c == '#'; };
  if (slash == std::string::npos || slash == 0 || slash + 1 == name.size() ||
      name.find('/', slash + 1) != std::string::npos || std::any_of(name.begin(), name.end(), bad_char)) {
    return Status::InvalidArgument("--grpc: '" + f.method + "' is not SERVICE/METHOD (e.g. fairbench.echo.v1.Echo/Unary)");
  }
  const std::string service = name.substr(0, slash);
  const std::string method = name.substr(slash + 1);
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
    auto info = ResolveMethod(f, service, method, f.message_file.empty() ? nullptr : &message);
    if (!info.ok()) return info.status();
    call.kind = info->kind;
    call.input_type = info->input_type;
    if (f.message_file.empty()) message = std::move(info->message);
  }
  if (message.size() > 0xffffffffull) return Status::InvalidArgument("--message-file: over 4 GiB");

  RequestSpec& r = call.request;
  r.name = "/" + name;
  r.method = "POST";
  r.target = "/" + name;
  r.headers = {{"content-type", "application/grpc"}, {"te", "trailers"}};
  if (!f.deadline.empty()) {
    auto d = ParseDuration(f.deadline);
    if (!d.ok()) return Status::InvalidArgument("--deadline: " + d.status().message());
    if (d->count() <= 0) return Status::InvalidArgument("--deadline: must be > 0");
    call.deadline = *d;
    r.headers.emplace_back("grpc-timeout", FormatGrpcTimeout(d->count()));
  }
  for (const std::string& m : f.metadata) {
    auto h = ParseHeader(m);
    if (!h.ok()) return Status::InvalidArgument("--metadata: " + h.status().message());
    std::string key = h->first;
    std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
    if (key == "content-type" || key == "te" || key == "grpc-timeout" || key.rfind("grpc-", 0) == 0) {
      return Status::InvalidArgument("--metadata: '" + h->first + "' is gRPC's own (set by --grpc and --deadline)");
    }
    r.headers.emplace_back(std::move(key), std::move(h->second));
  }
  r.body = EncodeGrpcFrame(message);
  return call;
}

}  // namespace fairbench::agent
