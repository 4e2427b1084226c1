// KubeCluster: Kubernetes' own control plane for a test — etcd,
// kube-apiserver (TLS, Node,RBAC, NodeRestriction and PodSecurity
// admission, ServiceAccount tokens, an audit log), kube-controller-manager
// and kube-scheduler of the release kubernetes/go.mod pins, built from
// Kubernetes' Go modules and started on loopback by `scripts/kube up`.
//
// Up() builds the binaries the first time (minutes; cached after), starts
// the cluster in a folder of its own and returns once it serves; the
// destructor stops it and removes the folder. The cluster also stops when
// the test process ends, whatever way it ends (scripts/kube's --die-with).
// A component that fails to start makes Up() fail with its name and the
// end of its log.
//
// Not thread-safe: one test owns a KubeCluster. Move-only.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace fairbench::testing {

class KubeCluster {
 public:
  // `dir`: the cluster's folder (created; anything in it is replaced).
  // `apiserver_args`: more kube-apiserver flags (--watch-cache-sizes=…).
  static Result<KubeCluster> Up(const std::string& dir, const std::vector<std::string>& apiserver_args = {});
  // A cluster another process started in `dir` (`scripts/kube up`, the
  // ctest fixture kubernetes.cluster): used, never stopped, by this one.
  static Result<KubeCluster> Attach(const std::string& dir);

  KubeCluster(KubeCluster&& other) noexcept;
  KubeCluster& operator=(KubeCluster&& other) noexcept;
  KubeCluster(const KubeCluster&) = delete;
  KubeCluster& operator=(const KubeCluster&) = delete;
  ~KubeCluster();

  // Stops every component; the folder stays (logs, the audit log) unless
  // `remove`.
  void Down(bool remove = false);

  const std::string& dir() const { return dir_; }
  // The administrator's kubeconfig (system:masters, client certificate).
  std::string admin_kubeconfig() const { return dir_ + "/admin.kubeconfig"; }
  // A file of the cluster's PKI: ca.crt, admin.crt, admin.key, …
  std::string pki(const std::string& file) const { return dir_ + "/pki/" + file; }
  // https://127.0.0.1:PORT
  std::string server() const;
  // Where the built etcd, kube-apiserver, …, kubectl and kubelet are.
  const std::string& bin_dir() const { return bin_dir_; }
  std::string kubectl() const { return bin_dir_ + "/kubectl"; }
  // The API server's audit log: one JSON audit.k8s.io/v1 Event a line.
  std::string audit_log() const { return dir_ + "/audit.log"; }
  // The end of `component`'s log (etcd, kube-apiserver, …).
  std::string LogTail(const std::string& component, size_t bytes = 3000) const;

  // A kubeconfig for node `node` (a client certificate for
  // system:node:NODE in system:nodes), its kubelet's serving certificate
  // and key, and a kubeconfig as the node's kube-proxy (system:kube-proxy,
  // which this cluster also lets read pods: what the test kubelet resolves
  // Services with).
  struct NodeCredentials {
    std::string kubeconfig, cert, key, proxy_kubeconfig;
  };
  Result<NodeCredentials> Node(const std::string& node) const;
  // Where the nodes' kubelets listen: a network namespace of this cluster
  // (its name under /run/netns) and its address there. kube-apiserver
  // reaches a kubelet (node proxy, pods/log) at no loopback address.
  std::string node_netns() const;
  std::string node_address() const;

  // Compacts etcd at its current revision: watches and lists from an older
  // resourceVersion then get 410 Gone. Returns the revision.
  Result<std::string> Compact() const;

 private:
  KubeCluster() = default;
  std::string dir_;
  std::string bin_dir_;
  bool owned_ = true;  // Down() stops it
};

// The cluster the Kubernetes tests of this process share, so that a test
// costs a namespace rather than a control plane. Under ctest it is the one
// the fixture kubernetes.cluster started (FAIRBENCH_KUBE_CLUSTER names its
// folder); a test binary run by hand starts one for itself, stopped when
// the process ends. Tests that change the cluster itself (a CRD deleted,
// a kube-apiserver flag) start their own with KubeCluster::Up instead.
// Thread-safe; the cluster lives until the process ends.
Result<KubeCluster*> SharedKubeCluster();

// A namespace of one test's own in a shared cluster: a unique name from
// `prefix`, created at once, ready for pods (its "default" ServiceAccount
// made); deleted, without waiting for its objects to go, when the
// TestNamespace goes. Move-only.
class TestNamespace {
 public:
  static Result<TestNamespace> Create(const KubeCluster& cluster, const std::string& prefix,
                                      const std::map<std::string, std::string>& labels = {});
  TestNamespace(TestNamespace&& other) noexcept;
  TestNamespace& operator=(TestNamespace&& other) noexcept;
  TestNamespace(const TestNamespace&) = delete;
  TestNamespace& operator=(const TestNamespace&) = delete;
  ~TestNamespace();

  const std::string& name() const { return name_; }

 private:
  TestNamespace() = default;
  std::string kubectl_, kubeconfig_, name_;
};

// Runs the cluster's kubectl as its administrator with `args`; its
// standard output, or an error with what it said. Unlike the tests' own
// kubectl runs, for set-up: a failure here is the set-up's failure.
Result<std::string> AdminKubectl(const KubeCluster& cluster, const std::vector<std::string>& args,
                                 const std::string& stdin_text = "");

// scripts/kube in the checkout these tests were built from.
std::string KubeScript();
// The folder of the built etcd, kube-apiserver, …, kubectl, kubelet and
// helm (scripts/kube build: built first if the cache lacks them).
Result<std::string> KubeBinDir();

// A kubeconfig (its text) for `cluster` in namespace `ns`: as the cluster's
// administrator (its client certificate), or with a bearer `token`.
std::string KubeconfigFor(const KubeCluster& cluster, const std::string& ns, const std::string& token = "");

// The product's CRD (manifests/crd/benchmarkruns.fairbench.dev.yaml)
// applied to `cluster` as its administrator, once it is Established.
Status InstallProductCrd(const KubeCluster& cluster);

// From `helm template` output of the chart: the documents of an
// installation's identity (its ServiceAccount, Roles, RoleBindings,
// ClusterRoles and ClusterRoleBindings), as one YAML stream.
std::string ChartIdentityObjects(const std::string& rendered);

}  // namespace fairbench::testing
