// Services whose port is not their targetPort, for containers of the
// engine (whose /etc/hosts the kubelet writes): a client container that
// dials NAME:port — bash's /dev/tcp, resolving through that file — and
// what the server container wrote comes back, by a numeric targetPort and
// by a named container port.
#include "tests/containers/docker_env.h"
#include "tests/kubelet/kubelet_test_env.h"

namespace fairbench::kubelet::testenv {
namespace {

class ServiceTest : public KubeletTest {};

// Catches: a Service's name mapped to the pod's IP when its port is not
// the targetPort (the client's connection to NAME:port refused), the
// targetPort's name not resolved through the pod's container ports, or
// a forwarder that does not carry the server's bytes back.
TEST_F(ServiceTest, ClientDialsNamePortOfAServiceWhoseTargetPortDiffers) {
  if (containers::DockerHost().empty()) GTEST_SKIP() << "no Docker engine answers (scripts/docker-engine start)";
  const std::string image = containers::Image("fairbench-target-grpc");
  if (containers::Inspect(image).is_null()) GTEST_SKIP() << image << " not built (ctest -L containers builds it)";
  node_ = "services-" + std::to_string(getpid());
  StartKubelet({"--container-runtime", "docker", "--docker-host", containers::DockerHost()});
  // A server that greets each connection on POD_IP:8099 (perl, in the image).
  Apply("apiVersion: v1\nkind: Pod\nmetadata: {name: greeter, labels: {app: greeter}}\nspec:\n  nodeName: " + node_ +
        "\n  terminationGracePeriodSeconds: 1\n  automountServiceAccountToken: false\n  containers:\n"
        "  - name: main\n    image: " +
        image +
        "\n"
        "    command: [perl, -MIO::Socket::INET, -e, '$s = IO::Socket::INET->new(LocalAddr => $ENV{POD_IP},"
        " LocalPort => 8099, Listen => 8, ReuseAddr => 1) or die $!; while ($c = $s->accept) {"
        " print $c \"hello from $ENV{HOSTNAME}\\n\"; close $c }']\n"
        "    env: [{name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}]\n"
        "    ports: [{name: greet, containerPort: 8099}]\n"
        "    readinessProbe: {tcpSocket: {port: greet}, periodSeconds: 1}\n"
        "---\napiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  selector: {app: greeter}\n"
        "  ports: [{port: 80, targetPort: 8099}]\n"
        "---\napiVersion: v1\nkind: Service\nmetadata: {name: named}\nspec:\n  selector: {app: greeter}\n"
        "  ports: [{port: 8080, targetPort: greet}]\n");
  WaitPod(
      "greeter", [](const Json& p) { return Condition(p, "Ready") == "True"; }, 60s);
  // The client reads one line from each Service by name (a few tries: the
  // names appear in its /etc/hosts within a second of the server's Ready).
  Apply("apiVersion: v1\nkind: Pod\nmetadata: {name: client}\nspec:\n  nodeName: " + node_ +
        "\n  restartPolicy: Never\n  automountServiceAccountToken: false\n  containers:\n"
        "  - name: main\n    image: " +
        image +
        "\n"
        "    command: [bash, -c, 'for n in 1 2 3 4 5 6 7 8 9 10; do"
        " if exec 3<>/dev/tcp/web/80 && exec 4<>/dev/tcp/named." +
        ns() +
        ".svc/8080; then"
        " head -1 <&3; head -1 <&4; exit 0; fi; sleep 1; done; exit 1']\n");
  Json client = WaitPod(
      "client", [](const Json& p) { return Phase(p) == "Succeeded" || Phase(p) == "Failed"; }, 60s);
  EXPECT_EQ(Phase(client), "Succeeded");
  EXPECT_EQ(KubectlOk({"logs", "client"}), "hello from greeter\nhello from greeter\n");
}

}  // namespace
}  // namespace fairbench::kubelet::testenv
