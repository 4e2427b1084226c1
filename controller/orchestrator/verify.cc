#include "controller/orchestrator/verify.h"

#include <cctype>

#include <nlohmann/json.hpp>

#include "common/api/grpc_calls.h"
#include "common/metrics.h"
#include "controller/orchestrator/cell_jobs.h"
#include "controller/platform/grpc_probe.h"
#include "controller/platform/http_probe.h"

namespace fairbench::controller {
namespace {

bool IStartsWith(const std::string& s, const std::string& prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) != std::tolower(static_cast<unsigned char>(prefix[i]))) return false;
  }
  return true;
}

std::string Clip(const std::string& s, size_t n = 80) {
  std::string out = s.size() > n ? s.substr(0, n) + "…" : s;
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

// A gRPC scenario: its call made once with grpc++ (not the agents' own
// framing), answered with the expected status and, with expect.json, the
// expected response message.
Status VerifyGrpcCall(const std::string& host, uint16_t port, bool https, const api::ScenarioSettings& settings) {
  const api::GrpcCallSpec& g = *settings.grpc;
  GrpcProbeRequest call;
  call.host = host;
  call.port = port;
  call.tls = https;
  call.method = g.method;
  call.message = g.request_message;
  for (const auto& [k, v] : GrpcJob(g).metadata) call.metadata.emplace_back(k, v);
  call.deadline = std::chrono::duration_cast<std::chrono::milliseconds>(g.deadline.value_or(std::chrono::seconds(5)));
  call.server_streaming = g.kind == api::GrpcCallSpec::Kind::kServerStreaming;
  auto answer = GrpcProbeCall(call);
  const std::string what = g.method + ": ";
  if (!answer.ok()) return Status::Unavailable(what + answer.status().message());
  const api::GrpcCode expected = settings.expect.grpc_status.value_or(api::GrpcCode::kOk);
  if (answer->grpc_code != static_cast<int>(expected)) {
    return Status::FailedPrecondition(what + "expected gRPC status " + std::string(api::ToString(expected)) + ", got " +
                                      GrpcStatusName(answer->grpc_code) +
                                      (answer->grpc_message.empty() ? "" : " (\"" + Clip(answer->grpc_message) + "\")"));
  }
  if (!settings.expect.json) return Status::Ok();
  if (answer->messages.empty()) return Status::FailedPrecondition(what + "expected a response message, got none");
  auto json = api::ResponseJson(g, answer->messages.front());
  if (!json.ok()) return Status::FailedPrecondition(what + json.status().message());
  const nlohmann::json got = nlohmann::json::parse(*json, nullptr, false);
  if (got.is_discarded() || got != *settings.expect.json) {
    return Status::FailedPrecondition(what + "expected the message " + Clip(settings.expect.json->dump()) + ", got " +
                                      Clip(got.is_discarded() ? *json : got.dump()));
  }
  return Status::Ok();
}

}  // namespace

Status VerifyScenario(const std::string& host, uint16_t port, bool https, const api::ScenarioSettings& settings,
                      Protocol protocol) {
  if (settings.grpc) return VerifyGrpcCall(host, port, https, settings);
  const std::vector<api::WeightedRequest>& requests = settings.requests;
  for (size_t i = 0; i < requests.size(); ++i) {
    const api::Request& r = requests[i].request;
    ProbeRequest p;
    p.method = r.method;
    p.host = host;
    p.port = port;
    p.https = https;
    p.protocol = protocol;
    p.path = r.path;
    for (const auto& [k, v] : r.headers) p.headers.emplace_back(k, v);
    p.body = r.EffectiveBody();
    p.timeout = std::chrono::seconds(5);
    auto response = HttpProbe(p);
    const std::string what = r.method + " " + r.path + ": ";
    if (!response.ok()) return Status::Unavailable(what + response.status().message());
    const api::Expect& e = settings.expect;
    if (response->status != e.status) {
      return Status::FailedPrecondition(what + "expected status " + std::to_string(e.status) + ", got " +
                                        std::to_string(response->status));
    }
    if (e.content_type && !IStartsWith(response->content_type, *e.content_type)) {
      return Status::FailedPrecondition(what + "expected content type " + *e.content_type + ", got '" +
                                        response->content_type + "'");
    }
    if (i > 0) continue;  // body and JSON expectations describe the scenario's main request
    if (e.body && response->body != *e.body) {
      return Status::FailedPrecondition(what + "expected body '" + Clip(*e.body) + "', got '" + Clip(response->body) + "'");
    }
    if (e.json) {
      const nlohmann::json got = nlohmann::json::parse(response->body, nullptr, false);
      if (got.is_discarded()) return Status::FailedPrecondition(what + "expected JSON, got '" + Clip(response->body) + "'");
      if (got != *e.json) {
        return Status::FailedPrecondition(what + "expected JSON " + Clip(e.json->dump()) + ", got " + Clip(got.dump()));
      }
    }
  }
  return Status::Ok();
}

}  // namespace fairbench::controller
