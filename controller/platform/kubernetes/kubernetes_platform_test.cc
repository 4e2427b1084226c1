// KubernetesPlatform against the test API server. There is no kubelet: the
// test plays it by patching pod status through pods/status (Running and
// Ready with a podIP; terminated with an exit code, OOMKilled) and by
// finishing graceful deletions. Loopback only; every wait is bounded.
#include "common/mutex.h"
#include "controller/platform/kubernetes/kubernetes_platform.h"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/api/time_text.h"
#include "controller/kube/curl_transport.h"
#include "controller/platform/kubernetes/pod_templates.h"
#include "tests/kube/kube_test_env.h"

namespace fairbench::controller {
namespace {

using kube::Json;
using kube::testenv::Eventually;
using SteadyClock = std::chrono::steady_clock;

// The test API server has no node proxy route yet: this transport answers
// GET /api/v1/nodes/N/proxy/... itself (as the kubelet would, with the body
// set by the test) and passes every other request to the server.
class KubeletProxyTransport final : public kube::HttpTransport {
 public:
  explicit KubeletProxyTransport(const std::string& server) : inner_(server, {}, "k8s-platform-test") {}
  void SetSummary(const std::string& node, std::string body) {
    MutexLock lock(mu_);
    summaries_[node] = std::move(body);
  }
  std::vector<std::string> proxied() {
    MutexLock lock(mu_);
    return proxied_;
  }
  Result<kube::HttpResponse> Do(const kube::HttpRequest& request) override {
    const std::string prefix = "/api/v1/nodes/";
    const size_t proxy = request.path_and_query.find("/proxy/");
    if (request.method == "GET" && request.path_and_query.rfind(prefix, 0) == 0 && proxy != std::string::npos) {
      const std::string node = request.path_and_query.substr(prefix.size(), proxy - prefix.size());
      MutexLock lock(mu_);
      proxied_.push_back(request.path_and_query);
      kube::HttpResponse r;
      auto it = summaries_.find(node);
      if (it == summaries_.end()) {
        r.status = 503;
        r.body = R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":"no kubelet","reason":"ServiceUnavailable","code":503})";
      } else {
        r.status = 200;
        r.body = it->second;
      }
      r.headers["content-type"] = "application/json";
      return r;
    }
    return inner_.Do(request);
  }
  Result<kube::HttpResponse> Stream(const kube::HttpRequest& request,
                                    const std::function<bool(std::string_view)>& on_data,
                                    std::stop_token stop) override {
    return inner_.Stream(request, on_data, std::move(stop));
  }

 private:
  kube::CurlTransport inner_;
  Mutex mu_;
  std::map<std::string, std::string> summaries_ GUARDED_BY(mu_);
  std::vector<std::string> proxied_ GUARDED_BY(mu_);
};

class KubernetesPlatformTest : public kube::testenv::KubeTest {
 protected:
  void SetUp() override {
    KubeTest::SetUp();
    AddNode("node-target", {{"fairbench.dev/role", "target"}});
    AddNode("node-load-a", {{"fairbench.dev/role", "load"}});
    AddNode("node-load-b", {{"fairbench.dev/role", "load"}});
    InstallCrd();
    ASSERT_TRUE(Eventually([&] {
      return client_->Create(kube::resources::BenchmarkRuns(), "default", kube::testenv::BenchmarkRun("study")).ok();
    }));
    auto run = client_->Get(kube::resources::BenchmarkRuns(), "default", "study");
    ASSERT_TRUE(run.ok()) << run.error().ToString();
    run_ = RunIdentity{"study", "default", (*run)["metadata"].value("uid", "")};
    placement_.target.node_selector = {{"fairbench.dev/role", "target"}};
    placement_.agents.node_selector = {{"fairbench.dev/role", "load"}};
  }

