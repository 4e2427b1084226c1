#include "testing/apiserver/faults.h"

namespace fairbench::apiserver {

void FaultInjector::Configure(const FaultConfig& config) {
  std::lock_guard<std::mutex> lock(mu_);
  config_ = config;
  if (config_.server_error_codes.empty()) config_.server_error_codes = {500};
  rng_.seed(config.seed);
  injected_ = 0;
}

bool FaultInjector::Eligible(const std::string& method, const std::string& path) const {
  // Discovery stays healthy: the faults are about the resources.
  if (path.rfind("/api/", 0) != 0 && path.rfind("/apis/", 0) != 0) return false;
  if (!config_.methods.empty() && !config_.methods.count(method)) return false;
  if (config_.path_prefixes.empty()) return true;
  for (const auto& p : config_.path_prefixes) {
    if (path.rfind(p, 0) == 0) return true;
  }
  return false;
}

std::optional<StatusReply> FaultInjector::BeforeRequest(const std::string& method, const std::string& path,
                                                        bool is_watch) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!Eligible(method, path) || (is_watch && !config_.include_watches)) return std::nullopt;
  std::uniform_real_distribution<double> u(0, 1);
  if (config_.throttle_rate > 0 && u(rng_) < config_.throttle_rate) {
    ++injected_;
    return TooManyRequests(config_.retry_after_seconds);
  }
  if (config_.server_error_rate > 0 && u(rng_) < config_.server_error_rate) {
    ++injected_;
    switch (config_.server_error_codes[rng_() % config_.server_error_codes.size()]) {
      case 503: return ServiceUnavailable("injected fault: the server is currently unable to handle the request");
      case 504: return GatewayTimeout("injected fault: the server was unable to return a response in the time allotted");
      default: return InternalError("injected fault");
    }
  }
  return std::nullopt;
}

std::chrono::milliseconds FaultInjector::Latency(const std::string& method, const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  return Eligible(method, path) ? config_.latency : std::chrono::milliseconds(0);
}

bool FaultInjector::DropWatchNow() {
  std::lock_guard<std::mutex> lock(mu_);
  if (config_.watch_drop_rate <= 0) return false;
  std::uniform_real_distribution<double> u(0, 1);
  if (u(rng_) < config_.watch_drop_rate) {
    ++injected_;
    return true;
  }
  return false;
}

uint64_t FaultInjector::injected() const {
  std::lock_guard<std::mutex> lock(mu_);
  return injected_;
}

}  // namespace fairbench::apiserver
