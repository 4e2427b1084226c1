#include "agent/job_options.h"

#include <algorithm>
#include <utility>

#include "agent/engine.h"
#include "agent/idle_wait.h"
#include "agent/request.h"
#include "agent/tls_context.h"
#include "agent/url.h"
#include "common/load_rules.h"

namespace fairbench::agent {
namespace {

// The job's requests (or its gRPC call) as specs, checked, and built into
// o->requests.
Result<std::vector<RequestSpec>> AddRequests(const wire::JobSpec& job, EngineOptions* o) {
  const std::string host_header = job.EffectiveHostHeader();
  std::vector<RequestSpec> specs;
  for (size_t i = 0; i < job.requests.size(); ++i) {
    const RequestSpec& spec = job.requests[i];
    if (Status s = ValidateRequest(spec, "job.requests[" + std::to_string(i) + "]: "); !s.ok()) return s;
    o->requests.push_back(BuildRequest(spec, host_header, job.keep_alive));
    specs.push_back(spec);
  }
  if (job.grpc) {
    // Every stream is the call; HTTP/2 by the job's protocol.
    const wire::JobGrpc& g = *job.grpc;
    RequestSpec spec = GrpcRequest(g.method, g.message, g.metadata, g.deadline);
    if (Status s = ValidateRequest(spec, "job.grpc: "); !s.ok()) return s;
    o->requests.push_back(BuildRequest(spec, host_header, job.keep_alive));
    specs.push_back(std::move(spec));
    o->h2.grpc = true;
    o->h2.grpc_max_message = g.max_message;
    o->grpc_unary = g.kind == GrpcCallKind::kUnary;
  }
  return specs;
}

void SetPace(const wire::JobSpec& job, const JobLocal& local, EngineOptions* o) {
  o->threads = job.threads;
  o->connections = job.connections;
  o->warmup = job.warmup;
  o->duration = job.duration;
  o->timeout = load_rules::AnswerTimeout(job.timeout, job.grpc ? job.grpc->deadline : std::chrono::nanoseconds(0));
  o->interval = job.interval;
  o->keep_alive = job.keep_alive;
  o->pipeline = job.pipeline;
  o->rate = job.rate;
  o->connection_offset = job.connection_offset;
  o->total_connections = job.total_connections;
  o->cpus = local.cpus;
  o->start_at = job.start;
}

Status SetProtocol(const wire::JobSpec& job, const JobLocal& local, const std::vector<RequestSpec>& specs,
                   EngineOptions* o) {
  if (job.scheme == Scheme::kHttps) o->tls = MakeTlsOptions(job.host, local.sni, local.verify, local.target_ca_file);
  if (!IsHttp2(job.protocol)) return Status::Ok();
  o->protocol = job.protocol == Protocol::kH2 ? HttpProtocol::kH2 : HttpProtocol::kH2c;
  o->tls.alpn_h2 = o->protocol == HttpProtocol::kH2;
  o->h2.max_streams = job.streams;
  if (local.h2_stream_window) o->h2.stream_window = *local.h2_stream_window;
  if (local.h2_connection_window) o->h2.connection_window = *local.h2_connection_window;
  return BuildH2Requests(*o, specs, job.EffectiveHostHeader());
}

void SetVary(const wire::JobSpec& job, const std::vector<RequestSpec>& specs, EngineOptions* o) {
  if (!job.vary) return;
  auto plan = std::make_shared<VaryPlan>();
  plan->seed = job.vary->seed;
  plan->verify_every = job.vary->verify_every;
  plan->request = VaryRequest(specs.front(), job.EffectiveHostHeader(), job.keep_alive);
  plan->expect =
      VaryExpect(job.vary->expect_json ? VaryExpect::Kind::kJson : VaryExpect::Kind::kBody, job.vary->expect);
  o->vary = std::move(plan);
}

// wrk's table for the job's script: the target, and the job's first request
// (the CLI's -m, -H and --body) when it has one.
ScriptOptions ScriptOptionsFor(const wire::JobSpec& job, const JobLocal& local, const EngineOptions& o) {
  ScriptOptions so;
  so.source = ScriptSource{job.script->name, job.script->text};
  so.scheme = ToString(job.scheme);
  so.host = job.host;
  so.port = local.port_implicit ? "" : std::to_string(job.port);
  if (job.requests.empty()) {
    so.headers = {{"Host", job.EffectiveHostHeader()}};
  } else {
    const RequestSpec& first = job.requests.front();
    so.path = first.target;
    so.headers = first.headers;
    so.method = first.method;
    so.body = first.body;
  }
  so.url = local.url.empty() ? so.scheme + "://" + job.EffectiveHostHeader() + "/" : local.url;
  so.args = job.script->args;
  so.threads = o.threads;
  so.addresses = o.addresses;
  if (IsHttp2(job.protocol)) so.h2_scheme = ToString(job.protocol == Protocol::kH2 ? Scheme::kHttps : Scheme::kHttp);
  return so;
}

// The script makes the requests: the job's own, if any, only seeded its
// table.
Status SetScript(const wire::JobSpec& job, const JobLocal& local, EngineOptions* o, std::unique_ptr<Script>* script) {
  if (!job.script) return Status::Ok();
  auto created = Script::Create(ScriptOptionsFor(job, local, *o));
  if (!created.ok()) return created.status();
  *script = std::move(*created);
  if (local.check_script) {
    if (Status s = local.check_script(**script, *o); !s.ok()) return s;
  }
  o->script = script->get();
  o->requests.clear();
  o->h2_requests.clear();
  return Status::Ok();
}

}  // namespace

Result<EngineOptions> BuildEngineOptions(const wire::JobSpec& job, const JobLocal& local,
                                         std::unique_ptr<Script>* script) {
  EngineOptions o;
  auto addrs = Resolve(job.host, job.port);
  if (!addrs.ok()) return addrs.status();
  o.addresses = std::move(*addrs);
  auto specs = AddRequests(job, &o);
  if (!specs.ok()) return specs.status();
  SetPace(job, local, &o);
  o.idle_wait = ResolveIdleWait(job.idle_wait, o.addresses.front());
  if (Status s = SetProtocol(job, local, *specs, &o); !s.ok()) return s;
  SetVary(job, *specs, &o);
  if (Status s = SetScript(job, local, &o, script); !s.ok()) return s;
  if (Status s = ValidateOptions(o); !s.ok()) return s;
  return o;
}

}  // namespace fairbench::agent
