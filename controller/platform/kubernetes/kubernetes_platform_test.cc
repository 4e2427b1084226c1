// KubernetesPlatform against Kubernetes' own control plane (the shared
// cluster: a namespace per test, Nodes of the test's own). No kubelet runs:
// the test plays it. It registers its Nodes (Ready, capacity, nodeInfo),
// writes pod status through pods/status (Running and Ready with a podIP;
// terminated with an exit code, OOMKilled), finishes graceful deletions as a
// kubelet does once the containers stopped (DELETE with gracePeriodSeconds 0)
// and serves one node's Summary API over HTTPS in the cluster's node network
// for the API server's node proxy. The run the pods belong to is a product
// BenchmarkRun (fairbench.dev), so that the real garbage collector finds the
// owner the pods name. Loopback (and the nodes' network) only; every wait is
// bounded.
#include "common/mutex.h"
#include "controller/platform/kubernetes/kubernetes_platform.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "api/time_text.h"
#include "controller/platform/kubernetes/pod_templates.h"
#include "controller/store/test_records.h"
#include "testing/support/netns.h"
#include "tests/kube/kube_test_env.h"

namespace fairbench::controller {
namespace {

using kube::Json;
using kube::testenv::Eventually;
using SteadyClock = std::chrono::steady_clock;

// A node's kubelet endpoint as the API server's node proxy reaches it:
// HTTPS with the node's serving certificate, in the cluster's node network
// namespace at its node address. Serves GET /stats/summary with the body
// the test sets and records what reached it (path and query).
class KubeletEndpoint {
 public:
  static std::unique_ptr<KubeletEndpoint> Start(const fairbench::testing::KubeCluster& cluster,
                                                const std::string& node) {
    auto creds = cluster.Node(node);
    EXPECT_TRUE(creds.ok()) << creds.status().ToString();
    if (!creds.ok()) return nullptr;
    auto e = std::unique_ptr<KubeletEndpoint>(new KubeletEndpoint());
    e->address_ = cluster.node_address();
    const Status in = fairbench::testing::InNetns(cluster.node_netns(), [&] {
      e->server_ = std::make_unique<httplib::SSLServer>(creds->cert.c_str(), creds->key.c_str());
      if (e->server_->is_valid()) e->port_ = e->server_->bind_to_any_port(e->address_);
    });
    EXPECT_TRUE(in.ok()) << in.ToString();
    EXPECT_GT(e->port_, 0) << "cannot listen on " << e->address_ << " in " << cluster.node_netns();
    if (!in.ok() || e->port_ <= 0) return nullptr;
    KubeletEndpoint* self = e.get();
    // One request a connection: the API server's idle keep-alive connection
    // would otherwise hold stop() for the keep-alive timeout.
    e->server_->set_keep_alive_max_count(1);
    e->server_->Get("/stats/summary", [self](const httplib::Request& req, httplib::Response& res) {
      std::string query;
      for (const auto& [k, v] : req.params) query += (query.empty() ? "?" : "&") + k + "=" + v;
      MutexLock lock(self->mu_);
      self->requests_.push_back(req.path + query);
      res.set_content(self->summary_, "application/json");
    });
    e->thread_ = std::thread([self] { self->server_->listen_after_bind(); });
    return e;
  }
  ~KubeletEndpoint() {
    server_->stop();
    if (thread_.joinable()) thread_.join();
  }
  const std::string& address() const { return address_; }
  int port() const { return port_; }
  void SetSummary(std::string body) {
    MutexLock lock(mu_);
    summary_ = std::move(body);
  }
  std::vector<std::string> requests() {
    MutexLock lock(mu_);
    return requests_;
  }

