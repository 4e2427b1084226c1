#include "common/tls_files.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

namespace fairbench::tls {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;

// A PEM file is small; anything larger is not one (a wrong path to a big file).
constexpr std::streamsize kMaxPemBytes = 1 << 20;

Result<std::string> ReadSmallFile(const std::string& path, const std::string& flag) {
  if (path.empty()) return Status::InvalidArgument(flag + ": no file given");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::InvalidArgument(flag + ": cannot read '" + path + "': " + std::strerror(errno));
  std::string data(static_cast<size_t>(kMaxPemBytes) + 1, '\0');
  in.read(data.data(), kMaxPemBytes + 1);
  data.resize(static_cast<size_t>(in.gcount()));
  if (in.bad()) return Status::InvalidArgument(flag + ": cannot read '" + path + "'");
  if (static_cast<std::streamsize>(data.size()) > kMaxPemBytes) {
    return Status::InvalidArgument(flag + ": '" + path + "' is larger than 1 MiB: not a PEM file");
  }
  return data;
}

BioPtr MemBio(const std::string& pem) { return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()))); }

X509Ptr FirstCertificate(const std::string& pem) {
  BioPtr bio = MemBio(pem);
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  return cert;
}

KeyPtr PrivateKey(const std::string& pem) {
  BioPtr bio = MemBio(pem);
  KeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  return key;
}

}  // namespace

Result<std::string> ReadCertificates(const std::string& path, const std::string& flag) {
  auto data = ReadSmallFile(path, flag);
  if (!data.ok()) return data.status();
  if (!FirstCertificate(*data)) {
    return Status::InvalidArgument(flag + ": '" + path + "' holds no PEM certificate (-----BEGIN CERTIFICATE-----)");
  }
  return data;
}

Result<std::string> ReadPrivateKey(const std::string& path, const std::string& flag) {
  auto data = ReadSmallFile(path, flag);
  if (!data.ok()) return data.status();
  if (!PrivateKey(*data)) {
    return Status::InvalidArgument(flag + ": '" + path + "' holds no unencrypted PEM private key");
  }
  return data;
}

Status CheckKeyPair(const std::string& cert_pem, const std::string& key_pem, const std::string& flags) {
  X509Ptr cert = FirstCertificate(cert_pem);
  KeyPtr key = PrivateKey(key_pem);
  if (!cert || !key) return Status::InvalidArgument(flags + ": not a PEM certificate and private key");
  const bool match = X509_check_private_key(cert.get(), key.get()) == 1;
  ERR_clear_error();
  if (!match) return Status::InvalidArgument(flags + ": the private key does not belong to the certificate");
  return Status::Ok();
}

}  // namespace fairbench::tls
