#include "controller/kube/rest_config.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

namespace fairbench::kube {
namespace {

int CountCertificates(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  int n = 0;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    X509_free(cert);
    ++n;
  }
  ERR_clear_error();
  BIO_free(bio);
  return n;
}

}  // namespace

Status RestConfig::Validate() const {
  if (server.rfind("https://", 0) != 0 && server.rfind("http://", 0) != 0) {
    return Status::InvalidArgument("server \"" + server + "\" must be an https:// (or http://) URL");
  }
  if (tls.insecure && !tls.ca_pem.empty()) {
    return Status::InvalidArgument(
        "specifying a root certificates file with the insecure flag is not allowed "
        "(certificate-authority and insecure-skip-tls-verify are both set)");
  }
  if (!tls.ca_pem.empty() && CountCertificates(tls.ca_pem) == 0) {
    return Status::InvalidArgument("certificate-authority: no PEM certificate found");
  }
  if (tls.client_cert_pem.empty() != tls.client_key_pem.empty()) {
    return Status::InvalidArgument("client-certificate and client-key must be given together");
  }
  if (!tls.client_cert_pem.empty()) {
    BIO* cb = BIO_new_mem_buf(tls.client_cert_pem.data(), static_cast<int>(tls.client_cert_pem.size()));
    X509* cert = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
    BIO_free(cb);
    BIO* kb = BIO_new_mem_buf(tls.client_key_pem.data(), static_cast<int>(tls.client_key_pem.size()));
    EVP_PKEY* key = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
    BIO_free(kb);
    ERR_clear_error();
    Status s;
    if (!cert) {
      s = Status::InvalidArgument("client-certificate: not a PEM certificate");
    } else if (!key) {
      s = Status::InvalidArgument("client-key: not a PEM private key");
    } else if (X509_check_private_key(cert, key) != 1) {
      s = Status::InvalidArgument("client-key does not match client-certificate");
    }
    ERR_clear_error();
    X509_free(cert);
    EVP_PKEY_free(key);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace fairbench::kube
