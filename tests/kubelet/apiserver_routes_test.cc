// kube-apiserver's routes to a kubelet, as fairbench's client meets them:
// pods/log (what the controller reads a target's nofile line and facts
// through, kube::Client::GetText) and the node proxy (the target's
// stats/summary), to the test kubelet in the cluster's node network
// namespace and to a node nothing answers for. The statuses and messages
// are the real server's.
#include <netinet/in.h>
#include <sys/socket.h>

#include "testing/support/http_client.h"
#include "tests/kubelet/kubelet_test_env.h"

namespace fairbench::kubelet::testenv {
namespace {

class ApiServerKubeletRoutes : public KubeletTest {
 protected:
  void TearDown() override {
    KubeletTest::TearDown();
    // A Node is cluster-scoped: the test's extra ones go with the test.
    if (!dead_node_.empty()) {
      auto d = AdminKubectl({"delete", "node", dead_node_, "--ignore-not-found", "--wait=false"});
      EXPECT_TRUE(d.ok()) << d.status().ToString();
    }
  }
  Result<std::string> AdminKubectl(const std::vector<std::string>& args) {
    return fairbench::testing::AdminKubectl(*cluster_, args);
  }
  // A raw GET of the API server (through the test's proxy, as the
  // administrator): the status code and body as the server sent them.
  fairbench::testing::HttpResponse Get(const std::string& path) {
    auto conn = fairbench::testing::HttpConnection::Connect("127.0.0.1", static_cast<uint16_t>(proxy_->port()));
    EXPECT_TRUE(conn.ok());
    if (!conn.ok()) return {};
    auto r = conn->RoundTrip(fairbench::testing::BuildRequest("GET", path, "127.0.0.1"), 15s);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : fairbench::testing::HttpResponse{};
  }
  // A Node whose kubelet endpoint is `port` of the nodes' address, where
  // nothing listens: registered by the administrator, as a kubelet gone
  // for good leaves its Node.
  void CreateDeadNode(int port) {
    dead_node_ = node_ + "-dead";
    Json node = {
        {"apiVersion", "v1"},
        {"kind", "Node"},
        {"metadata", {{"name", dead_node_}}},
        {"spec",
         {{"taints", {{{"key", "fairbench.dev/kubelet-test"}, {"value", "only-pinned"}, {"effect", "NoSchedule"}}}}}}};
    auto c = client_->Create(kube::resources::Nodes(), "", node);
    ASSERT_TRUE(c.ok()) << c.error().ToString();
    Json status = {{"status",
                    {{"addresses", {{{"type", "InternalIP"}, {"address", cluster_->node_address()}}}},
                     {"daemonEndpoints", {{"kubeletEndpoint", {{"Port", port}}}}}}}};
    auto s =
        client_->Patch(kube::resources::Nodes(), "", dead_node_, kube::PatchType::kMerge, status.dump(), {}, "status");
    ASSERT_TRUE(s.ok()) << s.error().ToString();
  }
  void CreatePod(const std::string& name, const std::string& node, std::vector<std::string> containers,
                 const std::string& image = "x", const std::vector<std::string>& args = {}) {
    Json pod = {
        {"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", name}}}, {"spec", {{"restartPolicy", "Never"}}}};
    if (!node.empty()) {
      pod["spec"]["nodeName"] = node;
    } else {
      // Left unbound: a scheduler of that name does not run (kube-scheduler
      // would bind it to any node of the shared cluster that fits).
      pod["spec"]["schedulerName"] = "fairbench-no-such-scheduler";
    }
    for (const auto& c : containers) {
      pod["spec"]["containers"].push_back({{"name", c}, {"image", image}});
      if (!args.empty()) pod["spec"]["containers"].back()["args"] = args;
    }
    auto c = client_->Create(kube::resources::Pods(), ns(), pod);
    ASSERT_TRUE(c.ok()) << c.error().ToString();
  }
  kube::ApiResult<std::string> Log(const std::string& pod,
                                   const std::vector<std::pair<std::string, std::string>>& query = {}) {
    return client_->GetText(kube::resources::Pods(), ns(), pod, "log", query);
  }
  // A loopback port nothing listens on (nor, most likely, in the nodes'
  // namespace: no test kubelet there has it).
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
  static Json Body(const fairbench::testing::HttpResponse& r) { return Json::parse(r.body, nullptr, false); }

