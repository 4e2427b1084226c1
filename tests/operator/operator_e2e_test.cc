// The operator end to end on one machine, driven the way a user drives it:
// the test API server with the product CRD, three test kubelets (a target
// node and two load nodes, each on its own CPUs), two fairbench-controller
// processes (leader election) and real kubectl. The pods are real
// processes: the reference targets and fairbench-agent. The tests read what
// a user reads (kubectl get/describe, fairbench fetch) and what the targets
// themselves logged.
#include <algorithm>
#include <set>

#include "tests/operator/cluster_test.h"

namespace fairbench::operator_test {
namespace {

// One 100 ms bucket of a target's --request-log.
struct Bucket {
  double start = 0;  // seconds since the epoch
  uint64_t count = 0;
};

std::vector<Bucket> RequestLog(const fs::path& p) {
  std::vector<Bucket> out;
  std::ifstream in(p);
  std::string a;
  uint64_t b = 0;
  while (in >> a >> b) {
    if (a == "total") continue;
    out.push_back({std::stod(a) / 1000.0, b});
  }
  return out;
}

class OperatorE2eTest : public ClusterTest {
 protected:
  void SetUp() override {
    Prepare("fairbench-operator");
    ApiServer();
    // The target node on CPU 0, the load nodes on CPU 1 (a 2-CPU machine).
    Kubelet("node-target", "0", "fairbench.dev/role=target", "127.0.10");
    Kubelet("node-load-1", "1", "fairbench.dev/role=load", "127.0.11");
    Kubelet("node-load-2", "1", "fairbench.dev/role=load", "127.0.12");
    ASSERT_TRUE(Eventually([&] { return Run({"get", "nodes"}).out.find("node-load-2") != std::string::npos; }, 20s))
        << Run({"get", "nodes"}).err;
    Controller("ctl-1");
    Controller("ctl-2");
  }
  void TearDown() override {
    // Controllers first: they would otherwise see their API server go.
    for (const char* c : {"ctl-1", "ctl-2", "other-1"}) processes_.erase(c);
  }

