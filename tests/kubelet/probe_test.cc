// Liveness and startup probes on a real test kubelet: servers the test
// makes stop answering (a file taken away from a static HTTP server, a
// process stopped with SIGSTOP, a file removed inside a container), and
// what a kubelet does then as the API shows it: Unhealthy and Killing
// Events in the kubelet's words, the container killed (the exit code the
// kernel gave it) and restarted per restartPolicy, the startup probe
// holding the other probes back.
#include <signal.h>

#include "tests/containers/docker_env.h"
#include "tests/kubelet/kubelet_test_env.h"

namespace fairbench::kubelet::testenv {
namespace {

class ProbeTest : public KubeletTest {
 protected:
  // The messages of the pod's Events of this reason.
  std::vector<std::string> Events(const std::string& pod, const std::string& reason) {
    kube::ListOptions o;
    o.field_selector = "involvedObject.name=" + pod;
    std::vector<std::string> out;
    auto events = client_->List(kube::resources::Events(), ns(), o);
    if (!events.ok()) return out;
    for (const Json& e : events->items) {
      if (e.value("reason", "") == reason) out.push_back(e.value("message", ""));
    }
    return out;
  }
  bool HasEvent(const std::string& pod, const std::string& reason, const std::string& message) {
    for (const std::string& m : Events(pod, reason)) {
      if (m == message) return true;
    }
    return false;
  }
  static Json Status(const Json& pod, const std::string& container) {
    for (const Json& c : pod["status"].value("containerStatuses", Json::array())) {
      if (c["name"] == container) return c;
    }
    return Json::object();
  }
};

// Catches: no liveness probe at all (the pod runs on with a dead /healthz),
// a kill without the kubelet's Unhealthy and Killing Events, a container
// killed but not restarted under restartPolicy Always (or restarted
// without restartCount and lastState.terminated), and a liveness probe
// that goes on killing once /healthz answers again.
TEST_F(ProbeTest, FailedLivenessProbeKillsAndRestartsTheContainer) {
  StartKubelet();
  const std::string www = dir_->File("www");
  std::filesystem::create_directories(www);
  std::ofstream(www + "/healthz") << "ok";
  Apply("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  nodeName: " + node_ +
        "\n  terminationGracePeriodSeconds: 5\n  containers:\n  - name: web\n    image: example.org/sh:1\n"
        "    args: ['exec python3 -m http.server 8095 --bind $(POD_IP) --directory " +
        www +
        "']\n"
        "    env: [{name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}]\n"
        "    livenessProbe: {httpGet: {path: /healthz, port: 8095}, periodSeconds: 1, failureThreshold: 2}\n");
  Json pod = WaitPod("web", [](const Json& p) { return Condition(p, "Ready") == "True"; });
  EXPECT_TRUE(Status(pod, "web").value("started", false));
  std::this_thread::sleep_for(2500ms);  // two probes or more, all answered
  EXPECT_EQ(Status(*Pod("web"), "web")["restartCount"], 0) << "killed although /healthz answers";

  std::filesystem::remove(www + "/healthz");
  ASSERT_TRUE(Eventually([&] { return !Events("web", "Killing").empty(); }, 10s)) << "never killed";
  std::ofstream(www + "/healthz") << "ok";  // the next instance is healthy
  EXPECT_TRUE(HasEvent("web", "Unhealthy", "Liveness probe failed: HTTP probe failed with statuscode: 404"))
      << ::testing::PrintToString(Events("web", "Unhealthy"));
  EXPECT_TRUE(HasEvent("web", "Killing", "Container web failed liveness probe, will be restarted"))
      << ::testing::PrintToString(Events("web", "Killing"));
  pod = WaitPod("web", [](const Json& p) {
    const Json s = Status(p, "web");
    return s.value("restartCount", 0) == 1 && s["state"].contains("running") && s.value("ready", false);
  });
  const Json last = Status(pod, "web")["lastState"]["terminated"];
  EXPECT_EQ(last["exitCode"], 143) << "python's http.server dies of the SIGTERM: 128 + 15";
  EXPECT_EQ(last["reason"], "Error");
  std::this_thread::sleep_for(2500ms);
  EXPECT_EQ(Status(*Pod("web"), "web")["restartCount"], 1) << "killed again although /healthz answers";
}

// Catches: liveness or readiness probes (or Ready without a readiness
// probe) before the startup probe succeeded, `started` true too early, a
// startup probe that never gives way, and a failed startup probe that
// does not kill (or restarts under restartPolicy Never, or says it will).
TEST_F(ProbeTest, StartupProbeGatesTheOthersAndKillsWhenItFails) {
  StartKubelet();
  const std::string started = dir_->File("started");
  const std::string liveness_ran = dir_->File("liveness-ran");
  Apply("apiVersion: v1\nkind: Pod\nmetadata: {name: slow}\nspec:\n  nodeName: " + node_ +
        "\n  terminationGracePeriodSeconds: 2\n  containers:\n  - name: main\n    image: example.org/sh:1\n"
        "    args: ['exec sleep 600']\n"
        "    startupProbe: {exec: {command: [test, -f, " +
        started +
        "]}, periodSeconds: 1, failureThreshold: 30}\n"
        "    livenessProbe: {exec: {command: [touch, " +
        liveness_ran +
        "]}, periodSeconds: 1}\n"
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: never}\nspec:\n  nodeName: " +
        node_ +
        "\n  restartPolicy: Never\n  terminationGracePeriodSeconds: 2\n  containers:\n  - name: main\n"
        "    image: example.org/sh:1\n    args: ['exec sleep 600']\n"
        "    startupProbe: {exec: {command: ['false']}, periodSeconds: 1, failureThreshold: 2}\n");
  Json slow = WaitPod("slow", [](const Json& p) { return Status(p, "main")["state"].contains("running"); });
  std::this_thread::sleep_for(2500ms);  // startup probes fail meanwhile
  slow = *Pod("slow");
  EXPECT_FALSE(Status(slow, "main").value("started", true));
  EXPECT_FALSE(Status(slow, "main").value("ready", true)) << "Ready before the startup probe succeeded";
  EXPECT_FALSE(std::filesystem::exists(liveness_ran)) << "the liveness probe ran before the startup probe passed";
  EXPECT_TRUE(Events("slow", "Killing").empty());