 private:
  KubeletEndpoint() = default;
  std::unique_ptr<httplib::SSLServer> server_;
  std::thread thread_;
  std::string address_;
  int port_ = 0;
  Mutex mu_;
  std::string summary_ GUARDED_BY(mu_);
  std::vector<std::string> requests_ GUARDED_BY(mu_);
};

class KubernetesPlatformTest : public kube::testenv::KubeTest {
 protected:
  void SetUp() override {
    KubeTest::SetUp();
    if (HasFatalFailure()) return;
    // The platform and the test's own calls talk TLS to the API server
    // itself, as the controller does (with keep-alive: no handshake a call);
    // the tests that inject faults give the platform a client of the fault
    // proxy.
    auto cfg = kube::LoadKubeconfig({{cluster_->admin_kubeconfig()}, "", nullptr});
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    cfg->timeout = std::chrono::milliseconds(5000);
    auto direct = kube::Client::Create(*cfg, kube::testenv::FastRetries());
    ASSERT_TRUE(direct.ok()) << direct.status().ToString();
    client_ = std::move(*direct);
    // Nodes are cluster-wide: names of this test's own (short: a node's
    // certificate names it in a CN of at most 64 characters), and a label
    // that only this test's placements select, so that nodes of tests beside
    // it are never picked.
    const std::string tag = NodeTag();
    target_node_ = tag + "-target";
    load_a_ = tag + "-load-a";
    load_b_ = tag + "-load-b";
    AddNode(target_node_, {{"fairbench.dev/role", "target"}, {"fairbench.dev/test", ns()}});
    AddNode(load_a_, {{"fairbench.dev/role", "load"}, {"fairbench.dev/test", ns()}});
    AddNode(load_b_, {{"fairbench.dev/role", "load"}, {"fairbench.dev/test", ns()}});
    if (HasFatalFailure()) return;
    // The pods' owner: a product BenchmarkRun (the group the owner
    // references name), the CRD shared by every test in the cluster.
    testrecords::InstallGeneratedCrd(*cluster_, *client_, ns());
    if (HasFatalFailure()) return;
    const Json run = testrecords::CreateRun(*client_, "study", ns());
    run_ = RunIdentity{"study", ns(), run["metadata"].value("uid", "")};
    ASSERT_FALSE(run_.uid.empty());
    placement_.target.node_selector = {{"fairbench.dev/role", "target"}, {"fairbench.dev/test", ns()}};
    placement_.agents.node_selector = {{"fairbench.dev/role", "load"}, {"fairbench.dev/test", ns()}};
  }

  void TearDown() override {
    // Pods bound to nodes without a kubelet would hold the namespace's
    // deletion: deleted at once, as the pod garbage collector would once
    // the nodes are gone. Then the nodes.
    if (client_) {
      for (const std::string& n : cleanup_namespaces_) ForceDeletePods(n);
      if (ns_) ForceDeletePods(ns());
      for (const std::string& node : nodes_) (void)client_->Delete(kube::resources::Nodes(), "", node);
    }
    other_ns_.clear();
    KubeTest::TearDown();
  }

  // "fb-PID-SERIAL-RANDOM": unique to this test in the cluster (the
  // namespace's PID and serial; a random part against a PID reused while a
  // crashed run's nodes are still there).
  std::string NodeTag() const {
    const std::string& n = ns();
    const size_t serial = n.rfind('-');
    const size_t pid = n.rfind('-', serial - 1);
    std::random_device rd;
    char random[8];
    std::snprintf(random, sizeof random, "%06x", rd() & 0xffffff);
    return "fb-" + n.substr(pid + 1) + "-" + random;
  }

  void ForceDeletePods(const std::string& ns) {
    kube::DeleteOptions now;
    now.grace_period_seconds = 0;
    (void)client_->DeleteCollection(kube::resources::Pods(), ns, {}, now);
  }

  // A namespace of this test's besides ns().
  std::string OtherNamespace(const std::string& prefix) {
    auto other = fairbench::testing::TestNamespace::Create(*cluster_, prefix);
    EXPECT_TRUE(other.ok()) << other.status().ToString();
    if (!other.ok()) return "";
    const std::string name = other->name();
    other_ns_.push_back(std::move(*other));
    cleanup_namespaces_.push_back(name);
    return name;
  }

  // A node as a kubelet registers it: Ready, with capacity and nodeInfo. The
  // API server taints a new Node node.kubernetes.io/not-ready:NoSchedule
  // (TaintNodesByCondition admission); the node lifecycle controller lifts
  // the taint once the node is Ready, which is done here at once.
  void AddNode(const std::string& name, const api::StringMap& labels) {
    Json node = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", name}, {"labels", labels}}}};
    auto created = client_->Create(kube::resources::Nodes(), "", node);
    ASSERT_TRUE(created.ok()) << created.error().ToString();
    nodes_.push_back(name);
    Json status = {{"status",
                    {{"conditions", Json::array({{{"type", "Ready"}, {"status", "True"}, {"reason", "KubeletReady"}}})},
                     {"capacity", {{"cpu", "8"}, {"memory", "16Gi"}, {"pods", "110"}}},
                     {"allocatable", {{"cpu", "8"}, {"memory", "15Gi"}, {"pods", "110"}}},
                     {"nodeInfo",
                      {{"kernelVersion", "6.1.0-test"},
                       {"osImage", "Debian GNU/Linux 12 (bookworm)"},
                       {"containerRuntimeVersion", "containerd://1.7.0"},
                       {"kubeletVersion", "v1.30.0"}}}}}};
    auto patched =
        client_->Patch(kube::resources::Nodes(), "", name, kube::PatchType::kMerge, status.dump(), {}, "status");
    ASSERT_TRUE(patched.ok()) << patched.error().ToString();
    auto untainted =
        client_->Patch(kube::resources::Nodes(), "", name, kube::PatchType::kMerge, R"({"spec":{"taints":null}})");
    ASSERT_TRUE(untainted.ok()) << untainted.error().ToString();
    ASSERT_TRUE(Eventually([&] {
      auto got = client_->Get(kube::resources::Nodes(), "", name);
      return got.ok() && (*got)["spec"].value("taints", Json::array()).empty();
    })) << "node "
        << name << " keeps a taint";
  }