  // One controller of an installation: `ns` is the namespace it watches
  // and puts its pods, Secret and leader Lease in; every installation
  // shares the load-slot Lease in "default". Short leases, so that a
  // standby takes over in seconds.
  void Controller(const std::string& id, const std::string& ns = "default", int agent_port = 0,
                  const std::string& election = "fairbench-controller") {
    const std::string agent = "127.0.0.1:" + std::to_string(agent_port != 0 ? agent_port : agent_port_);
    Start(id, {testing::BinaryPath("fairbench-controller"), "--kubeconfig", kubeconfig_, "--identity", id,
               "--namespace", ns, "--pod-namespace", ns, "--leader-election-id", election, "--agent-listen", agent,
               "--agent-address", agent, "--agent-image", "example.org/fairbench/agent:dev", "--nofile-helper-path",
               testing::BinaryPath("fairbench-nofile"), "--agent-timeout", "60s", "--leader-lease-duration", "4s",
               "--leader-renew-deadline", "3s", "--leader-retry-period", "500ms"});
  }
  bool Finishes(const std::string& run, const std::string& ns = "default", std::chrono::seconds timeout = 120s) {
    return Eventually(
        [&] {
          const std::string p = Phase(run, ns);
          return p == "Succeeded" || p == "Failed" || p == "Cancelled";
        },
        timeout);
  }
  // The identity holding the leader Lease.
  std::string Leader(const std::string& ns = "default") {
    return Run({"get", "lease", "fairbench-controller", "-n", ns, "-o", "jsonpath={.spec.holderIdentity}"}).out;
  }
  std::string Target(const std::string& name, const std::string& server, const std::string& memory = "256Mi") {
    // A port of its own: the pods share this machine's loopback, where a
    // real cluster gives each pod a network namespace.
    return "  - name: " + name + "\n    image: example.org/fairbench/target:dev\n    port: " + std::to_string(FreePort()) +
           "\n    command: [" + testing::BinaryPath("fairbench-target-" + server) +
           ", --host, 0.0.0.0, --port, \"{port}\", --threads, \"1\", --request-log, " + (root_ / (name + ".requests")).string() +
           "]\n    resources: {cpu: \"1\", memory: " + memory + "}\n"
           // Below this machine's hard limit (20,000), which the helper cannot raise here.
           "    nofile: 8192\n";
  }
  void ApplyRun(const std::string& name, const std::string& targets, const std::string& duration = "1s",
                const std::string& ns = "default", const std::string& connections = "[8]", int agents = 2,
                const std::string& load_role = "load") {
    const std::string text = "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: " + name +
                             ", namespace: " + ns + "}\nspec:\n  targets:\n" + targets +
                             "  scenarios:\n  - name: hello\n    request: {path: /}\n"
                             "    expect: {status: 200, body: \"Hello, World!\"}\n"
                             "  load: {threads: 1, connections: " + connections + ", warmup: 300ms, duration: " + duration +
                             ", timeout: 1s, agents: " + std::to_string(agents) + "}\n"
                             "  cooldown: 200ms\n"
                             "  placement:\n"
                             "    target: {nodeSelector: {fairbench.dev/role: target}}\n"
                             "    agents: {nodeSelector: {fairbench.dev/role: " + load_role + "}}\n";
    const fs::path file = root_ / (name + ".yaml");
    std::ofstream(file) << text;
    Ok({"apply", "-f", file.string()});
  }
};

// Catches: nothing reconciling a BenchmarkRun; pods not pinned (a target on
// a load node, an agent on the target node); two targets under load at the
// same time; status or events missing; `fairbench fetch` disagreeing with
// the stored record.
TEST_F(OperatorE2eTest, ARunGoesFromApplyToSucceededOneTargetAtATime) {
  ApplyRun("duo", Target("alpha", "httplib") + Target("beta", "beast"));
  ASSERT_TRUE(Eventually([&] { return Phase("duo") == "Succeeded" || Phase("duo") == "Failed"; }, 120s))
      << "phase " << Phase("duo") << "\n" << Logs();
  const json run = Get("br/duo");
  ASSERT_EQ(run["status"]["phase"], "Succeeded") << run["status"].dump(1) << Logs();
  EXPECT_EQ(run["status"]["completedCells"], 2);
  EXPECT_EQ(run["status"]["totalCells"], 2);
  struct Window {
    std::string target;
    double from, to;
  };
  std::vector<Window> windows;
  for (const json& r : run["status"]["results"]) {
    EXPECT_EQ(r["state"], "Succeeded") << r.dump();
    EXPECT_GT(r["requests"].get<uint64_t>(), 100u) << r.dump();
  }
  // Each target logged its own requests: none of alpha's fall in beta's
  // busy time and the other way round (the load slot held one at a time).
  const auto alpha = RequestLog(root_ / "alpha.requests");
  const auto beta = RequestLog(root_ / "beta.requests");
  ASSERT_FALSE(alpha.empty());
  ASSERT_FALSE(beta.empty());
  const double alpha_end = alpha.back().start + 0.1;
  const double beta_start = beta.front().start;
  EXPECT_LE(alpha_end, beta_start + 0.05) << "alpha still served requests after beta's load began";
  // The numbers the targets counted bound what the agents reported.
  uint64_t alpha_served = 0;
  for (const Bucket& b : alpha) alpha_served += b.count;
  EXPECT_GE(alpha_served, run["status"]["results"][0]["requests"].get<uint64_t>());
  // kubectl shows the phase and the events.
  EXPECT_NE(Ok({"get", "br", "duo"}).find("Succeeded"), std::string::npos);
  const std::string described = Ok({"describe", "br", "duo"});
  EXPECT_NE(described.find("CellFinished"), std::string::npos) << described;
  EXPECT_NE(described.find("RunSucceeded"), std::string::npos) << described;
  // fairbench fetch writes the record the cluster holds.
  const fs::path fetched = root_ / "fetched";
  auto fetch = kube::RunCommand(testing::BinaryPath("fairbench"),
                                {"fetch", "duo", "--kubeconfig", kubeconfig_, "--output", fetched.string()}, {}, 60s);
  ASSERT_TRUE(fetch.ok());
  ASSERT_EQ(fetch->exit_code, 0) << fetch->err;
  const json record = json::parse(ReadFile(fetched / "results.json"), nullptr, false);
  ASSERT_FALSE(record.is_discarded());
  ASSERT_EQ(record["cells"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(record["cells"][i]["result"]["requests"], run["status"]["results"][i]["requests"]);
  }
  EXPECT_TRUE(fs::exists(fetched / "report.md"));
  // The agents ran on the load nodes, one on each, never on the target's
  // (the record says where), and are gone once the run is over.
  bool placed = false;
  for (const json& note : record["environment"]["notes"]) {
    placed |= note.get<std::string>().find("target on node node-target, 2 agent(s) on node(s) node-load-1, node-load-2") !=
              std::string::npos;
  }
  EXPECT_TRUE(placed) << record["environment"].dump(1);
  EXPECT_TRUE(Eventually([&] { return Get("pods")["items"].empty(); }, 20s)) << Get("pods").dump(1);
  // The target pods are gone; nothing else of the run's is left but its agents and record.
  EXPECT_TRUE(Eventually([&] { return Run({"get", "pod", "duo-alpha"}).exit_code != 0; }, 10s));
}


// The last moment (seconds since the epoch) at which a target's request
// log shows it serving, or 0.
double LastServed(const fs::path& log) {
  double last = 0;
  for (const Bucket& b : RequestLog(log)) {
    if (b.count > 0) last = std::max(last, b.start + 0.1);
  }
  return last;
}

double Now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

// Catches: a deleted run left loading (the load must stop within a second),
// its pods or ConfigMaps left behind, the deletion hanging on the finalizer.
TEST_F(OperatorE2eTest, DeletingARunMidCellStopsItsLoadAndLeavesNothing) {
  ApplyRun("doomed", Target("alpha", "httplib"), "30s");
  ASSERT_TRUE(Eventually([&] { return LastServed(root_ / "alpha.requests") > Now() - 0.5; }, 60s))
      << "the load never started\n" << Logs();
  const double deleted_at = Now();
  Ok({"delete", "br", "doomed", "--wait=false"});
  ASSERT_TRUE(Eventually([&] { return Run({"get", "br", "doomed"}).exit_code != 0; }, 30s)) << Logs();
  std::this_thread::sleep_for(500ms);  // the target's last 100 ms bucket is written
  EXPECT_LT(LastServed(root_ / "alpha.requests"), deleted_at + 1.0) << "load went on after the run was deleted";
  EXPECT_TRUE(Eventually([&] { return Get("pods")["items"].empty(); }, 30s)) << Get("pods").dump(1);
  EXPECT_TRUE(Get("configmaps")["items"].empty() ||
              Run({"get", "configmaps", "-l", "fairbench.dev/run=doomed", "-o", "name"}).out.empty());
}

// Catches: a standby that does not take over, or that loses or repeats a
// cell the dead leader finished (the record in the ConfigMaps is the truth).
TEST_F(OperatorE2eTest, WhenTheLeaderDiesTheStandbyResumesKeepingFinishedCells) {
  ApplyRun("resumed", Target("alpha", "httplib") + Target("beta", "beast"), "1s", "default", "[8, 16]");
  json before;
  ASSERT_TRUE(Eventually(
      [&] {
        before = Get("br/resumed");
        const json::json_pointer completed("/status/completedCells");
        return before.contains(completed) && before.at(completed).is_number() && before.at(completed).get<int>() >= 1;
      },
      90s))
      << Logs();
  const std::string leader = Leader();
  ASSERT_TRUE(leader == "ctl-1" || leader == "ctl-2") << leader;
  const std::string standby = leader == "ctl-1" ? "ctl-2" : "ctl-1";
  const json finished = before["status"]["results"];
  processes_.erase(leader);  // SIGKILL, as a node failure would
  ASSERT_TRUE(Finishes("resumed", "default", 150s)) << Phase("resumed") << "\n" << Logs();
  EXPECT_EQ(Leader(), standby);
  const json run = Get("br/resumed");
  ASSERT_EQ(run["status"]["phase"], "Succeeded") << run["status"].dump(1) << Logs();
  ASSERT_EQ(run["status"]["results"].size(), 4u);
  // Every cell finished before the failover is there unchanged: not lost,
  // not measured again.
  for (const json& old : finished) {
    bool kept = false;
    for (const json& now : run["status"]["results"]) {
      if (now["target"] == old["target"] && now["connections"] == old["connections"]) {
        EXPECT_EQ(now["requests"], old["requests"]) << "cell measured again: " << now.dump();
        EXPECT_EQ(now["startTime"], old["startTime"]);
        kept = true;
      }
    }
    EXPECT_TRUE(kept) << "lost: " << old.dump();
  }
  EXPECT_NE(ReadFile(root_ / (standby + ".log")).find("resuming:"), std::string::npos) << Logs();
}

// Catches: the load slot not shared between installations (two targets
// under load at once): two installations, each leading in its own
// namespace, run at the same time and still load one target at a time.
TEST_F(OperatorE2eTest, TwoInstallationsShareTheLoadSlot) {
  std::ofstream(root_ / "other.yaml") << "apiVersion: v1\nkind: Namespace\nmetadata: {name: other}\n";
  Ok({"apply", "-f", (root_ / "other.yaml").string()});
  // The other installation's agents get a load node of their own; the
  // target node (one CPU: one target pod at a time fits) is shared.
  Kubelet("node-load-3", "1", "fairbench.dev/role=load-other", "127.0.13");
  Controller("other-1", "other", FreePort());
  ApplyRun("mine", Target("alpha", "httplib"), "2s");
  ApplyRun("theirs", Target("beta", "beast"), "2s", "other", "[8]", 1, "load-other");
  ASSERT_TRUE(Finishes("mine")) << Logs();
  ASSERT_TRUE(Finishes("theirs", "other")) << Logs();
  EXPECT_EQ(Phase("mine"), "Succeeded") << Logs();
  EXPECT_EQ(Phase("theirs", "other"), "Succeeded") << Logs();
  const auto alpha = RequestLog(root_ / "alpha.requests");
  const auto beta = RequestLog(root_ / "beta.requests");
  ASSERT_FALSE(alpha.empty());
  ASSERT_FALSE(beta.empty());
  // The two targets' busy spans do not overlap.
  const double alpha_from = alpha.front().start, alpha_to = alpha.back().start + 0.1;
  const double beta_from = beta.front().start, beta_to = beta.back().start + 0.1;
  EXPECT_TRUE(alpha_to <= beta_from + 0.05 || beta_to <= alpha_from + 0.05)
      << std::fixed << "alpha " << alpha_from << ".." << alpha_to << ", beta " << beta_from << ".." << beta_to;
}

}  // namespace
}  // namespace fairbench::operator_test
