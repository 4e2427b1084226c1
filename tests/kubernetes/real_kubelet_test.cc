// Kubernetes' own kubelet (scripts/kube-node) as a node of the control
// plane: containerd and runc run its pods, and the kernel, read from
// inside each container, says which CPUs the pod really got under each
// CPU manager policy. The kubelet's CPU manager is the only thing that
// gives a Guaranteed pod CPUs of its own; with the kubelet's default
// policy (none) it shares every CPU of its node.
#include <gtest/gtest.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "common/cpu_view.h"
#include "controller/kube/client.h"
#include "controller/kube/exec_credential.h"
#include "controller/kube/kubeconfig.h"
#include "controller/orchestrator/cpu_verdict.h"
#include "controller/platform/kubernetes/kubernetes_platform.h"
#include "testing/support/bin_dir.h"
#include "testing/support/kube_cluster.h"
#include "testing/support/ports.h"
#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"

namespace fairbench::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

const std::string kKubeNode = std::string(FAIRBENCH_SOURCE_DIR) + "/scripts/kube-node";

// "0-2,5" → {0, 1, 2, 5}; empty on anything else.
std::set<int> CpuList(const std::string& text) {
  std::set<int> cpus;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) {
    const size_t dash = part.find('-');
    try {
      const int from = std::stoi(part.substr(0, dash));
      const int to = dash == std::string::npos ? from : std::stoi(part.substr(dash + 1));
      for (int c = from; c <= to; ++c) cpus.insert(c);
    } catch (...) {
      return {};
    }
  }
  return cpus;
}

