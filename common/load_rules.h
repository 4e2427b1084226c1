// LoadRules: the limits and the request syntax a load must meet, kept once.
// Every gate a load passes takes them from here — the run file's validation
// (api/validate.cc), the wire codec (wire::FromProto), the agent's
// `load` command (agent/load_command.cc) and its engine (ValidateOptions,
// agent/engine.cc, and ValidateRequest, agent/request.cc) — so that the run
// file refuses what an agent would refuse. Each gate words its refusal in
// its own terms (a run-file path, a proto field, a flag); the numbers and
// the syntax are these.
//
// Constants and pure functions; thread-safe.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <string_view>
#include <utility>

namespace fairbench::load_rules {

// The counts of a load, each with an inclusive range.
enum class Count : uint8_t { kThreads, kConnections, kPipeline, kStreams, kWeight };

struct CountRange {
  std::string_view what;
  uint64_t min;
  uint64_t max;
};

inline constexpr std::array<std::pair<Count, CountRange>, 5> kCountRanges{{
    // Worker threads of one agent (one engine).
    {Count::kThreads, {"threads", 1, 1024}},
    // Connections of one agent; beyond this a figure is a typo.
    {Count::kConnections, {"connections", 1, 1'000'000}},
    // Requests written back to back on one HTTP/1.1 connection.
    {Count::kPipeline, {"pipeline", 1, 1024}},
    // HTTP/2 streams per connection (SETTINGS_MAX_CONCURRENT_STREAMS fits more,
    // but nghttp2's and our per-stream state would not).
    {Count::kStreams, {"streams", 1, 65536}},
    // A request's share of a weighted mix (a uint32 on the wire).
    {Count::kWeight, {"weight", 1, 0xffffffffull}},
}};

constexpr const CountRange& RangeOf(Count c) {
  for (const auto& [count, range] : kCountRanges) {
    if (count == c) return range;
  }
  return kCountRanges[0].second;  // unreachable: every Count has a row
}

constexpr bool InRange(Count c, int64_t value) {
  const CountRange& r = RangeOf(c);
  return value >= 0 && static_cast<uint64_t>(value) >= r.min && static_cast<uint64_t>(value) <= r.max;
}

// A constant rate (requests/s) is 0 (none) or at least this.
inline constexpr double kMinRate = 1e-3;

// The shortest snapshot interval an agent keeps up with.
inline constexpr int64_t kMinIntervalNs = 10'000'000;

// How long a load waits for an answer: its timeout, but for gRPC calls with
// a deadline at least a second past it, so that the server's
// DEADLINE_EXCEEDED comes before the load gives up on the call (and the
// controller waits that long for an agent's last answers). A deadline of
// zero is none.
constexpr std::chrono::nanoseconds AnswerTimeout(std::chrono::nanoseconds timeout,
                                                 std::chrono::nanoseconds grpc_deadline) {
  if (grpc_deadline.count() <= 0) return timeout;
  return std::max(timeout, grpc_deadline + std::chrono::nanoseconds(std::chrono::seconds(1)));
}

// RFC 9110's tchar: what a method and a header name are made of.
constexpr bool IsTokenChar(char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// A method or a header name: one or more tchars.
constexpr bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsTokenChar(c)) return false;
  }
  return true;
}

constexpr bool HasSpaceOrControl(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return true;
  }
  return false;
}

// A header value must not end the header line early.
constexpr bool HasLineBreak(std::string_view s) { return s.find_first_of("\r\n") != std::string_view::npos; }

// A request target: a path (and query) starting with '/', or "*" (OPTIONS),
// without spaces or control characters (percent-encoded instead).
constexpr bool StartsLikeTarget(std::string_view s) { return !s.empty() && (s.front() == '/' || s == "*"); }

// gRPC metadata (a lower-case key) that gRPC itself sets: from the call's
// method and deadline, never from the user.
constexpr bool IsGrpcOwnMetadata(std::string_view lower_key) {
  return lower_key == "content-type" || lower_key == "te" || lower_key.substr(0, 5) == "grpc-";
}

}  // namespace fairbench::load_rules