  std::ofstream(started) << "ok";
  slow = WaitPod("slow", [](const Json& p) { return Condition(p, "Ready") == "True"; });
  EXPECT_TRUE(Status(slow, "main").value("started", false));
  EXPECT_TRUE(Eventually([&] { return std::filesystem::exists(liveness_ran); }, 5s)) << "liveness never ran";
  EXPECT_EQ(Status(slow, "main")["restartCount"], 0);

  Json never = WaitPod("never", [](const Json& p) { return Phase(p) == "Failed"; });
  const Json t = Status(never, "main")["state"]["terminated"];
  EXPECT_EQ(t["exitCode"], 143) << "sleep dies of the SIGTERM";
  EXPECT_EQ(Status(never, "main")["restartCount"], 0);
  EXPECT_TRUE(HasEvent("never", "Killing", "Container main failed startup probe"))
      << ::testing::PrintToString(Events("never", "Killing"));
  EXPECT_TRUE(HasEvent("never", "Unhealthy", "Startup probe failed"))
      << ::testing::PrintToString(Events("never", "Unhealthy"));
}

// Catches: a probe kill that sends SIGTERM only (a stopped server never
// dies of it) instead of SIGKILL once terminationGracePeriodSeconds is
// over, and a probe timeout not counted as a failure.
TEST_F(ProbeTest, LivenessKillOfAServerThatStoppedAnsweringEndsInSigkill) {
  StartKubelet();
  Apply("apiVersion: v1\nkind: Pod\nmetadata: {name: frozen}\nspec:\n  nodeName: " + node_ +
        "\n  restartPolicy: Never\n  terminationGracePeriodSeconds: 2\n  containers:\n  - name: web\n"
        "    image: example.org/fairbench/httplib:dev\n"
        "    args: ['--host', '$(POD_IP)', '--port', '8096', '--threads', '1']\n"
        "    env: [{name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}]\n"
        "    livenessProbe: {httpGet: {path: /, port: 8096}, periodSeconds: 1, timeoutSeconds: 1,"
        " failureThreshold: 2}\n");
  Json pod = WaitPod("frozen", [](const Json& p) { return Condition(p, "Ready") == "True"; });
  const std::string ip = pod["status"].value("podIP", "");
  // The server's process: the one bound to the pod's IP and port.
  pid_t pid = -1;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmd = ReadFile(entry.path().string() + "/cmdline");
    std::replace(cmd.begin(), cmd.end(), '\0', ' ');
    if (cmd.find("--host " + ip + " --port 8096") != std::string::npos) pid = std::stoi(name);
  }
  ASSERT_GT(pid, 0) << "no process serves " << ip << ":8096";
  ASSERT_EQ(kill(pid, SIGSTOP), 0);
  pod = WaitPod(
      "frozen", [](const Json& p) { return Phase(p) == "Failed"; }, 20s);
  const Json t = Status(pod, "web")["state"]["terminated"];
  EXPECT_EQ(t["exitCode"], 137) << "a stopped process ends only by SIGKILL: 128 + 9";
  EXPECT_TRUE(HasEvent("frozen", "Killing", "Container web failed liveness probe"));
  (void)kill(pid, SIGCONT);  // in case it survived: it must not stay stopped
}

