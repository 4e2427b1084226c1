#include "controller/bootstrap/agent_endpoint.h"

#include <spdlog/spdlog.h>

namespace fairbench::controller {

AgentEndpoint::AgentEndpoint(std::string token, std::string identity, const HubSettings& settings)
    : hub_(std::move(token), std::move(identity), settings.hub), server_options_(settings.server) {}

AgentEndpoint::~AgentEndpoint() { Shutdown(); }

Status AgentEndpoint::Listen(const std::string& address, int attempts, std::chrono::milliseconds retry, Clock& clock) {
  std::lock_guard<std::mutex> lock(mu_);
  if (server_) return Status::Ok();
  Status last;
  for (int attempt = 1; attempt <= std::max(1, attempts); ++attempt) {
    auto started = StartGrpcServer(&hub_, address, server_options_);
    if (started.ok()) {
      address_ = address.substr(0, address.rfind(':')) + ":" + std::to_string(started->port);
      server_.emplace(std::move(*started));
      return Status::Ok();
    }
    last = started.status();
    if (attempt == 1 && attempts > 1) spdlog::warn("{} (retrying)", last.message());
    if (attempt < attempts) clock.SleepFor(retry);
  }
  return last;
}

bool AgentEndpoint::listening() const {
  std::lock_guard<std::mutex> lock(mu_);
  return server_.has_value();
}

std::string AgentEndpoint::address() const {
  std::lock_guard<std::mutex> lock(mu_);
  return address_;
}

void AgentEndpoint::Shutdown() {
  hub_.Shutdown();
  std::lock_guard<std::mutex> lock(mu_);
  if (server_ && server_->server) server_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server_.reset();
}

}  // namespace fairbench::controller
