#include "testing/kubetest/api_status.h"

namespace fairbench::kubetest {

StatusReply MakeStatus(int code, const std::string& reason, const std::string& message, json details) {
  StatusReply r;
  r.code = code;
  r.body = {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
            {"status", "Failure"}, {"message", message}, {"reason", reason},
            {"code", code}};
  if (!details.is_null()) r.body["details"] = std::move(details);
  return r;
}

StatusReply TooManyRequests(int retry_after_seconds) {
  StatusReply r = MakeStatus(429, "TooManyRequests", "Too many requests, please try again later.",
                             {{"retryAfterSeconds", retry_after_seconds}});
  r.headers.emplace_back("Retry-After", std::to_string(retry_after_seconds));
  return r;
}

StatusReply InternalError(const std::string& message) {
  return MakeStatus(500, "InternalError", "Internal error occurred: " + message,
                    {{"causes", json::array({{{"message", message}}})}});
}

StatusReply ServiceUnavailable(const std::string& message) { return MakeStatus(503, "ServiceUnavailable", message); }

StatusReply GatewayTimeout(const std::string& message) { return MakeStatus(504, "Timeout", message); }

}  // namespace fairbench::kubetest