  KubernetesPlatformOptions Options() {
    KubernetesPlatformOptions o;
    o.ns = ns();
    o.agent_image = "example.org/fairbench/agent:test";
    o.agent_token_secret = "agent-token";
    o.controller_address = "127.0.0.1:7070";
    o.identity = "test-controller";
    o.poll_interval = std::chrono::milliseconds(50);
    o.api_call_timeout = std::chrono::milliseconds(1000);
    o.teardown_timeout = std::chrono::milliseconds(5000);
    o.slot.retry_period = std::chrono::milliseconds(100);
    o.slot.renew_deadline = std::chrono::milliseconds(1500);
    o.slot.lease_duration = std::chrono::seconds(2);
    return o;
  }

  DeployRequest Request() {
    DeployRequest r;
    r.run = run_;
    r.target.name = "drogon";
    r.target.image = "example.org/fairbench/drogon:test";
    r.target.port = 8080;
    r.target.resources.cpu = api::CpuQuantity{2000};
    r.target.resources.memory = api::MemoryQuantity{1LL << 30};
    r.placement = placement_.target;
    return r;
  }

  // The kubelet's status writes.
  void PatchPodStatus(const std::string& name, const Json& status) {
    auto p = client_->Patch(kube::resources::Pods(), ns(), name, kube::PatchType::kMerge,
                            Json{{"status", status}}.dump(), {}, "status");
    ASSERT_TRUE(p.ok()) << p.error().ToString();
  }
  void MarkReady(const std::string& name, const std::string& ip, const std::string& container = "target") {
    PatchPodStatus(name,
                   {{"phase", "Running"},
                    {"podIP", ip},
                    {"qosClass", "Guaranteed"},
                    {"conditions", Json::array({{{"type", "Ready"}, {"status", "True"}}})},
                    {"containerStatuses",
                     Json::array({{{"name", container}, {"ready", true}, {"state", {{"running", Json::object()}}}}})}});
  }
  void MarkTerminated(const std::string& name, int code, const std::string& reason,
                      const std::string& container = "target") {
    PatchPodStatus(name, {{"phase", "Failed"},
                          {"conditions", Json::array({{{"type", "Ready"}, {"status", "False"}}})},
                          {"containerStatuses",
                           Json::array({{{"name", container},
                                         {"ready", false},
                                         {"state", {{"terminated", {{"exitCode", code}, {"reason", reason}}}}}}})}});
  }
  std::string Uid(const std::string& pod) {
    auto got = client_->Get(kube::resources::Pods(), ns(), pod);
    return got.ok() ? (*got)["metadata"].value("uid", "") : "";
  }
  // What a kubelet does once a deleted pod's containers have stopped: it
  // deletes the pod at once (gracePeriodSeconds 0), the pod it saw (UID).
  void FinishTermination(const std::string& pod) {
    auto got = client_->Get(kube::resources::Pods(), ns(), pod);
    if (!got.ok()) return;  // gone already: a failure shows in the test as a timeout
    kube::DeleteOptions now;
    now.grace_period_seconds = 0;
    now.precondition_uid = (*got)["metadata"].value("uid", "");
    (void)client_->Delete(kube::resources::Pods(), ns(), pod, now);
  }

  RunIdentity run_;
  api::Placement placement_;
  std::string target_node_, load_a_, load_b_;

