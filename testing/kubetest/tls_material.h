// Certificates for a test's TLS server: a CA, a server certificate for
// 127.0.0.1 / localhost (and extra DNS names), and client certificates
// signed by the same CA for client-certificate authentication. ECDSA P-256,
// generated with OpenSSL at run time — nothing is checked in.
//
// Plain values (PEM text); thread-safe to use once generated.
#pragma once

#include <string>
#include <vector>

#include "common/certificates.h"
#include "common/status.h"

namespace fairbench::kubetest {

using KeyPair = tls::KeyPair;

struct TlsMaterial {
  KeyPair ca;
  KeyPair server;
  KeyPair admin_client;  // CN "fairbench-admin", O "system:masters"

  // A new CA with a server certificate valid for 127.0.0.1, ::1, localhost
  // and `extra_dns_names`.
  static Result<TlsMaterial> Generate(const std::vector<std::string>& extra_dns_names = {});
  // A client certificate with this common name, signed by this CA.
  Result<KeyPair> IssueClient(const std::string& common_name) const;
};

}  // namespace fairbench::kubetest