  std::string dead_node_;
};

// Catches: kube::Client::GetText taking an error answer of pods/log for log
// text, or losing its reason or message — the controller's read-back would
// parse kube-apiserver's or the kubelet's words as the target's log, and an
// operator would mistake a missing pod or an unreachable kubelet for an
// empty log; and the test kubelet's own log errors (a container not started
// yet, no previous instance) not reaching the client as a kubelet's do.
TEST_F(ApiServerKubeletRoutes, PodLogErrorsReachTheClientAsTheServerSaysThem) {
  auto missing = Log("nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().reason, kube::Reason::kNotFound);
  EXPECT_EQ(missing.error().http_code, 404);
  EXPECT_EQ(missing.error().message, "pods \"nope\" not found");

  const int dead_port = DeadPort();
  CreateDeadNode(dead_port);
  CreatePod("two", dead_node_, {"a", "b"});
  auto unnamed = Log("two");
  ASSERT_FALSE(unnamed.ok());
  EXPECT_EQ(unnamed.error().reason, kube::Reason::kBadRequest);
  EXPECT_EQ(unnamed.error().message, "a container name must be specified for pod two, choose one of: [a b]");
  auto wrong = Log("two", {{"container", "c"}});
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().reason, kube::Reason::kBadRequest);
  EXPECT_EQ(wrong.error().message, "container c is not valid for pod two");
  // The kubelet unreachable: kube-apiserver's pods/log answers 500 with
  // the dial error (its node proxy says 503, below).
  auto unreachable = Log("two", {{"container", "a"}});
  ASSERT_FALSE(unreachable.ok());
  EXPECT_EQ(unreachable.error().http_code, 500) << unreachable.error().ToString();
  EXPECT_EQ(unreachable.error().message, "Get \"https://" + cluster_->node_address() + ":" + std::to_string(dead_port) +
                                             "/containerLogs/" + ns() + "/two/a\": dial tcp " +
                                             cluster_->node_address() + ":" + std::to_string(dead_port) +
                                             ": connect: connection refused");

  // A node that does not exist: kube-apiserver says NotFound, naming the
  // node as if it were a pod (its words in 1.37).
  const std::string ghost = node_ + "-ghost";
  CreatePod("orphan", ghost, {"a"});
  auto no_node = Log("orphan");
  ASSERT_FALSE(no_node.ok());
  EXPECT_EQ(no_node.error().reason, kube::Reason::kNotFound);
  EXPECT_EQ(no_node.error().message, "pods \"" + ghost + "\" not found");

  // Not bound to a node: no log yet, 204 No Content, an empty text.
  CreatePod("unbound", "", {"a"});
  EXPECT_EQ(Get("/api/v1/namespaces/" + ns() + "/pods/unbound/log").status, 204);
  auto unbound = Log("unbound");
  ASSERT_TRUE(unbound.ok()) << unbound.error().ToString();
  EXPECT_EQ(*unbound, "");

  // The test kubelet's own errors, passed through by kube-apiserver with
  // their code and text.
  StartKubelet();
  CreatePod("done", node_, {"main"}, "example.org/sh:1", {"echo finished"});
  CreatePod("unpulled", node_, {"main"}, "example.org/no-such-image:1");
  WaitPod("unpulled", [](const Json& p) {
    for (const Json& c : p["status"].value("containerStatuses", Json::array())) {
      if (c["state"].contains("waiting") && c["state"]["waiting"].value("reason", "") == "ErrImagePull") return true;
    }
    return false;
  });
  auto waiting = Log("unpulled");
  ASSERT_FALSE(waiting.ok());
  EXPECT_EQ(waiting.error().reason, kube::Reason::kBadRequest) << waiting.error().ToString();
  EXPECT_EQ(waiting.error().message, "container \"main\" in pod \"unpulled\" is waiting to start: ErrImagePull");
  WaitPod("done", [](const Json& p) { return Phase(p) == "Succeeded"; });
  auto finished = Log("done");
  ASSERT_TRUE(finished.ok()) << finished.error().ToString();
  EXPECT_EQ(*finished, "finished\n");
  auto previous = Log("done", {{"previous", "true"}});
  ASSERT_FALSE(previous.ok());
  EXPECT_EQ(previous.error().reason, kube::Reason::kBadRequest) << previous.error().ToString();
  EXPECT_EQ(previous.error().message, "previous terminated container \"main\" in pod \"done\" not found");

  // The node proxy: 404 for no such node, 503 with the dial error for a
  // kubelet that does not answer.
  auto no_such = Get("/api/v1/nodes/" + ghost + "/proxy/healthz");
  EXPECT_EQ(no_such.status, 404);
  EXPECT_EQ(Body(no_such).value("message", ""), "nodes \"" + ghost + "\" not found");
  auto dead = Get("/api/v1/nodes/" + dead_node_ + "/proxy/healthz");
  EXPECT_EQ(dead.status, 503);
  EXPECT_EQ(Body(dead).value("reason", ""), "ServiceUnavailable");
  EXPECT_EQ(Body(dead).value("message", ""), "error trying to reach service: dial tcp " + cluster_->node_address() +
                                                 ":" + std::to_string(dead_port) + ": connect: connection refused");
}