 private:
  std::vector<std::string> nodes_;  // deleted after the test
  std::vector<fairbench::testing::TestNamespace> other_ns_;
  std::vector<std::string> cleanup_namespaces_;
};

// Catches: a target pod not pinned to the picked node, WaitReady returning
// before the Ready condition, or placement() without the pod IP (agents
// would dial nothing).
TEST_F(KubernetesPlatformTest, DeployPinsThePodAndWaitsForReady) {
  KubernetesPlatform platform(*client_, Options());
  auto choice = platform.ChooseNodes(run_, placement_, 3, 2);
  ASSERT_TRUE(choice.ok()) << choice.status().ToString();
  EXPECT_EQ(choice->target_node, target_node_);
  EXPECT_EQ(choice->agent_nodes, (std::vector<std::string>{load_a_, load_b_, load_a_}));

  auto deployed = platform.Deploy(Request(), {});
  ASSERT_TRUE(deployed.ok()) << deployed.status().ToString();
  TargetInstance& target = **deployed;
  auto pod = client_->Get(kube::resources::Pods(), ns(), "study-drogon");
  ASSERT_TRUE(pod.ok()) << pod.error().ToString();
  EXPECT_EQ((*pod)["spec"]["nodeName"], target_node_);
  EXPECT_EQ((*pod)["metadata"]["ownerReferences"][0]["uid"], run_.uid);
  EXPECT_EQ((*pod)["metadata"]["labels"]["fairbench.dev/target"], "drogon");

  std::atomic<bool> marked{false};
  std::jthread kubelet([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    marked = true;
    MarkReady("study-drogon", "127.0.0.5");
  });
  const Status s = target.WaitReady(SteadyClock::now() + std::chrono::seconds(5), {});
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(marked.load());
  const TargetPlacement where = target.placement();
  EXPECT_EQ(where.node, target_node_);
  EXPECT_EQ(where.host, "127.0.0.5");
  EXPECT_EQ(where.port, 8080);
  EXPECT_FALSE(target.Gone().has_value());
}

// Catches: a pod made for a run in another namespace carrying an owner
// reference to it (owners must share the namespace: a real garbage
// collector deletes such a pod at once), or losing the label cleanup finds
// it by.
TEST_F(KubernetesPlatformTest, APodForARunInAnotherNamespaceHasNoOwnerButALabel) {
  KubernetesPlatform platform(*client_, Options());
  ASSERT_TRUE(platform.ChooseNodes(run_, placement_, 3, 2).ok());
  DeployRequest r = Request();
  r.run.namespace_ = "team-a";
  auto deployed = platform.Deploy(r, {});
  ASSERT_TRUE(deployed.ok()) << deployed.status().ToString();
  auto pod = client_->Get(kube::resources::Pods(), ns(), "study-drogon");
  ASSERT_TRUE(pod.ok()) << pod.error().ToString();
  EXPECT_FALSE((*pod)["metadata"].contains("ownerReferences")) << (*pod)["metadata"].dump();
  EXPECT_EQ((*pod)["metadata"]["labels"]["fairbench.dev/run-namespace"], "team-a");
  EXPECT_EQ((*pod)["metadata"]["labels"]["fairbench.dev/run"], "study");
}

// Catches: an OOM kill during start-up reported as a timeout (or not at
// all), and Gone() not naming it (in its text, and as oom_killed with the
// container's exit code).
TEST_F(KubernetesPlatformTest, OomKilledBeforeReady) {
  KubernetesPlatform platform(*client_, Options());
  auto deployed = platform.Deploy(Request(), {});
  ASSERT_TRUE(deployed.ok()) << deployed.status().ToString();
  MarkTerminated("study-drogon", 137, "OOMKilled");
  const Status s = (*deployed)->WaitReady(SteadyClock::now() + std::chrono::seconds(5), {});
  EXPECT_EQ(s.code(), Status::Code::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("was OOMKilled (exit code 137)"), std::string::npos) << s.message();
  EXPECT_EQ((*deployed)->Gone(), (report::TargetExit{137, std::nullopt, true, "was OOMKilled (exit code 137)"}));
}

// Catches: a target that dies under load going unnoticed (cells measured
// against a dead server), or Gone() hammering the API server.
TEST_F(KubernetesPlatformTest, GoneAfterExit) {
  KubernetesPlatform platform(*client_, Options());
  auto deployed = platform.Deploy(Request(), {});
  ASSERT_TRUE(deployed.ok());
  MarkReady("study-drogon", "127.0.0.6");
  ASSERT_TRUE((*deployed)->WaitReady(SteadyClock::now() + std::chrono::seconds(5), {}).ok());
  EXPECT_FALSE((*deployed)->Gone().has_value());
  MarkTerminated("study-drogon", 1, "Error");
  EXPECT_TRUE(Eventually([&] { return (*deployed)->Gone().has_value(); }, std::chrono::milliseconds(2000)));
  EXPECT_EQ((*deployed)->Gone(), (report::TargetExit{1, std::nullopt, false, "exited with code 1"}));
}

// Catches: WaitReady overrunning its deadline, or a timeout message that
// does not say what state the pod was in — also when the last poll, which
// has at most the 100 ms left before the deadline, meets a busy API server
// (the state seen before must not give way to that poll's timeout). The
// deadline leaves room for several polls: a state is always seen.
TEST_F(KubernetesPlatformTest, WaitReadyHonoursTheDeadline) {
  KubernetesPlatform platform(*client_, Options());
  auto deployed = platform.Deploy(Request(), {});
  ASSERT_TRUE(deployed.ok());
  PatchPodStatus("study-drogon",
                 {{"phase", "Pending"},
                  {"containerStatuses",
                   Json::array({{{"name", "target"}, {"state", {{"waiting", {{"reason", "ImagePullBackOff"}}}}}}})}});
  const auto start = SteadyClock::now();
  const Status s = (*deployed)->WaitReady(start + std::chrono::milliseconds(1000), {});
  const auto took = SteadyClock::now() - start;
  EXPECT_EQ(s.code(), Status::Code::kDeadlineExceeded) << s.ToString();
  EXPECT_NE(s.message().find("ImagePullBackOff"), std::string::npos) << s.message();
  EXPECT_LT(took, std::chrono::milliseconds(2100));
}

// Catches: a cancelled run stuck in WaitReady until the readiness timeout.
TEST_F(KubernetesPlatformTest, WaitReadyStopsSoonAfterStop) {
  KubernetesPlatform platform(*client_, Options());
  auto deployed = platform.Deploy(Request(), {});
  ASSERT_TRUE(deployed.ok());
  std::stop_source stop;
  std::jthread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop.request_stop();
  });
  const auto start = SteadyClock::now();
  const Status s = (*deployed)->WaitReady(start + std::chrono::seconds(30), stop.get_token());
  EXPECT_EQ(s.code(), Status::Code::kCancelled) << s.ToString();
  EXPECT_LT(SteadyClock::now() - start, std::chrono::milliseconds(1200));
}

