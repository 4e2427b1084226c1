// The test kubelet's CPU manager on a real node: what the kernel says a
// pod's process may run on (/proc/PID/status Cpus_allowed_list), read by
// the test, under --cpu-manager-policy none and static; the pod the static
// policy cannot fit, as the API shows it; the node's allocatable cpu; and
// bad --reserved-cpus refused at start-up. The same for containers of the
// Docker engine (the engine's CpusetCpus), where an engine and this
// build's gRPC target image are at hand (the `containers` fixtures).
#include <signal.h>
#include <sys/types.h>

#include "tests/containers/docker_env.h"
#include "tests/kubelet/kubelet_test_env.h"

namespace fairbench::kubelet::testenv {
namespace {

// Cpus_allowed_list of a process, "" when it is gone.
std::string AllowedCpus(pid_t pid) {
  std::istringstream in(ReadFile("/proc/" + std::to_string(pid) + "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Cpus_allowed_list:", 0) == 0) {
      std::string v = line.substr(18);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  }
  return "";
}

class CpuPinningTest : public KubeletTest {
 protected:
  // A pod of one container that writes its pid to a file and sleeps;
  // Guaranteed with `cpu` ("" = BestEffort).
  void SleeperPod(const std::string& name, const std::string& cpu) {
    std::string yaml = "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec:\n  nodeName: " + node_ +
                       "\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n"
                       "    image: example.org/sh:1\n    args: ['echo $$$$ > " +
                       PidFile(name) + "; exec sleep 600']\n";
    if (!cpu.empty()) {
      yaml +=
          "    resources: {limits: {cpu: '" + cpu + "', memory: 64Mi}, requests: {cpu: '" + cpu + "', memory: 64Mi}}\n";
    }
    Apply(yaml);
  }
  std::string PidFile(const std::string& pod) { return dir_->File(pod + ".pid"); }
  // The pod's process, once it runs.
  pid_t Pid(const std::string& pod) {
    std::string text;
    EXPECT_TRUE(Eventually(
        [&] {
          text = ReadFile(PidFile(pod));
          return !text.empty() && text.back() == '\n';
        },
        15s))
        << "pod " << pod << " never started: " << ReadFile(dir_->File("kubelet.err"));
    return text.empty() ? -1 : static_cast<pid_t>(std::stoi(text));
  }
  // Waits for the process's CPUs to become `want`; returns the last seen.
  std::string WaitCpus(pid_t pid, const std::string& want) {
    std::string seen;
    Eventually([&] { return (seen = AllowedCpus(pid)) == want; }, 10s);
    return seen;
  }
};

// Catches: the none policy pinning a Guaranteed pod anywhere but the
// node's --cpus (here CPU 1 of the machine's 0-1), or /configz reporting a
// policy or reserved CPUs the kubelet does not have.
TEST_F(CpuPinningTest, NonePolicyPinsEveryContainerToTheNodesCpus) {
  cpus_ = "1";
  StartKubelet();
  SleeperPod("guaranteed", "1");
  SleeperPod("besteffort", "");
  const pid_t g = Pid("guaranteed");
  const pid_t b = Pid("besteffort");
  EXPECT_EQ(WaitCpus(g, "1"), "1");
  EXPECT_EQ(WaitCpus(b, "1"), "1");
  auto node = client_->Get(kube::resources::Nodes(), "", node_);
  ASSERT_TRUE(node.ok());
  EXPECT_EQ((*node)["status"]["allocatable"]["cpu"], "1");
  const std::string configz = KubectlOk({"get", "--raw", "/api/v1/nodes/" + node_ + "/proxy/configz"});
  const Json kc = Json::parse(configz, nullptr, false).value("kubeletconfig", Json::object());
  EXPECT_EQ(kc.value("cpuManagerPolicy", ""), "none") << configz;
  EXPECT_FALSE(kc.contains("reservedSystemCPUs")) << configz;
}

// Catches: a Guaranteed container not given a CPU of its own, the reserved
// CPU given exclusively, the other pods left on an exclusive CPU (the
// shared pool not shrunk, or not applied to processes already running),
// a second Guaranteed pod given the same CPU instead of being refused with
// the kubelet's reason and message, allocatable counting the reserved CPU,
// and the CPU not given back when its pod is gone.
TEST_F(CpuPinningTest, StaticPolicyGivesGuaranteedPodsCpusOfTheirOwn) {
  cpus_ = "0-1";
  StartKubelet({"--cpu-manager-policy", "static", "--reserved-cpus", "0"});
  auto node = client_->Get(kube::resources::Nodes(), "", node_);
  ASSERT_TRUE(node.ok());
  EXPECT_EQ((*node)["status"]["capacity"]["cpu"], "2");
  EXPECT_EQ((*node)["status"]["allocatable"]["cpu"], "1");

  SleeperPod("shared", "");
  const pid_t shared = Pid("shared");
  EXPECT_EQ(WaitCpus(shared, "0-1"), "0-1") << "the shared pool is every CPU while none is exclusive";

  SleeperPod("exclusive", "1");
  const pid_t exclusive = Pid("exclusive");
  EXPECT_EQ(WaitCpus(exclusive, "1"), "1") << "CPU 0 is reserved: the only one to give is 1";
  EXPECT_EQ(WaitCpus(shared, "0"), "0") << "a running shared-pool process stays on the exclusive CPU";
  Json running = WaitPod("exclusive", [](const Json& p) { return Phase(p) == "Running"; });
  EXPECT_EQ(running["status"]["qosClass"], "Guaranteed");

  SleeperPod("second", "1");
  Json refused = WaitPod("second", [](const Json& p) { return Phase(p) == "Failed"; });
  EXPECT_EQ(refused["status"].value("reason", ""), "UnexpectedAdmissionError");
  EXPECT_EQ(refused["status"].value("message", ""),
            "Pod was rejected: Allocate failed due to not enough cpus available to satisfy request: requested=1, "
            "available=0, which is unexpected");
  kube::ListOptions by_pod;
  by_pod.field_selector = "involvedObject.name=second";
  EXPECT_TRUE(Eventually([&] {
    auto events = client_->List(kube::resources::Events(), ns(), by_pod);
    if (!events.ok()) return false;
    for (const Json& e : events->items) {
      if (e.value("reason", "") == "UnexpectedAdmissionError" && e.value("type", "") == "Warning") return true;
    }
    return false;
  })) << "no UnexpectedAdmissionError Event for the refused pod";

  KubectlOk({"delete", "pod", "exclusive", "--wait=true", "--timeout=20s"});
  EXPECT_EQ(WaitCpus(shared, "0-1"), "0-1") << "CPU 1 not back in the shared pool";
  SleeperPod("third", "1");
  EXPECT_EQ(WaitCpus(Pid("third"), "1"), "1");
}

// Catches: docker mode not handing the CPU manager's CPUs to the engine
// (CpusetCpus, and so the container's processes), or not moving a running
// shared-pool container off a CPU given exclusively (the engine's update).
TEST_F(CpuPinningTest, StaticPolicyPinsContainersOfTheEngine) {
  if (containers::DockerHost().empty()) GTEST_SKIP() << "no Docker engine answers (scripts/docker-engine start)";
  const std::string image = containers::Image("fairbench-target-grpc");
  if (containers::Inspect(image).is_null()) GTEST_SKIP() << image << " not built (ctest -L containers builds it)";
  node_ = "cpus-" + std::to_string(getpid());  // the engine may be shared: a name of its own
  cpus_ = "0-1";
  StartKubelet({"--container-runtime", "docker", "--docker-host", containers::DockerHost(), "--cpu-manager-policy",
                "static", "--reserved-cpus", "0"});
  auto pod = [&](const std::string& name, bool guaranteed) {
    std::string yaml = "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec:\n  nodeName: " + node_ +
                       "\n  terminationGracePeriodSeconds: 1\n  automountServiceAccountToken: false\n"
                       "  containers:\n  - name: main\n    image: " +
                       image + "\n    command: [/bin/sh, -c, 'exec sleep 600']\n";
    if (guaranteed) yaml += "    resources: {limits: {cpu: '1', memory: 64Mi}}\n";
    Apply(yaml);
  };
  // The engine's view of a pod's container: its CpusetCpus and main pid.
  auto container = [&](const std::string& name) -> std::pair<std::string, pid_t> {
    auto ids = containers::ContainersLabelled("io.kubernetes.pod.name=" + name, true);
    for (const std::string& id : ids) {
      const Json c = containers::Inspect(id);
      if (c.is_null() || c["Config"]["Labels"].value("fairbench.dev/test-kubelet-node", "") != node_) continue;
      return {c["HostConfig"].value("CpusetCpus", ""), c["State"].value("Pid", 0)};
    }
    return {"", -1};
  };
  auto wait_cpuset = [&](const std::string& name, const std::string& want) {
    std::pair<std::string, pid_t> seen;
    Eventually([&] { return (seen = container(name)).first == want; }, 60s);
    return seen;
  };
  pod("shared", false);
  auto shared = wait_cpuset("shared", "0-1");
  EXPECT_EQ(shared.first, "0-1");
  pod("exclusive", true);
  auto exclusive = wait_cpuset("exclusive", "1");
  EXPECT_EQ(exclusive.first, "1");
  EXPECT_EQ(WaitCpus(exclusive.second, "1"), "1") << "the container's process is not on its CPU";
  EXPECT_EQ(wait_cpuset("shared", "0").first, "0") << "the running shared container kept the exclusive CPU";
  EXPECT_EQ(WaitCpus(shared.second, "0"), "0");
}

// Catches: --reserved-cpus outside --cpus, or static without any, taken
// without a word (the kubelet refuses to start).
TEST(CpuManagerFlags, BadReservedCpusStopTheKubeletAtStartUp) {
  auto run = [](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"--kubeconfig", "/nonexistent", "--node", "n",        "--cpus",
                                     "0-1",          "--log-dir",    "/tmp",   "--images", "/nonexistent"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = kube::RunCommand(fairbench::testing::BinaryPath("fairbench-test-kubelet"), args, {}, 10s);
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : kube::CommandResult{};
  };
  auto outside = run({"--cpu-manager-policy", "static", "--reserved-cpus", "2"});
  EXPECT_EQ(outside.exit_code, 2);
  EXPECT_NE(outside.err.find("--reserved-cpus 2 is not a subset of --cpus 0-1"), std::string::npos) << outside.err;
  auto missing = run({"--cpu-manager-policy", "static"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("--cpu-manager-policy static needs --reserved-cpus"), std::string::npos) << missing.err;
  auto under_none = run({"--reserved-cpus", "0"});
  EXPECT_EQ(under_none.exit_code, 2);
  EXPECT_NE(under_none.err.find("only for --cpu-manager-policy static"), std::string::npos) << under_none.err;
}

}  // namespace
}  // namespace fairbench::kubelet::testenv
