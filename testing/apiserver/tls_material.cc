#include "testing/apiserver/tls_material.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <random>
#include <sstream>

namespace fairbench::apiserver {
namespace {

template <typename T, void (*F)(T*)>
struct Deleter {
  void operator()(T* p) const { F(p); }
};
using PKeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;

std::string ToPem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(bio.get(), cert);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

std::string ToPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

X509Ptr CertFromPem(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return X509Ptr(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

PKeyPtr KeyFromPem(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return PKeyPtr(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
}

bool AddExt(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (!ext) return false;
  bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

struct Spec {
  std::string common_name;
  std::string organization;
  bool is_ca = false;
  std::string extended_key_usage;  // serverAuth / clientAuth
  std::string subject_alt_names;
};

Result<KeyPair> Issue(const Spec& spec, X509* issuer_cert, EVP_PKEY* issuer_key) {
  PKeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return Status::Internal("cannot generate an EC key");
  X509Ptr cert(X509_new());
  X509_set_version(cert.get(), 2);
  std::random_device rd;
  ASN1_INTEGER_set_int64(X509_get_serialNumber(cert.get()),
                         static_cast<int64_t>((static_cast<uint64_t>(rd()) << 31) ^ rd()) & 0x7fffffffffffffff);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 3650L * 24 * 3600);
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* name = X509_get_subject_name(cert.get());
  if (!spec.organization.empty()) {
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(spec.organization.c_str()), -1, -1, 0);
  }
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(spec.common_name.c_str()), -1, -1, 0);
  X509* issuer = issuer_cert ? issuer_cert : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(issuer));
  bool ok = true;
  if (spec.is_ca) {
    ok = ok && AddExt(cert.get(), issuer, NID_basic_constraints, "critical,CA:TRUE");
    ok = ok && AddExt(cert.get(), issuer, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature");
  } else {
    ok = ok && AddExt(cert.get(), issuer, NID_basic_constraints, "critical,CA:FALSE");
    ok = ok && AddExt(cert.get(), issuer, NID_key_usage, "critical,digitalSignature,keyEncipherment");
    ok = ok && AddExt(cert.get(), issuer, NID_ext_key_usage, spec.extended_key_usage);
  }
  ok = ok && AddExt(cert.get(), issuer, NID_subject_key_identifier, "hash");
  if (issuer_cert) ok = ok && AddExt(cert.get(), issuer, NID_authority_key_identifier, "keyid:always");
  if (!spec.subject_alt_names.empty()) ok = ok && AddExt(cert.get(), issuer, NID_subject_alt_name, spec.subject_alt_names);
  if (!ok) return Status::Internal("cannot add certificate extensions");
  if (X509_sign(cert.get(), issuer_key ? issuer_key : key.get(), EVP_sha256()) == 0) {
    return Status::Internal("cannot sign certificate");
  }
  return KeyPair{ToPem(cert.get()), ToPem(key.get())};
}

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
  auto ca = Issue({"fairbench-test-ca", "", true, "", ""}, nullptr, nullptr);
  if (!ca.ok()) return ca.status();
  m.ca = *ca;
  std::string sans = "IP:127.0.0.1,IP:::1,DNS:localhost";
  for (const auto& d : extra_dns_names) sans += ",DNS:" + d;
  X509Ptr ca_cert = CertFromPem(m.ca.cert_pem);
  PKeyPtr ca_key = KeyFromPem(m.ca.key_pem);
  auto server = Issue({"fairbench-test-apiserver", "", false, "serverAuth", sans}, ca_cert.get(), ca_key.get());
  if (!server.ok()) return server.status();
  m.server = *server;
  auto admin = m.IssueClient("fairbench-admin");
  if (!admin.ok()) return admin.status();
  m.admin_client = *admin;
  return m;
}

Result<KeyPair> TlsMaterial::IssueClient(const std::string& common_name) const {
  X509Ptr ca_cert = CertFromPem(ca.cert_pem);
  PKeyPtr ca_key = KeyFromPem(ca.key_pem);
  if (!ca_cert || !ca_key) return Status::InvalidArgument("the CA certificate or key is not valid PEM");
  return Issue({common_name, "system:masters", false, "clientAuth", ""}, ca_cert.get(), ca_key.get());
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

}  // namespace fairbench::apiserver