// Catches: Teardown returning while the pod still runs (the next target
// would start beside it on the same node), or not deleting it at all.
TEST_F(KubernetesPlatformTest, TeardownDeletesAndWaitsUntilGone) {
  KubernetesPlatform platform(*client_, Options());
  auto deployed = platform.Deploy(Request(), {});
  ASSERT_TRUE(deployed.ok());
  MarkReady("study-drogon", "127.0.0.7");
  std::atomic<bool> finished{false};
  std::jthread kubelet([&](std::stop_token stop) {
    // Let Teardown see the pod terminating for a while first.
    while (!stop.stop_requested()) {
      auto got = client_->Get(kube::resources::Pods(), ns(), "study-drogon");
      if (got.ok() && (*got)["metadata"].contains("deletionTimestamp")) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    finished = true;
    FinishTermination("study-drogon");
  });
  const Status s = (*deployed)->Teardown();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(finished.load());
  EXPECT_EQ(client_->Get(kube::resources::Pods(), ns(), "study-drogon").reason(), kube::Reason::kNotFound);
}

// Catches: a stale pod of an interrupted run blocking Deploy (409) or being
// reused in whatever state it was left.
TEST_F(KubernetesPlatformTest, DeployReplacesAStalePod) {
  KubernetesPlatform platform(*client_, Options());
  auto first = platform.Deploy(Request(), {});
  ASSERT_TRUE(first.ok());
  const std::string old_uid = Uid("study-drogon");
  MarkTerminated("study-drogon", 1, "Error");
  auto second = platform.Deploy(Request(), {});
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  const std::string new_uid = Uid("study-drogon");
  EXPECT_FALSE(new_uid.empty());
  EXPECT_NE(new_uid, old_uid);
}

// Catches: the create that replaces a stale pod answered 504 after it took
// effect: its retry meets AlreadyExists, and without the create token that
// pod (the new one) could not be told from the stale one, failing the
// deploy. Seed 3 decides: the first create meets the stale pod, the second
// (after the stale pod went) is lost, the third meets the pod it made.
TEST_F(KubernetesPlatformTest, ALostCreateIsToldFromTheStalePodItReplaces) {
  KubernetesPlatformOptions o = Options();
  o.grace_period_seconds = 0;
  auto proxied = kube::testenv::ClientFor(url());  // faults are injected there
  KubernetesPlatform platform(*proxied, o);
  auto first = platform.Deploy(Request(), {});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  const std::string old_uid = Uid("study-drogon");
  MarkTerminated("study-drogon", 1, "Error");
  kubetest::FaultConfig f;
  f.timeout_rate = 0.5;
  f.methods = {"POST"};
  f.path_prefixes = {"/api/v1/namespaces/" + ns() + "/pods"};
  f.seed = 3;
  faults().Configure(f);
  auto second = platform.Deploy(Request(), {});
  const kubetest::FaultCounts counts = faults().counts();
  faults().Clear();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(counts.timeouts, 1u) << counts.ToString();
  const std::string new_uid = Uid("study-drogon");
  EXPECT_FALSE(new_uid.empty());
  EXPECT_NE(new_uid, old_uid);
}

// Catches: a deploy, agents or a teardown failed by one 5xx on a create or a
// delete (the client does not resend a POST that may have happened), or a
// create whose answer was lost (504 after it took effect) leaving the pod
// unusable: each is tried again and ends with one pod of each name.
TEST_F(KubernetesPlatformTest, PodWritesRideOutServerErrorsAndLostAnswers) {
  kubetest::FaultConfig f;
  f.server_error_rate = 0.4;
  f.server_error_codes = {500};
  f.timeout_rate = 0.3;
  f.methods = {"POST", "DELETE"};
  f.path_prefixes = {"/api/v1/namespaces/" + ns() + "/pods"};
  f.seed = 14;  // the target's create is lost (504 after it took effect), its retry meets a 500
  faults().Configure(f);
  KubernetesPlatformOptions o = Options();
  o.grace_period_seconds = 0;  // no kubelet here to finish a graceful deletion of a pod whose create was lost
  auto proxied = kube::testenv::ClientFor(url());  // faults are injected there
  KubernetesPlatform platform(*proxied, o);
  auto deployed = platform.Deploy(Request(), {});
  ASSERT_TRUE(deployed.ok()) << deployed.status().ToString();
  AgentRequest request;
  request.run = run_;
  request.count = 2;
  request.threads = 2;
  request.target = TargetPlacement{target_node_, "127.0.0.5", 8080};
  request.placement = placement_.agents;
  auto ids = platform.EnsureAgents(request, {});
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  for (const std::string& id : *ids) EXPECT_FALSE(Uid(id).empty()) << id;
  std::jthread kubelet([&](std::stop_token stop) {
    while (!stop.stop_requested()) {
      auto got = client_->Get(kube::resources::Pods(), ns(), "study-drogon");
      if (got.ok() && (*got)["metadata"].contains("deletionTimestamp")) {
        FinishTermination("study-drogon");
      }
      if (!got.ok() && got.reason() == kube::Reason::kNotFound) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  const Status s = (*deployed)->Teardown();
  ASSERT_TRUE(s.ok()) << s.ToString();
  const kubetest::FaultCounts counts = faults().counts();
  EXPECT_GT(counts.server_errors, 0u) << counts.ToString();
  EXPECT_GT(counts.timeouts, 0u) << counts.ToString();
  faults().Clear();
  EXPECT_EQ(client_->Get(kube::resources::Pods(), ns(), "study-drogon").reason(), kube::Reason::kNotFound);
}

// Catches: agents created on the target's node, duplicate agents on a
// second call, and dead agents never replaced.
TEST_F(KubernetesPlatformTest, EnsureAgentsCreatesKeepsAndReplaces) {
  KubernetesPlatform platform(*client_, Options());
  AgentRequest request;
  request.run = run_;
  request.count = 2;
  request.threads = 2;
  request.target = TargetPlacement{target_node_, "127.0.0.5", 8080};
  request.placement = placement_.agents;
  auto ids = platform.EnsureAgents(request, {});
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  EXPECT_EQ(*ids, (std::vector<std::string>{"study-agent-0", "study-agent-1"}));
  std::vector<std::string> nodes;
  for (const std::string& id : *ids) {
    auto pod = client_->Get(kube::resources::Pods(), ns(), id);
    ASSERT_TRUE(pod.ok());
    nodes.push_back((*pod)["spec"]["nodeName"].get<std::string>());
    EXPECT_EQ((*pod)["spec"]["containers"][0]["resources"]["limits"]["cpu"], "2");
  }
  EXPECT_EQ(nodes, (std::vector<std::string>{load_a_, load_b_}));

  const std::string uid0 = Uid("study-agent-0"), uid1 = Uid("study-agent-1");
  MarkReady("study-agent-0", "127.0.1.1", "agent");
  MarkTerminated("study-agent-1", 1, "Error", "agent");
  auto again = platform.EnsureAgents(request, {});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, *ids);
  EXPECT_EQ(Uid("study-agent-0"), uid0);  // alive: kept
  EXPECT_NE(Uid("study-agent-1"), uid1);  // ended: replaced
  EXPECT_FALSE(Uid("study-agent-1").empty());
}

// The controller's TLS options reach the agent pods it creates: the
// agents' Secret mounted, the flags pointing into it, no token among the
// arguments. Catches: the options dropped between the controller and the
// pod template (agents would dial a TLS hub in plain text and never
// connect).
TEST_F(KubernetesPlatformTest, AgentPodsGetTheAgentsTlsSecret) {
  KubernetesPlatformOptions o = Options();
  o.agent_tls_secret = "fairbench-agent-tls";
  o.agent_tls_client_certificate = true;
  o.agent_tls_server_name = "fairbench-controller.default.svc";
  KubernetesPlatform platform(*client_, o);
  AgentRequest request;
  request.run = run_;
  request.count = 1;
  request.threads = 1;
  request.target = TargetPlacement{target_node_, "127.0.0.5", 8080};
  request.placement = placement_.agents;
  auto ids = platform.EnsureAgents(request, {});
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  auto pod = client_->Get(kube::resources::Pods(), ns(), ids->at(0));
  ASSERT_TRUE(pod.ok());
  const Json& spec = (*pod)["spec"];
  ASSERT_EQ(spec["volumes"].size(), 1u) << spec.dump();
  EXPECT_EQ(spec["volumes"][0]["secret"]["secretName"], "fairbench-agent-tls");
  const Json& c = spec["containers"][0];
  EXPECT_EQ(c["volumeMounts"][0]["name"], spec["volumes"][0]["name"]);
  const std::string args = c["args"].dump();
  const std::string dir = c["volumeMounts"][0]["mountPath"].get<std::string>();
  for (const char* file : {"/ca.crt", "/tls.crt", "/tls.key"}) {
    EXPECT_NE(args.find("\"" + dir + file + "\""), std::string::npos) << args;
  }
  EXPECT_NE(args.find("\"--tls-server-name\",\"fairbench-controller.default.svc\""), std::string::npos) << args;
  EXPECT_EQ(args.find("token"), std::string::npos) << args;
}

// Catches: a picker error swallowed or reworded on the way out of Deploy
// (the run's condition must name the field).
TEST_F(KubernetesPlatformTest, DeployNamesAMissingNode) {
  KubernetesPlatform platform(*client_, Options());
  DeployRequest r = Request();
  r.placement.node_name = ns() + "-nope";
  auto deployed = platform.Deploy(r, {});
  ASSERT_FALSE(deployed.ok());
  EXPECT_EQ(deployed.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(deployed.status().message(), "spec.placement.target.nodeName: node \"" + ns() + "-nope\" does not exist");
}

// Catches: two targets under load at once (a second holder getting the
// Lease), a slot wait that ignores its timeout or the stop token, and a
// slot that is not released when dropped.
TEST_F(KubernetesPlatformTest, SlotIsExclusiveBoundedAndReleased) {
  KubernetesPlatform a(*client_, Options());
  KubernetesPlatformOptions ob = Options();
  ob.identity = "other-controller";
  KubernetesPlatform b(*client_, ob);
  auto held = a.AcquireSlot("study/drogon", std::chrono::seconds(5), {});
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  EXPECT_TRUE((*held)->held());

  auto start = SteadyClock::now();
  auto refused = b.AcquireSlot("other/crow", std::chrono::milliseconds(400), {});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Status::Code::kDeadlineExceeded) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("test-controller/study/drogon"), std::string::npos)
      << refused.status().message();
  EXPECT_LT(SteadyClock::now() - start, std::chrono::milliseconds(1500));

  std::stop_source stop;
  std::jthread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop.request_stop();
  });
  start = SteadyClock::now();
  auto cancelled = b.AcquireSlot("other/crow", std::chrono::seconds(30), stop.get_token());
  EXPECT_EQ(cancelled.status().code(), Status::Code::kCancelled) << cancelled.status().ToString();
  EXPECT_LT(SteadyClock::now() - start, std::chrono::milliseconds(1200));

  held->reset();  // released
  auto next = b.AcquireSlot("other/crow", std::chrono::seconds(5), {});
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_TRUE((*next)->held());
}

