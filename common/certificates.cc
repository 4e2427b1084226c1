#include "common/certificates.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <random>

namespace fairbench::tls {
namespace {

template <typename T, void (*F)(T*)>
struct Deleter {
  void operator()(T* p) const { F(p); }
};
using PKeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;

// PEM text, or "" when OpenSSL could not write it.
std::string BioText(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  return n > 0 && data != nullptr ? std::string(data, static_cast<size_t>(n)) : std::string();
}

std::string ToPem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) return {};
  return BioText(bio.get());
}

std::string ToPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) return {};
  return BioText(bio.get());
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

}  // namespace

CertificateSpec CaSpec(const std::string& common_name) {
  CertificateSpec spec;
  spec.common_name = common_name;
  spec.is_ca = true;
  return spec;
}

CertificateSpec ServerSpec(const std::string& common_name, const std::string& subject_alt_names) {
  CertificateSpec spec;
  spec.common_name = common_name;
  spec.extended_key_usage = "serverAuth";
  spec.subject_alt_names = subject_alt_names;
  return spec;
}

CertificateSpec ClientSpec(const std::string& common_name, const std::string& organization) {
  CertificateSpec spec;
  spec.common_name = common_name;
  spec.organization = organization;
  spec.extended_key_usage = "clientAuth";
  return spec;
}

Result<KeyPair> IssueCertificate(const CertificateSpec& spec, const KeyPair* issuer) {
  X509Ptr issuer_cert;
  PKeyPtr issuer_key;
  if (issuer != nullptr) {
    issuer_cert = CertFromPem(issuer->cert_pem);
    issuer_key = KeyFromPem(issuer->key_pem);
    if (!issuer_cert || !issuer_key) return Status::InvalidArgument("the issuer's certificate or key is not valid PEM");
  }
  PKeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return Status::Internal("cannot generate an EC key");
  X509Ptr cert(X509_new());
  if (!cert) return Status::Internal("cannot allocate a certificate");
  std::random_device rd;
  bool ok = X509_set_version(cert.get(), 2) == 1;
  ok = ok && ASN1_INTEGER_set_int64(
                 X509_get_serialNumber(cert.get()),
                 static_cast<int64_t>((static_cast<uint64_t>(rd()) << 31) ^ rd()) & 0x7fffffffffffffff) == 1;
  ok = ok && X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600) != nullptr;
  ok = ok && X509_gmtime_adj(X509_getm_notAfter(cert.get()), spec.valid_days * 24 * 3600) != nullptr;
  ok = ok && X509_set_pubkey(cert.get(), key.get()) == 1;
  X509_NAME* name = X509_get_subject_name(cert.get());
  if (!spec.organization.empty()) {
    ok = ok &&
         X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                                    reinterpret_cast<const unsigned char*>(spec.organization.c_str()), -1, -1, 0) == 1;
  }
  ok = ok &&
       X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                  reinterpret_cast<const unsigned char*>(spec.common_name.c_str()), -1, -1, 0) == 1;
  X509* signer = issuer_cert ? issuer_cert.get() : cert.get();
  ok = ok && X509_set_issuer_name(cert.get(), X509_get_subject_name(signer)) == 1;
  if (!ok) return Status::Internal("cannot fill in the certificate (subject " + spec.common_name + ")");
  if (spec.is_ca) {
    ok = ok && AddExt(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE");
    ok = ok && AddExt(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature");
  } else {
    ok = ok && AddExt(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE");
    ok = ok && AddExt(cert.get(), signer, NID_key_usage, "critical,digitalSignature,keyEncipherment");
    if (!spec.extended_key_usage.empty()) {
      ok = ok && AddExt(cert.get(), signer, NID_ext_key_usage, spec.extended_key_usage);
    }
  }
  ok = ok && AddExt(cert.get(), signer, NID_subject_key_identifier, "hash");
  if (issuer_cert) ok = ok && AddExt(cert.get(), signer, NID_authority_key_identifier, "keyid:always");
  if (!spec.subject_alt_names.empty()) {
    ok = ok && AddExt(cert.get(), signer, NID_subject_alt_name, spec.subject_alt_names);
  }
  if (!ok) {
    return Status::InvalidArgument("cannot add certificate extensions (subjectAltName " + spec.subject_alt_names + ")");
  }
  if (X509_sign(cert.get(), issuer_key ? issuer_key.get() : key.get(), EVP_sha256()) == 0) {
    return Status::Internal("cannot sign certificate");
  }
  KeyPair pair{ToPem(cert.get()), ToPem(key.get())};
  if (pair.cert_pem.empty() || pair.key_pem.empty()) return Status::Internal("cannot write the certificate as PEM");
  return pair;
}

std::string SubjectAltNamesFor(const std::string& host) {
  std::string sans = "DNS:localhost,IP:127.0.0.1,IP:::1";
  if (host.empty() || host == "0.0.0.0" || host == "::" || host == "localhost" || host == "127.0.0.1" ||
      host == "::1") {
    return sans;
  }
  unsigned char addr[sizeof(in6_addr)];
  const bool ip = inet_pton(AF_INET, host.c_str(), addr) == 1 || inet_pton(AF_INET6, host.c_str(), addr) == 1;
  return sans + (ip ? ",IP:" : ",DNS:") + host;
}

}  // namespace fairbench::tls
