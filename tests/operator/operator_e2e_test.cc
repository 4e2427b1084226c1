// The operator end to end on one machine, driven the way a user drives it:
// Kubernetes' own control plane with the product CRD, three test kubelets (a target
// node and two load nodes, each on its own CPUs), two fairbench-controller
// processes (leader election) and real kubectl. The pods are real
// processes: the reference targets and fairbench-agent. The tests read what
// a user reads (kubectl get/describe, fairbench fetch) and what the targets
// themselves logged.
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <iostream>
#include <regex>
#include <set>

#include "common/cpu_view.h"
#include "controller/results/result_store.h"
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
    Cluster();
    // The target node on CPU 0, the load nodes on CPU 1 (a 2-CPU machine).
    Kubelet("node-target", "0", "fairbench.dev/role=target", "127.0.10");
    Kubelet("node-load-1", "1", "fairbench.dev/role=load", "127.0.11");
    Kubelet("node-load-2", "1", "fairbench.dev/role=load", "127.0.12");
    ASSERT_TRUE(Eventually(
        [&] {
          return Run({"get", "nodes"}).out.find("node-load-2") != std::string::npos;
        },
        20s))
        << Run({"get", "nodes"}).err;
    Controller("ctl-1");
    Controller("ctl-2");
  }
  void TearDown() override {
    // Controllers first: they would otherwise see their API server go.
    for (const char* c : {"ctl-1", "ctl-2", "other-1"}) processes_.erase(c);
    RecordControllerApiUsage();
  }

  // One controller of an installation: `ns` is the namespace it watches
  // and puts its pods, Secret and leader Lease in; every installation
  // shares the load-slot Lease in "default". Short leases, so that a
  // standby takes over in seconds.
  void Controller(const std::string& id, const std::string& ns = "default", int agent_port = 0,
                  const std::string& election = "fairbench-controller") {
    const std::string agent = "127.0.0.1:" + std::to_string(agent_port != 0 ? agent_port : agent_port_);
    // On Kubernetes, each installation's controllers are its chart's
    // ServiceAccount.
    if (!installations_.count(ns)) installations_[ns] = ns == "default" ? controller_kubeconfig_ : Installation(ns);
    const std::string kubeconfig = installations_[ns];
    std::vector<std::string> argv;
    if (!controller_cpus_.empty()) argv = {"taskset", "-c", controller_cpus_};
    argv.insert(argv.end(), {testing::BinaryPath("fairbench-controller"),
                             "--kubeconfig",
                             kubeconfig,
                             "--identity",
                             id,
                             "--namespace",
                             ns,
                             "--pod-namespace",
                             ns,
                             "--leader-election-id",
                             election,
                             "--agent-listen",
                             agent,
                             "--agent-address",
                             agent,
                             "--agent-image",
                             "example.org/fairbench/agent:dev",
                             "--nofile-helper-path",
                             testing::BinaryPath("fairbench-nofile"),
                             "--agent-timeout",
                             "60s",
                             "--leader-lease-duration",
                             "4s",
                             "--leader-renew-deadline",
                             "3s",
                             "--leader-retry-period",
                             "500ms"});
    if (!result_store_.empty()) argv.insert(argv.end(), {"--result-store", result_store_});
    Start(id, std::move(argv));
  }
  // The controllers' --result-store; empty: none.
  std::string result_store_;
  // The CPUs the controllers run on (taskset -c); empty: every CPU.
  std::string controller_cpus_;
  std::map<std::string, std::string> installations_;  // namespace → its controllers' kubeconfig
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
    return "  - name: " + name +
           "\n    image: example.org/fairbench/target:dev\n    port: " + std::to_string(FreePort()) +
           "\n    command: [" + testing::BinaryPath("fairbench-target-" + server) +
           ", --host, 0.0.0.0, --port, \"{port}\", --threads, \"1\", --request-log, " +
           (root_ / (name + ".requests")).string() + "]\n    resources: {cpu: \"1\", memory: " + memory +
           "}\n"
           // Below this machine's hard limit (20,000), which the helper cannot raise here.
           "    nofile: 8192\n";
  }
  void ApplyRun(const std::string& name, const std::string& targets, const std::string& duration = "1s",
                const std::string& ns = "default", const std::string& connections = "[8]", int agents = 2,
                const std::string& load_role = "load") {
    Apply(name, RunText(name, targets, duration, ns, connections, agents, load_role));
  }
  // `text` written to NAME.yaml and applied.
  void Apply(const std::string& name, const std::string& text) {
    const fs::path file = root_ / (name + ".yaml");
    std::ofstream(file) << text;
    Ok({"apply", "-f", file.string()});
  }
  static std::string RunText(const std::string& name, const std::string& targets, const std::string& duration = "1s",
                             const std::string& ns = "default", const std::string& connections = "[8]", int agents = 2,
                             const std::string& load_role = "load") {
    return "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: " + name + ", namespace: " + ns +
           "}\nspec:\n  targets:\n" + targets +
           "  scenarios:\n  - name: hello\n    request: {path: /}\n"
           "    expect: {status: 200, body: \"Hello, World!\"}\n"
           "  load: {threads: 1, connections: " +
           connections + ", warmup: 300ms, duration: " + duration + ", timeout: 1s, agents: " + std::to_string(agents) +
           "}\n"
           "  cooldown: 200ms\n"
           "  placement:\n"
           "    target: {nodeSelector: {fairbench.dev/role: target}}\n"
           "    agents: {nodeSelector: {fairbench.dev/role: " +
           load_role + "}}\n";
  }
};

