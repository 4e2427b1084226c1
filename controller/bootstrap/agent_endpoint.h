// AgentEndpoint: the agent hub and its gRPC listener, as both controllers
// run them. The hub exists from the start (it holds the agents' token); the
// listener starts when the binary is ready for agents — `fairbench run` at
// once on a free port, fairbench-controller once it leads, retrying while
// the previous leader's port is not free yet. Shutdown ends every agent's
// stream at once (the agents stop their load within a second), then the
// listener.
//
// Thread-safe: Listen and Shutdown may be called from any thread, once each
// at a time.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "controller/hub/agent_hub.h"
#include "controller/hub/grpc_server.h"
#include "controller/hub/hub_flags.h"

namespace fairbench::controller {

class AgentEndpoint {
 public:
  AgentEndpoint(std::string token, std::string identity, const HubSettings& settings);
  ~AgentEndpoint();  // Shutdown()
  AgentEndpoint(const AgentEndpoint&) = delete;
  AgentEndpoint& operator=(const AgentEndpoint&) = delete;

  AgentHub& hub() { return hub_; }
  // Listens on `address` (HOST:PORT; port 0 picks a free one). A failure
  // is tried again `attempts` times in all, `retry` apart (on `clock`),
  // the first one logged; the last one's error is returned. Listening
  // already: Ok.
  Status Listen(const std::string& address, int attempts = 1,
                std::chrono::milliseconds retry = std::chrono::milliseconds(100),
                Clock& clock = SystemClock::Instance());
  bool listening() const;
  // What the agents dial: the host of the listen address with the port
  // bound ("127.0.0.1:40123"); "" before Listen succeeded.
  std::string address() const;
  // Ends the agents' streams, then the listener (calls in flight get a
  // second); listening() is false after it. The hub refuses agents from
  // then on, so a Listen after it serves no one. Idempotent.
  void Shutdown();

 private:
  AgentHub hub_;
  const GrpcServerOptions server_options_;
  mutable std::mutex mu_;
  std::optional<GrpcServer> server_;  // guarded by mu_
  std::string address_;               // guarded by mu_
};

}  // namespace fairbench::controller
