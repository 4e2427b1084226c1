#include "controller/kube/in_cluster_config.h"

#include <cstdlib>
#include <memory>

#include "controller/kube/kubeconfig.h"

namespace fairbench::kube {

Result<RestConfig> InClusterConfig(const InClusterOptions& options) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !*host || !port || !*port) {
    return Status::FailedPrecondition(
        "not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
  }
  std::string h = host;
  if (h.find(':') != std::string::npos) h = "[" + h + "]";
  RestConfig cfg;
  cfg.server = "https://" + h + ":" + port;
  Clock& clock = options.clock ? *options.clock : SystemClock::Instance();
  auto token = std::make_shared<TokenFile>(options.dir + "/token", clock);
  auto first = token->Get();
  if (!first.ok()) return Status::IoError("in-cluster service account token: " + first.status().message());
  cfg.credentials = token;
  auto ca = ReadSmallFile(options.dir + "/ca.crt");
  if (!ca.ok()) return Status::IoError("in-cluster CA: " + ca.status().message());
  cfg.tls.ca_pem = *ca;
  auto ns = ReadSmallFile(options.dir + "/namespace");
  if (ns.ok()) {
    std::string n = *ns;
    while (!n.empty() && (n.back() == '\n' || n.back() == ' ')) n.pop_back();
    if (!n.empty()) cfg.default_namespace = n;
  }
  Status valid = cfg.Validate();
  if (!valid.ok()) return Status::InvalidArgument("in-cluster configuration: " + valid.message());
  return cfg;
}

Result<RestConfig> DefaultRestConfig() {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  if (host && *host) return InClusterConfig();
  return LoadKubeconfig();
}

}  // namespace fairbench::kube
