// scripts/kube's cluster as a test sees it (testing::KubeCluster): a
// component that cannot start is named, with the end of its log, and
// nothing of the cluster is left running.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "testing/support/kube_cluster.h"
#include "testing/support/ports.h"
#include "testing/support/temp_dir.h"

namespace fairbench::testing {
namespace {

// Catches: a start-up failure reported without the component's name or
// why (kube-apiserver's own words about the flag it refused), or a
// half-started cluster left behind (etcd still running, its folder's pid
// files kept).
TEST(KubernetesClusterTest, AComponentThatCannotStartIsNamedWithItsLog) {
  auto dir = TempDir::Create("fairbench-kube-bad");
  ASSERT_TRUE(dir.ok());
  const std::string cluster_dir = (dir->path() / "cluster").string();
  auto cluster = KubeCluster::Up(cluster_dir, {"--authorization-mode=NoSuchMode"});
  ASSERT_FALSE(cluster.ok()) << "a kube-apiserver with an unknown authorization mode started";
  const std::string said = cluster.status().message();
  EXPECT_NE(said.find("kube-apiserver exited during start-up"), std::string::npos) << said;
  EXPECT_NE(said.find("NoSuchMode"), std::string::npos) << "kube-apiserver's own reason is missing:\n" << said;
  // Everything it started is stopped.
  EXPECT_FALSE(std::filesystem::exists(cluster_dir + "/pids/etcd")) << said;
  EXPECT_FALSE(std::filesystem::exists(cluster_dir + "/node-netns")) << said;
}

// A loopback port held open (bound and listening) until the end of the test.
class HeldPort {
 public:
  HeldPort() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0 && listen(fd_, 1) == 0 &&
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port_ = ntohs(addr.sin_port);
    }
  }
  ~HeldPort() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Catches: a cluster that fails to start because a port free when picked
// was taken before etcd or kube-apiserver bound it (another test's pick of
// the same port, as a CI run once saw): each picks again. The ports are
// the test's, in order (FAIRBENCH_KUBE_PORT_PICKS): etcd's first client
// port and kube-apiserver's first port are one this test holds.
TEST(KubernetesClusterTest, APortTakenBetweenItsPickAndItsBindIsPickedAgain) {
  HeldPort held;
  ASSERT_NE(held.port(), 0);
  std::string picks = std::to_string(held.port());
  for (int i = 0; i < 3; ++i) {
    auto p = FreeLoopbackPort();
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    picks += " " + std::to_string(*p);
  }
  picks += " " + std::to_string(held.port());
  ASSERT_EQ(setenv("FAIRBENCH_KUBE_PORT_PICKS", picks.c_str(), 1), 0);
  auto dir = TempDir::Create("fairbench-kube-taken");
  ASSERT_TRUE(dir.ok());
  auto cluster = KubeCluster::Up((dir->path() / "cluster").string());
  unsetenv("FAIRBENCH_KUBE_PORT_PICKS");
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  const std::string server = cluster->server();
  EXPECT_EQ(server.find(":" + std::to_string(held.port())), std::string::npos) << server;
  auto version = AdminKubectl(*cluster, {"get", "namespace", "default"});
  EXPECT_TRUE(version.ok()) << version.status().ToString();
}

}  // namespace
}  // namespace fairbench::testing
