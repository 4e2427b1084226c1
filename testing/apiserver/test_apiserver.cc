#include "testing/apiserver/test_apiserver.h"

#include <fstream>

#include "common/base64.h"

namespace fairbench::apiserver {

Result<std::unique_ptr<TestApiServer>> TestApiServer::Start(TestApiServerOptions options) {
  std::unique_ptr<TestApiServer> s(new TestApiServer());
  if (options.tls) {
    auto material = options.tls_dir.empty() ? TlsMaterial::Generate() : TlsMaterial::LoadOrCreate(options.tls_dir);
    if (!material.ok()) return material.status();
    s->tls_ = std::move(*material);
  }
  if (!options.audit_log.empty()) {
    auto audit = AuditLog::Open(options.audit_log);
    if (!audit.ok()) return audit.status();
    s->audit_ = std::move(*audit);
  }
  s->api_ = std::make_unique<ApiServer>(options.api);
  HttpFrontendOptions http;
  http.host = options.host;
  http.port = options.port;
  http.tls = s->tls_ ? &*s->tls_ : nullptr;
  http.tokens = options.tokens;
  http.groups = options.groups;
  http.audit = s->audit_.get();
  http.anonymous = options.anonymous;
  auto frontend = HttpFrontend::Start(*s->api_, http);
  if (!frontend.ok()) return frontend.status();
  s->frontend_ = std::move(*frontend);
  return s;
}

TestApiServer::~TestApiServer() { Stop(); }

void TestApiServer::Stop() {
  if (frontend_) frontend_->Stop();
  if (api_) api_->Shutdown();
}

std::string TestApiServer::Kubeconfig(const std::string& token, const std::string& ns) const {
  std::string out =
      "apiVersion: v1\n"
      "kind: Config\n"
      "clusters:\n"
      "- name: fairbench-test\n"
      "  cluster:\n"
      "    server: " + url() + "\n";
  if (tls_) out += "    certificate-authority-data: " + Base64Encode(tls_->ca.cert_pem) + "\n";
  out +=
      "contexts:\n"
      "- name: fairbench-test\n"
      "  context:\n"
      "    cluster: fairbench-test\n"
      "    user: fairbench-test\n"
      "    namespace: " + ns + "\n"
      "current-context: fairbench-test\n"
      "users:\n"
      "- name: fairbench-test\n"
      "  user:\n";
  if (!token.empty()) {
    out += "    token: " + token + "\n";
  } else if (tls_) {
    out += "    client-certificate-data: " + Base64Encode(tls_->admin_client.cert_pem) + "\n";
    out += "    client-key-data: " + Base64Encode(tls_->admin_client.key_pem) + "\n";
  } else {
    out += "    {}\n";
  }
  return out;
}

Status TestApiServer::WriteKubeconfig(const std::string& path, const std::string& token, const std::string& ns) const {
  std::ofstream f(path, std::ios::trunc);
  if (!f) return Status::IoError("cannot write " + path);
  f << Kubeconfig(token, ns);
  f.close();
  if (!f) return Status::IoError("cannot write " + path);
  return Status::Ok();
}

}  // namespace fairbench::apiserver
