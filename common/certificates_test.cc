#include "common/certificates.h"

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <memory>

namespace fairbench::tls {
namespace {

// Checked with OpenSSL's own chain verification and name matching, the
// code a TLS client runs.
struct Cert {
  explicit Cert(const std::string& pem) {
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    x509 = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
  }
  ~Cert() { X509_free(x509); }
  X509* x509 = nullptr;
};

// X509_V_OK when `leaf` chains to `anchor` for a TLS server.
int Verify(const std::string& leaf_pem, const std::string& anchor_pem) {
  Cert leaf(leaf_pem), anchor(anchor_pem);
  if (!leaf.x509 || !anchor.x509) return -1;
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, anchor.x509);
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf.x509, nullptr);
  X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER);
  X509_verify_cert(ctx);
  const int err = X509_STORE_CTX_get_error(ctx);
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  return err;
}

bool KeyFits(const KeyPair& pair) {
  Cert cert(pair.cert_pem);
  BIO* bio = BIO_new_mem_buf(pair.key_pem.data(), static_cast<int>(pair.key_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  const bool fits = cert.x509 && key && X509_check_private_key(cert.x509, key) == 1;
  EVP_PKEY_free(key);
  return fits;
}

// Catches: a wrong or missing subjectAltName, a certificate not signed by
// its own key, a key that is not the certificate's.
TEST(CertificatesTest, ASelfSignedServerCertificateVerifiesForItsNamesOnly) {
  auto pair = IssueCertificate(ServerSpec("fairbench-target", SubjectAltNamesFor("10.1.2.3")));
  ASSERT_TRUE(pair.ok()) << pair.status().ToString();
  EXPECT_TRUE(KeyFits(*pair));
  EXPECT_EQ(Verify(pair->cert_pem, pair->cert_pem), X509_V_OK);
  Cert cert(pair->cert_pem);
  ASSERT_NE(cert.x509, nullptr);
  for (const char* ip : {"127.0.0.1", "::1", "10.1.2.3"}) EXPECT_EQ(X509_check_ip_asc(cert.x509, ip, 0), 1) << ip;
  EXPECT_EQ(X509_check_ip_asc(cert.x509, "10.1.2.4", 0), 0);
  EXPECT_EQ(X509_check_host(cert.x509, "localhost", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_host(cert.x509, "example.com", 0, 0, nullptr), 0);
  // Another self-signed certificate is not a trust anchor for this one.
  auto other = IssueCertificate(ServerSpec("fairbench-target", SubjectAltNamesFor("")));
  ASSERT_TRUE(other.ok());
  EXPECT_NE(Verify(pair->cert_pem, other->cert_pem), X509_V_OK);
}

// Catches: signing with the new key instead of the issuer's, the issuer's
// name not copied, a CA without CA:TRUE.
TEST(CertificatesTest, ACertificateIssuedByACaChainsToIt) {
  auto ca = IssueCertificate(CaSpec("test-ca"));
  ASSERT_TRUE(ca.ok());
  auto leaf = IssueCertificate(ServerSpec("server", "DNS:server.example"), &*ca);
  ASSERT_TRUE(leaf.ok());
  EXPECT_TRUE(KeyFits(*leaf));
  EXPECT_EQ(Verify(leaf->cert_pem, ca->cert_pem), X509_V_OK);
  auto other_ca = IssueCertificate(CaSpec("test-ca"));
  ASSERT_TRUE(other_ca.ok());
  EXPECT_NE(Verify(leaf->cert_pem, other_ca->cert_pem), X509_V_OK);
  // A leaf is no CA: what it signs does not verify.
  auto grandchild = IssueCertificate(ServerSpec("x", ""), &*leaf);
  ASSERT_TRUE(grandchild.ok());
  EXPECT_NE(Verify(grandchild->cert_pem, leaf->cert_pem), X509_V_OK);

  // A malformed name is an error naming it, not a broken certificate.
  auto bad = IssueCertificate(ServerSpec("x", "IP:not-an-address"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("IP:not-an-address"), std::string::npos) << bad.status().ToString();

  const KeyPair garbage{"not a certificate", "not a key"};
  EXPECT_FALSE(IssueCertificate(ServerSpec("x", ""), &garbage).ok());
}

TEST(CertificatesTest, SubjectAltNamesCoverLoopbackAndTheHost) {
  const std::string base = "DNS:localhost,IP:127.0.0.1,IP:::1";
  EXPECT_EQ(SubjectAltNamesFor(""), base);
  EXPECT_EQ(SubjectAltNamesFor("0.0.0.0"), base);
  EXPECT_EQ(SubjectAltNamesFor("::"), base);
  EXPECT_EQ(SubjectAltNamesFor("127.0.0.1"), base);
  EXPECT_EQ(SubjectAltNamesFor("192.168.1.9"), base + ",IP:192.168.1.9");
  EXPECT_EQ(SubjectAltNamesFor("fd00::5"), base + ",IP:fd00::5");
  EXPECT_EQ(SubjectAltNamesFor("web.example"), base + ",DNS:web.example");
}

}  // namespace
}  // namespace fairbench::tls
