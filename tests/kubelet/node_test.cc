// The Node a test kubelet registers, as kubectl sees it, and its lifecycle.
#include <sys/utsname.h>

#include <regex>

#include "tests/kubelet/kubelet_test_env.h"

namespace fairbench::kubelet::testenv {
namespace {

// Catches: a node missing its labels/taints/capacity, capacity not derived
// from --cpus, a wrong kubelet port (the API server's proxy could not reach
// the kubelet), nodeInfo not from this machine, no heartbeat (the node
// would go NotReady in a real cluster after 40 s), no node Lease.
TEST_F(KubeletTest, NodeRegistersReadyWithLabelsTaintsCapacityAndHeartbeats) {
  cpus_ = "0,1";
  StartKubelet({"--labels", "fairbench.dev/role=target,zone=a", "--taints", "dedicated=bench:NoSchedule"});
  Json node = Json::parse(KubectlOk({"get", "node", node_, "-o", "json"}));
  const Json& md = node["metadata"];
  EXPECT_EQ(md["labels"].value("fairbench.dev/role", ""), "target");
  EXPECT_EQ(md["labels"].value("zone", ""), "a");
  EXPECT_EQ(md["labels"].value("kubernetes.io/hostname", ""), node_);
  // Its taints and the one every test's node has (kubelet_test_env.h); the
  // TaintNodesByCondition admission plugin adds node.kubernetes.io/not-ready
  // to a new Node, which kube-controller-manager's node lifecycle controller
  // removes once the node says Ready.
  const Json want_taints = {
      {{"key", "dedicated"}, {"value", "bench"}, {"effect", "NoSchedule"}},
      {{"key", "fairbench.dev/kubelet-test"}, {"value", "only-pinned"}, {"effect", "NoSchedule"}}};
  EXPECT_TRUE(Eventually(
      [&] {
        node = Json::parse(KubectlOk({"get", "node", node_, "-o", "json"}));
        return node["spec"].value("taints", Json::array()) == want_taints;
      },
      15s))
      << node["spec"].dump();
  const Json& st = node["status"];
  EXPECT_EQ(st["capacity"]["cpu"], "2");
  EXPECT_EQ(st["allocatable"]["cpu"], "2");
  // kube-apiserver writes a quantity back in canonical form: the
  // kubelet's 4194304Ki is 4Gi.
  EXPECT_EQ(st["capacity"]["memory"], "4Gi");
  EXPECT_EQ(st["capacity"]["pods"], "110");
  EXPECT_EQ(st["daemonEndpoints"]["kubeletEndpoint"]["Port"], kubelet_port_);
  struct utsname u {};
  uname(&u);
  EXPECT_EQ(st["nodeInfo"]["kernelVersion"], u.release);
  bool internal = false;
  // Where kube-apiserver reaches it: the nodes' network namespace.
  for (const Json& a : st["addresses"]) {
    internal |= a["type"] == "InternalIP" && a["address"] == cluster_->node_address();
  }
  EXPECT_TRUE(internal) << st["addresses"].dump();
  std::string ready_heartbeat;
  for (const Json& c : st["conditions"]) {
    if (c["type"] == "Ready") {
      EXPECT_EQ(c["status"], "True");
      ready_heartbeat = c["lastHeartbeatTime"];
    }
  }
  ASSERT_FALSE(ready_heartbeat.empty());
  // kubectl's own view: the STATUS column.
  const std::string row = KubectlOk({"get", "node", node_, "--no-headers"});
  EXPECT_TRUE(std::regex_search(row, std::regex("^" + node_ + " +Ready +"))) << row;

  // Heartbeats every --heartbeat (1 s): the Ready condition and the Lease move on.
  auto lease0 = client_->Get(kube::resources::Leases(), "kube-node-lease", node_);
  ASSERT_TRUE(lease0.ok()) << lease0.error().ToString();
  EXPECT_EQ((*lease0)["spec"]["holderIdentity"], node_);
  EXPECT_TRUE(Eventually(
      [&] {
        auto n = client_->Get(kube::resources::Nodes(), "", node_);
        if (!n.ok()) return false;
        for (const Json& c : (*n)["status"]["conditions"]) {
          if (c["type"] == "Ready") return c["lastHeartbeatTime"] != ready_heartbeat;
        }
        return false;
      },
      5s));
  EXPECT_TRUE(Eventually(
      [&] {
        auto lease1 = client_->Get(kube::resources::Leases(), "kube-node-lease", node_);
        return lease1.ok() && (*lease1)["spec"]["renewTime"] != (*lease0)["spec"]["renewTime"];
      },
      5s));
}

// Catches: a kubelet that ignores SIGTERM or leaves its pods' processes
// running after it exits.
TEST_F(KubeletTest, ExitsOnSigtermKillingItsPods) {
  StartKubelet();
  const std::string marker = dir_->File("alive");
  Apply(R"(apiVersion: v1
kind: Pod
metadata: {name: sleeper}
spec:
  nodeName: )" +
        node_ + R"(
  containers:
  - {name: main, image: "example.org/sh:1", args: ["echo $$$$ > )" +
        marker + R"(; exec sleep 60"]}
)");
  WaitPod("sleeper", [](const Json& p) { return Phase(p) == "Running"; });
  ASSERT_TRUE(Eventually([&] { return !ReadFile(marker).empty(); }));
  const pid_t pid = std::stoi(ReadFile(marker));
  ASSERT_EQ(kill(pid, 0), 0);
  ASSERT_TRUE(kubelet_->Kill(SIGTERM).ok());
  auto exit = kubelet_->Wait(10s);
  ASSERT_TRUE(exit.ok()) << exit.status().ToString();
  EXPECT_TRUE(exit->success()) << exit->ToString();
  EXPECT_TRUE(Eventually([&] { return kill(pid, 0) != 0; }, 3s)) << "container process " << pid << " survived";
}

}  // namespace
}  // namespace fairbench::kubelet::testenv
