// X.509 certificates made at run time with OpenSSL: ECDSA P-256 keys, SHA-256
// signatures, PEM text in and out. Used where a TLS server needs a
// certificate nobody gave it (the nginx target's self-signed one) and by the
// tests' certificate authorities (testing/kubetest/tls_material.h). Plain functions; thread-safe.
#pragma once

#include <string>

#include "common/status.h"

namespace fairbench::tls {

struct KeyPair {
  std::string cert_pem;
  std::string key_pem;
};

struct CertificateSpec {
  std::string common_name;
  std::string organization;        // empty: none
  bool is_ca = false;              // basicConstraints CA:TRUE, keyCertSign
  std::string extended_key_usage;  // "serverAuth", "clientAuth" or empty
  std::string subject_alt_names;   // OpenSSL's syntax: "IP:127.0.0.1,DNS:localhost"
  long valid_days = 3650;          // from an hour ago, against clock skew
};

// The usual specs: a CA, a TLS server's certificate for `subject_alt_names`,
// a TLS client's with an organization (Kubernetes reads it as the group).
CertificateSpec CaSpec(const std::string& common_name);
CertificateSpec ServerSpec(const std::string& common_name, const std::string& subject_alt_names);
CertificateSpec ClientSpec(const std::string& common_name, const std::string& organization);

// A new key and a certificate for it, signed by `issuer` (its certificate
// and key, PEM) or, when `issuer` is null, by the new key itself
// (self-signed).
Result<KeyPair> IssueCertificate(const CertificateSpec& spec, const KeyPair* issuer = nullptr);

// The subjectAltName value that covers `host` (an IP address gets "IP:", a
// name "DNS:") along with localhost, 127.0.0.1 and ::1. A wildcard address
// (0.0.0.0, ::, empty) adds nothing beyond those.
std::string SubjectAltNamesFor(const std::string& host);

}  // namespace fairbench::tls