// Catches: a report that describes the controller's machine instead of
// the target's node, or drops how nofile and placement were handled.
TEST_F(KubernetesPlatformTest, DescribesTheTargetNode) {
  KubernetesPlatform platform(*client_, Options());
  ASSERT_TRUE(platform.ChooseNodes(run_, placement_, 1, 1).ok());
  ASSERT_TRUE(platform.Deploy(Request(), {}).ok());
  const report::Environment e = platform.Describe();
  EXPECT_EQ(e.platform, "kubernetes");
  EXPECT_EQ(e.hostname, target_node_);
  EXPECT_EQ(e.kernel, "6.1.0-test");
  EXPECT_EQ(e.cpus, 8);
  EXPECT_EQ(e.memory_bytes, 16ULL << 30);
  std::string notes;
  for (const std::string& n : e.notes) notes += n + "\n";
  EXPECT_NE(notes.find("containerd://1.7.0"), std::string::npos) << notes;
  EXPECT_NE(notes.find("agent(s) on node(s) " + load_a_), std::string::npos) << notes;
  EXPECT_NE(notes.find("nofile was left to the container runtime"), std::string::npos) << notes;
  EXPECT_NE(notes.find("Guaranteed QoS"), std::string::npos) << notes;
}

// Catches: Usage() reading the wrong node's kubelet, a path the API
// server's node proxy does not serve (or a query it does not pass on), the
// pod-level or init container's figures or another namespace's pod of the
// same name instead of the target container's, the controller's clock
// instead of the kubelet's sample time, or a kubelet that cannot be reached
// taken as no usage at all. The kubelet's summary is the captured
// testdata/stats_summary.json (its pod's namespace set to the test's),
// served over HTTPS where the node's status says its kubelet listens; the
// API server's node proxy carries the request there.
TEST_F(KubernetesPlatformTest, UsageFromTheKubeletSummaryThroughTheNodeProxy) {
  // The pods go to a namespace of their own; the run lives in ns().
  const std::string bench = OtherNamespace("bench");
  ASSERT_FALSE(bench.empty());
  KubernetesPlatformOptions o = Options();
  o.ns = bench;
  // Room for every retry of the node proxy's 503 on a busy API server: the
  // error Usage() reports is then the proxy's, not the call's deadline.
  o.api_call_timeout = std::chrono::milliseconds(10000);
  KubernetesPlatform platform(*client_, o);
  RunIdentity run = run_;
  run.name = "cpp-frameworks";
  run.uid.clear();  // the run lives in another namespace: no owner reference
  DeployRequest r = Request();
  r.run = run;
  auto deployed = platform.Deploy(r, {});
  ASSERT_TRUE(deployed.ok()) << deployed.status().ToString();

  auto kubelet = KubeletEndpoint::Start(*cluster_, target_node_);
  ASSERT_NE(kubelet, nullptr);
  auto listen_at = [&](int port) {
    const Json status = {{"status",
                          {{"addresses", Json::array({{{"type", "InternalIP"}, {"address", kubelet->address()}}})},
                           {"daemonEndpoints", {{"kubeletEndpoint", {{"Port", port}}}}}}}};
    auto patched = client_->Patch(kube::resources::Nodes(), "", target_node_, kube::PatchType::kMerge, status.dump(),
                                  {}, "status");
    ASSERT_TRUE(patched.ok()) << patched.error().ToString();
  };
  // The node's kubelet does not answer (nothing listens where it says).
  listen_at(1);
  auto missing = (*deployed)->Usage();
  EXPECT_EQ(missing.status().code(), Status::Code::kUnavailable) << missing.status().ToString();
  // kube-apiserver's node proxy answers 503 with what the dial met.
  EXPECT_NE(missing.status().message().find("error trying to reach service: dial tcp " + kubelet->address() + ":1: "),
            std::string::npos)
      << missing.status().message();
  EXPECT_TRUE(kubelet->requests().empty());

  std::ifstream in(std::string(K8S_TESTDATA) + "/stats_summary.json");
  std::stringstream body;
  body << in.rdbuf();
  Json summary = Json::parse(body.str());
  for (Json& pod : summary["pods"]) {
    if (pod["podRef"]["namespace"] == "bench") pod["podRef"]["namespace"] = bench;
  }
  kubelet->SetSummary(summary.dump());
  listen_at(kubelet->port());
  auto usage = (*deployed)->Usage();
  ASSERT_TRUE(usage.ok()) << usage.status().ToString();
  EXPECT_EQ(usage->memory_bytes, 52428800u);
  EXPECT_DOUBLE_EQ(usage->cpu_seconds, 123.456789012);
  EXPECT_EQ(api::FormatTime(usage->sampled_at), "2026-12-01T02:30:07.25Z");
  ASSERT_FALSE(kubelet->requests().empty());
  EXPECT_EQ(kubelet->requests().back(), "/stats/summary?only_cpu_and_memory=true");
}

}  // namespace
}  // namespace fairbench::controller
