// Wire: the load job (v1::LoadJob in proto/fairbench/v1/agent.proto), one
// codec for both ends. The controller fills a JobSpec and calls ToProto; the
// agent calls FromProto and gets the same JobSpec back, field for field.
//
// The defaults live here and only here: the member initialisers below. A
// field the proto leaves at zero or empty decodes to its default, so a job
// from an older controller that left e.g. pipeline or weight unset means the
// same thing. One exception: keep_alive is a proto3 bool, and false cannot be
// told apart from unset, so it decodes as sent (false); the default true
// applies to JobSpecs built in C++ (ToProto always writes it).
//
// FromProto also refuses a job that cannot run, with an InvalidArgument
// naming the proto field ("job.port: must be between 1 and 65535 (got 0)",
// "job.requests[1].target: ..."). The agent's engine still checks its own
// options; this check is what makes a refusal name the job's field.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/protocol.h"
#include "common/request_spec.h"
#include "common/status.h"
#include "fairbench/v1/agent.pb.h"

namespace fairbench::wire {

// A job's request: the agent's own RequestSpec (common/request_spec.h).
using JobRequest = RequestSpec;

// A wrk Lua script (agent/script.h) making a job's requests.
struct JobScript {
  std::string name;  // what its errors name
  std::string text;
  std::vector<std::string> args;  // init()'s arguments
  bool operator==(const JobScript&) const = default;
};

// A gRPC call every stream of the job makes (proto GrpcCall).
struct JobGrpc {
  std::string method;                                         // "package.Service/Method"
  std::string message;                                        // the request message, encoded
  std::vector<std::pair<std::string, std::string>> metadata;  // lower-case keys
  std::chrono::nanoseconds deadline{0};                       // 0: none
  uint32_t max_message = 4u << 20;                            // response messages over it are protocol errors
  GrpcCallKind kind = GrpcCallKind::kUnknown;
  bool operator==(const JobGrpc&) const = default;
};

// A job whose request varies (proto Vary): "{n}" in its one request
// becomes a number of the sequence seeded by `seed`, and every
// verify_every-th answer of a connection must be `expect` with the same
// number for its "{n}" (the body exactly, or equal JSON).
struct JobVary {
  uint64_t seed = 0;
  uint32_t verify_every = 100;
  std::string expect;
  bool expect_json = false;
  bool operator==(const JobVary&) const = default;
};

struct JobSpec {
  std::string job_id;
  std::string host;  // name or IP, resolved by the agent
  uint16_t port = 0;
  Scheme scheme = Scheme::kHttp;         // https: TLS (the certificate not verified)
  Protocol protocol = Protocol::kHttp1;  // h2 needs https, h2c not
  uint32_t streams = 1;                  // HTTP/2: concurrent streams per connection
  IdleWaitMode idle_wait = IdleWaitMode::kAuto;
  std::string host_header;           // empty: "host:port"
  std::vector<JobRequest> requests;  // empty with a script or a gRPC call
  std::optional<JobScript> script;
  std::optional<JobGrpc> grpc;  // gRPC load: protocol is h2 or h2c
  std::optional<JobVary> vary;  // one HTTP/1.1 request, pipeline 1
  bool probe = false;           // a script's first request only, no load (proto LoadJob.probe)
  uint32_t connections = 0;     // this agent's share
  uint32_t threads = 1;
  std::chrono::nanoseconds warmup{0};
  std::chrono::nanoseconds duration{std::chrono::seconds(10)};
  std::chrono::nanoseconds timeout{std::chrono::seconds(2)};
  std::chrono::nanoseconds interval{std::chrono::seconds(1)};
  bool keep_alive = true;
  uint32_t pipeline = 1;
  double rate = 0;                                             // this agent's requests/s; 0 = as fast as possible
  std::optional<std::chrono::system_clock::time_point> start;  // wall clock; unset: as soon as connected
  uint32_t connection_offset = 0;                              // this agent's first connection among all agents'
  uint32_t total_connections = 0;                              // 0: just this agent's
  std::chrono::nanoseconds send_offset{0};                     // hold each snapshot but the last this long (< interval)

  // Host header as sent: host_header, or host:port ("[v6]:port" for an IPv6
  // address).
  std::string EffectiveHostHeader() const;

  bool operator==(const JobSpec&) const = default;
};

// Writes every field (defaults included); `out` is cleared first. An unset
// start is written as 0.
void ToProto(const JobSpec& in, v1::LoadJob* out);

// Applies the defaults above to fields left at zero/empty and refuses a job
// that cannot run (InvalidArgument, the message names the field).
Result<JobSpec> FromProto(const v1::LoadJob& in);

// The send offset of agent `index` of `agents` sharing one interval: spread
// evenly over the first quarter of the interval, at most 250 ms, so that a
// cell's snapshots reach the controller one after another (100 agents: one
// every 2.5 ms) and the live view lags by no more than that.
std::chrono::nanoseconds SendOffset(int index, int agents, std::chrono::nanoseconds interval);

}  // namespace fairbench::wire
