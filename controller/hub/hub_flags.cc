#include "controller/hub/hub_flags.h"

#include "common/units.h"

namespace fairbench::controller {

void AddHubFlags(CLI::App& app, HubFlags& f) {
  app.add_option("--hub-tls-cert", f.tls.cert_file,
                 "TLS for the agents' stream: the hub's certificate (PEM; default: plain text)");
  app.add_option("--hub-tls-key", f.tls.key_file, "The private key of --hub-tls-cert (PEM)");
  app.add_option("--hub-tls-client-ca", f.tls.client_ca_file,
                 "Mutual TLS: agents must present a certificate signed by this CA (PEM)");
  app.add_option("--hub-max-agents", f.max_agents, "Agents connected at most; more are refused (default 512)");
  app.add_option("--hub-max-pending", f.max_pending,
                 "Streams waiting for their Hello at most; more are refused (default 256)");
  app.add_option("--hub-hello-timeout", f.hello_timeout,
                 "A stream without Hello is ended after this long (default 5s)");
  app.add_option("--hub-max-message-size", f.max_message_size,
                 "The largest message read from an agent (default 4Mi; a busy snapshot is about 3 KB)");
}

Result<HubSettings> ResolveHubFlags(const HubFlags& f) {
  HubSettings out;
  if (f.max_agents == 0) return Status::InvalidArgument("--hub-max-agents: must be at least 1");
  if (f.max_pending == 0) return Status::InvalidArgument("--hub-max-pending: must be at least 1");
  out.hub.max_agents = f.max_agents;
  out.hub.max_pending = f.max_pending;
  auto hello = ParseDuration(f.hello_timeout);
  if (!hello.ok()) return Status::InvalidArgument("--hub-hello-timeout: " + hello.status().message());
  if (*hello < std::chrono::milliseconds(1)) return Status::InvalidArgument("--hub-hello-timeout: must be positive");
  out.hub.hello_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*hello);
  auto size = ParseBytes(f.max_message_size);
  if (!size.ok()) return Status::InvalidArgument("--hub-max-message-size: " + size.status().message());
  // Below 64 KiB even a Hello with a long id or a modest snapshot could
  // not pass; gRPC takes an int.
  if (*size < 64 * 1024 || *size > (1ULL << 30)) {
    return Status::InvalidArgument("--hub-max-message-size: must be between 64Ki and 1Gi, got " + f.max_message_size);
  }
  out.server.max_receive_message_bytes = static_cast<int>(*size);
  out.server.tls = f.tls;
  auto credentials = HubCredentials(f.tls);  // read and checked now; read again when the listener starts
  if (!credentials.ok()) return credentials.status();
  return out;
}

}  // namespace fairbench::controller
