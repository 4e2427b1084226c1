// In-cluster configuration (KUBE-API.md §8): the API server from
// KUBERNETES_SERVICE_HOST/PORT (IPv6 bracketed), the service account's
// token (re-read every minute and after a 401), CA and namespace from
// /var/run/secrets/kubernetes.io/serviceaccount.
#pragma once

#include <string>

#include "common/status.h"
#include "common/clock.h"
#include "controller/kube/rest_config.h"

namespace fairbench::kube {

struct InClusterOptions {
  std::string dir = "/var/run/secrets/kubernetes.io/serviceaccount";
  Clock* clock = nullptr;  // null = system clock
};

Result<RestConfig> InClusterConfig(const InClusterOptions& options = {});

// In a pod (KUBERNETES_SERVICE_HOST set): in-cluster; otherwise the kubeconfig.
Result<RestConfig> DefaultRestConfig();

}  // namespace fairbench::kube
