// CurlTransport: HttpTransport on libcurl with OpenSSL. TLS trust comes from
// the configured CA only (or is switched off for insecure-skip-tls-verify);
// tls-server-name is honoured by connecting to the real address while
// verifying the named host. Connections are kept alive in a small pool of
// easy handles. Watches run on a multi handle so that a stop request ends
// them at once rather than at the next byte.
//
// Thread-safe. No exception crosses libcurl's C callbacks.
#pragma once

#include <curl/curl.h>

#include <mutex>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "controller/kube/http_transport.h"
#include "controller/kube/rest_config.h"

namespace fairbench::kube {

class CurlTransport final : public HttpTransport {
 public:
  // `server`: "https://host:port[/prefix]".
  CurlTransport(std::string server, TlsOptions tls, std::string user_agent);
  ~CurlTransport() override;
  CurlTransport(const CurlTransport&) = delete;
  CurlTransport& operator=(const CurlTransport&) = delete;

  Result<HttpResponse> Do(const HttpRequest& request) override;
  Result<HttpResponse> Stream(const HttpRequest& request, const std::function<bool(std::string_view)>& on_data,
                              std::stop_token stop) override;

 private:
  CURL* Acquire();
  void Release(CURL* handle);
  // Sets everything but the callbacks; returns the header list to free.
  curl_slist* Prepare(CURL* h, const HttpRequest& request, char* error_buffer) const;
  Status TransportError(CURLcode code, const char* error_buffer, const HttpRequest& request) const;

  std::string base_url_;     // the URL requests are sent to (tls-server-name host)
  std::string connect_to_;   // CURLOPT_CONNECT_TO entry, when tls-server-name is set
  std::string display_url_;  // the configured server, for messages
  const TlsOptions tls_;
  const std::string user_agent_;
  std::string no_proxy_;
  Mutex mu_;
  std::vector<CURL*> idle_ GUARDED_BY(mu_);
};

}  // namespace fairbench::kube
