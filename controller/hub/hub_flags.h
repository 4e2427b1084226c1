// The agent hub's command-line flags, shared by `fairbench run` and
// fairbench-controller: TLS files of the hub, and its bounds (see
// agent_hub.h and grpc_server.h for what each one bounds and why the
// defaults are what they are).
//
//   --hub-tls-cert FILE --hub-tls-key FILE [--hub-tls-client-ca FILE]
//   --hub-max-agents N --hub-max-pending N --hub-hello-timeout D
//   --hub-max-message-size BYTES
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "common/status.h"
#include "controller/hub/agent_hub.h"
#include "controller/hub/grpc_server.h"

namespace fairbench::controller {

struct HubFlags {
  HubTls tls;
  size_t max_agents = AgentHubOptions{}.max_agents;
  size_t max_pending = AgentHubOptions{}.max_pending;
  std::string hello_timeout = "5s";
  std::string max_message_size = "4Mi";
};

void AddHubFlags(CLI::App& app, HubFlags& flags);

struct HubSettings {
  AgentHubOptions hub;
  GrpcServerOptions server;
};

// Checks the flags (the TLS files are read and checked now, so that a
// mistake is bad input before anything listens); errors name the flag.
Result<HubSettings> ResolveHubFlags(const HubFlags& flags);

}  // namespace fairbench::controller
