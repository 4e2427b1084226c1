// ProbeReady: one readiness check of a deployed target, as its spec asks —
// the same on the local and Docker platforms (Kubernetes asks the kubelet,
// pod_templates.cc). HTTP targets are ready when they answer on
// readiness.path with any status; gRPC targets when
// grpc.health.v1.Health/Check for readiness.grpc.service answers SERVING
// (as Kubernetes' grpc probe decides), or, with readiness.grpc.method, when
// that method answers an empty message with any gRPC status.
//
// Blocking (one probe, bounded by `timeout`); thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "api/benchmark_run.h"
#include "common/protocol.h"
#include "common/status.h"

namespace fairbench::controller {

struct ReadyCheck {
  std::string host;
  uint16_t port = 0;
  Scheme scheme = Scheme::kHttp;
  Protocol protocol = Protocol::kHttp1;  // the target's, gRPC included
  api::Readiness readiness;

  // The check for a target of the run file, reached at host:port.
  static ReadyCheck For(const api::Target& target, std::string host, uint16_t port);
};

// Ok when ready; otherwise one line saying what answered instead ("NOT_SERVING",
// "connection refused"), for the message of a target that never got ready.
Status ProbeReady(const ReadyCheck& check, std::chrono::milliseconds timeout);

}  // namespace fairbench::controller