// Catches: nothing reconciling a BenchmarkRun; pods not pinned (a target on
// a load node, an agent on the target node); two targets under load at the
// same time (two runs applied at once included); status or events missing;
// `fairbench fetch` disagreeing with the stored record; the nofile limit in
// force not read back into the record; cells whose target CPU rests on too
// few kubelet samples not flagged.
TEST_F(OperatorE2eTest, TwoRunsAppliedAtOnceSucceedOneTargetAtATime) {
  Apply("both", RunText("duo", Target("alpha", "cpp-httplib-debian") + Target("beta", "beast")) + "---\n" +
                    RunText("solo", Target("gamma", "cpp-httplib-debian")));
  for (const std::string name : {"duo", "solo"}) {
    ASSERT_TRUE(Finishes(name)) << name << ": phase " << Phase(name) << "\n" << Logs();
  }
  const json run = Get("br/duo");
  ASSERT_EQ(run["status"]["phase"], "Succeeded") << run["status"].dump(1) << Logs();
  ASSERT_EQ(Phase("solo"), "Succeeded") << Get("br/solo")["status"].dump(1) << Logs();
  EXPECT_EQ(run["status"]["completedCells"], 2);
  EXPECT_EQ(run["status"]["totalCells"], 2);
  for (const json& r : run["status"]["results"]) {
    EXPECT_EQ(r["state"], "Succeeded") << r.dump();
    EXPECT_GT(r["requests"].get<uint64_t>(), 100u) << r.dump();
  }
  // Each target logged its own requests: the busy spans of the three never
  // overlap (the load slot held one at a time, across both runs).
  struct Span {
    std::string target;
    double from, to;
  };
  std::vector<Span> spans;
  for (const std::string t : {"alpha", "beta", "gamma"}) {
    const auto log = RequestLog(root_ / (t + ".requests"));
    ASSERT_FALSE(log.empty()) << t;
    spans.push_back({t, log.front().start, log.back().start + 0.1});
  }
  for (size_t i = 0; i < spans.size(); ++i) {
    for (size_t j = i + 1; j < spans.size(); ++j) {
      const Span& a = spans[i];
      const Span& b = spans[j];
      EXPECT_TRUE(a.to <= b.from + 0.05 || b.to <= a.from + 0.05)
          << std::fixed << a.target << " " << a.from << ".." << a.to << " overlaps " << b.target << " " << b.from
          << ".." << b.to;
    }
  }
  // The numbers the targets counted bound what the agents reported.
  uint64_t alpha_served = 0;
  for (const Bucket& b : RequestLog(root_ / "alpha.requests")) alpha_served += b.count;
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
    // 1 s cells against a kubelet that refreshes its figures every 10 s
    // (a real kubelet's default): the target's CPU and memory are rough.
    EXPECT_NE(std::find(record["cells"][i]["flags"].begin(), record["cells"][i]["flags"].end(), "SparseUsage"),
              record["cells"][i]["flags"].end())
        << record["cells"][i]["flags"].dump();
    EXPECT_LT(record["cells"][i]["usageSamples"].get<int>(), 2) << record["cells"][i].dump().substr(0, 400);
  }
  EXPECT_TRUE(fs::exists(fetched / "report.md"));
  EXPECT_NE(ReadFile(fetched / "report.md").find("SparseUsage"), std::string::npos);
  // The agents ran on the load nodes, one on each, never on the target's
  // (the record says where), and are gone once the run is over. The file
  // limit each target ran with was read back from its pod.
  bool placed = false;
  int nofile_read_back = 0;
  for (const json& note : record["environment"]["notes"]) {
    const std::string n = note.get<std::string>();
    placed |= n.find("target on node node-target, 2 agent(s) on node(s) node-load-1, node-load-2") != std::string::npos;
    nofile_read_back +=
        n.find(": nofile in force: 8192, read back in the pod by fairbench-nofile") != std::string::npos;
  }
  EXPECT_TRUE(placed) << record["environment"].dump(1);
  EXPECT_EQ(nofile_read_back, 2) << record["environment"].dump(1);
  EXPECT_TRUE(Eventually([&] { return Get("pods")["items"].empty(); }, 20s)) << Get("pods").dump(1);
  EXPECT_TRUE(Eventually([&] { return Run({"get", "pod", "duo-alpha"}).exit_code != 0; }, 10s));
}

// A scenario whose requests come from a wrk script in a ConfigMap, on two
// agents on the load nodes: the controller reads the ConfigMap, checks the
// endpoint with the script's first request (made by an agent), every agent
// runs the script and its done(), whose output the record keeps per agent.
// Catches: configMapRef not read (agents sent nothing to run), the script
// sent to one agent only, done()'s output lost on the way to the record.
TEST_F(OperatorE2eTest, AScriptFromAConfigMapRunsOnEveryAgent) {
  Apply("scripts",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: scripts}\ndata:\n  users.lua: |\n"
        "    local n = 0\n"
        "    function request() n = n + 1; return wrk.format(nil, \"/users/\" .. n) end\n"
        "    function done(summary) io.write(\"users done: \" .. summary.requests .. \"\\n\") end\n");
  std::string text = RunText("scripted", Target("alpha", "beast"));
  const std::string plain = "    request: {path: /}\n    expect: {status: 200, body: \"Hello, World!\"}\n";
  ASSERT_NE(text.find(plain), std::string::npos);
  text.replace(text.find(plain), plain.size(),
               "    script: {configMapRef: {name: scripts, key: users.lua}}\n"
               "    expect: {status: 200, json: {id: 1, name: User 1}}\n");
  Apply("scripted", text);
  ASSERT_TRUE(Finishes("scripted")) << Phase("scripted") << Logs();
  const json run = Get("br/scripted");
  ASSERT_EQ(run["status"]["phase"], "Succeeded") << run["status"].dump(1) << Logs();
  const fs::path fetched = root_ / "fetched-scripted";
  auto fetch =
      kube::RunCommand(testing::BinaryPath("fairbench"),
                       {"fetch", "scripted", "--kubeconfig", kubeconfig_, "--output", fetched.string()}, {}, 60s);
  ASSERT_TRUE(fetch.ok());
  ASSERT_EQ(fetch->exit_code, 0) << fetch->err;
  const json record = json::parse(ReadFile(fetched / "results.json"), nullptr, false);
  ASSERT_FALSE(record.is_discarded());
  ASSERT_EQ(record["cells"].size(), 1u);
  const json& cell = record["cells"][0];
  ASSERT_EQ(cell["scriptOutput"].size(), 2u) << cell.dump().substr(0, 600);
  uint64_t sum = 0;
  for (const json& o : cell["scriptOutput"]) sum += std::stoull(o["text"].get<std::string>().substr(12));
  EXPECT_EQ(sum, cell["result"]["requests"].get<uint64_t>());
  EXPECT_GT(sum, 50u);
}

