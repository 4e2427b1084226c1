// RestConfig: everything needed to reach one API server — its URL, how to
// trust it (CA, TLS server name, or no verification), how to authenticate
// (client certificate, a CredentialSource for tokens and exec plugins), the
// default namespace and the per-call timeout. Built from a kubeconfig
// (kubeconfig.h) or from the pod's service account (in_cluster_config.h).
//
// A plain value except for the shared, thread-safe CredentialSource.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/status.h"
#include "controller/kube/credentials.h"

namespace fairbench::kube {

struct TlsOptions {
  std::string ca_pem;           // "" = the system's trust store
  std::string client_cert_pem;  // with client_key_pem: client-certificate authentication
  std::string client_key_pem;
  std::string server_name;  // tls-server-name: verify the certificate for this name
  bool insecure = false;    // insecure-skip-tls-verify
};

struct RestConfig {
  std::string server;  // "https://host:port" (http:// for tests)
  TlsOptions tls;
  std::string default_namespace = "default";
  std::shared_ptr<CredentialSource> credentials;  // null: certificates or anonymous
  std::string user_agent = "fairbench-controller/0.1.0";
  std::chrono::milliseconds timeout{30000};  // every call, unless the call sets its own

  // Rejects what would fail later with an obscure TLS error: PEM that does
  // not parse, a key that does not match its certificate, a CA together with
  // insecure-skip-tls-verify, a server that is not an http(s) URL.
  Status Validate() const;
};

}  // namespace fairbench::kube
