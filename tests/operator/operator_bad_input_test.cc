// The operator given bad input, on one machine: Kubernetes' own control
// plane (with or without the product CRD), test kubelets as its nodes, one
// fairbench-controller process watching every namespace as the chart's
// ServiceAccount (controller.watchAllNamespaces), and kubectl. Each case ends with a condition on the run and a Warning
// Event naming the cause — or, for what lies outside any run (the API server,
// the CRD), one clear log line and a controller that keeps waiting instead of
// exiting.
#include <signal.h>

#include "testing/support/tcp_proxy.h"
#include "tests/operator/cluster_test.h"

namespace fairbench::operator_test {
namespace {

class OperatorBadInputTest : public ClusterTest {
 protected:
  void SetUp() override { Prepare("fairbench-bad-input"); }
  void TearDown() override {
    // The controller first, so that it does not act on a cluster going away.
    if (auto it = processes_.find("controller"); it != processes_.end()) (void)it->second.Terminate(SIGTERM, 5s);
    for (auto& [name, p] : processes_) (void)p.Terminate(SIGTERM, 5s);
    RecordControllerApiUsage();
  }

  // The target node on CPU 0, a load node on CPU 1.
  void Nodes() {
    Kubelet("node-target", "0", "fairbench.dev/role=target", "127.0.20");
    Kubelet("node-load-1", "1", "fairbench.dev/role=load", "127.0.21");
    ASSERT_TRUE(Eventually(
        [&] {
          return Run({"get", "nodes"}).out.find("node-load-1") != std::string::npos;
        },
        20s))
        << Logs();
  }
  void Controller(const std::string& kubeconfig) {
    const std::string agent = "127.0.0.1:" + std::to_string(agent_port_);
    Start("controller",
          {testing::BinaryPath("fairbench-controller"), "--kubeconfig", kubeconfig, "--identity", "ctl",
           "--agent-listen", agent, "--agent-address", agent, "--agent-image", "example.org/fairbench/agent:dev",
           "--nofile-helper-path", testing::BinaryPath("fairbench-nofile"), "--agent-timeout", "20s"});
  }
  bool Ended(const std::string& run) {
    const std::string p = Phase(run);
    return p == "Succeeded" || p == "Failed" || p == "Cancelled";
  }
  // The condition of `type` on the run, as kubectl shows it; null when none.
  json Condition(const std::string& run, const std::string& type) {
    const json br = Get("br/" + run);
    if (!br.contains("status") || !br["status"].contains("conditions")) return json();
    for (const json& c : br["status"]["conditions"]) {
      if (c.value("type", "") == type) return c;
    }
    return json();
  }
  // The Events about `run` with `reason`, as `kubectl get events` lists them.
  std::vector<json> Events(const std::string& run, const std::string& reason) {
    std::vector<json> out;
    const json list = Get("events");
    if (!list.contains("items")) return out;
    for (const json& e : list["items"]) {
      if (e.value("reason", "") != reason) continue;
      if (!e.contains("involvedObject") || e["involvedObject"].value("name", "") != run) continue;
      out.push_back(e);
    }
    return out;
  }
  // A run of one target (`target_extra` appended to the target) and one cell.
  void ApplyRun(const std::string& name, const std::string& image, const std::string& placement,
                const std::string& target_extra = "") {
    const std::string text =
        "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: " + name +
        "}\nspec:\n  targets:\n  - name: alpha\n    image: " + image + "\n    port: " + std::to_string(FreePort()) +
        "\n    command: [" + testing::BinaryPath("fairbench-target-cpp-httplib-debian") +
        ", --host, 0.0.0.0, --port, \"{port}\", --threads, \"1\"]\n    resources: {cpu: \"1\", memory: 256Mi}\n"
        "    nofile: 8192\n" +
        target_extra +
        "  scenarios:\n  - name: hello\n    request: {path: /}\n"
        "  load: {threads: 1, connections: [8], warmup: 200ms, duration: 500ms, timeout: 1s, agents: 1}\n"
        "  placement:\n" +
        placement;
    const fs::path file = root_ / (name + ".yaml");
    std::ofstream(file) << text;
    Ok({"apply", "-f", file.string()});
  }
};

// Catches: a target nodeName that names no node, or a target selector that
// matches no node, failing each cell quietly (DeployFailed) with nothing on
// the run itself: the run must carry the picker's message as a condition
// (Placed=False, PlacementFailed) and a Warning Event, and end Failed.
TEST_F(OperatorBadInputTest, TargetPlacementNoNodeSatisfiesIsAConditionAndAnEvent) {
  Cluster(true, /*all_namespaces=*/true);
  Nodes();
  Controller(controller_kubeconfig_);
  ApplyRun("ghost-node", "example.org/fairbench/target:dev",
           "    target: {nodeName: node-missing}\n    agents: {nodeSelector: {fairbench.dev/role: load}}\n");
  ApplyRun(
      "no-match", "example.org/fairbench/target:dev",
      "    target: {nodeSelector: {fairbench.dev/role: gpu}}\n    agents: {nodeSelector: {fairbench.dev/role: load}}\n");
  for (const std::string run : {"ghost-node", "no-match"}) {
    ASSERT_TRUE(Eventually([&] { return Ended(run); }, 60s)) << run << ": phase " << Phase(run) << "\n" << Logs();
    EXPECT_EQ(Phase(run), "Failed");
    ASSERT_TRUE(Eventually([&] { return !Events(run, "PlacementFailed").empty(); }, 20s)) << run << "\n" << Logs();
    const json c = Condition(run, "Placed");
    ASSERT_TRUE(c.is_object()) << run << ": " << Get("br/" + run).dump(1);
    EXPECT_EQ(c["status"], "False");
    EXPECT_EQ(c["reason"], "PlacementFailed");
    const json ev = Events(run, "PlacementFailed")[0];
    EXPECT_EQ(ev["type"], "Warning");
    if (run == "ghost-node") {
      EXPECT_EQ(c["message"], "spec.placement.target.nodeName: node \"node-missing\" does not exist");
      EXPECT_NE(ev["message"].get<std::string>().find("node \"node-missing\" does not exist"), std::string::npos)
          << ev.dump();
    } else {
      EXPECT_NE(c["message"].get<std::string>().find("spec.placement.target.nodeSelector: no node matches"),
                std::string::npos)
          << c.dump();
    }
  }
  // kubectl describe shows the cause too.
  EXPECT_NE(Ok({"describe", "br", "ghost-node"}).find("PlacementFailed"), std::string::npos);
}

// Catches: an agents' selector that matches only the target's node (agents
// never share it) ending as AgentsUnavailable on the cell alone: the run
// must carry the picker's message as a condition and a Warning Event. Also
// catches the stage Events (SlotTaken, TargetScheduled, TargetReady) and the
// target's node in status.nodes going missing.
TEST_F(OperatorBadInputTest, AgentSelectorMatchingOnlyTheTargetNodeIsAConditionAndAnEvent) {
  Cluster(true, /*all_namespaces=*/true);
  Nodes();
  Controller(controller_kubeconfig_);
  ApplyRun("agents-nowhere", "example.org/fairbench/target:dev",
           "    target: {nodeSelector: {fairbench.dev/role: target}}\n"
           "    agents: {nodeSelector: {fairbench.dev/role: target}}\n");
  ASSERT_TRUE(Eventually([&] { return Ended("agents-nowhere"); }, 90s)) << Phase("agents-nowhere") << "\n" << Logs();
  EXPECT_EQ(Phase("agents-nowhere"), "Failed");
  ASSERT_TRUE(Eventually([&] { return !Events("agents-nowhere", "PlacementFailed").empty(); }, 20s)) << Logs();
  const json c = Condition("agents-nowhere", "Placed");
  ASSERT_TRUE(c.is_object()) << Get("br/agents-nowhere").dump(1);
  EXPECT_EQ(c["reason"], "PlacementFailed");
  EXPECT_NE(c["message"].get<std::string>().find("spec.placement.agents.nodeSelector"), std::string::npos) << c.dump();
  EXPECT_NE(c["message"].get<std::string>().find("node-target"), std::string::npos) << c.dump();
  // The stages before the failure left their Events.
  ASSERT_FALSE(Events("agents-nowhere", "SlotTaken").empty()) << Logs();
  EXPECT_EQ(Events("agents-nowhere", "SlotTaken")[0]["message"], "load slot taken for target alpha");
  ASSERT_FALSE(Events("agents-nowhere", "TargetScheduled").empty()) << Logs();
  EXPECT_EQ(Events("agents-nowhere", "TargetScheduled")[0]["message"], "target alpha scheduled on node node-target");
  EXPECT_FALSE(Events("agents-nowhere", "TargetReady").empty()) << Logs();
  // Where the target ran is in status; no agent node was found.
  EXPECT_EQ(Get("br/agents-nowhere")["status"]["nodes"], (json{{"target", "node-target"}}))
      << Get("br/agents-nowhere")["status"].dump(1);
}

// Catches: a target image the kubelet cannot pull leaving the run waiting
// with a message that does not say why: the failed cell and the Warning
// Event must name the kubelet's reason (ErrImagePull) and its message.
TEST_F(OperatorBadInputTest, AnImageTheKubeletCannotPullIsNamed) {
  Cluster(true, /*all_namespaces=*/true);
  Nodes();
  Controller(controller_kubeconfig_);
  ApplyRun("bad-image", "example.org/fairbench/no-such-image:1",
           "    target: {nodeSelector: {fairbench.dev/role: target}}\n"
           "    agents: {nodeSelector: {fairbench.dev/role: load}}\n",
           "    readiness: {timeout: 4s}\n");
  ASSERT_TRUE(Eventually([&] { return Ended("bad-image"); }, 60s)) << Phase("bad-image") << "\n" << Logs();
  EXPECT_EQ(Phase("bad-image"), "Failed");
  const json br = Get("br/bad-image");
  ASSERT_EQ(br["status"]["results"].size(), 1u) << br["status"].dump(1);
  const json& cell = br["status"]["results"][0];
  EXPECT_EQ(cell["reason"], "NotReady");
  const std::string message = cell.value("message", "");
  EXPECT_NE(message.find("ErrImagePull"), std::string::npos) << message;
  EXPECT_NE(message.find("no-such-image"), std::string::npos) << message;
  ASSERT_TRUE(Eventually([&] { return !Events("bad-image", "TargetNotReady").empty(); }, 20s)) << Logs();
  const json ev = Events("bad-image", "TargetNotReady")[0];
  EXPECT_EQ(ev["type"], "Warning");
  EXPECT_NE(ev["message"].get<std::string>().find("ErrImagePull"), std::string::npos) << ev.dump();
}

// Catches: a Secret without data.token making the controller exit (a crash
// loop with the reason only in its log): it must keep running and fail the
// run with a condition and a Warning Event naming the Secret; and a token
// put in the Secret later ignored until a restart.
TEST_F(OperatorBadInputTest, ASecretWithoutTokenFailsTheRunNotTheController) {
  Cluster(true, /*all_namespaces=*/true);
  Nodes();
  std::ofstream(root_ / "secret.yaml") << "apiVersion: v1\nkind: Secret\nmetadata: {name: fairbench-agent-token}\n"
                                          "type: Opaque\nstringData: {other: x}\n";
  Ok({"apply", "-f", (root_ / "secret.yaml").string()});
  Controller(controller_kubeconfig_);
  ApplyRun("no-token", "example.org/fairbench/target:dev",
           "    target: {nodeSelector: {fairbench.dev/role: target}}\n"
           "    agents: {nodeSelector: {fairbench.dev/role: load}}\n");
  ASSERT_TRUE(Eventually([&] { return Ended("no-token"); }, 60s)) << Phase("no-token") << "\n" << Logs();
  EXPECT_EQ(Phase("no-token"), "Failed");
  const json c = Condition("no-token", "Failed");
  ASSERT_TRUE(c.is_object()) << Get("br/no-token").dump(1);
  EXPECT_EQ(c["reason"], "AgentTokenMissing");
  EXPECT_NE(c["message"].get<std::string>().find("Secret default/fairbench-agent-token has no data.token"),
            std::string::npos)
      << c.dump();
  ASSERT_TRUE(Eventually([&] { return !Events("no-token", "AgentTokenMissing").empty(); }, 20s)) << Logs();
  EXPECT_EQ(Events("no-token", "AgentTokenMissing")[0]["type"], "Warning");
  EXPECT_TRUE(processes_.at("controller").running()) << Log("controller");
  // The operator puts a token in the Secret: the next run uses it, with no
  // restart of the controller.
  std::ofstream(root_ / "secret.yaml") << "apiVersion: v1\nkind: Secret\nmetadata: {name: fairbench-agent-token}\n"
                                          "type: Opaque\nstringData: {other: x, token: now-there-is-one}\n";
  Ok({"apply", "-f", (root_ / "secret.yaml").string()});
  ApplyRun("with-token", "example.org/fairbench/target:dev",
           "    target: {nodeSelector: {fairbench.dev/role: target}}\n"
           "    agents: {nodeSelector: {fairbench.dev/role: load}}\n");
  ASSERT_TRUE(Eventually([&] { return Ended("with-token"); }, 90s)) << Phase("with-token") << "\n" << Logs();
  EXPECT_EQ(Phase("with-token"), "Succeeded") << Get("br/with-token")["status"].dump(1) << Logs();
}

// Catches: a controller that gives up (exits, a crash loop) when the API
// server cannot be reached at start, even after half a minute: it must say
// so in one line per attempt, back off, and go on once the server answers.
TEST_F(OperatorBadInputTest, AnUnreachableApiServerIsWaitedFor) {
  Cluster(true, /*all_namespaces=*/true);
  // The controller reaches kube-apiserver through a proxy that refuses
  // every connection at first: the API server's address answers nothing.
  const std::string server = cluster_->server();
  auto proxy = testing::TcpProxy::Start(std::stoi(server.substr(server.rfind(':') + 1)));
  ASSERT_TRUE(proxy.ok()) << proxy.status().ToString();
  (*proxy)->SetRefusing(true);
  const std::string early = (root_ / "early-kubeconfig").string();
  std::string text = ReadFile(controller_kubeconfig_);
  const size_t at = text.find(server);
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, server.size(), "https://127.0.0.1:" + std::to_string((*proxy)->port()));
  std::ofstream(early) << text;
  Controller(early);
  ASSERT_TRUE(
      Eventually([&] { return Log("controller").find("cannot reach the API server") != std::string::npos; }, 10s))
      << Log("controller");
  // Longer than the 30 one-second attempts the controller once made before
  // exiting.
  std::this_thread::sleep_for(32s);
  ASSERT_TRUE(processes_.at("controller").running()) << Log("controller");
  EXPECT_NE(Log("controller").find("retrying in"), std::string::npos) << Log("controller");
  (*proxy)->SetRefusing(false);
  Nodes();
  ApplyRun("late", "example.org/fairbench/target:dev",
           "    target: {nodeSelector: {fairbench.dev/role: target}}\n"
           "    agents: {nodeSelector: {fairbench.dev/role: load}}\n");
  // The backoff is capped at 30 s.
  EXPECT_TRUE(Eventually([&] { return !Phase("late").empty(); }, 60s)) << Logs();
  EXPECT_TRUE(processes_.at("controller").running()) << Log("controller");
  processes_.erase("controller");  // before the proxy it talks through
}

// Catches: a missing CRD that blocks the elector's thread until leadership
// is lost (the controller exits: a crash loop) or leaves the reconciler
// never started: one clear line, retries, and runs reconciled once the CRD
// is installed.
TEST_F(OperatorBadInputTest, AMissingCrdIsNamedAndWaitedFor) {
  Cluster(/*crd=*/false, /*all_namespaces=*/true);
  Nodes();
  Controller(controller_kubeconfig_);
  ASSERT_TRUE(Eventually(
      [&] {
        return Log("controller").find("the BenchmarkRun CRD is not installed (kubectl apply -k manifests/)") !=
               std::string::npos;
      },
      30s))
      << Log("controller");
  // Past the lease's renew deadline (10 s): still leading, still running.
  std::this_thread::sleep_for(12s);
  ASSERT_TRUE(processes_.at("controller").running()) << Log("controller");
  EXPECT_EQ(Log("controller").find("lost the leadership"), std::string::npos) << Log("controller");
  InstallCrd();
  ApplyRun("after-crd", "example.org/fairbench/target:dev",
           "    target: {nodeSelector: {fairbench.dev/role: target}}\n"
           "    agents: {nodeSelector: {fairbench.dev/role: load}}\n");
  EXPECT_TRUE(Eventually([&] { return !Phase("after-crd").empty(); }, 60s)) << Logs();
}

}  // namespace
}  // namespace fairbench::operator_test