  void AddNode(const std::string& name, const api::StringMap& labels) {
    Json node = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", name}, {"labels", labels}}}};
    auto created = client_->Create(kube::resources::Nodes(), "", node);
    ASSERT_TRUE(created.ok()) << created.error().ToString();
    Json status = {{"status",
                    {{"conditions", Json::array({{{"type", "Ready"}, {"status", "True"}}})},
                     {"capacity", {{"cpu", "8"}, {"memory", "16Gi"}}},
                     {"allocatable", {{"cpu", "8"}, {"memory", "15Gi"}}},
                     {"nodeInfo",
                      {{"kernelVersion", "6.1.0-test"},
                       {"osImage", "Debian GNU/Linux 12 (bookworm)"},
                       {"containerRuntimeVersion", "containerd://1.7.0"},
                       {"kubeletVersion", "v1.30.0"}}}}}};
    auto patched = client_->Patch(kube::resources::Nodes(), "", name, kube::PatchType::kMerge, status.dump(), {}, "status");
    ASSERT_TRUE(patched.ok()) << patched.error().ToString();
  }

  KubernetesPlatformOptions Options() {
    KubernetesPlatformOptions o;
    o.ns = "default";
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
    auto p = client_->Patch(kube::resources::Pods(), "default", name, kube::PatchType::kMerge,
                            Json{{"status", status}}.dump(), {}, "status");
    ASSERT_TRUE(p.ok()) << p.error().ToString();
  }
  void MarkReady(const std::string& name, const std::string& ip, const std::string& container = "target") {
    PatchPodStatus(name, {{"phase", "Running"},
                          {"podIP", ip},
                          {"qosClass", "Guaranteed"},
                          {"conditions", Json::array({{{"type", "Ready"}, {"status", "True"}}})},
                          {"containerStatuses", Json::array({{{"name", container},
                                                              {"ready", true},
                                                              {"state", {{"running", Json::object()}}}}})}});
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
    auto got = client_->Get(kube::resources::Pods(), "default", pod);
    return got.ok() ? (*got)["metadata"].value("uid", "") : "";
  }
  RunIdentity run_;
  api::Placement placement_;
};

// Catches: a target pod not pinned to the picked node, WaitReady returning
// before the Ready condition, or placement() without the pod IP (agents
// would dial nothing).
TEST_F(KubernetesPlatformTest, DeployPinsThePodAndWaitsForReady) {
  KubernetesPlatform platform(*client_, Options());
  auto choice = platform.ChooseNodes(run_, placement_, 3, 2);
  ASSERT_TRUE(choice.ok()) << choice.status().ToString();
  EXPECT_EQ(choice->target_node, "node-target");
  EXPECT_EQ(choice->agent_nodes, (std::vector<std::string>{"node-load-a", "node-load-b", "node-load-a"}));

  auto deployed = platform.Deploy(Request(), {});
  ASSERT_TRUE(deployed.ok()) << deployed.status().ToString();
  TargetInstance& target = **deployed;
  auto pod = client_->Get(kube::resources::Pods(), "default", "study-drogon");
  ASSERT_TRUE(pod.ok()) << pod.error().ToString();
  EXPECT_EQ((*pod)["spec"]["nodeName"], "node-target");
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
  EXPECT_EQ(where.node, "node-target");
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
  auto pod = client_->Get(kube::resources::Pods(), "default", "study-drogon");
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
// does not say what state the pod was in.
TEST_F(KubernetesPlatformTest, WaitReadyHonoursTheDeadline) {
  KubernetesPlatform platform(*client_, Options());
  auto deployed = platform.Deploy(Request(), {});
  ASSERT_TRUE(deployed.ok());
  PatchPodStatus("study-drogon", {{"phase", "Pending"},
                                  {"containerStatuses", Json::array({{{"name", "target"},
                                                                      {"state", {{"waiting", {{"reason", "ImagePullBackOff"}}}}}}})}});
  const auto start = SteadyClock::now();
  const Status s = (*deployed)->WaitReady(start + std::chrono::milliseconds(400), {});
  const auto took = SteadyClock::now() - start;
  EXPECT_EQ(s.code(), Status::Code::kDeadlineExceeded) << s.ToString();
  EXPECT_NE(s.message().find("ImagePullBackOff"), std::string::npos) << s.message();
  EXPECT_LT(took, std::chrono::milliseconds(1500));
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
      auto got = client_->Get(kube::resources::Pods(), "default", "study-drogon");
      if (got.ok() && (*got)["metadata"].contains("deletionTimestamp")) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    finished = true;
    (void)api().FinishPodTermination("default", "study-drogon");  // a failure shows below as a timeout
  });
  const Status s = (*deployed)->Teardown();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(finished.load());
  EXPECT_EQ(client_->Get(kube::resources::Pods(), "default", "study-drogon").reason(), kube::Reason::kNotFound);
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
  KubernetesPlatform platform(*client_, o);
  auto first = platform.Deploy(Request(), {});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  const std::string old_uid = Uid("study-drogon");
  MarkTerminated("study-drogon", 1, "Error");
  apiserver::FaultConfig f;
  f.timeout_rate = 0.5;
  f.methods = {"POST"};
  f.path_prefixes = {"/api/v1/namespaces/default/pods"};
  f.seed = 3;
  api().faults().Configure(f);
  auto second = platform.Deploy(Request(), {});
  const apiserver::FaultCounts counts = api().faults().counts();
  api().faults().Clear();
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
  apiserver::FaultConfig f;
  f.server_error_rate = 0.4;
  f.server_error_codes = {500};
  f.timeout_rate = 0.3;
  f.methods = {"POST", "DELETE"};
  f.path_prefixes = {"/api/v1/namespaces/default/pods"};
  f.seed = 14;  // the target's create is lost (504 after it took effect), its retry meets a 500
  api().faults().Configure(f);
  KubernetesPlatformOptions o = Options();
  o.grace_period_seconds = 0;  // no kubelet here to finish a graceful deletion of a pod whose create was lost
  KubernetesPlatform platform(*client_, o);
  auto deployed = platform.Deploy(Request(), {});
  ASSERT_TRUE(deployed.ok()) << deployed.status().ToString();
  AgentRequest request;
  request.run = run_;
  request.count = 2;
  request.threads = 2;
  request.target = TargetPlacement{"node-target", "127.0.0.5", 8080};
  request.placement = placement_.agents;
  auto ids = platform.EnsureAgents(request, {});
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  for (const std::string& id : *ids) EXPECT_FALSE(Uid(id).empty()) << id;
  std::jthread kubelet([&](std::stop_token stop) {
    while (!stop.stop_requested()) {
      auto got = client_->Get(kube::resources::Pods(), "default", "study-drogon");
      if (got.ok() && (*got)["metadata"].contains("deletionTimestamp")) {
        (void)api().FinishPodTermination("default", "study-drogon");
      }
      if (!got.ok() && got.reason() == kube::Reason::kNotFound) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  const Status s = (*deployed)->Teardown();
  ASSERT_TRUE(s.ok()) << s.ToString();
  const apiserver::FaultCounts counts = api().faults().counts();
  EXPECT_GT(counts.server_errors, 0u) << counts.ToString();
  EXPECT_GT(counts.timeouts, 0u) << counts.ToString();
  api().faults().Clear();
  EXPECT_EQ(client_->Get(kube::resources::Pods(), "default", "study-drogon").reason(), kube::Reason::kNotFound);
}

// Catches: agents created on the target's node, duplicate agents on a
// second call, and dead agents never replaced.
TEST_F(KubernetesPlatformTest, EnsureAgentsCreatesKeepsAndReplaces) {
  KubernetesPlatform platform(*client_, Options());
  AgentRequest request;
  request.run = run_;
  request.count = 2;
  request.threads = 2;
  request.target = TargetPlacement{"node-target", "127.0.0.5", 8080};
  request.placement = placement_.agents;
  auto ids = platform.EnsureAgents(request, {});
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  EXPECT_EQ(*ids, (std::vector<std::string>{"study-agent-0", "study-agent-1"}));
  std::vector<std::string> nodes;
  for (const std::string& id : *ids) {
    auto pod = client_->Get(kube::resources::Pods(), "default", id);
    ASSERT_TRUE(pod.ok());
    nodes.push_back((*pod)["spec"]["nodeName"].get<std::string>());
    EXPECT_EQ((*pod)["spec"]["containers"][0]["resources"]["limits"]["cpu"], "2");
  }
  EXPECT_EQ(nodes, (std::vector<std::string>{"node-load-a", "node-load-b"}));

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
  request.target = TargetPlacement{"node-target", "127.0.0.5", 8080};
  request.placement = placement_.agents;
  auto ids = platform.EnsureAgents(request, {});
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  auto pod = client_->Get(kube::resources::Pods(), "default", ids->at(0));
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
  r.placement.node_name = "nope";
  auto deployed = platform.Deploy(r, {});
  ASSERT_FALSE(deployed.ok());
  EXPECT_EQ(deployed.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(deployed.status().message(), "spec.placement.target.nodeName: node \"nope\" does not exist");
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
  EXPECT_EQ(e.hostname, "node-target");
  EXPECT_EQ(e.kernel, "6.1.0-test");
  EXPECT_EQ(e.cpus, 8);
  EXPECT_EQ(e.memory_bytes, 16ULL << 30);
  std::string notes;
  for (const std::string& n : e.notes) notes += n + "\n";
  EXPECT_NE(notes.find("containerd://1.7.0"), std::string::npos) << notes;
  EXPECT_NE(notes.find("agent(s) on node(s) node-load-a"), std::string::npos) << notes;
  EXPECT_NE(notes.find("nofile was left to the container runtime"), std::string::npos) << notes;
  EXPECT_NE(notes.find("Guaranteed QoS"), std::string::npos) << notes;
}

// Catches: Usage() reading the wrong node's kubelet, a path the API
// server's node proxy does not serve, the pod-level or init container's
// figures instead of the target container's, or the controller's clock
// instead of the kubelet's sample time. The kubelet's summary is the
// captured testdata/stats_summary.json, served by KubeletProxyTransport.
// TODO: serve it from the test API server's node proxy route once it exists.
TEST_F(KubernetesPlatformTest, UsageFromTheKubeletSummaryThroughTheNodeProxy) {
  auto transport = std::make_unique<KubeletProxyTransport>(server_->url());
  KubeletProxyTransport* kubelet = transport.get();
  kube::RestConfig cfg;
  cfg.server = server_->url();
  cfg.timeout = std::chrono::milliseconds(5000);
  kube::Client client(cfg, std::move(transport), kube::testenv::FastRetries());
  KubernetesPlatformOptions o = Options();
  o.ns = "bench";
  KubernetesPlatform platform(client, o);
  ASSERT_TRUE(client.Create(kube::resources::Namespaces(), "",
                            Json{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "bench"}}}})
                  .ok());
  RunIdentity run = run_;
  run.name = "cpp-frameworks";
  run.uid.clear();  // the run lives in another namespace: no owner reference
  DeployRequest r = Request();
  r.run = run;
  auto deployed = platform.Deploy(r, {});
  ASSERT_TRUE(deployed.ok()) << deployed.status().ToString();

  auto missing = (*deployed)->Usage();
  EXPECT_EQ(missing.status().code(), Status::Code::kUnavailable) << missing.status().ToString();

  std::ifstream in(std::string(K8S_TESTDATA) + "/stats_summary.json");
  std::stringstream body;
  body << in.rdbuf();
  kubelet->SetSummary("node-target", body.str());
  auto usage = (*deployed)->Usage();
  ASSERT_TRUE(usage.ok()) << usage.status().ToString();
  EXPECT_EQ(usage->memory_bytes, 52428800u);
  EXPECT_DOUBLE_EQ(usage->cpu_seconds, 123.456789012);
  EXPECT_EQ(api::FormatTime(usage->sampled_at), "2026-12-01T02:30:07.25Z");
  ASSERT_FALSE(kubelet->proxied().empty());
  EXPECT_EQ(kubelet->proxied().back(), "/api/v1/nodes/node-target/proxy/stats/summary?only_cpu_and_memory=true");
}

}  // namespace
}  // namespace fairbench::controller
