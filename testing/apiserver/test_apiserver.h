// A ready-to-use test API server: ApiServer + HTTP(S) front end + TLS
// material, and the kubeconfig that points kubectl (or the fairbench
// client) at it. Used by tests in-process and by the
// fairbench-test-apiserver program.
//
// Thread-safe as its parts are. Destroying it stops the server.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "testing/apiserver/api_server.h"
#include "testing/apiserver/audit_log.h"
#include "testing/apiserver/http_frontend.h"
#include "testing/apiserver/tls_material.h"

namespace fairbench::apiserver {

struct TestApiServerOptions {
  ApiServerOptions api;
  std::string host = "127.0.0.1";
  int port = 0;
  bool tls = false;
  std::string tls_dir;  // with tls: load or create the certificates here; "" = in memory only
  std::map<std::string, std::string> tokens;  // bearer token → user; empty = no token auth
  std::map<std::string, std::vector<std::string>> groups;  // user → groups (audit log, authorization)
  std::string audit_log;  // append an audit event per request to this file; "" = none
  bool anonymous = false;  // requests without credentials are served (as system:anonymous)
};

class TestApiServer {
 public:
  static Result<std::unique_ptr<TestApiServer>> Start(TestApiServerOptions options = {});
  ~TestApiServer();

  const std::string& url() const { return frontend_->url(); }
  ApiServer& api() { return *api_; }
  const TlsMaterial* tls() const { return tls_ ? &*tls_ : nullptr; }
  void SetTokens(std::map<std::string, std::string> tokens) { frontend_->SetTokens(std::move(tokens)); }

  // A kubeconfig for this server. With `token` it authenticates with the
  // token; otherwise over TLS with the admin client certificate.
  std::string Kubeconfig(const std::string& token = "", const std::string& ns = "default") const;
  Status WriteKubeconfig(const std::string& path, const std::string& token = "",
                         const std::string& ns = "default") const;
  void Stop();

 private:
  TestApiServer() = default;
  std::optional<TlsMaterial> tls_;
  std::unique_ptr<AuditLog> audit_;  // outlives frontend_, which writes to it
  std::unique_ptr<ApiServer> api_;
  std::unique_ptr<HttpFrontend> frontend_;
};

}  // namespace fairbench::apiserver
