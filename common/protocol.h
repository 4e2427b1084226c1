// Scheme and Protocol: how a target is reached, as one value everywhere —
// the run file (spec.targets[].scheme and .protocol, decoded once by the API
// codec), the controller's probes and jobs, the wire to the agents and the
// agent's engine. Text appears only at the edges: the spellings below, read
// by Parse* and written by ToString. IdleWaitMode and GrpcCallKind, the
// other settings a job carries to the agent, follow the same pattern (on the
// wire as proto enums, mapped by the codec in common/wire_job.cc).
//
// Constants and pure functions; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

namespace fairbench {

// "http" or "https" (TLS; the certificate is not verified, as wrk does not).
enum class Scheme : uint8_t { kHttp, kHttps };

// What is spoken over the connection: HTTP/1.1, HTTP/2 with prior knowledge
// over plain TCP (h2c), or HTTP/2 over TLS chosen by ALPN (h2). gRPC is
// HTTP/2 carrying calls: h2 with scheme https, h2c with http. It is a
// target's protocol in the run file; jobs and probes carry the HTTP/2 form
// (Http2Form) and the call.
enum class Protocol : uint8_t { kHttp1, kH2c, kH2, kGrpc };

inline constexpr std::array<std::pair<Scheme, std::string_view>, 2> kSchemeNames{{
    {Scheme::kHttp, "http"},
    {Scheme::kHttps, "https"},
}};

inline constexpr std::array<std::pair<Protocol, std::string_view>, 4> kProtocolNames{{
    {Protocol::kHttp1, "http1"},
    {Protocol::kH2, "h2"},
    {Protocol::kH2c, "h2c"},
    {Protocol::kGrpc, "grpc"},
}};

constexpr std::string_view ToString(Scheme s) { return kSchemeNames[s == Scheme::kHttps ? 1 : 0].second; }

constexpr std::string_view ToString(Protocol p) {
  for (const auto& [value, name] : kProtocolNames) {
    if (value == p) return name;
  }
  return "?";
}

constexpr std::optional<Scheme> ParseScheme(std::string_view text) {
  for (const auto& [value, name] : kSchemeNames) {
    if (name == text) return value;
  }
  return std::nullopt;
}

constexpr std::optional<Protocol> ParseProtocol(std::string_view text) {
  for (const auto& [value, name] : kProtocolNames) {
    if (name == text) return value;
  }
  return std::nullopt;
}

// What a load worker does when nothing is ready while requests are in
// flight: block on its sockets, nap on its own timer, poll without sleeping,
// or auto: nap when the target is on the agent's machine, else block (the
// agent resolves it: agent/idle_wait.h). The run file's load.idleWait, a
// job's idle_wait and the CLI's --idle-wait. What a worker then did is
// IdleWait (common/metrics.h).
enum class IdleWaitMode : uint8_t { kAuto, kBlock, kNap, kPoll };

// A gRPC call's kind, known from its descriptor set: a unary call answered
// OK must carry exactly one message; unknown is not checked.
enum class GrpcCallKind : uint8_t { kUnknown, kUnary, kServerStreaming };

inline constexpr std::array<std::pair<IdleWaitMode, std::string_view>, 4> kIdleWaitModeNames{{
    {IdleWaitMode::kAuto, "auto"},
    {IdleWaitMode::kBlock, "block"},
    {IdleWaitMode::kNap, "nap"},
    {IdleWaitMode::kPoll, "poll"},
}};

inline constexpr std::array<std::pair<GrpcCallKind, std::string_view>, 3> kGrpcCallKindNames{{
    {GrpcCallKind::kUnknown, "unknown"},
    {GrpcCallKind::kUnary, "unary"},
    {GrpcCallKind::kServerStreaming, "server-streaming"},
}};

constexpr std::string_view ToString(IdleWaitMode m) {
  for (const auto& [value, name] : kIdleWaitModeNames) {
    if (value == m) return name;
  }
  return "?";
}

constexpr std::string_view ToString(GrpcCallKind k) {
  for (const auto& [value, name] : kGrpcCallKindNames) {
    if (value == k) return name;
  }
  return "?";
}

constexpr std::optional<IdleWaitMode> ParseIdleWaitMode(std::string_view text) {
  for (const auto& [value, name] : kIdleWaitModeNames) {
    if (name == text) return value;
  }
  return std::nullopt;
}

constexpr std::optional<GrpcCallKind> ParseGrpcCallKind(std::string_view text) {
  for (const auto& [value, name] : kGrpcCallKindNames) {
    if (name == text) return value;
  }
  return std::nullopt;
}

// HTTP/2 in either form, gRPC included.
constexpr bool IsHttp2(Protocol p) { return p != Protocol::kHttp1; }

// What goes over the connection: gRPC is h2 over TLS, h2c over TCP; the
// others are themselves.
constexpr Protocol WireProtocol(Protocol p, Scheme s) {
  if (p != Protocol::kGrpc) return p;
  return s == Scheme::kHttps ? Protocol::kH2 : Protocol::kH2c;
}

}  // namespace fairbench
