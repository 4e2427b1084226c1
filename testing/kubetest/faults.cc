#include "testing/kubetest/faults.h"

#include <algorithm>
#include <sstream>

#include "common/mutex.h"
#include "common/units.h"

namespace fairbench::kubetest {

namespace {

std::vector<std::string> Split(std::string_view text, char sep) {
  std::vector<std::string> out;
  size_t from = 0;
  while (from <= text.size()) {
    size_t at = text.find(sep, from);
    if (at == std::string_view::npos) at = text.size();
    std::string part(text.substr(from, at - from));
    while (!part.empty() && part.front() == ' ') part.erase(part.begin());
    while (!part.empty() && part.back() == ' ') part.pop_back();
    if (!part.empty()) out.push_back(std::move(part));
    from = at + 1;
  }
  return out;
}

Status BadValue(const std::string& key, const std::string& value, const std::string& why) {
  return Status::InvalidArgument("--faults: " + key + "=" + value + ": " + why);
}

Result<double> ParseRate(const std::string& key, const std::string& value) {
  size_t used = 0;
  double d = 0;
  try {
    d = std::stod(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || !(d >= 0 && d <= 1)) return BadValue(key, value, "not a rate between 0 and 1");
  return d;
}

Result<uint64_t> ParseUnsigned(const std::string& key, const std::string& value) {
  if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos || value.size() > 19) {
    return BadValue(key, value, "not a whole number");
  }
  return std::stoull(value);
}

std::string Rate(double d) {
  std::ostringstream s;
  s << d;
  return s.str();
}

}  // namespace

Result<FaultConfig> FaultConfig::Parse(std::string_view text) {
  FaultConfig c;
  for (const std::string& item : Split(text, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) return Status::InvalidArgument("--faults: '" + item + "' is not KEY=VALUE");
    const std::string key = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    auto rate = [&](double* into) -> Status {
      auto r = ParseRate(key, value);
      if (!r.ok()) return r.status();
      *into = *r;
      return Status::Ok();
    };
    Status s;
    if (key == "error") {
      s = rate(&c.server_error_rate);
    } else if (key == "throttle") {
      s = rate(&c.throttle_rate);
    } else if (key == "watch-drop") {
      s = rate(&c.watch_drop_rate);
    } else if (key == "expire") {
      s = rate(&c.expire_rate);
    } else if (key == "timeout") {
      s = rate(&c.timeout_rate);
    } else if (key == "latency-rate") {
      s = rate(&c.latency_rate);
    } else if (key == "latency") {
      auto d = ParseDuration(value);
      if (!d.ok()) return BadValue(key, value, d.status().message());
      c.latency = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
    } else if (key == "retry-after") {
      auto n = ParseUnsigned(key, value);
      if (!n.ok()) return n.status();
      if (*n > 3600) return BadValue(key, value, "more than an hour");
      c.retry_after_seconds = static_cast<int>(*n);
    } else if (key == "seed") {
      auto n = ParseUnsigned(key, value);
      if (!n.ok()) return n.status();
      c.seed = *n;
    } else if (key == "codes") {
      c.server_error_codes.clear();
      for (const std::string& code : Split(value, '+')) {
        if (code != "500" && code != "503" && code != "504") return BadValue(key, value, "codes are 500, 503 or 504");
        c.server_error_codes.push_back(std::stoi(code));
      }
      if (c.server_error_codes.empty()) return BadValue(key, value, "no code");
    } else if (key == "methods") {
      for (const std::string& m : Split(value, '+')) {
        if (m != "GET" && m != "POST" && m != "PUT" && m != "PATCH" && m != "DELETE") {
          return BadValue(key, value, "methods are GET, POST, PUT, PATCH or DELETE");
        }
        c.methods.insert(m);
      }
    } else if (key == "paths") {
      for (const std::string& p : Split(value, '+')) {
        if (p.front() != '/') return BadValue(key, value, "a path prefix starts with /");
        c.path_prefixes.push_back(p);
      }
    } else if (key == "user") {
      if (value.empty()) return BadValue(key, value, "empty user name");
      c.users.insert(value);
    } else if (key == "watches") {
      if (value != "true" && value != "false") return BadValue(key, value, "true or false");
      c.include_watches = value == "true";
    } else {
      return Status::InvalidArgument("--faults: unknown key '" + key +
                                     "' (error, throttle, retry-after, latency, latency-rate, watch-drop, expire, "
                                     "timeout, codes, methods, paths, user, watches, seed)");
    }
    if (!s.ok()) return s;
  }
  return c;
}

std::string FaultConfig::ToString() const {
  std::string out = "error=" + Rate(server_error_rate) + ",throttle=" + Rate(throttle_rate) +
                    ",retry-after=" + std::to_string(retry_after_seconds) +
                    ",latency=" + std::to_string(latency.count()) + "ms,latency-rate=" + Rate(latency_rate) +
                    ",watch-drop=" + Rate(watch_drop_rate) + ",expire=" + Rate(expire_rate) +
                    ",timeout=" + Rate(timeout_rate) + ",seed=" + std::to_string(seed);
  for (const auto& u : users) out += ",user=" + u;
  return out;
}

std::string FaultCounts::ToString() const {
  return "error=" + std::to_string(server_errors) + " throttle=" + std::to_string(throttles) +
         " latency=" + std::to_string(latencies) + " watch-drop=" + std::to_string(watch_drops) +
         " expire=" + std::to_string(expirations) + " timeout=" + std::to_string(timeouts);
}

void FaultInjector::Configure(const FaultConfig& config) {
  MutexLock lock(mu_);
  config_ = config;
  if (config_.server_error_codes.empty()) config_.server_error_codes = {500};
  rng_.seed(config.seed);
  counts_ = {};
}

FaultConfig FaultInjector::config() const {
  MutexLock lock(mu_);
  return config_;
}

bool FaultInjector::Eligible(const std::string& method, const std::string& path, const std::string& user) const {
  // Discovery stays healthy: the faults are about the resources. Discovery
  // is /api, /apis, /version, /openapi/... and a group or a group version
  // (/api/v1, /apis/G, /apis/G/V): no resource named in the path.
  const bool core = path.rfind("/api/", 0) == 0;
  if (!core && path.rfind("/apis/", 0) != 0) return false;
  const size_t segments = static_cast<size_t>(std::count(path.begin() + 1, path.end(), '/')) +
                          (path.back() == '/' ? 0 : 1);  // "/apis/G/V" is 3
  if (segments <= (core ? 2u : 3u)) return false;
  if (!config_.methods.empty() && !config_.methods.count(method)) return false;
  if (!config_.users.empty() && !config_.users.count(user)) return false;
  if (config_.path_prefixes.empty()) return true;
  for (const auto& p : config_.path_prefixes) {
    if (path.rfind(p, 0) == 0) return true;
  }
  return false;
}

bool FaultInjector::Roll(double rate) {
  if (rate <= 0) return false;
  std::uniform_real_distribution<double> u(0, 1);
  return u(rng_) < rate;
}

StatusReply FaultInjector::TimeoutReply() {
  // The apiserver's timeout filter: the handler may still finish the write.
  return GatewayTimeout("Timeout: request did not complete within the allotted timeout");
}

FaultPlan FaultInjector::Plan(const std::string& method, const std::string& path, const std::string& user,
                              bool is_watch, bool resumes) {
  MutexLock lock(mu_);
  FaultPlan plan;
  if (!Eligible(method, path, user)) return plan;
  if (config_.latency.count() > 0 && Roll(config_.latency_rate)) {
    plan.delay = config_.latency;
    ++counts_.latencies;
  }
  if (!is_watch || config_.include_watches) {
    if (Roll(config_.throttle_rate)) {
      ++counts_.throttles;
      plan.reply = TooManyRequests(config_.retry_after_seconds);
      return plan;
    }
    if (Roll(config_.server_error_rate)) {
      ++counts_.server_errors;
      switch (config_.server_error_codes[rng_() % config_.server_error_codes.size()]) {
        case 503:
          plan.reply = ServiceUnavailable("injected fault: the server is currently unable to handle the request");
          break;
        case 504:
          plan.reply =
              GatewayTimeout("injected fault: the server was unable to return a response in the time allotted");
          break;
        default: plan.reply = InternalError("injected fault"); break;
      }
      return plan;
    }
  }
  if (resumes && Roll(config_.expire_rate)) plan.compact_history = true;
  if (!is_watch && Roll(config_.timeout_rate)) {
    ++counts_.timeouts;
    plan.lose_reply = true;
  }
  return plan;
}

bool FaultInjector::Applies(const std::string& method, const std::string& path, const std::string& user) const {
  MutexLock lock(mu_);
  return Eligible(method, path, user);
}

void FaultInjector::CountExpired() {
  MutexLock lock(mu_);
  ++counts_.expirations;
}

bool FaultInjector::DropWatchNow() {
  MutexLock lock(mu_);
  if (!Roll(config_.watch_drop_rate)) return false;
  ++counts_.watch_drops;
  return true;
}

uint64_t FaultInjector::injected() const {
  MutexLock lock(mu_);
  return counts_.total();
}

FaultCounts FaultInjector::counts() const {
  MutexLock lock(mu_);
  return counts_;
}

}  // namespace fairbench::kubetest