// A gRPC run as a cluster user writes it: the descriptor set in a ConfigMap
// (kubectl create configmap --from-file puts the binary file under
// binaryData), the target ready by the kubelet's grpc probe, the call
// checked before the load and counted by status. Catches: binaryData not
// read (the run fails as InvalidSpec), the message not encoded through it
// (the check's reply would not match), the grpc probe not honoured (the
// target never ready), calls not counted against what the target served.
TEST_F(OperatorE2eTest, AGrpcRunWithItsDescriptorSetInAConfigMap) {
  Ok({"create", "configmap", "echo-desc",
      "--from-file=echo.desc=" + std::string(FAIRBENCH_SOURCE_DIR) + "/examples/grpc-echo.desc"});
  ASSERT_TRUE(Get("configmap/echo-desc").contains("binaryData")) << Get("configmap/echo-desc").dump();
  std::string target = Target("echo", "grpc");
  const std::string image_line = "    image: example.org/fairbench/target:dev\n";
  ASSERT_NE(target.find(image_line), std::string::npos);
  target.insert(target.find(image_line) + image_line.size(), "    protocol: grpc\n");
  std::string text = RunText("grpc", target);
  const std::string plain = "    request: {path: /}\n    expect: {status: 200, body: \"Hello, World!\"}\n";
  ASSERT_NE(text.find(plain), std::string::npos);
  text.replace(text.find(plain), plain.size(),
               "    grpc:\n      method: fairbench.echo.v1.Echo/ServerStream\n"
               "      message: {payload: aGk=, messages: 3}\n"
               "      descriptorSetConfigMapRef: {name: echo-desc, key: echo.desc}\n"
               "    expect: {json: {payload: aGk=}}\n");
  text.replace(text.find("threads: 1,"), 11, "threads: 1, streams: 4,");
  Apply("grpc", text);
  ASSERT_TRUE(Finishes("grpc")) << Phase("grpc") << Logs();
  const json run = Get("br/grpc");
  ASSERT_EQ(run["status"]["phase"], "Succeeded") << run["status"].dump(1) << Logs();
  const json& result = run["status"]["results"][0];
  const uint64_t calls = result["requests"].get<uint64_t>();
  EXPECT_GT(calls, 50u) << result.dump();
  ASSERT_EQ(result["grpc"]["statuses"].size(), 1u) << result.dump();
  EXPECT_EQ(result["grpc"]["statuses"][0]["code"], "OK");
  EXPECT_EQ(result["grpc"]["statuses"][0]["calls"].get<uint64_t>(), calls);
  EXPECT_EQ(result["grpc"]["messages"].get<uint64_t>(), 3 * calls);
  // What the target served: at least the measured calls and the check.
  uint64_t served = 0;
  for (const Bucket& b : RequestLog(root_ / "echo.requests")) served += b.count;
  EXPECT_GT(served, calls) << "the target served fewer calls than the cell counted";
}

// Whether this machine lets a kubelet enforce a memory limit (a memory
// cgroup it can create).
bool MemoryLimitsEnforced() {
  for (const std::string base : {"/sys/fs/cgroup/memory", "/sys/fs/cgroup"}) {
    const fs::path probe = fs::path(base) / ("fairbench-probe-" + std::to_string(getpid()));
    std::error_code ec;
    if (!fs::create_directory(probe, ec)) continue;
    const bool memory = fs::exists(probe / "memory.limit_in_bytes") || fs::exists(probe / "memory.max");
    fs::remove(probe, ec);
    if (memory) return true;
  }
  return false;
}

// Catches: a target killed for memory recorded as a plain failure (or not
// at all), or the run stopping there: the cell says OOMKilled, a Warning
// Event says so, and the next target still runs.
TEST_F(OperatorE2eTest, AnOomKilledTargetIsRecordedAndTheRunGoesOn) {
  if (!MemoryLimitsEnforced()) GTEST_SKIP() << "no memory cgroup can be created here: limits are not enforced";
  // Serves, then (5 s in, during its 6 s cell) becomes a process that eats
  // memory without end: its 32 MiB limit must stop it.
  const std::string hungry =
      "  - name: hungry\n    image: example.org/fairbench/target:dev\n    port: " + std::to_string(FreePort()) +
      "\n    command: [sh, -c, '" + testing::BinaryPath("fairbench-target-beast") +
      " --host 0.0.0.0 --port \"$0\" --threads 1 & sleep 5; exec tail /dev/zero', \"{port}\"]\n"
      "    resources: {cpu: \"1\", memory: 32Mi}\n    nofile: 8192\n";
  ApplyRun("hungry", hungry + Target("alpha", "cpp-httplib-debian"), "6s");
  ASSERT_TRUE(Finishes("hungry")) << Logs();
  const json run = Get("br/hungry");
  const json& results = run["status"]["results"];
  ASSERT_EQ(results.size(), 2u) << run["status"].dump(1);
  EXPECT_EQ(results[0]["target"], "hungry");
  EXPECT_EQ(results[0]["state"], "Failed") << results[0].dump();
  EXPECT_EQ(results[0]["reason"], "TargetExited") << results[0].dump();
  EXPECT_NE(results[0]["message"].get<std::string>().find("OOMKilled"), std::string::npos) << results[0].dump();
  EXPECT_EQ(results[1]["target"], "alpha");
  EXPECT_EQ(results[1]["state"], "Succeeded") << results[1].dump();
  EXPECT_NE(Ok({"describe", "br", "hungry"}).find("TargetOOMKilled"), std::string::npos);
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
  ApplyRun("doomed", Target("alpha", "cpp-httplib-debian"), "30s");
  ASSERT_TRUE(Eventually([&] { return LastServed(root_ / "alpha.requests") > Now() - 0.5; }, 60s))
      << "the load never started\n"
      << Logs();
  std::set<std::string> pods;
  const json before = Get("pods");
  for (const json& p : before.value("items", json::array())) pods.insert(p["metadata"]["name"].get<std::string>());
  ASSERT_FALSE(pods.empty()) << Run({"get", "pods", "-n", "default"}).out << Run({"get", "pods", "-n", "default"}).err;
  const double deleted_at = Now();
  Ok({"delete", "br", "doomed", "--wait=false"});
  ASSERT_TRUE(Eventually([&] { return Run({"get", "br", "doomed"}).exit_code != 0; }, 30s)) << Logs();
  std::this_thread::sleep_for(500ms);  // the target's last 100 ms bucket is written
  EXPECT_LT(LastServed(root_ / "alpha.requests"), deleted_at + 1.0) << "load went on after the run was deleted";
  EXPECT_TRUE(Eventually([&] { return Get("pods")["items"].empty(); }, 30s)) << Get("pods").dump(1);
  EXPECT_TRUE(Get("configmaps")["items"].empty() ||
              Run({"get", "configmaps", "-l", "fairbench.dev/run=doomed", "-o", "name"}).out.empty());
  // Who removed each pod, from kube-apiserver's audit log: the first
  // delete of it (or a deletecollection of pods in its namespace) that
  // the server accepted, by the operator (its finalizer's clean-up) or by
  // kube-controller-manager's garbage collector (the pod's ownerReference
  // to the run). A kubelet's own final delete comes after either.
  std::map<std::string, std::string> removed_by;
  std::ifstream audit(audit_log_);
  for (std::string line; std::getline(audit, line);) {
    const json e = json::parse(line, nullptr, false);
    if (e.is_discarded() || e.value("stage", "") != "ResponseComplete") continue;
    const std::string verb = e.value("verb", "");
    if ((verb != "delete" && verb != "deletecollection") ||
        e.value(json::json_pointer("/objectRef/resource"), "") != "pods")
      continue;
    if (e.value(json::json_pointer("/responseStatus/code"), 0) >= 300) continue;
    const std::string who = e.value(json::json_pointer("/user/username"), "");
    const std::string name = e.value(json::json_pointer("/objectRef/name"), "");
    for (const std::string& pod : pods) {
      if ((name == pod || (verb == "deletecollection" && name.empty())) && !removed_by.count(pod))
        removed_by[pod] = who;
    }
  }
  for (const std::string& pod : pods) {
    const std::string who = removed_by.count(pod) ? removed_by[pod] : "nobody";
    std::cout << "pod " << pod << " removed by " << who << "\n";
    EXPECT_TRUE(who == kControllerUser || who == "system:serviceaccount:kube-system:generic-garbage-collector")
        << pod << " removed by " << who;
  }
}