class RealKubeletTest : public ::testing::Test {
 protected:
  // A cluster and node `node` with the kubelet's `policy`, CPU 0 reserved
  // for the system under the static policy, and the probe's image.
  void Node(const std::string& policy) {
    if (getuid() != 0) GTEST_SKIP() << "a real kubelet needs root";
    if (get_nprocs() < 2) GTEST_SKIP() << "a CPU of its own needs two CPUs";
    auto dir = TempDir::Create("fairbench-real-kubelet");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
    auto c = KubeCluster::Up(dir_->File("cluster"));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    cluster_.emplace(std::move(*c));
    ASSERT_TRUE(Script({"up", "real-node", "--cpu-manager-policy", policy})) << said_;
    ASSERT_TRUE(Script({"image", "real-node", "fairbench.test/cpus:1", BinaryPath("fairbench-test-cpus")})) << said_;
  }
  void TearDown() override {
    if (cluster_) (void)Script({"down", "real-node"});
  }
  bool Script(std::vector<std::string> args) {
    args.push_back("--dir");
    args.push_back(cluster_->dir());
    auto r = kube::RunCommand(kKubeNode, args, {}, 180s);
    said_ = r.ok() ? r->out + r->err : r.status().ToString();
    return r.ok() && r->exit_code == 0;
  }
  // A pod of the probe on the node: Guaranteed with `cpu` whole CPUs, or
  // BestEffort when `cpu` is empty.
  void Pod(const std::string& name, const std::string& cpu) {
    std::string yaml = "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
                       ", namespace: default}\nspec:\n  nodeName: real-node\n  hostNetwork: true\n"
                       "  containers:\n  - name: probe\n    image: fairbench.test/cpus:1\n"
                       "    imagePullPolicy: Never\n";
    if (!cpu.empty()) {
      yaml += "    resources: {requests: {cpu: \"" + cpu + "\", memory: 32Mi}, limits: {cpu: \"" + cpu +
              "\", memory: 32Mi}}\n";
    }
    auto applied = AdminKubectl(*cluster_, {"apply", "-f", "-"}, yaml);
    ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  }
  // The CPUs the pod's container says it may run on (its log's last line).
  std::set<int> Cpus(const std::string& pod) {
    std::string last;
    const auto until = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < until) {
      auto log = AdminKubectl(*cluster_, {"logs", pod, "--tail", "1"});
      if (log.ok() && log->rfind("cpus ", 0) == 0) return CpuList(log->substr(5, log->find('\n') - 5));
      last = log.ok() ? *log : log.status().ToString();
      std::this_thread::sleep_for(250ms);
    }
    auto described = AdminKubectl(*cluster_, {"describe", "pod", pod});
    ADD_FAILURE() << pod << " never said its CPUs: " << last << "\n"
                  << (described.ok() ? *described : described.status().ToString());
    return {};
  }

  // The operator's own path on the node: a target pod made by
  // KubernetesPlatform (the nofile init container from a one-binary helper
  // image, the target's command under fairbench-nofile, Guaranteed with one
  // CPU, on the node's network), ready by the kubelet's readiness probe; its
  // CPUs read back from its log and the node's policy from the kubelet's
  // /configz through the node proxy, judged as the orchestrator judges
  // them. The controller is this test, not a pod of the cluster: left out.
  // `host_cpus` gets the target process's CPUs as the host's /proc shows
  // them, `memory_limit` the limit in its cgroup.
  api::TargetCpus DeployTarget(std::string* host_cpus) {
    EXPECT_TRUE(Script({"image", "real-node", "fairbench.test/nofile:1", BinaryPath("fairbench-nofile")})) << said_;
    EXPECT_TRUE(Script({"image", "real-node", "fairbench.test/http:1", BinaryPath("fairbench-test-http")})) << said_;
    auto cfg = kube::LoadKubeconfig({{cluster_->admin_kubeconfig()}, "", nullptr});
    EXPECT_TRUE(cfg.ok()) << cfg.status().ToString();
    if (!cfg.ok()) return {};
    auto client = kube::Client::Create(*cfg);
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    if (!client.ok()) return {};
    controller::KubernetesPlatformOptions o;
    o.ns = "default";
    o.agent_image = "fairbench.test/nofile:1";
    o.nofile_helper_path = "/fairbench-nofile";
    o.api_call_timeout = 5s;
    controller::KubernetesPlatform platform(**client, o);
    auto port = FreeLoopbackPort();
    EXPECT_TRUE(port.ok());
    api::Target t;
    t.name = "probe";
    t.image = "fairbench.test/http:1";
    t.port = port.ok() ? *port : 18080;
    t.command = {"/fairbench-test-http", "--port", "{port}"};
    t.resources.cpu = api::CpuQuantity{1000};
    t.resources.memory = api::MemoryQuantity{64LL << 20};
    t.nofile = 1024;
    t.host_network = true;
    api::NodePlacement where;
    where.node_name = "real-node";
    auto deployed = platform.Deploy(controller::DeployRequest{{"cpus", "default", ""}, t, 0, where}, {});
    EXPECT_TRUE(deployed.ok()) << deployed.status().ToString();
    if (!deployed.ok()) return {};
    controller::TargetInstance& target = **deployed;
    // Generous: a loaded machine (the suite's other end-to-end tests beside
    // it) has been seen to keep the init container's start waiting for a
    // minute and more.
    const Status ready = target.WaitReady(std::chrono::steady_clock::now() + 180s, {});
    if (!ready.ok()) {
      auto described = AdminKubectl(*cluster_, {"describe", "pod", "cpus-probe"});
      ADD_FAILURE() << ready.ToString() << "\n"
                    << (described.ok() ? *described : described.status().ToString()) << "\nkubelet:\n"
                    << NodeLogTail();
    }
    const controller::TargetCpuFacts facts = target.Cpus();
    // The server's process as the host sees it: its CPUs, from the kernel.
    const std::string needle = std::string("--port") + '\0' + std::to_string(t.port);
    for (const auto& entry : fs::directory_iterator("/proc")) {
      std::string args(4096, '\0');
      FILE* cmdline = std::fopen((entry.path() / "cmdline").c_str(), "re");
      if (cmdline == nullptr) continue;
      args.resize(std::fread(args.data(), 1, args.size(), cmdline));
      std::fclose(cmdline);
      if (args.rfind("/fairbench-test-http", 0) != 0 || args.find(needle) == std::string::npos) continue;
      *host_cpus = ReadCpuView(std::stoi(entry.path().filename())).cpus;
    }
    const api::TargetCpus judged = controller::JudgeCpus("probe", facts, {}, std::nullopt);
    EXPECT_TRUE(target.Teardown().ok());
    return judged;
  }

  // The end of the real node's kubelet log, for failure messages.
  std::string NodeLogTail() {
    const fs::path log = fs::path(cluster_->dir()) / "real-nodes" / "real-node" / "kubelet.log";
    FILE* f = std::fopen(log.c_str(), "re");
    if (f == nullptr) return "(no " + log.string() + ")";
    std::string text;
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
    std::fclose(f);
    return text.size() > 4000 ? text.substr(text.size() - 4000) : text;
  }

  std::optional<TempDir> dir_;
  std::optional<KubeCluster> cluster_;
  std::string said_;
};

