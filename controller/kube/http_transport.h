// HttpTransport: the network seam of the Kubernetes client. One request in,
// one response (or a transport failure) out; or a streamed response body
// for watches. The production implementation is CurlTransport; tests of
// retry and error logic can substitute their own.
//
// Implementations are thread-safe and block the calling thread: never call
// them on an event-loop thread.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace fairbench::kube {

struct ClientCertificate {
  std::string cert_pem;
  std::string key_pem;
};

struct HttpRequest {
  std::string method;          // GET, POST, PUT, PATCH, DELETE
  std::string path_and_query;  // "/api/v1/namespaces/x/pods?limit=5"
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::milliseconds timeout{30000};
  const ClientCertificate* client_cert = nullptr;  // overrides the configured one
};

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // Transport failures: Unavailable (connection refused, reset),
  // DeadlineExceeded (the timeout passed), FailedPrecondition (TLS).
  virtual Result<HttpResponse> Do(const HttpRequest& request) = 0;
  // The body of a 2xx response goes to `on_data` chunk by chunk as it
  // arrives (returning false stops the transfer); a non-2xx body is
  // collected into the result instead. Ends with the response when the
  // server finishes the body, Cancelled when `stop` is requested, or a
  // transport failure (a cut connection is Unavailable).
  virtual Result<HttpResponse> Stream(const HttpRequest& request, const std::function<bool(std::string_view)>& on_data,
                                      std::stop_token stop) = 0;
};

}  // namespace fairbench::kube