// Catches: a run's pods not owned by the run (no ownerReference to it,
// or one kube-controller-manager's garbage collector cannot follow), so
// that a run that goes without the operator's clean-up — its controllers
// gone, its finalizer removed by hand — leaves its pods running.
TEST_F(OperatorE2eTest, ARunGoneWithoutItsControllersLeavesItsPodsToTheGarbageCollector) {
  ApplyRun("orphaned", Target("alpha", "cpp-httplib-debian"), "30s");
  ASSERT_TRUE(Eventually([&] { return Get("pods")["items"].size() >= 2; }, 60s)) << Logs();
  std::set<std::string> pods;
  for (const json& p : Get("pods").value("items", json::array())) {
    pods.insert(p["metadata"]["name"].get<std::string>());
    bool owned = false;
    for (const json& o : p["metadata"].value("ownerReferences", json::array())) {
      owned |= o.value("kind", "") == "BenchmarkRun" && o.value("name", "") == "orphaned";
    }
    EXPECT_TRUE(owned) << p["metadata"].dump();
  }
  for (const char* c : {"ctl-1", "ctl-2"}) processes_.erase(c);
  Ok({"patch", "br", "orphaned", "--type=merge", "-p", R"({"metadata":{"finalizers":null}})"});
  Ok({"delete", "br", "orphaned", "--wait=false"});
  EXPECT_TRUE(Eventually([&] { return Get("pods")["items"].empty(); }, 60s)) << Get("pods").dump(1);
  // The garbage collector, by its own identity, asked for each deletion.
  std::set<std::string> collected;
  std::ifstream audit(audit_log_);
  for (std::string line; std::getline(audit, line);) {
    const json e = json::parse(line, nullptr, false);
    if (e.is_discarded() || e.value("stage", "") != "ResponseComplete" || e.value("verb", "") != "delete") continue;
    if (e.value(json::json_pointer("/user/username"), "") !=
        "system:serviceaccount:kube-system:generic-garbage-collector")
      continue;
    collected.insert(e.value(json::json_pointer("/objectRef/name"), ""));
  }
  for (const std::string& pod : pods)
    EXPECT_TRUE(collected.count(pod)) << pod << " was not removed by the garbage collector";
}

// Catches: the product CRD deleted while runs still hold their finalizer
// (kube-apiserver deletes a CRD's objects first, and each waits for the
// operator's clean-up), or a clean-up that leaves a pod behind when the
// run goes with its CRD.
TEST_F(OperatorE2eTest, DeletingTheCrdWaitsForTheRunsFinalizers) {
  ApplyRun("held", Target("alpha", "cpp-httplib-debian"), "30s");
  ASSERT_TRUE(Eventually([&] { return LastServed(root_ / "alpha.requests") > Now() - 0.5; }, 60s))
      << "the load never started\n"
      << Logs();
  // With no controller to finish the clean-up, the run stays, terminating,
  // and so does its CRD.
  for (const char* c : {"ctl-1", "ctl-2"}) processes_.erase(c);
  Ok({"delete", "crd", "benchmarkruns.fairbench.dev", "--wait=false"});
  std::this_thread::sleep_for(3s);
  const json crd = Get("crd/benchmarkruns.fairbench.dev");
  ASSERT_TRUE(crd.contains("metadata")) << "the CRD went before its runs' finalizers ran";
  EXPECT_TRUE(crd["metadata"].contains("deletionTimestamp")) << crd.dump(1).substr(0, 2000);
  const json held = Get("br/held");
  ASSERT_TRUE(held.contains("metadata")) << "the run went without its finalizer";
  EXPECT_TRUE(held["metadata"].contains("deletionTimestamp"));
  // A controller again: it cleans up, drops the finalizer, and the CRD goes.
  Controller("ctl-3");
  EXPECT_TRUE(Eventually(
      [&] {
        return Run({"get", "crd", "benchmarkruns.fairbench.dev"}).exit_code != 0;
      },
      60s))
      << Logs();
  EXPECT_TRUE(Eventually([&] { return Get("pods")["items"].empty(); }, 30s)) << Get("pods").dump(1);
  processes_.erase("ctl-3");
}

