// The test kubelet's grpc readiness probe for pods run as containers (the
// engine's, host network): the reference gRPC target's image, this build's,
// serving on the pod IP. The process runtime's probes are in
// tests/kubelet/pod_test.cc; this is the same probe reaching a container.
#include "tests/containers/docker_env.h"
#include "tests/kubelet/kubelet_test_env.h"

namespace fairbench::kubelet::testenv {
namespace {

class DockerKubeletTest : public KubeletTest {
 protected:
  void SetUp() override {
    FAIRBENCH_NEED_ENGINE();
    KubeletTest::SetUp();
    // Its own node name: a kubelet removes the containers an earlier one of
    // its node left, and the engine may be shared.
    node_ = "grpc-probe-" + std::to_string(getpid());
  }
  void TearDown() override {
    KubeletTest::TearDown();  // SIGTERM: the kubelet removes its pods' containers
    EXPECT_TRUE(containers::ContainersLabelled("fairbench.dev/test-kubelet-node=" + node_).empty())
        << "a container outlived its kubelet";
  }
};

// Catches: the grpc probe run only for process pods (the container never
// Ready), or run without the probe's service (no.such.Service would pass).
TEST_F(DockerKubeletTest, GrpcReadinessProbeOfAContainer) {
  StartKubelet({"--container-runtime", "docker", "--docker-host", containers::DockerHost()});
  const auto target = [](const std::string& name, int port, const std::string& service) {
    return "  - name: " + name + "\n    image: " + containers::Image("fairbench-target-grpc") +
           "\n    args: ['--host', '$(POD_IP)', '--port', '" + std::to_string(port) + "', '--threads', '1']\n" +
           "    env: [{name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}]\n" +
           "    readinessProbe: {grpc: {port: " + std::to_string(port) + ", service: " + service +
           "}, periodSeconds: 1}\n";
  };
  // No service account token: this API server has no ServiceAccount "default".
  Apply("apiVersion: v1\nkind: Pod\nmetadata: {name: grpc}\nspec:\n  nodeName: " + node_ +
        "\n  terminationGracePeriodSeconds: 2\n  automountServiceAccountToken: false\n  containers:\n" +
        target("echo", 8097, "fairbench.echo.v1.Echo") + target("unknown", 8098, "no.such.Service"));
  auto ready = [](const Json& p, const std::string& name) {
    for (const Json& c : p["status"].value("containerStatuses", Json::array())) {
      if (c["name"] == name) return c["ready"].get<bool>();
    }
    return false;
  };
  Json pod = WaitPod(
      "grpc", [&](const Json& p) { return ready(p, "echo"); }, 60s);
  EXPECT_NE(pod["status"]["containerStatuses"][0].value("containerID", "").rfind("docker://", 0), std::string::npos);
  std::this_thread::sleep_for(1500ms);  // a probe or more of the other
  EXPECT_FALSE(ready(*Pod("grpc"), "unknown")) << "Ready although its service is unknown to the server";
}

}  // namespace
}  // namespace fairbench::kubelet::testenv
