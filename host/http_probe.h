// HttpProbe: one HTTP/1.1 or HTTP/2 request (plain or over TLS) with libcurl, for readiness checks
// and for verifying each scenario once before a target is loaded.
//
// Blocking; call it from the orchestrator's thread, never from an event loop.
// Thread-safe (each call has its own curl handle).
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "common/protocol.h"
#include "common/status.h"

namespace fairbench::host {

struct ProbeRequest {
  std::string method = "GET";
  std::string host;
  uint16_t port = 0;
  Scheme scheme = Scheme::kHttp;  // https: TLS, the certificate not verified (as the agents do by default)
  // h2: HTTP/2 over TLS, and an error when ALPN does not choose it; h2c:
  // HTTP/2 with prior knowledge.
  Protocol protocol = Protocol::kHttp1;
  std::string path = "/";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::milliseconds timeout{2000};
  // For the connection alone; 0: the whole request's timeout.
  std::chrono::milliseconds connect_timeout{0};
};

struct ProbeResponse {
  long status = 0;
  std::string content_type;
  std::string body;
};

// Unavailable when nothing answered (refused, reset, timed out).
Result<ProbeResponse> HttpProbe(const ProbeRequest& request);

}  // namespace fairbench::host
