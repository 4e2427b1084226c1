// The metav1.Status bodies the fault injector answers in kube-apiserver's
// place (faults.h): the codes, reasons, messages and details a real one
// sends for each (KUBE-API.md §3). Plain values; thread-safe to build.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace fairbench::kubetest {

using nlohmann::json;

// A finished HTTP answer with a metav1.Status body.
struct StatusReply {
  int code = 500;
  json body;
  std::vector<std::pair<std::string, std::string>> headers;
};

StatusReply MakeStatus(int code, const std::string& reason, const std::string& message, json details = nullptr);
// 429 with Retry-After (header and details.retryAfterSeconds), as API
// Priority and Fairness answers.
StatusReply TooManyRequests(int retry_after_seconds);
StatusReply InternalError(const std::string& message);
StatusReply ServiceUnavailable(const std::string& message);
StatusReply GatewayTimeout(const std::string& message);

}  // namespace fairbench::kubetest
