#include "controller/platform/ready_probe.h"

#include "api/cells.h"
#include "host/grpc_probe.h"
#include "host/http_probe.h"

namespace fairbench::controller {
namespace {

constexpr int kGrpcUnavailable = 14;

}  // namespace

ReadyCheck ReadyCheck::For(const api::Target& target, std::string host, uint16_t port) {
  ReadyCheck c;
  c.host = std::move(host);
  c.port = port;
  c.scheme = target.scheme;
  c.protocol = api::EffectiveProtocol(target);
  c.readiness = api::EffectiveReadiness(target);
  return c;
}

Status ProbeReady(const ReadyCheck& c, std::chrono::milliseconds timeout) {
  if (c.protocol != Protocol::kGrpc) {
    host::ProbeRequest r;
    r.host = c.host;
    r.port = c.port;
    r.path = c.readiness.path;
    r.scheme = c.scheme;
    r.protocol = c.protocol;
    r.timeout = timeout;
    auto response = host::HttpProbe(r);
    return response.ok() ? Status::Ok() : response.status();  // any HTTP answer: it is serving
  }
  const api::GrpcReadiness grpc = c.readiness.grpc.value_or(api::GrpcReadiness{});
  if (grpc.method) {
    host::GrpcProbeRequest call;
    call.host = c.host;
    call.port = c.port;
    call.tls = c.scheme == Scheme::kHttps;
    call.method = *grpc.method;
    call.deadline = timeout;
    auto answer = host::GrpcProbeCall(call);
    if (!answer.ok()) return answer.status();
    // Any gRPC status but UNAVAILABLE (not serving yet): it is serving.
    if (answer->grpc_code != kGrpcUnavailable) return Status::Ok();
    return Status::Unavailable(*grpc.method + " answered UNAVAILABLE" +
                               (answer->grpc_message.empty() ? "" : ": " + answer->grpc_message));
  }
  auto health = host::GrpcHealthCheck(c.host, c.port, c.scheme == Scheme::kHttps, grpc.service, timeout);
  if (!health.ok()) return health.status();
  if (health->ok()) return Status::Ok();
  return Status::Unavailable("grpc.health.v1.Health/Check" +
                             (grpc.service.empty() ? std::string() : " of \"" + grpc.service + "\"") + ": " +
                             health->Describe());
}

}  // namespace fairbench::controller
