// HTTP(S) front end of the test API server, on cpp-httplib (Debian's
// libcpp-httplib, built with OpenSSL): plain HTTP for fast tests, HTTPS
// with optional client-certificate verification against the test CA, bearer
// tokens, fault injection (latency, 5xx, 429, dropped watches), chunked
// watch streams, and an audit log of every request.
//
// Thread-safe. Each connection is served on a thread of a fixed pool; an
// open watch occupies one thread until it ends. Stop() ends every watch
// first so that the pool can drain.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "testing/apiserver/api_server.h"
#include "testing/apiserver/audit_log.h"
#include "testing/apiserver/tls_material.h"

namespace httplib {
class Server;
}

namespace fairbench::apiserver {

struct HttpFrontendOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0 = any free port
  const TlsMaterial* tls = nullptr;  // null = plain HTTP; else HTTPS, client certs checked against tls->ca
  std::map<std::string, std::string> tokens;  // bearer token → user name
  std::map<std::string, std::vector<std::string>> groups;  // user name → groups (audit log, authorization)
  AuditLog* audit = nullptr;  // not owned; null = no audit log
  // Requests without credentials go on as system:anonymous (kube-apiserver's
  // --anonymous-auth) instead of 401, even with tokens or TLS. kubectl sends
  // no token over plain HTTP: with this, kubectl works anonymously while
  // other clients are told apart by their tokens.
  bool anonymous = false;
  size_t threads = 96;
};

class HttpFrontend {
 public:
  static Result<std::unique_ptr<HttpFrontend>> Start(ApiServer& api, const HttpFrontendOptions& options);
  ~HttpFrontend();

  const std::string& url() const { return url_; }
  int port() const { return port_; }
  // Token rotation: from now on only these tokens authenticate.
  void SetTokens(std::map<std::string, std::string> tokens);
  void Stop();

 private:
  HttpFrontend(ApiServer& api, const HttpFrontendOptions& options);

  ApiServer& api_;
  const bool tls_;
  const bool anonymous_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::string url_;
  int port_ = 0;
  Mutex mu_;
  std::map<std::string, std::string> tokens_ GUARDED_BY(mu_);
  const std::map<std::string, std::vector<std::string>> groups_;
  AuditLog* const audit_;
  std::atomic<bool> stopped_{false};
};

}  // namespace fairbench::apiserver
