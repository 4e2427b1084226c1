#include "testing/kubetest/tls_material.h"

namespace fairbench::kubetest {

Result<TlsMaterial> TlsMaterial::Generate(const std::vector<std::string>& extra_dns_names) {
  TlsMaterial m;
  auto ca = tls::IssueCertificate(tls::CaSpec("fairbench-test-ca"));
  if (!ca.ok()) return ca.status();
  m.ca = *ca;
  std::string sans = "IP:127.0.0.1,IP:::1,DNS:localhost";
  for (const auto& d : extra_dns_names) sans += ",DNS:" + d;
  auto server = tls::IssueCertificate(tls::ServerSpec("fairbench-test-apiserver", sans), &m.ca);
  if (!server.ok()) return server.status();
  m.server = *server;
  auto admin = m.IssueClient("fairbench-admin");
  if (!admin.ok()) return admin.status();
  m.admin_client = *admin;
  return m;
}

Result<KeyPair> TlsMaterial::IssueClient(const std::string& common_name) const {
  return tls::IssueCertificate(tls::ClientSpec(common_name, "system:masters"), &ca);
}

}  // namespace fairbench::kubetest
