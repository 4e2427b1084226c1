// Requests: what the engine sends, built into wire bytes once before the run.
//
// A request on the wire is exactly what wrk sends — "METHOD target HTTP/1.1",
// Host (with ":port" only when the URL had one), the user's headers in
// order, Content-Length when there is a body — plus "Connection: close" in
// short-connection mode. The user may override Host, or send their own
// Content-Length/Connection; then ours is left out.
//
// A run may use a weighted mix of requests (request_mix.h reads one from a
// YAML file); the schedule interleaves them smoothly so every prefix of the
// sequence follows the weights as closely as integers allow.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/request_spec.h"
#include "common/status.h"

namespace fairbench::agent {

// The request as its settings say it (common/request_spec.h).
using RequestSpec = fairbench::RequestSpec;

struct BuiltRequest {
  std::string name;
  std::string bytes;  // the complete request, ready to write
  bool head = false;  // HEAD: the response has no body
  uint32_t weight = 1;
};

BuiltRequest BuildRequest(const RequestSpec& spec, const std::string& host_header, bool keep_alive);

// Parses "Name: value" (as given to -H). Rejects a missing colon, an empty
// name, or characters that would break the request (CR, LF).
Result<std::pair<std::string, std::string>> ParseHeader(const std::string& text);

// Checks a method token and a request target; returns InvalidArgument with
// a message naming `where` when they would produce a malformed request.
Status ValidateRequest(const RequestSpec& spec, const std::string& where);

// The HTTP/2 request of a call to `method` ("package.Service/Method"):
// POST /method with gRPC's headers, grpc-timeout when `deadline` > 0, the
// metadata (lower-case keys, none of gRPC's own), and `message` in one
// gRPC frame. What --grpc and a job's GrpcCall both send.
RequestSpec GrpcRequest(const std::string& method, const std::string& message,
                        const std::vector<std::pair<std::string, std::string>>& metadata,
                        std::chrono::nanoseconds deadline);

// Smooth weighted round robin over request indexes. Deterministic; after
// Σweights calls each index has come up exactly `weight` times.
class RequestSchedule {
 public:
  explicit RequestSchedule(const std::vector<uint32_t>& weights);
  uint32_t Next() {
    if (weights_.size() == 1) return 0;
    return NextWeighted();
  }

 private:
  uint32_t NextWeighted();
  std::vector<int64_t> weights_;
  std::vector<int64_t> current_;
  int64_t total_ = 0;
};

}  // namespace fairbench::agent
