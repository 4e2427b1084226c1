// The test API server's side of kubelets: pods/log and the node proxy with
// the real server's error statuses, graceful pod deletion, and the kinds a
// Helm chart installs stored and served to kubectl.
#include <sys/socket.h>
#include <netinet/in.h>

#include "testing/support/http_client.h"
#include "tests/kubelet/kubelet_test_env.h"

namespace fairbench::kubelet::testenv {
namespace {

class ApiServerKubeletRoutes : public KubeletTest {
 protected:
  fairbench::testing::HttpResponse Get(const std::string& path) {
    const std::string url = server_->url();
    const int port = std::stoi(url.substr(url.rfind(':') + 1));
    auto conn = fairbench::testing::HttpConnection::Connect("127.0.0.1", static_cast<uint16_t>(port));
    EXPECT_TRUE(conn.ok());
    if (!conn.ok()) return {};
    auto r = conn->RoundTrip(fairbench::testing::BuildRequest("GET", path, "127.0.0.1"), 15s);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : fairbench::testing::HttpResponse{};
  }
  void CreateNode(const std::string& name, int port) {
    Json node = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", name}}}};
    auto c = client_->Create(kube::resources::Nodes(), "", node);
    ASSERT_TRUE(c.ok()) << c.error().ToString();
    Json status = {{"status",
                    {{"addresses", {{{"type", "InternalIP"}, {"address", "127.0.0.1"}}}},
                     {"daemonEndpoints", {{"kubeletEndpoint", {{"Port", port}}}}}}}};
    auto s = client_->Patch(kube::resources::Nodes(), "", name, kube::PatchType::kMerge, status.dump(), {}, "status");
    ASSERT_TRUE(s.ok()) << s.error().ToString();
  }
  void CreatePod(const std::string& name, const std::string& node, std::vector<std::string> containers) {
    Json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", name}}}, {"spec", Json::object()}};
    if (!node.empty()) pod["spec"]["nodeName"] = node;
    for (const auto& c : containers) pod["spec"]["containers"].push_back({{"name", c}, {"image", "x"}});
    auto c = client_->Create(kube::resources::Pods(), "default", pod);
    ASSERT_TRUE(c.ok()) << c.error().ToString();
  }
  // A loopback port nothing listens on.
  static int DeadPort() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    close(fd);
    return ntohs(a.sin_port);
  }
  static std::string Reason(const fairbench::testing::HttpResponse& r) {
    auto j = Json::parse(r.body, nullptr, false);
    return j.is_object() ? j.value("reason", "") : "";
  }
};

// Catches: pods/log and the proxy answering 200 (or 500) where the real
// server answers 404/400/503 — an operator would mistake a missing pod or
// an unreachable kubelet for an empty log.
TEST_F(ApiServerKubeletRoutes, ErrorStatusesAsTheRealServer) {
  auto missing_pod = Get("/api/v1/namespaces/default/pods/nope/log");
  EXPECT_EQ(missing_pod.status, 404);
  EXPECT_EQ(Reason(missing_pod), "NotFound");
  EXPECT_NE(missing_pod.body.find("pods \\\"nope\\\" not found"), std::string::npos) << missing_pod.body;

  CreateNode("dead", DeadPort());
  CreatePod("two", "dead", {"a", "b"});
  auto unnamed = Get("/api/v1/namespaces/default/pods/two/log");
  EXPECT_EQ(unnamed.status, 400);
  EXPECT_NE(unnamed.body.find("a container name must be specified for pod two, choose one of: [a b]"),
            std::string::npos)
      << unnamed.body;
  auto wrong = Get("/api/v1/namespaces/default/pods/two/log?container=c");
  EXPECT_EQ(wrong.status, 400);
  EXPECT_NE(wrong.body.find("container c is not valid for pod two"), std::string::npos) << wrong.body;
  auto unreachable = Get("/api/v1/namespaces/default/pods/two/log?container=a");
  EXPECT_EQ(unreachable.status, 503) << unreachable.body;

  CreatePod("orphan", "no-such-node", {"a"});
  auto no_node = Get("/api/v1/namespaces/default/pods/orphan/log");
  EXPECT_EQ(no_node.status, 404);
  EXPECT_NE(no_node.body.find("nodes \\\"no-such-node\\\" not found"), std::string::npos) << no_node.body;

  CreatePod("unbound", "", {"a"});
  auto unbound = Get("/api/v1/namespaces/default/pods/unbound/log");
  EXPECT_EQ(unbound.status, 200);
  EXPECT_EQ(unbound.body, "");

  EXPECT_EQ(Get("/api/v1/nodes/nope/proxy/healthz").status, 404);
  EXPECT_EQ(Get("/api/v1/nodes/dead/proxy/healthz").status, 503);
}

// Catches: the proxy not forwarding the path and query to the kubelet, or
// not passing its answer through (a real kubelet's 404 must stay a 404).
TEST_F(ApiServerKubeletRoutes, NodeProxyReachesTheKubelet) {
  StartKubelet();
  auto health = Get("/api/v1/nodes/" + node_ + "/proxy/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "ok");
  auto summary = Get("/api/v1/nodes/" + node_ + "/proxy/stats/summary?only_cpu_and_memory=true");
  EXPECT_EQ(summary.status, 200);
  EXPECT_EQ(Json::parse(summary.body)["node"]["nodeName"], node_);
  EXPECT_EQ(Get("/api/v1/nodes/" + node_ + "/proxy/no/such/path").status, 404);
}

// Catches: a bound pod removed at once on DELETE (its processes would
// outlive it), an unbound one kept, the uid precondition of the kubelet's
// final delete ignored, finalizers ignored.
TEST_F(ApiServerKubeletRoutes, GracefulPodDeletion) {
  CreatePod("bound", "somewhere", {"a"});
  auto d = client_->Delete(kube::resources::Pods(), "default", "bound");
  ASSERT_TRUE(d.ok()) << d.error().ToString();
  auto still = client_->Get(kube::resources::Pods(), "default", "bound");
  ASSERT_TRUE(still.ok());
  EXPECT_TRUE((*still)["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ((*still)["metadata"]["deletionGracePeriodSeconds"], 30);
  kube::DeleteOptions wrong_uid;
  wrong_uid.grace_period_seconds = 0;
  wrong_uid.precondition_uid = "not-the-uid";
  auto conflict = client_->Delete(kube::resources::Pods(), "default", "bound", wrong_uid);
  EXPECT_EQ(conflict.reason(), kube::Reason::kConflict);
  kube::DeleteOptions final_delete;
  final_delete.grace_period_seconds = 0;
  final_delete.precondition_uid = (*still)["metadata"]["uid"];
  ASSERT_TRUE(client_->Delete(kube::resources::Pods(), "default", "bound", final_delete).ok());
  EXPECT_EQ(client_->Get(kube::resources::Pods(), "default", "bound").reason(), kube::Reason::kNotFound);

  CreatePod("floating", "", {"a"});
  ASSERT_TRUE(client_->Delete(kube::resources::Pods(), "default", "floating").ok());
  EXPECT_EQ(client_->Get(kube::resources::Pods(), "default", "floating").reason(), kube::Reason::kNotFound);

  Json held = {{"apiVersion", "v1"},
               {"kind", "Pod"},
               {"metadata", {{"name", "held"}, {"finalizers", {"example.com/hold"}}}},
               {"spec", {{"nodeName", "somewhere"}, {"containers", {{{"name", "a"}, {"image", "x"}}}}}}};
  ASSERT_TRUE(client_->Create(kube::resources::Pods(), "default", held).ok());
  kube::DeleteOptions now;
  now.grace_period_seconds = 0;
  ASSERT_TRUE(client_->Delete(kube::resources::Pods(), "default", "held", now).ok());
  auto kept = client_->Get(kube::resources::Pods(), "default", "held");
  ASSERT_TRUE(kept.ok()) << "a finalizer must keep the pod";
  ASSERT_TRUE(client_
                  ->Patch(kube::resources::Pods(), "default", "held", kube::PatchType::kMerge,
                          R"({"metadata":{"finalizers":null}})")
                  .ok());
  EXPECT_EQ(client_->Get(kube::resources::Pods(), "default", "held").reason(), kube::Reason::kNotFound);
}

// Catches: `kubectl apply` of an operator's chart failing on a kind the
// server does not serve (apps/v1, RBAC, core).
TEST_F(ApiServerKubeletRoutes, HelmChartKindsAreStoredInert) {
  Apply(R"(apiVersion: v1
kind: ServiceAccount
metadata: {name: op}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: op}
rules: [{apiGroups: [""], resources: [pods, nodes/proxy], verbs: [get, list, watch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: op}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: op}
subjects: [{kind: ServiceAccount, name: op, namespace: default}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: op}
rules: [{apiGroups: [coordination.k8s.io], resources: [leases], verbs: ["*"]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: op}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: op}
subjects: [{kind: ServiceAccount, name: op, namespace: default}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: op}
data: {a: b}
---
apiVersion: v1
kind: Service
metadata: {name: op}
spec: {ports: [{port: 80}], selector: {app: op}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: op}
spec:
  replicas: 1
  selector: {matchLabels: {app: op}}
  template:
    metadata: {labels: {app: op}}
    spec: {containers: [{name: op, image: example.org/op:1}]}
)");
  for (const char* kind : {"serviceaccount", "clusterrole", "clusterrolebinding", "role", "rolebinding", "configmap",
                           "service", "deployment"}) {
    std::string out = KubectlOk({"get", kind, "op", "-o", "name"});
    EXPECT_NE(out.find("/op"), std::string::npos) << kind << ": " << out;
  }
  Json dep = Json::parse(KubectlOk({"get", "deployment", "op", "-o", "json"}));
  EXPECT_EQ(dep["spec"]["replicas"], 1);
  // Inert: no ReplicaSet or Pod appears.
  EXPECT_EQ(KubectlOk({"get", "pods", "-o", "name"}), "");
  KubectlOk({"delete", "deployment,clusterrole,clusterrolebinding,role,rolebinding", "op"});
  EXPECT_NE(Kubectl({"get", "clusterrole", "op"}).exit_code, 0);
}

}  // namespace
}  // namespace fairbench::kubelet::testenv