// Catches: liveness probes run only for process pods (a container of the
// engine never killed), or the kill not reaching the engine's container,
// or no new container after it.
TEST_F(ProbeTest, LivenessProbeRestartsAContainerOfTheEngine) {
  if (containers::DockerHost().empty()) GTEST_SKIP() << "no Docker engine answers (scripts/docker-engine start)";
  const std::string image = containers::Image("fairbench-target-grpc");
  if (containers::Inspect(image).is_null()) GTEST_SKIP() << image << " not built (ctest -L containers builds it)";
  node_ = "liveness-" + std::to_string(getpid());
  StartKubelet({"--container-runtime", "docker", "--docker-host", containers::DockerHost()});
  Apply("apiVersion: v1\nkind: Pod\nmetadata: {name: alive}\nspec:\n  nodeName: " + node_ +
        "\n  terminationGracePeriodSeconds: 2\n  automountServiceAccountToken: false\n  containers:\n"
        "  - name: main\n    image: " +
        image +
        "\n    command: [/bin/sh, -c, 'touch /tmp/healthy; exec sleep 600']\n"
        "    livenessProbe: {exec: {command: [test, -f, /tmp/healthy]}, periodSeconds: 1, failureThreshold: 1}\n");
  Json pod = WaitPod(
      "alive", [](const Json& p) { return Condition(p, "Ready") == "True"; }, 60s);
  const std::string first = Status(pod, "main").value("containerID", "");
  ASSERT_EQ(first.rfind("docker://", 0), 0u) << first;
  auto rm = containers::Docker({"exec", first.substr(9), "rm", "/tmp/healthy"});
  ASSERT_EQ(rm.exit_code, 0) << rm.err;
  pod = WaitPod(
      "alive",
      [](const Json& p) {
        const Json s = Status(p, "main");
        return s.value("restartCount", 0) == 1 && s["state"].contains("running");
      },
      30s);
  EXPECT_NE(Status(pod, "main").value("containerID", ""), first);
  // sleep is PID 1 of its namespace, where SIGTERM without a handler is
  // ignored: SIGKILL after the grace period.
  EXPECT_EQ(Status(pod, "main")["lastState"]["terminated"]["exitCode"], 137);
  EXPECT_TRUE(HasEvent("alive", "Killing", "Container main failed liveness probe, will be restarted"));
}

}  // namespace
}  // namespace fairbench::kubelet::testenv
