// The operator end to end on one machine, driven the way a user drives it:
// the test API server with the product CRD, three test kubelets (a target
// node and two load nodes, each on its own CPUs), two fairbench-controller
// processes (leader election) and real kubectl. The pods are real
// processes: the reference targets and fairbench-agent. The tests read what
// a user reads (kubectl get/describe, fairbench fetch) and what the targets
// themselves logged.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "controller/kube/exec_credential.h"
#include "testing/support/bin_dir.h"
#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"

namespace fairbench {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;
using testing::Subprocess;
using testing::SubprocessOptions;

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

std::string StringAt(const json& j, const std::string& pointer) {
  const json::json_pointer ptr(pointer);
  return j.contains(ptr) && j.at(ptr).is_string() ? j.at(ptr).get<std::string>() : "";
}

template <typename F>
bool Eventually(F f, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (f()) return true;
    std::this_thread::sleep_for(100ms);
  }
  return f();
}

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

class OperatorE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kubectl_ = testing::FindTool("kubectl");
    ASSERT_FALSE(kubectl_.empty()) << "kubectl not found: run scripts/setup --with-tools";
    auto dir = testing::TempDir::Create("fairbench-operator");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
    root_ = dir_->path();
    kubeconfig_ = (root_ / "kubeconfig").string();
    agent_port_ = FreePort();

    Start("apiserver", {testing::BinaryPath("fairbench-test-apiserver"), "--listen", "127.0.0.1:0", "--write-kubeconfig",
                        kubeconfig_});
    ASSERT_TRUE(Eventually([&] { return fs::exists(kubeconfig_) && fs::file_size(kubeconfig_) > 0; }, 10s));
    Ok({"apply", "-f", std::string(FAIRBENCH_SOURCE_DIR) + "/manifests/crd/benchmarkruns.fairbench.dev.yaml"});
    Ok({"wait", "--for=condition=Established", "crd/benchmarkruns.fairbench.dev", "--timeout=20s"});

    const std::string bin = testing::BinDir();
    std::ofstream(root_ / "images.yaml") << "example.org/fairbench/agent:dev: [" << bin << "/fairbench-agent]\n"
                                          << "example.org/fairbench/target:dev: [" << bin
                                          << "/fairbench-target-httplib]\n";
    // The target node on CPU 0, the load nodes on CPU 1 (a 2-CPU machine).
    Kubelet("node-target", "0", "fairbench.dev/role=target", "127.0.10");
    Kubelet("node-load-1", "1", "fairbench.dev/role=load", "127.0.11");
    Kubelet("node-load-2", "1", "fairbench.dev/role=load", "127.0.12");
    ASSERT_TRUE(Eventually([&] { return Run({"get", "nodes"}).out.find("node-load-2") != std::string::npos; }, 20s))
        << Run({"get", "nodes"}).err;
    Controller("ctl-1");
    Controller("ctl-2");
  }

  void Start(const std::string& name, std::vector<std::string> argv) {
    SubprocessOptions o;
    o.argv = std::move(argv);
    o.stdout_to = testing::Redirect::File((root_ / (name + ".log")).string(), true);
    o.stderr_to = testing::Redirect::File((root_ / (name + ".log")).string(), true);
    auto p = Subprocess::Start(o);
    ASSERT_TRUE(p.ok()) << name << ": " << p.status().ToString();
    processes_.emplace(name, std::move(*p));
  }
  void Kubelet(const std::string& node, const std::string& cpus, const std::string& labels, const std::string& ip_base) {
    Start(node, {testing::BinaryPath("fairbench-test-kubelet"), "--kubeconfig", kubeconfig_, "--node", node, "--cpus",
                 cpus, "--memory", "4Gi", "--labels", labels, "--images", (root_ / "images.yaml").string(),
                 "--pod-ip-base", ip_base, "--listen", "127.0.0.1:0", "--log-dir", (root_ / node).string(),
                 "--heartbeat", "1s"});
  }
  void Controller(const std::string& id) {
    const std::string agent = "127.0.0.1:" + std::to_string(agent_port_);
    Start(id, {testing::BinaryPath("fairbench-controller"), "--kubeconfig", kubeconfig_, "--identity", id,
               "--agent-listen", agent, "--agent-address", agent, "--agent-image", "example.org/fairbench/agent:dev",
               "--nofile-helper-path", testing::BinaryPath("fairbench-nofile"), "--agent-timeout", "60s"});
  }
  std::string Logs() {
    std::string out;
    for (const auto& [name, p] : processes_) {
      std::string text = ReadFile(root_ / (name + ".log"));
      if (text.size() > 3000) text = "…" + text.substr(text.size() - 3000);
      out += "--- " + name + "\n" + text + "\n";
    }
    return out;
  }
  kube::CommandResult Run(std::vector<std::string> args) {
    args.insert(args.begin(), {"--kubeconfig", kubeconfig_, "--cache-dir", (root_ / "cache").string()});
    auto r = kube::RunCommand(kubectl_, args, {{"HOME", root_.string()}, {"KUBECONFIG", ""}}, 60s);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : kube::CommandResult{};
  }
  std::string Ok(std::vector<std::string> args) {
    std::string shown;
    for (const auto& a : args) shown += " " + a;
    auto r = Run(std::move(args));
    EXPECT_EQ(r.exit_code, 0) << "kubectl" << shown << "\n" << r.out << r.err;
    return r.out;
  }
  json Get(const std::string& what) {
    auto r = Run({"get", what, "-o", "json"});
    return r.exit_code == 0 ? json::parse(r.out, nullptr, false) : json();
  }
  std::string Phase(const std::string& run) {
    return Run({"get", "br", run, "-o", "jsonpath={.status.phase}"}).out;
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
  void ApplyRun(const std::string& name, const std::string& targets, const std::string& duration = "1s") {
    const std::string text = "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: " + name +
                             "}\nspec:\n  targets:\n" + targets +
                             "  scenarios:\n  - name: hello\n    request: {path: /}\n"
                             "    expect: {status: 200, body: \"Hello, World!\"}\n"
                             "  load: {threads: 1, connections: [8], warmup: 300ms, duration: " + duration +
                             ", timeout: 1s, agents: 2}\n"
                             "  cooldown: 200ms\n"
                             "  placement:\n"
                             "    target: {nodeSelector: {fairbench.dev/role: target}}\n"
                             "    agents: {nodeSelector: {fairbench.dev/role: load}}\n";
    const fs::path file = root_ / (name + ".yaml");
    std::ofstream(file) << text;
    Ok({"apply", "-f", file.string()});
  }

  std::string kubectl_;
  std::optional<testing::TempDir> dir_;
  fs::path root_;
  std::string kubeconfig_;
  int agent_port_ = 0;
  std::map<std::string, Subprocess> processes_;
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
  // The agents ran on the load nodes, one on each, never on the target's.
  const json agents = Get("pods");
  std::set<std::string> agent_nodes;
  for (const json& p : agents["items"]) {
    if (StringAt(p, "/metadata/labels/app.kubernetes.io~1name") != "fairbench-agent") continue;
    agent_nodes.insert(StringAt(p, "/spec/nodeName"));
  }
  EXPECT_EQ(agent_nodes, (std::set<std::string>{"node-load-1", "node-load-2"}));
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
  // The target pods are gone; nothing else of the run's is left but its agents and record.
  EXPECT_TRUE(Eventually([&] { return Run({"get", "pod", "duo-alpha"}).exit_code != 0; }, 10s));
}

}  // namespace
}  // namespace fairbench
