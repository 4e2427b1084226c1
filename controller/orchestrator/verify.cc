#include "controller/orchestrator/verify.h"

#include <cctype>

#include <nlohmann/json.hpp>

#include "controller/http_probe.h"

namespace fairbench::controller {
namespace {

bool IStartsWith(const std::string& s, const std::string& prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) != std::tolower(static_cast<unsigned char>(prefix[i]))) return false;
  }
  return true;
}

std::string Clip(const std::string& s, size_t n = 80) {
  std::string out = s.size() > n ? s.substr(0, n) + "…" : s;
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

}  // namespace

Status VerifyScenario(const std::string& host, uint16_t port, bool https, const api::ScenarioSettings& settings,
                      Protocol protocol) {
  const std::vector<api::WeightedRequest>& requests = settings.requests;
  for (size_t i = 0; i < requests.size(); ++i) {
    const api::Request& r = requests[i].request;
    ProbeRequest p;
    p.method = r.method;
    p.host = host;
    p.port = port;
    p.https = https;
    p.protocol = protocol;
    p.path = r.path;
    for (const auto& [k, v] : r.headers) p.headers.emplace_back(k, v);
    p.body = r.EffectiveBody();
    p.timeout = std::chrono::seconds(5);
    auto response = HttpProbe(p);
    const std::string what = r.method + " " + r.path + ": ";
    if (!response.ok()) return Status::Unavailable(what + response.status().message());
    const api::Expect& e = settings.expect;
    if (response->status != e.status) {
      return Status::FailedPrecondition(what + "expected status " + std::to_string(e.status) + ", got " +
                                        std::to_string(response->status));
    }
    if (e.content_type && !IStartsWith(response->content_type, *e.content_type)) {
      return Status::FailedPrecondition(what + "expected content type " + *e.content_type + ", got '" +
                                        response->content_type + "'");
    }
    if (i > 0) continue;  // body and JSON expectations describe the scenario's main request
    if (e.body && response->body != *e.body) {
      return Status::FailedPrecondition(what + "expected body '" + Clip(*e.body) + "', got '" + Clip(response->body) + "'");
    }
    if (e.json) {
      const nlohmann::json got = nlohmann::json::parse(response->body, nullptr, false);
      if (got.is_discarded()) return Status::FailedPrecondition(what + "expected JSON, got '" + Clip(response->body) + "'");
      if (got != *e.json) {
        return Status::FailedPrecondition(what + "expected JSON " + Clip(e.json->dump()) + ", got " + Clip(got.dump()));
      }
    }
  }
  return Status::Ok();
}

}  // namespace fairbench::controller
