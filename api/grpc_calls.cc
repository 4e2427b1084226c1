#include "api/grpc_calls.h"

#include <string>

#include "common/grpc_message.h"

namespace fairbench::api {
namespace {

// What a scenario's descriptor set is called in messages: the file as
// written, or "configmap/NAME/KEY".
std::string SetName(const GrpcCallSpec& g) {
  if (g.descriptor_set) return *g.descriptor_set;
  const ConfigMapKeyRef& r = *g.descriptor_set_config_map_ref;
  return "configmap/" + r.name + "/" + r.key;
}

}  // namespace

Diagnostics ResolveGrpcCalls(BenchmarkRun& run) {
  Diagnostics out;
  for (size_t i = 0; i < run.spec.scenarios.size(); ++i) {
    Scenario& s = run.spec.scenarios[i];
    if (!s.grpc) continue;
    GrpcCallSpec& g = *s.grpc;
    const std::string at = "spec.scenarios[" + std::to_string(i) + "].";
    const auto fail = [&](const std::string& field, std::string message) {
      out.Add(Diagnostic{at + field, std::move(message), {}, {}});
    };
    g.request_message = g.message_file ? g.message_file_content : std::string();
    g.kind = GrpcCallKind::kUnknown;
    if (!g.descriptor_set && !g.descriptor_set_config_map_ref) continue;  // validation asks for one with JSON
    auto set = LoadDescriptorSet(g.descriptor_set_content, SetName(g));
    if (!set.ok()) {
      fail(g.descriptor_set ? "grpc.descriptorSet" : "grpc.descriptorSetConfigMapRef", set.status().message());
      continue;
    }
    auto method = set->Method(g.method);
    if (!method.ok()) {
      fail("grpc.method", method.status().message());
      continue;
    }
    g.kind = method->kind;
    if (g.message_file) {
      if (Status ok = set->CheckParses(*method, g.message_file_content, *g.message_file); !ok.ok()) {
        fail("grpc.messageFile", ok.message());
      }
    } else if (g.message) {
      auto bytes = set->EncodeJson(*method, g.message->dump());
      if (!bytes.ok()) fail("grpc.message", bytes.status().message());
      else g.request_message = std::move(*bytes);
    }
    if (s.expect.json) {
      if (Status ok = set->CheckReplyJson(*method, s.expect.json->dump()); !ok.ok()) fail("expect.json", ok.message());
    }
  }
  return out;
}

Result<std::string> ResponseJson(const GrpcCallSpec& call, const std::string& message) {
  if (!call.descriptor_set && !call.descriptor_set_config_map_ref) {
    return Status::FailedPrecondition("no descriptor set to decode the response with");
  }
  auto set = LoadDescriptorSet(call.descriptor_set_content, SetName(call));
  if (!set.ok()) return set.status();
  auto method = set->Method(call.method);
  if (!method.ok()) return method.status();
  return set->DecodeToJson(*method, message);
}

}  // namespace fairbench::api