// Catches: a chart RBAC rule missing for a request the controller makes,
// or one broader than the requests it makes, as kube-apiserver's own RBAC
// authorizer judges them (kubectl auth can-i --as the chart's
// ServiceAccount); the list of requests is the one the operator's tests
// recorded from the audit log (tests/chart/controller-api-usage.json).
TEST_F(OperatorE2eTest, TheChartsRbacAllowsWhatTheControllerAsksAndNoMore) {
  const json listed = json::parse(ReadFile(fs::path(FAIRBENCH_SOURCE_DIR) / "tests/chart/controller-api-usage.json"));
  auto can = [&](std::vector<std::string> args) {
    args.insert(args.begin(), "auth");
    args.insert(args.begin() + 1, "can-i");
    args.insert(args.end(), {"--as", kControllerUser});
    return Run(args).out.rfind("yes", 0) == 0;
  };
  // Names the chart grants some verbs on alone.
  const std::vector<std::string> names = {"", "fairbench-controller", "fairbench-load-slot", "fairbench-agent-token"};
  // Requests across namespaces for a namespaced resource come from a
  // controller watching every namespace (controller.watchAllNamespaces,
  // not this installation's values): the chart then grants a ClusterRole.
  std::set<std::string> cluster_scoped;
  std::istringstream scoped(Ok({"api-resources", "--namespaced=false", "-o", "name"}));
  for (std::string line; std::getline(scoped, line);) cluster_scoped.insert(line);
  int checked = 0;
  for (const json& kind : listed["requests"]) {
    if (kind.contains("nonResourceURL")) {
      EXPECT_TRUE(can({kind["verb"].get<std::string>(), kind["nonResourceURL"].get<std::string>()})) << kind.dump();
      continue;
    }
    std::string resource = kind["resource"].get<std::string>();
    if (!kind["apiGroup"].get<std::string>().empty()) resource += "." + kind["apiGroup"].get<std::string>();
    if (!kind["namespaced"].get<bool>() && !cluster_scoped.count(resource)) continue;
    bool allowed = false;
    for (const std::string& name : names) {
      std::vector<std::string> args = {kind["verb"].get<std::string>(),
                                       name.empty() ? resource : resource + "/" + name};
      if (kind.contains("subresource")) args.push_back("--subresource=" + kind["subresource"].get<std::string>());
      if (kind["namespaced"].get<bool>()) {
        args.insert(args.end(), {"-n", "default"});
      } else {
        args.push_back("--all-namespaces");
      }
      if ((allowed = can(args))) break;
    }
    EXPECT_TRUE(allowed) << "the chart does not grant " << kind.dump();
    ++checked;
  }
  EXPECT_GE(checked, 20);
  // And no more than that.
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"delete", "nodes"},
           {"create", "clusterrolebindings"},
           {"list", "secrets", "-n", "default"},
           {"get", "secrets/someone-elses", "-n", "default"},
           {"create", "pods", "-n", "kube-system"},
           {"patch", "benchmarkruns.fairbench.dev", "-n", "default"},
           {"update", "leases.coordination.k8s.io/kube-scheduler", "-n", "kube-system"}}) {
    std::string shown;
    for (const auto& a : args) shown += " " + a;
    EXPECT_FALSE(can(args)) << "the chart grants" << shown;
  }
}

// Catches: a run's pods not passing kube-apiserver's Pod Security
// admission in a namespace that enforces "restricted", or a refused pod's
// reason lost (the cell, the run's status and an Event must carry the
// server's own message).
TEST_F(OperatorE2eTest, RestrictedPodSecurityRefusesARootTargetWithTheServersMessage) {
  std::ofstream(root_ / "restricted.yaml")
      << "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: restricted\n  labels:\n"
         "    pod-security.kubernetes.io/enforce: restricted\n";
  Ok({"apply", "-f", (root_ / "restricted.yaml").string()});
  Controller("strict-1", "restricted", FreePort());
  ApplyRun("strict",
           Target("alpha", "cpp-httplib-debian") + Target("rooted", "beast") +
               "    securityContext: {runAsNonRoot: false, runAsUser: 0}\n",
           "1s", "restricted");
  ASSERT_TRUE(Finishes("strict", "restricted")) << Logs();
  const json run = Get("br/strict", "restricted");
  ASSERT_EQ(run["status"]["results"].size(), 2u) << run["status"].dump(1) << Logs();
  EXPECT_EQ(run["status"]["results"][0]["state"], "Succeeded") << run["status"].dump(1) << Logs();
  EXPECT_EQ(run["status"]["results"][1]["state"], "Failed") << run["status"].dump(1);
  const std::string why = run["status"]["results"][1].value("message", std::string());
  EXPECT_NE(why.find("violates PodSecurity \"restricted:latest\": runAsNonRoot != true (container \"target\" must "
                     "not set securityContext.runAsNonRoot=false), runAsUser=0 (container \"target\" must not set "
                     "runAsUser=0)"),
            std::string::npos)
      << run["status"].dump(1);
  const std::string told = Ok({"get", "events", "-n", "restricted", "--field-selector", "involvedObject.name=strict"});
  EXPECT_NE(told.find("runAsUser=0"), std::string::npos) << told;
  processes_.erase("strict-1");
}

