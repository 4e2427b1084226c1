#include "common/wire_job.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <ratio>
#include <string_view>

#include "common/grpc_message.h"
#include "common/load_rules.h"

namespace fairbench::wire {
namespace {

// start travels as int64 ns since the epoch: the clock must be that fine for
// a start to survive the round trip.
static_assert(std::ratio_less_equal_v<std::chrono::system_clock::period, std::nano>,
              "system_clock is coarser than a nanosecond");

// The limits and the syntax: common/load_rules.h, shared with the run
// file's validation and the agent.
using load_rules::Count;
using load_rules::HasSpaceOrControl;
using load_rules::IsToken;
using load_rules::kMinIntervalNs;
using load_rules::kMinRate;
using load_rules::RangeOf;
constexpr uint32_t kMaxConnections = static_cast<uint32_t>(RangeOf(Count::kConnections).max);
constexpr uint32_t kMaxThreads = static_cast<uint32_t>(RangeOf(Count::kThreads).max);
constexpr uint32_t kMaxPipeline = static_cast<uint32_t>(RangeOf(Count::kPipeline).max);
constexpr uint32_t kMaxStreams = static_cast<uint32_t>(RangeOf(Count::kStreams).max);

bool HasCrLf(const std::string& s) { return load_rules::HasLineBreak(s); }

Status Invalid(const std::string& field, const std::string& what) {
  return Status::InvalidArgument("job." + field + ": " + what);
}

std::string Quoted(const std::string& s) { return "'" + s + "'"; }

// A duration field: 0 is the default, negative is refused.
Status DecodeDuration(int64_t ns, const char* field, std::chrono::nanoseconds* out) {
  if (ns < 0) return Invalid(field, "must be ≥ 0 (got " + std::to_string(ns) + ")");
  if (ns > 0) *out = std::chrono::nanoseconds(ns);
  return Status::Ok();
}

// The proto enums and common/protocol.h's, value for value; nullopt for a
// number the proto does not name (an open enum carries any).
v1::Scheme EncodeScheme(Scheme s) { return s == Scheme::kHttps ? v1::SCHEME_HTTPS : v1::SCHEME_HTTP; }

std::optional<Scheme> DecodeScheme(int v) {
  switch (v) {
    case v1::SCHEME_HTTP: return Scheme::kHttp;
    case v1::SCHEME_HTTPS: return Scheme::kHttps;
    default: return std::nullopt;
  }
}

v1::IdleWaitMode EncodeIdleWait(IdleWaitMode m) {
  switch (m) {
    case IdleWaitMode::kAuto: break;
    case IdleWaitMode::kBlock: return v1::IDLE_WAIT_MODE_BLOCK;
    case IdleWaitMode::kNap: return v1::IDLE_WAIT_MODE_NAP;
    case IdleWaitMode::kPoll: return v1::IDLE_WAIT_MODE_POLL;
  }
  return v1::IDLE_WAIT_MODE_AUTO;
}

std::optional<IdleWaitMode> DecodeIdleWait(int v) {
  switch (v) {
    case v1::IDLE_WAIT_MODE_AUTO: return IdleWaitMode::kAuto;
    case v1::IDLE_WAIT_MODE_BLOCK: return IdleWaitMode::kBlock;
    case v1::IDLE_WAIT_MODE_NAP: return IdleWaitMode::kNap;
    case v1::IDLE_WAIT_MODE_POLL: return IdleWaitMode::kPoll;
    default: return std::nullopt;
  }
}

v1::GrpcCallKind EncodeGrpcCallKind(GrpcCallKind k) {
  switch (k) {
    case GrpcCallKind::kUnknown: break;
    case GrpcCallKind::kUnary: return v1::GRPC_CALL_KIND_UNARY;
    case GrpcCallKind::kServerStreaming: return v1::GRPC_CALL_KIND_SERVER_STREAMING;
  }
  return v1::GRPC_CALL_KIND_UNKNOWN;
}

std::optional<GrpcCallKind> DecodeGrpcCallKind(int v) {
  switch (v) {
    case v1::GRPC_CALL_KIND_UNKNOWN: return GrpcCallKind::kUnknown;
    case v1::GRPC_CALL_KIND_UNARY: return GrpcCallKind::kUnary;
    case v1::GRPC_CALL_KIND_SERVER_STREAMING: return GrpcCallKind::kServerStreaming;
    default: return std::nullopt;
  }
}

Result<JobRequest> DecodeRequest(const v1::Request& in, size_t index) {
  const std::string at = "requests[" + std::to_string(index) + "].";
  JobRequest r;
  r.name = in.name();
  if (!in.method().empty()) r.method = in.method();
  if (!in.target().empty()) r.target = in.target();
  for (const v1::Header& h : in.headers()) r.headers.emplace_back(h.name(), h.value());
  r.body = in.body();
  if (in.weight() != 0) r.weight = in.weight();

  if (!IsToken(r.method)) return Invalid(at + "method", Quoted(r.method) + " is not an HTTP method token");
  if (!load_rules::StartsLikeTarget(r.target)) return Invalid(at + "target", Quoted(r.target) + " must start with '/'");
  if (HasSpaceOrControl(r.target)) {
    return Invalid(at + "target", Quoted(r.target) + " contains spaces or control characters");
  }
  for (size_t i = 0; i < r.headers.size(); ++i) {
    const auto& [name, value] = r.headers[i];
    const std::string field = at + "headers[" + std::to_string(i) + "]";
    if (!IsToken(name)) return Invalid(field + ".name", Quoted(name) + " is not a header name token");
    if (HasCrLf(value)) return Invalid(field + ".value", "header " + Quoted(name) + " contains a line break");
  }
  return r;
}

Result<JobGrpc> DecodeGrpc(const v1::GrpcCall& in) {
  JobGrpc g;
  g.method = in.method();
  if (!ParseGrpcMethodName(g.method).ok() || HasSpaceOrControl(g.method)) {
    return Invalid("grpc.method", Quoted(g.method) + " is not package.Service/Method");
  }
  g.message = in.message();
  if (g.message.size() > 0xffffffffull) return Invalid("grpc.message", "over 4 GiB");
  for (int i = 0; i < in.metadata_size(); ++i) {
    const v1::Header& h = in.metadata(i);
    const std::string field = "grpc.metadata[" + std::to_string(i) + "]";
    if (!IsToken(h.name())) return Invalid(field + ".name", Quoted(h.name()) + " is not a header name token");
    if (load_rules::IsGrpcOwnMetadata(h.name())) return Invalid(field + ".name", Quoted(h.name()) + " is gRPC's own");
    if (HasCrLf(h.value())) return Invalid(field + ".value", "contains a line break");
    g.metadata.emplace_back(h.name(), h.value());
  }
  if (Status s = DecodeDuration(in.deadline_ns(), "grpc.deadline_ns", &g.deadline); !s.ok()) return s;
  if (in.max_message_size() != 0) g.max_message = in.max_message_size();
  auto kind = DecodeGrpcCallKind(in.kind());
  if (!kind)
    return Invalid("grpc.kind", "must be unknown, unary or server-streaming (got " + std::to_string(in.kind()) + ")");
  g.kind = *kind;
  return g;
}

}  // namespace

std::string JobSpec::EffectiveHostHeader() const {
  if (!host_header.empty()) return host_header;
  const bool v6 = host.find(':') != std::string::npos && host.front() != '[';
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

void ToProto(const JobSpec& in, v1::LoadJob* out) {
  out->Clear();
  out->set_job_id(in.job_id);
  out->set_host(in.host);
  out->set_port(in.port);
  out->set_host_header(in.host_header);
  for (const JobRequest& r : in.requests) {
    v1::Request* m = out->add_requests();
    m->set_name(r.name);
    m->set_method(r.method);
    m->set_target(r.target);
    for (const auto& [name, value] : r.headers) {
      v1::Header* h = m->add_headers();
      h->set_name(name);
      h->set_value(value);
    }
    m->set_body(r.body);
    m->set_weight(r.weight);
  }
  out->set_connections(in.connections);
  out->set_threads(in.threads);
  out->set_warmup_ns(in.warmup.count());
  out->set_duration_ns(in.duration.count());
  out->set_timeout_ns(in.timeout.count());
  out->set_interval_ns(in.interval.count());
  out->set_keep_alive(in.keep_alive);
  out->set_scheme(EncodeScheme(in.scheme));
  if (in.protocol != Protocol::kHttp1) out->set_protocol(std::string(ToString(in.protocol)));
  if (in.streams != 1) out->set_streams(in.streams);
  out->set_idle_wait(EncodeIdleWait(in.idle_wait));
  out->set_pipeline(in.pipeline);
  out->set_rate(in.rate);
  if (in.start) {
    out->set_start_unix_ns(std::chrono::duration_cast<std::chrono::nanoseconds>(in.start->time_since_epoch()).count());
  }
  out->set_connection_offset(in.connection_offset);
  out->set_total_connections(in.total_connections);
  out->set_send_offset_ns(in.send_offset.count());
  if (in.script) {
    v1::Script* s = out->mutable_script();
    s->set_name(in.script->name);
    s->set_text(in.script->text);
    for (const std::string& a : in.script->args) s->add_args(a);
  }
  out->set_probe(in.probe);
  if (in.grpc) {
    v1::GrpcCall* g = out->mutable_grpc();
    g->set_method(in.grpc->method);
    g->set_message(in.grpc->message);
    for (const auto& [name, value] : in.grpc->metadata) {
      v1::Header* h = g->add_metadata();
      h->set_name(name);
      h->set_value(value);
    }
    g->set_deadline_ns(in.grpc->deadline.count());
    g->set_max_message_size(in.grpc->max_message);
    g->set_kind(EncodeGrpcCallKind(in.grpc->kind));
  }
  if (in.vary) {
    v1::Vary* v = out->mutable_vary();
    v->set_seed(in.vary->seed);
    v->set_verify_every(in.vary->verify_every);
    v->set_expect(in.vary->expect);
    v->set_expect_json(in.vary->expect_json);
  }
}

namespace {

// job_id, host, port and Host header.
Status DecodeTarget(const v1::LoadJob& in, JobSpec* j) {
  j->job_id = in.job_id();
  if (j->job_id.empty()) return Invalid("job_id", "empty");
  j->host = in.host();
  if (j->host.empty()) return Invalid("host", "empty");
  if (HasSpaceOrControl(j->host)) return Invalid("host", Quoted(j->host) + " contains spaces or control characters");
  if (in.port() == 0 || in.port() > 65535) {
    return Invalid("port", "must be between 1 and 65535 (got " + std::to_string(in.port()) + ")");
  }
  j->port = static_cast<uint16_t>(in.port());
  j->host_header = in.host_header();
  if (HasCrLf(j->host_header)) return Invalid("host_header", "contains a line break");
  return Status::Ok();
}

// What makes the requests: a script, a gRPC call or the requests (one of
// them), and the probe that only a script makes.
Status DecodeWork(const v1::LoadJob& in, JobSpec* j) {
  if (in.has_script()) {
    JobScript s;
    s.name = in.script().name();
    s.text = in.script().text();
    for (const std::string& a : in.script().args()) s.args.push_back(a);
    if (s.name.empty()) return Invalid("script.name", "empty");
    if (s.text.empty()) return Invalid("script.text", "empty");
    if (in.requests_size() > 0)
      return Invalid("requests", "must be empty with a script (the script makes the requests)");
    if (in.has_grpc()) return Invalid("grpc", "not with a script");
    j->script = std::move(s);
  } else if (in.has_grpc()) {
    auto g = DecodeGrpc(in.grpc());
    if (!g.ok()) return g.status();
    if (in.requests_size() > 0) return Invalid("requests", "must be empty with grpc (every stream is the call)");
    j->grpc = std::move(*g);
  } else if (in.requests().empty()) {
    return Invalid("requests", "at least one request (or a script or a gRPC call)");
  }
  j->probe = in.probe();
  if (j->probe && !j->script) return Invalid("probe", "only with a script");
  for (int i = 0; i < in.requests_size(); ++i) {
    auto r = DecodeRequest(in.requests(i), static_cast<size_t>(i));
    if (!r.ok()) return r.status();
    j->requests.push_back(std::move(*r));
  }
  return Status::Ok();
}

// Connections, threads and the durations.
Status DecodeSize(const v1::LoadJob& in, JobSpec* j) {
  j->connections = in.connections();
  if (j->connections == 0) return Invalid("connections", "must be ≥ 1");
  if (j->connections > kMaxConnections) {
    return Invalid("connections",
                   "must be ≤ " + std::to_string(kMaxConnections) + " (got " + std::to_string(j->connections) + ")");
  }
  if (in.threads() != 0) j->threads = in.threads();
  if (j->threads > kMaxThreads) {
    return Invalid("threads", "must be ≤ " + std::to_string(kMaxThreads) + " (got " + std::to_string(j->threads) + ")");
  }
  if (j->threads > j->connections) {
    return Invalid("threads", std::to_string(j->threads) + " threads for " + std::to_string(j->connections) +
                                  " connections (must be ≤ connections)");
  }
  if (Status s = DecodeDuration(in.warmup_ns(), "warmup_ns", &j->warmup); !s.ok()) return s;
  if (Status s = DecodeDuration(in.duration_ns(), "duration_ns", &j->duration); !s.ok()) return s;
  if (Status s = DecodeDuration(in.timeout_ns(), "timeout_ns", &j->timeout); !s.ok()) return s;
  if (Status s = DecodeDuration(in.interval_ns(), "interval_ns", &j->interval); !s.ok()) return s;
  if (j->duration.count() > std::numeric_limits<int64_t>::max() - j->warmup.count()) {
    return Invalid("duration_ns", "warmup + duration overflow 64-bit nanoseconds");
  }
  if (j->interval.count() < kMinIntervalNs) {
    return Invalid("interval_ns", "must be ≥ 10 ms (got " + std::to_string(j->interval.count()) + " ns)");
  }
  return Status::Ok();
}

// Keep-alive, scheme, protocol, streams and idle wait.
Status DecodeConnection(const v1::LoadJob& in, JobSpec* j) {
  j->keep_alive = in.keep_alive();  // a proto3 bool: false and unset are the same
  const std::optional<Scheme> scheme = DecodeScheme(in.scheme());
  if (!scheme) return Invalid("scheme", "must be http or https (got " + std::to_string(in.scheme()) + ")");
  j->scheme = *scheme;
  const bool https = j->scheme == Scheme::kHttps;
  if (!in.protocol().empty()) {
    const std::optional<Protocol> p = ParseProtocol(in.protocol());
    if (!p) return Invalid("protocol", "must be http1, h2 or h2c (got " + Quoted(in.protocol()) + ")");
    j->protocol = *p;
  }
  if (j->protocol == Protocol::kGrpc)
    return Invalid("protocol", "must be http1, h2 or h2c (gRPC goes as h2 or h2c with grpc set)");
  if (j->grpc && !IsHttp2(j->protocol)) return Invalid("grpc", "gRPC needs protocol h2 or h2c");
  if (j->protocol == Protocol::kH2 && !https) return Invalid("protocol", "h2 needs https");
  if (j->protocol == Protocol::kH2c && https) return Invalid("protocol", "h2c is HTTP/2 without TLS: not with https");
  if (in.streams() != 0) j->streams = in.streams();
  if (j->streams > kMaxStreams) {
    return Invalid("streams", "must be ≤ " + std::to_string(kMaxStreams) + " (got " + std::to_string(j->streams) + ")");
  }
  const std::optional<IdleWaitMode> idle = DecodeIdleWait(in.idle_wait());
  if (!idle)
    return Invalid("idle_wait", "must be auto, block, nap or poll (got " + std::to_string(in.idle_wait()) + ")");
  j->idle_wait = *idle;
  return Status::Ok();
}

// Pipeline and rate.
Status DecodePace(const v1::LoadJob& in, JobSpec* j) {
  if (in.pipeline() != 0) j->pipeline = in.pipeline();
  if (j->pipeline > kMaxPipeline) {
    return Invalid("pipeline",
                   "must be ≤ " + std::to_string(kMaxPipeline) + " (got " + std::to_string(j->pipeline) + ")");
  }
  j->rate = in.rate();
  if (!std::isfinite(j->rate) || j->rate < 0) return Invalid("rate", "must be a finite number ≥ 0");
  if (j->rate > 0 && j->rate < kMinRate) return Invalid("rate", "must be 0 or at least 0.001 requests/s");
  if (j->rate > 0 && j->pipeline > 1) return Invalid("rate", "a constant rate cannot be combined with pipeline > 1");
  return Status::Ok();
}

// The start, this agent's place among all agents' connections, and its
// send offset.
Status DecodeSchedule(const v1::LoadJob& in, JobSpec* j) {
  if (in.start_unix_ns() < 0)
    return Invalid("start_unix_ns", "must be ≥ 0 (got " + std::to_string(in.start_unix_ns()) + ")");
  if (in.start_unix_ns() > 0) {
    j->start = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(in.start_unix_ns())));
  }
  j->connection_offset = in.connection_offset();
  j->total_connections = in.total_connections();
  if (j->total_connections != 0 &&
      uint64_t{j->total_connections} < uint64_t{j->connection_offset} + uint64_t{j->connections}) {
    return Invalid("total_connections", std::to_string(j->total_connections) +
                                            " is less than connection_offset + connections (" +
                                            std::to_string(uint64_t{j->connection_offset} + j->connections) + ")");
  }
  if (Status s = DecodeDuration(in.send_offset_ns(), "send_offset_ns", &j->send_offset); !s.ok()) return s;
  if (j->send_offset >= j->interval) {
    return Invalid("send_offset_ns", "must be less than interval_ns (got " + std::to_string(j->send_offset.count()) +
                                         " ns for an interval of " + std::to_string(j->interval.count()) + " ns)");
  }
  return Status::Ok();
}

Status DecodeVary(const v1::LoadJob& in, JobSpec* j) {
  if (!in.has_vary()) return Status::Ok();
  JobVary v;
  v.seed = in.vary().seed();
  if (in.vary().verify_every() != 0) v.verify_every = in.vary().verify_every();
  v.expect = in.vary().expect();
  v.expect_json = in.vary().expect_json();
  if (j->script || j->grpc) return Invalid("vary", "only with requests (not with a script or a gRPC call)");
  if (j->requests.size() != 1)
    return Invalid("vary", "needs exactly one request (got " + std::to_string(j->requests.size()) + ")");
  if (j->protocol != Protocol::kHttp1) return Invalid("vary", "HTTP/1.1 only");
  if (j->pipeline > 1) return Invalid("vary", "not with pipeline > 1");
  j->vary = std::move(v);
  return Status::Ok();
}

}  // namespace

Result<JobSpec> FromProto(const v1::LoadJob& in) {
  JobSpec j;
  for (const auto decode :
       {DecodeTarget, DecodeWork, DecodeSize, DecodeConnection, DecodePace, DecodeSchedule, DecodeVary}) {
    if (Status s = decode(in, &j); !s.ok()) return s;
  }
  return j;
}

std::chrono::nanoseconds SendOffset(int index, int agents, std::chrono::nanoseconds interval) {
  if (agents <= 1 || index <= 0) return std::chrono::nanoseconds(0);
  const std::chrono::nanoseconds spread =
      std::min<std::chrono::nanoseconds>(interval / 4, std::chrono::milliseconds(250));
  return spread * std::min(index, agents - 1) / agents;
}

}  // namespace fairbench::wire