// Catches: the kubelet's endpoint not reachable through kube-apiserver's
// node proxy (not serving HTTPS with its node certificate, not listening
// where its Node's InternalIP and kubeletEndpoint say), the path or query
// not reaching the kubelet, or a kubelet's 404 not passed through.
TEST_F(ApiServerKubeletRoutes, NodeProxyReachesTheKubelet) {
  StartKubelet();
  auto health = Get("/api/v1/nodes/" + node_ + "/proxy/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "ok");
  auto summary = Get("/api/v1/nodes/" + node_ + "/proxy/stats/summary?only_cpu_and_memory=true");
  EXPECT_EQ(summary.status, 200);
  EXPECT_EQ(Body(summary)["node"]["nodeName"], node_);
  EXPECT_EQ(Get("/api/v1/nodes/" + node_ + "/proxy/no/such/path").status, 404);
}

// Catches: /configz missing from the kubelet's endpoint, or not in the
// kubelet's shape (the KubeletConfiguration under "kubeletconfig", without
// kind and apiVersion), or its CPU manager fields not what the flags said —
// what a client learns a node's cpuManagerPolicy and reservedSystemCPUs by.
TEST_F(ApiServerKubeletRoutes, ConfigzThroughTheNodeProxy) {
  StartKubelet({"--cpu-manager-policy", "static", "--reserved-cpus", "1"});
  auto configz = Get("/api/v1/nodes/" + node_ + "/proxy/configz");
  ASSERT_EQ(configz.status, 200) << configz.body;
  const Json body = Body(configz);
  ASSERT_TRUE(body.is_object() && body.size() == 1 && body.contains("kubeletconfig")) << configz.body;
  const Json& kc = body["kubeletconfig"];
  EXPECT_EQ(kc.value("cpuManagerPolicy", ""), "static");
  EXPECT_EQ(kc.value("reservedSystemCPUs", ""), "1");
  EXPECT_FALSE(kc.contains("kind"));
  EXPECT_FALSE(kc.contains("apiVersion"));
  EXPECT_EQ(kc.value("port", 0), kubelet_port_);
  EXPECT_EQ(kc.value("nodeStatusUpdateFrequency", ""), "1s");  // --heartbeat 1s, as Go prints a duration
}

}  // namespace
}  // namespace fairbench::kubelet::testenv