// Catches: a standby that does not take over, or that loses or repeats a
// cell the dead leader finished (the record in the ConfigMaps is the truth).
TEST_F(OperatorE2eTest, WhenTheLeaderDiesTheStandbyResumesKeepingFinishedCells) {
  ApplyRun("resumed", Target("alpha", "cpp-httplib-debian") + Target("beta", "beast"), "1s", "default", "[8, 16]");
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

// Catches: a controller with a result store that does not store a finished
// run, or does not name its id in status.stored; a store that cannot be
// written losing the run (the next controller must store it: the offer
// comes from the run's phase, not from the end of its execution); the
// stored record differing from what `fairbench fetch` reads from the
// cluster; `fairbench history` not finding it.
TEST_F(OperatorE2eTest, AFinishedRunGoesToTheResultStoreAfterARestartToo) {
  for (const char* c : {"ctl-1", "ctl-2"}) processes_.erase(c);
  const fs::path folder = root_ / "store";
  const std::string db = (folder / "results.db").string();
  result_store_ = db;  // its folder does not exist yet: the store cannot be made
  Controller("ctl-3");
  ApplyRun("kept", Target("alpha", "cpp-httplib-debian"));
  ASSERT_TRUE(Finishes("kept")) << Logs();
  json run;
  ASSERT_TRUE(Eventually(
      [&] {
        run = Get("br/kept");
        return run["status"].contains("stored");
      },
      30s))
      << run["status"].dump(1) << Logs();
  EXPECT_FALSE(run["status"]["stored"].contains("id")) << run["status"]["stored"];
  EXPECT_NE(run["status"]["stored"].value("error", "").find("no directory " + folder.string()), std::string::npos)
      << run["status"]["stored"];
  EXPECT_NE(Run({"get", "events", "--field-selector", "reason=ResultStoreFailed"}).out.find("kept"), std::string::npos);

  // That controller goes before the store can be made; the next one stores
  // the run.
  processes_.erase("ctl-3");
  fs::create_directories(folder);
  Controller("ctl-4");
  ASSERT_TRUE(Eventually(
      [&] {
        run = Get("br/kept");
        return run["status"].contains("stored") && run["status"]["stored"].contains("id");
      },
      60s))
      << run["status"].dump(1) << Logs();
  EXPECT_EQ(run["status"]["stored"]["store"], "SQLite store " + db);
  EXPECT_FALSE(run["status"]["stored"].contains("error"));
  const int64_t id = run["status"]["stored"]["id"].get<int64_t>();

  const fs::path fetched = root_ / "fetched-kept";
  auto fetch = kube::RunCommand(testing::BinaryPath("fairbench"),
                                {"fetch", "kept", "--kubeconfig", kubeconfig_, "--output", fetched.string()}, {}, 60s);
  ASSERT_TRUE(fetch.ok() && fetch->exit_code == 0) << (fetch.ok() ? fetch->err : fetch.status().ToString());
  auto history = kube::RunCommand(testing::BinaryPath("fairbench"), {"history", "--store", db, "--json"}, {}, 30s);
  ASSERT_TRUE(history.ok() && history->exit_code == 0) << (history.ok() ? history->err : "");
  const json listed = json::parse(history->out)["runs"];
  ASSERT_EQ(listed.size(), 1u) << listed.dump(1);
  EXPECT_EQ(listed[0]["id"], id);
  EXPECT_EQ(listed[0]["name"], "kept");
  EXPECT_EQ(listed[0]["uid"], run["metadata"]["uid"]);
  auto store = results::OpenResultStore(db, {.create = false});
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto record = (*store)->LoadResultsJson(id);
  ASSERT_TRUE(record.ok()) << record.status().ToString();
  EXPECT_EQ(*record, ReadFile(fetched / "results.json"));
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
  ApplyRun("mine", Target("alpha", "cpp-httplib-debian"), "2s");
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

// The same cluster, with the controllers' requests failing the ways a real
// API server's do, through a FaultProxy in front of it: 5xx (an overloaded
// or restarting kube-apiserver), 429 with Retry-After (API Priority and
// Fairness), slow answers, watches cut mid-stream (a broken connection),
// etcd compacted under resuming watches and paged lists (the real server
// then answers 410 Gone) and writes that took effect but answered 504 (the
// API server's request timeout). The seed is fixed so that a failure can be
// replayed (the order of requests still varies a little with timing). Only
// the controllers' own identity meets the faults: kubectl, the kubelets
// and `fairbench fetch` see a healthy server. kube-apiserver runs without
// its watch cache, so that each compaction reaches the watches it is aimed
// at, as it does where a watch falls behind the cache's window.
constexpr char kFaults[] =
    "error=0.05,throttle=0.03,retry-after=1,latency=40ms,latency-rate=0.25,watch-drop=0.3,expire=0.6,timeout=0.02,"
    "seed=20240612";

class OperatorUnderFaultsTest : public OperatorE2eTest {
 protected:
  void SetUp() override {
    Prepare("fairbench-faults");
    Cluster(true, false, {"--watch-cache=false"});
    ControllersThroughFaultProxy(kFaults);
    Kubelet("node-target", "0", "fairbench.dev/role=target", "127.0.10");
    Kubelet("node-load-1", "1", "fairbench.dev/role=load", "127.0.11");
    Kubelet("node-load-2", "1", "fairbench.dev/role=load", "127.0.12");
    ASSERT_TRUE(Eventually(
        [&] {
          return Run({"get", "nodes"}).out.find("node-load-2") != std::string::npos;
        },
        20s))
        << Run({"get", "nodes"}).err;
    Controller("ctl-1");
    Controller("ctl-2");
  }
};

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// Catches: a run failed or stuck by one failed API call (a create that got
// a 500, a record save that met a 504, a status write refused, a watch that
// never relisted after 410); a finished cell lost or measured twice (status,
// the stored record and the targets' own request counts must all show each
// cell of the spec exactly once); two targets under load at once; retries
// that leave no trace in the controller's log, or ignore Retry-After.
TEST_F(OperatorUnderFaultsTest, EveryRunCompletesWithEachCellOnceAndTheRetriesLogged) {
  const auto began = std::chrono::steady_clock::now();
  struct Spec {
    std::string run;
    std::vector<std::string> targets;
    std::vector<int> connections;
  };
  const std::vector<Spec> specs = {
      {"first", {"alpha", "beta"}, {8, 16}}, {"second", {"gamma"}, {8}}, {"third", {"delta"}, {8, 16}}};
  Apply("runs",
        RunText("first", Target("alpha", "cpp-httplib-debian") + Target("beta", "beast"), "1s", "default", "[8, 16]") +
            "---\n" + RunText("second", Target("gamma", "cpp-httplib-debian")) + "---\n" +
            RunText("third", Target("delta", "beast"), "1s", "default", "[8, 16]"));
  for (const Spec& spec : specs) {
    ASSERT_TRUE(Finishes(spec.run, "default", 150s)) << spec.run << ": phase " << Phase(spec.run) << "\n" << Logs();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();

  std::map<std::string, uint64_t> counted;  // requests the agents counted, by target
  for (const Spec& spec : specs) {
    const json run = Get("br/" + spec.run);
    ASSERT_EQ(run["status"]["phase"], "Succeeded") << spec.run << ": " << run["status"].dump(1) << Logs();
    // A status write whose answer was lost must not leave the finished run
    // with the cell it was on.
    EXPECT_FALSE(run["status"].contains("current")) << spec.run << ": " << run["status"]["current"].dump();
    // Each cell of the spec once in status: none lost, none twice.
    std::map<std::pair<std::string, int>, int> cells;
    for (const json& r : run["status"]["results"]) {
      ++cells[{r["target"].get<std::string>(), r["connections"].get<int>()}];
      EXPECT_EQ(r["state"], "Succeeded") << r.dump();
      counted[r["target"].get<std::string>()] += r["requests"].get<uint64_t>();
    }
    std::map<std::pair<std::string, int>, int> wanted;
    for (const std::string& t : spec.targets) {
      for (int c : spec.connections) wanted[{t, c}] = 1;
    }
    EXPECT_EQ(cells, wanted) << spec.run << ": " << run["status"]["results"].dump(1);
    EXPECT_EQ(run["status"]["completedCells"].get<size_t>(), wanted.size());
    EXPECT_EQ(run["status"]["totalCells"].get<size_t>(), wanted.size());
    // The stored record (read with a healthy identity) holds the same cells
    // with the same figures and start times.
    const fs::path fetched = root_ / ("fetched-" + spec.run);
    auto fetch =
        kube::RunCommand(testing::BinaryPath("fairbench"),
                         {"fetch", spec.run, "--kubeconfig", kubeconfig_, "--output", fetched.string()}, {}, 60s);
    ASSERT_TRUE(fetch.ok());
    ASSERT_EQ(fetch->exit_code, 0) << fetch->err;
    const json record = json::parse(ReadFile(fetched / "results.json"), nullptr, false);
    ASSERT_FALSE(record.is_discarded());
    ASSERT_EQ(record["cells"].size(), wanted.size()) << record["cells"].dump().substr(0, 2000);
    for (const json& c : record["cells"]) {
      bool same = false;
      for (const json& r : run["status"]["results"]) {
        same |= r["target"] == c["result"]["target"] && r["connections"] == c["result"]["connections"] &&
                r["requests"] == c["result"]["requests"] && r["startTime"] == c["result"]["startTime"];
      }
      EXPECT_TRUE(same) << "the record's cell differs from status: " << c["result"].dump();
    }
  }

  // The targets' own request logs: never two under load at once, and each
  // served about what its cells counted (warm-up included: 1.3×), not a
  // second measurement on top (≥ 2.6×).
  struct Span {
    std::string target;
    double from, to;
  };
  std::vector<Span> spans;
  for (const std::string t : {"alpha", "beta", "gamma", "delta"}) {
    const auto log = RequestLog(root_ / (t + ".requests"));
    ASSERT_FALSE(log.empty()) << t;
    spans.push_back({t, log.front().start, log.back().start + 0.1});
    uint64_t served = 0;
    for (const Bucket& b : log) served += b.count;
    EXPECT_GE(served, counted[t]) << t;
    EXPECT_LT(static_cast<double>(served), 2.0 * static_cast<double>(counted[t]))
        << t << ": served " << served << ", the cells counted " << counted[t];
  }
  for (size_t i = 0; i < spans.size(); ++i) {
    for (size_t j = i + 1; j < spans.size(); ++j) {
      const Span& a = spans[i];
      const Span& b = spans[j];
      EXPECT_TRUE(a.to <= b.from + 0.05 || b.to <= a.from + 0.05)
          << std::fixed << a.target << " " << a.from << ".." << a.to << " overlaps " << b.target << " " << b.from
          << ".." << b.to;
    }
  }

  // What the controllers logged: each run executed once per leadership
  // (a standby that took over resumes the run it finds Running), and every
  // retry as one line naming the verb, the path, the code and the wait.
  processes_.erase("ctl-1");
  processes_.erase("ctl-2");
  const std::string logs = Log("ctl-1") + Log("ctl-2");
  const size_t leaderships = Count(logs, "] leading as ");
  for (const Spec& spec : specs) {
    const size_t executed = Count(logs, "executing default/" + spec.run + "\n");
    EXPECT_GE(executed, 1u) << spec.run;
    EXPECT_LE(executed, leaderships) << spec.run << " was executed again by the same leader\n" << logs;
  }
  const std::regex retry(
      R"((GET|POST|PUT|PATCH|DELETE) /apis?/\S+: (\d{3}) \w+.*; retrying in (\d+) ms( \(Retry-After\))?)");
  std::map<std::string, int> retries_by_code;
  int honoured_retry_after = 0;
  for (auto it = std::sregex_iterator(logs.begin(), logs.end(), retry); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    ++retries_by_code[m[2].str()];
    if (m[2] == "429" && m[4].matched && m[3] == "1000") ++honoured_retry_after;
  }
  EXPECT_GT(retries_by_code["429"], 0) << logs;
  EXPECT_EQ(honoured_retry_after, retries_by_code["429"]) << "a 429 retried without waiting its Retry-After";
  EXPECT_GT(retries_by_code["500"] + retries_by_code["503"] + retries_by_code["504"], 0);
  EXPECT_GT(Count(logs, ": 410 Expired; listing again"), 0u) << "no watch relisted after 410";
  EXPECT_GT(Count(logs, " Transport: "), 0u) << "no cut watch was noticed";

  // The faults the proxy injected, by kind: each kind happened.
  const kubetest::FaultCounts injected = proxy_->faults().counts();
  const std::pair<const char*, uint64_t> kinds[] = {
      {"error", injected.server_errors},    {"throttle", injected.throttles}, {"latency", injected.latencies},
      {"watch-drop", injected.watch_drops}, {"expire", injected.expirations}, {"timeout", injected.timeouts}};
  for (const auto& [kind, n] : kinds) {
    EXPECT_GT(n, 0u) << "no " << kind << " fault was injected: " << injected.ToString();
    RecordProperty(std::string("faults_") + kind, static_cast<int>(n));
  }
  std::string retried;
  for (const auto& [code, n] : retries_by_code) retried += " " + code + "×" + std::to_string(n);
  std::cout << "faults injected: " << injected.ToString() << "\nretries logged by code:" << retried << "; leaderships "
            << leaderships << "; runs done in " << seconds << " s\n";
}

// What a target pod got, read from inside it, on a node whose kubelet
// runs each CPU manager policy: the target's node has both CPUs with CPU 0
// reserved, the load node and the controller run on CPU 0 (the shared
// pool), so a Guaranteed target asking for one CPU gets CPU 1 alone under
// the static policy and shares both under none.
class OperatorCpusTest : public OperatorE2eTest {
 protected:
  void SetUp() override {}
  void Layout(const std::string& policy) {
    Prepare("fairbench-cpus");
    Cluster();
    Kubelet("node-target", "0-1", "fairbench.dev/role=target", "127.0.14",
            {"--cpu-manager-policy", policy, "--reserved-cpus", policy == "static" ? "0" : ""});
    Kubelet("node-load-1", "0", "fairbench.dev/role=load", "127.0.15");
    ASSERT_TRUE(Eventually(
        [&] {
          return Run({"get", "nodes"}).out.find("node-load-1") != std::string::npos;
        },
        20s))
        << Run({"get", "nodes"}).err;
    controller_cpus_ = "0";
    Controller("ctl-1");
  }
  // The target server's CPUs as the host's /proc shows them (found by its
  // request log in its command line).
  std::string HostCpus(const std::string& target) {
    const std::string needle = (root_ / (target + ".requests")).string();
    for (const auto& entry : fs::directory_iterator("/proc")) {
      const std::string cmdline = ReadFile(entry.path() / "cmdline");
      if (cmdline.find(needle) != std::string::npos && cmdline.find("fairbench-target-") != std::string::npos) {
        return ReadCpuView(std::stoi(entry.path().filename())).cpus;
      }
    }
    return "";
  }
  json Fetched(const std::string& run) {
    const fs::path dir = root_ / ("fetched-" + run);
    auto fetch = kube::RunCommand(testing::BinaryPath("fairbench"),
                                  {"fetch", run, "--kubeconfig", kubeconfig_, "--output", dir.string()}, {}, 60s);
    EXPECT_TRUE(fetch.ok() && fetch->exit_code == 0) << (fetch.ok() ? fetch->err : fetch.status().ToString());
    return json::parse(ReadFile(dir / "results.json"), nullptr, false);
  }
};

// Catches: status.cpus missing or judged wrong on a static node (its CPU
// list not what the kernel gives the server, the policy not read from the
// kubelet's /configz, the agents not compared), or a SharedCpus flag on an
// exclusive target's cells.
TEST_F(OperatorCpusTest, UnderTheStaticPolicyTheTargetsCpuIsItsOwn) {
  Layout("static");
  ApplyRun("own", Target("alpha", "cpp-httplib-debian"), "1s", "default", "[8]", 1);
  std::string host_cpus;
  ASSERT_TRUE(Eventually([&] { return !(host_cpus = HostCpus("alpha")).empty(); }, 60s)) << Logs();
  ASSERT_TRUE(Finishes("own")) << Logs();
  const json status = Get("br/own")["status"];
  ASSERT_EQ(status["phase"], "Succeeded") << status.dump(1) << Logs();
  ASSERT_EQ(status["cpus"].size(), 1u) << status.dump(1);
  const json& t = status["cpus"][0];
  EXPECT_EQ(t["target"], "alpha");
  EXPECT_EQ(t["node"], "node-target");
  EXPECT_EQ(t["cpus"], "1") << t.dump(1);
  EXPECT_EQ(t["cpus"], host_cpus) << "the pod's own view differs from the host's";
  EXPECT_EQ(t["cpuManagerPolicy"], "static");
  EXPECT_EQ(t["exclusive"], "True") << t.dump(1);
  EXPECT_EQ(t["disjointFromAgents"], "True") << t.dump(1);
  EXPECT_EQ(t["asManyAsAsked"], "True") << t.dump(1);
  ASSERT_EQ(t["agents"].size(), 1u);
  EXPECT_EQ(t["agents"][0]["cpus"], "0");
  EXPECT_EQ(t["agents"][0]["sameMachine"], true);
  const json record = Fetched("own");
  for (const json& c : record["cells"]) {
    EXPECT_EQ(std::count(c["flags"].begin(), c["flags"].end(), "SharedCpus"), 0) << c["flags"].dump();
  }
}

// Catches: the kubelet's default policy passing unnoticed (no SharedCpus
// flag), or requireExclusiveCpus not failing the cells before any load
// with the node's policy named.
TEST_F(OperatorCpusTest, UnderTheNonePolicyCellsAreFlaggedOrFailWhenExclusivityIsRequired) {
  Layout("none");
  ApplyRun("shared", Target("alpha", "cpp-httplib-debian"), "1s", "default", "[8]", 1);
  ASSERT_TRUE(Finishes("shared")) << Logs();
  const json status = Get("br/shared")["status"];
  ASSERT_EQ(status["phase"], "Succeeded") << status.dump(1) << Logs();
  const json& t = status["cpus"][0];
  EXPECT_EQ(t["cpus"], "0-1") << t.dump(1);
  EXPECT_EQ(t["cpuManagerPolicy"], "none");
  EXPECT_EQ(t["exclusive"], "False") << t.dump(1);
  EXPECT_NE(t["message"].get<std::string>().find("CPU manager policy none"), std::string::npos) << t.dump(1);
  const json record = Fetched("shared");
  ASSERT_EQ(record["cells"].size(), 1u);
  EXPECT_EQ(std::count(record["cells"][0]["flags"].begin(), record["cells"][0]["flags"].end(), "SharedCpus"), 1)
      << record["cells"][0]["flags"].dump();

  std::string required = RunText("required", Target("beta", "cpp-httplib-debian"), "1s", "default", "[8]", 1);
  required += "    requireExclusiveCpus: true\n";
  Apply("required", required);
  ASSERT_TRUE(Finishes("required")) << Logs();
  const json failed = Get("br/required")["status"];
  ASSERT_EQ(failed["results"].size(), 1u) << failed.dump(1);
  EXPECT_EQ(failed["results"][0]["state"], "Failed");
  EXPECT_EQ(failed["results"][0]["reason"], "CpusNotExclusive");
  EXPECT_NE(
      failed["results"][0]["message"].get<std::string>().find("node node-target's kubelet CPU manager policy is none"),
      std::string::npos)
      << failed["results"][0].dump(1);
}

}  // namespace
}  // namespace fairbench::operator_test
