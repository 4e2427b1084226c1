#include "testing/kubetest/tls_material.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

namespace fairbench::kubetest {
namespace {

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status WriteFile(const std::string& path, const std::string& data, mode_t mode) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status::IoError("cannot write " + path);
  out << data;
  out.close();
  if (!out) return Status::IoError("cannot write " + path);
  ::chmod(path.c_str(), mode);
  return Status::Ok();
}

}  // namespace

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

Result<TlsMaterial> TlsMaterial::LoadOrCreate(const std::string& dir) {
  TlsMaterial m;
  std::pair<const char*, std::string*> files[] = {
      {"ca.crt", &m.ca.cert_pem},         {"ca.key", &m.ca.key_pem},
      {"server.crt", &m.server.cert_pem}, {"server.key", &m.server.key_pem},
      {"admin.crt", &m.admin_client.cert_pem}, {"admin.key", &m.admin_client.key_pem}};
  bool all = true;
  for (auto& [name, out] : files) {
    auto data = ReadFile(dir + "/" + name);
    if (!data.ok()) {
      all = false;
      break;
    }
    *out = *data;
  }
  if (all) return m;
  ::mkdir(dir.c_str(), 0700);
  auto fresh = Generate();
  if (!fresh.ok()) return fresh.status();
  Status s = fresh->Write(dir);
  if (!s.ok()) return s;
  return fresh;
}

Status TlsMaterial::Write(const std::string& dir) const {
  std::pair<const char*, const std::string*> files[] = {
      {"ca.crt", &ca.cert_pem},         {"ca.key", &ca.key_pem},
      {"server.crt", &server.cert_pem}, {"server.key", &server.key_pem},
      {"admin.crt", &admin_client.cert_pem}, {"admin.key", &admin_client.key_pem}};
  for (auto& [name, data] : files) {
    bool secret = std::string(name).find(".key") != std::string::npos;
    Status s = WriteFile(dir + "/" + name, *data, secret ? 0600 : 0644);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace fairbench::kubetest
