// The chart's liveness probe on the controller (/healthz) on a real control
// plane (chart_cluster.h), with one controller: nothing but the kubelet's
// probe brings a hung controller back.
#include <signal.h>

#include "testing/support/http_client.h"
#include "tests/containers/chart_cluster.h"

namespace fairbench::containers {
namespace {

class ChartLivenessE2eTest : public ChartCluster {
 protected:
  void SetUp() override {
    more_values_ = {"--set", "controller.replicas=1"};
    ChartCluster::SetUp();
  }
  std::string PodIp(const std::string& pod) {
    return Run({"get", "pod", pod, "-n", kNamespace, "-o", "jsonpath={.status.podIP}"}).out;
  }
  json ControllerStatus(const std::string& pod) {
    const json p = Get("pod/" + pod);
    if (!p.is_object()) return json();
    const json statuses = p["status"].value("containerStatuses", json::array());
    return statuses.empty() ? json() : statuses[0];
  }
};

// A run in flight, the only controller's process stopped (SIGSTOP from the
// host, as a deadlock or a stalled disk would leave it): /healthz stops
// answering, the kubelet's liveness probe fails failureThreshold times
// (Warning Unhealthy Events), kills the container (Normal Killing; a
// stopped process cannot act on SIGTERM, so SIGKILL after the probe's own
// 5 s grace period: exit code 137) and starts it again in the same pod
// (restartCount 1); the new process leads under the same identity,
// resumes the run from its record and finishes it: every cell once, the
// one finished before the hang as it was.
// Catches: a liveness probe the chart drops, or whose period, threshold
// and grace period stretch the restart past 50 s — without the probe's
// grace the pod's 30 s apply (57 s measured; 32 s with it): the time it
// took is printed; a controller that cannot lead again under its own, still-held
// Lease after the restart; a run lost, or a cell lost or measured twice,
// across the restart.
TEST_F(ChartLivenessE2eTest, AHungControllerIsRestartedByItsLivenessProbeAndTheRunFinishes) {
  const std::string leader = Leader();
  const json deployment = Get("deployment/fairbench-controller");
  const json probe = deployment["spec"]["template"]["spec"]["containers"][0]["livenessProbe"];
  ASSERT_EQ(probe["httpGet"]["path"], "/healthz") << probe.dump();
  EXPECT_EQ(probe["terminationGracePeriodSeconds"], 5) << probe.dump();
  std::cout << "chart's livenessProbe: " << probe.dump() << ", terminationGracePeriodSeconds: "
            << deployment["spec"]["template"]["spec"].value("terminationGracePeriodSeconds", json("(default 30)"))
            << "\n";

  Apply("hung",
        RunText("hung",
                Target("one", "cpp-httplib-debian") + Target("two", "beast") + Target("three", "cpp-httplib-debian"),
                "2s"));
  json before;
  ASSERT_TRUE(Eventually(
      [&] {
        const json r = Get("br/hung");
        if (!r.is_object() || r["status"].value("completedCells", 0) < 1) return false;
        before = r["status"]["results"][0];
        return true;
      },
      120s))
      << Logs();

  // The controller's process, as the engine knows it, stopped.
  const auto ids = ContainersLabelled("io.kubernetes.pod.name=" + leader, true);
  ASSERT_EQ(ids.size(), 1u) << leader;
  const int pid = Inspect(ids[0])["State"].value("Pid", 0);
  ASSERT_GT(pid, 1);
  const std::string ip = PodIp(leader);
  ASSERT_EQ(kill(pid, SIGSTOP), 0);
  const auto stopped = std::chrono::steady_clock::now();
  // /healthz no longer answers (the kernel still accepts the connection)
  // once the stop reached every thread: a thread already awake may finish
  // what it was doing.
  EXPECT_TRUE(Eventually(
      [&] {
        auto c = testing::HttpConnection::Connect(ip, static_cast<uint16_t>(metrics_port_));
        return c.ok() && !c->RoundTrip(testing::BuildRequest("GET", "/healthz", ip), 2s).ok();
      },
      10s))
      << "a stopped controller kept answering /healthz";

  json status;
  ASSERT_TRUE(Eventually(
      [&] {
        status = ControllerStatus(leader);
        return status.is_object() && status.value("restartCount", 0) >= 1;
      },
      50s))
      << ControllerStatus(leader).dump() << Logs();
  const double restarted_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped).count();
  std::cout << "SIGSTOP -> controller container restarted by its liveness probe: " << restarted_s << " s\n";
  EXPECT_EQ(status["restartCount"], 1) << status.dump();
  EXPECT_EQ(status["lastState"]["terminated"]["exitCode"], 137) << status.dump();

  const json events = Get("events", "--field-selector", "involvedObject.name=" + leader);
  int unhealthy = 0, killing = 0;
  for (const json& e : events.value("items", json::array())) {
    const std::string message = e.value("message", std::string());
    if (e["reason"] == "Unhealthy" && message.rfind("Liveness probe failed: Get \"http://" + ip, 0) == 0) {
      unhealthy += e.value("count", 1);
    }
    if (e["reason"] == "Killing" && message == "Container controller failed liveness probe, will be restarted")
      killing++;
  }
  EXPECT_GE(unhealthy, probe.value("failureThreshold", 3)) << events.dump(1);
  EXPECT_EQ(killing, 1) << events.dump(1);

  // The same pod leads again and the run ends, each cell once.
  ASSERT_TRUE(Eventually([&] { return Leader() == leader && ReadyControllers() == 1; }, 60s)) << Logs();
  ASSERT_TRUE(Finishes("hung", 240s)) << Logs();
  const json run = Get("br/hung");
  ASSERT_EQ(run["status"]["phase"], "Succeeded") << run["status"].dump(1);
  ASSERT_EQ(run["status"]["results"].size(), 3u);
  EXPECT_EQ(run["status"]["results"][0], before) << "a finished cell was changed or run again";
  std::map<std::string, int> finished;
  for (const json& e : Get("events", "--field-selector", "involvedObject.name=hung").value("items", json::array())) {
    if (e["reason"] == "CellFinished") finished[e["message"].get<std::string>().substr(0, 20)] += e.value("count", 1);
  }
  EXPECT_EQ(finished.size(), 3u);
  for (const auto& [cell, n] : finished) EXPECT_EQ(n, 1) << cell;
}

}  // namespace
}  // namespace fairbench::containers