// Catches: a node that does not run the static policy it was asked for,
// the reserved CPU handed to a Guaranteed pod, or a pod's CPUs not what
// the kernel enforces (the list is the container's own view).
TEST_F(RealKubeletTest, TheStaticPolicyGivesAGuaranteedPodACpuOfItsOwn) {
  ASSERT_NO_FATAL_FAILURE(Node("static"));
  if (IsSkipped()) return;
  Pod("guaranteed", "1");
  Pod("shared", "");
  const std::set<int> own = Cpus("guaranteed");
  const std::set<int> shared = Cpus("shared");
  ASSERT_EQ(own.size(), 1u) << "a Guaranteed pod asking for 1 CPU got " << own.size();
  EXPECT_EQ(own.count(0), 0u) << "CPU 0 is reserved for the system";
  for (int c : own) EXPECT_EQ(shared.count(c), 0u) << "CPU " << c << " is the Guaranteed pod's and the shared pool's";
  EXPECT_EQ(shared.count(0), 1u) << "the reserved CPU is in the shared pool";

  // What fairbench reads from inside its own target pod, against the host's
  // view of the same process: on two CPUs, once the first pod gave its CPU
  // back.
  auto deleted =
      AdminKubectl(*cluster_, {"delete", "pod", "guaranteed", "--grace-period=1", "--wait=true", "--timeout=60s"});
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  std::string host_cpus;
  const api::TargetCpus t = DeployTarget(&host_cpus);
  EXPECT_EQ(t.cpu_manager_policy, "static");
  EXPECT_EQ(t.exclusive, api::ConditionStatus::kTrue) << t.message;
  EXPECT_EQ(t.as_many_as_asked, api::ConditionStatus::kTrue) << t.message;
  EXPECT_EQ(CpuList(t.cpus).size(), 1u) << t.cpus;
  EXPECT_EQ(CpuList(t.cpus).count(0), 0u) << "the reserved CPU";
  EXPECT_EQ(t.cpus, host_cpus) << "the pod's own view and the host's differ";
  EXPECT_EQ(t.memory_limit, api::MemoryQuantity{64LL << 20}) << "the limit the kubelet set";
}

// Catches: a test that would pass whatever the policy: with the kubelet's
// default policy the same Guaranteed pod may run on every CPU of the node,
// the BestEffort pod's CPUs included.
TEST_F(RealKubeletTest, TheNonePolicySharesEveryCpuWithAGuaranteedPod) {
  ASSERT_NO_FATAL_FAILURE(Node("none"));
  if (IsSkipped()) return;
  Pod("guaranteed", "1");
  Pod("shared", "");
  const std::set<int> own = Cpus("guaranteed");
  const std::set<int> shared = Cpus("shared");
  EXPECT_EQ(static_cast<int>(own.size()), get_nprocs()) << "every CPU of the node";
  EXPECT_EQ(own, shared);

  // fairbench sees it from inside its target pod, and says why.
  std::string host_cpus;
  const api::TargetCpus t = DeployTarget(&host_cpus);
  EXPECT_EQ(t.cpu_manager_policy, "none");
  EXPECT_EQ(t.exclusive, api::ConditionStatus::kFalse) << t.message;
  EXPECT_EQ(CpuList(t.cpus), CpuList(t.node_cpus));
  EXPECT_EQ(t.cpus, host_cpus);
  EXPECT_EQ(t.cpu_quota, api::CpuQuantity{1000}) << "a CFS quota of the one CPU it asked for";
  EXPECT_NE(controller::CpusNotExclusiveMessage(t).find("kubelet CPU manager policy is none"), std::string::npos)
      << controller::CpusNotExclusiveMessage(t);
}

}  // namespace
}  // namespace fairbench::testing
