// A FaultProxy (fault_proxy.h) in front of a KubeCluster's API server:
// forwarding as the cluster's administrator, its expire faults compacting
// the cluster's etcd. Header-only: its users link both fairbench_kube_testing
// and fairbench_testing_support. The cluster must outlive the proxy.
#pragma once

#include <memory>

#include "testing/kubetest/fault_proxy.h"
#include "testing/support/kube_cluster.h"

namespace fairbench::kubetest {

inline Result<std::unique_ptr<FaultProxy>> StartFaultProxy(const testing::KubeCluster& cluster) {
  FaultProxyOptions o;
  o.upstream = cluster.server();
  o.ca_file = cluster.pki("ca.crt");
  o.client_cert_file = cluster.pki("admin.crt");
  o.client_key_file = cluster.pki("admin.key");
  o.compact = [&cluster]() -> Status {
    auto rv = cluster.Compact();
    return rv.ok() ? Status::Ok() : rv.status();
  };
  return FaultProxy::Start(o);
}

}  // namespace fairbench::kubetest
