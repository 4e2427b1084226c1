// scripts/kube's cluster as a test sees it (testing::KubeCluster): a
// component that cannot start is named, with the end of its log, and
// nothing of the cluster is left running.
#include <gtest/gtest.h>

#include <filesystem>

#include "testing/support/kube_cluster.h"
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

}  // namespace
}  // namespace fairbench::testing
