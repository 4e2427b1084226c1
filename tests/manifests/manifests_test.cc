// The BenchmarkRun CRD in manifests/ is the one the API model generates, it
// builds with kustomize, and kubectl installs it in Kubernetes' own
// kube-apiserver (scripts/kube), which then accepts the study's run with the
// CRD's defaults and refuses a broken one with its 422 message.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "api/crd.h"
#include "controller/kube/exec_credential.h"
#include "testing/support/kube_cluster.h"
#include "testing/support/temp_dir.h"

namespace fairbench {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string kRoot = FAIRBENCH_SOURCE_DIR;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ManifestsTest, TheCrdInManifestsIsTheGeneratedOne) {
  const std::string file = Read(kRoot + "/manifests/crd/benchmarkruns.fairbench.dev.yaml");
  EXPECT_EQ(file, api::BenchmarkRunCrdYaml())
      << "manifests/crd drifted from the API model: run build/bin/fairbench crd > manifests/crd/benchmarkruns.fairbench.dev.yaml";
}

class ManifestsKubectlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::TempDir::Create("fairbench-manifests");
    ASSERT_TRUE(dir.ok());
    tmp_.emplace(std::move(*dir));
    dir_ = tmp_->path().string();
    auto bin = testing::KubeBinDir();
    ASSERT_TRUE(bin.ok()) << bin.status().ToString();
    kubectl_ = *bin + "/kubectl";
  }
  // The cluster, for the tests that talk to one.
  void Cluster() {
    auto cluster = testing::KubeCluster::Up(dir_ + "/cluster");
    ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
    cluster_.emplace(std::move(*cluster));
  }
  kube::CommandResult Kubectl(std::vector<std::string> args) {
    args.insert(args.begin(), {"--kubeconfig", cluster_ ? cluster_->admin_kubeconfig() : dir_ + "/none", "--cache-dir",
                               dir_ + "/cache"});
    auto r = kube::RunCommand(kubectl_, args, {{"HOME", dir_}, {"KUBECONFIG", ""}}, 60s);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : kube::CommandResult{};
  }
  std::string kubectl_;
  std::string dir_;
  std::optional<testing::TempDir> tmp_;
  std::optional<testing::KubeCluster> cluster_;  // destroyed before its folder
};

TEST_F(ManifestsKubectlTest, KustomizeBuildsTheInstall) {
  const auto r = Kubectl({"kustomize", kRoot + "/manifests"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("name: benchmarkruns.fairbench.dev"), std::string::npos);
}

TEST_F(ManifestsKubectlTest, KubectlInstallsTheCrdAndTheStudyRun) {
  Cluster();
  auto r = Kubectl({"apply", "-k", kRoot + "/manifests"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // kubectl 1.37's wait fails at once on a CRD with no conditions yet:
  // asked again until it waits.
  for (int i = 0; i < 10; ++i) {
    r = Kubectl({"wait", "--for=condition=Established", "crd/benchmarkruns.fairbench.dev", "--timeout=30s"});
    if (r.exit_code == 0) break;
    std::this_thread::sleep_for(500ms);
  }
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  r = Kubectl({"apply", "-f", kRoot + "/examples/study.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("benchmarkrun.fairbench.dev/cpp-frameworks created"), std::string::npos) << r.out;
  r = Kubectl({"get", "br"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("PHASE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cpp-frameworks"), std::string::npos) << r.out;
  // The server applied the CRD's defaults: they are the model's.
  r = Kubectl(
      {"get", "br", "cpp-frameworks", "-o", "jsonpath={.spec.load.timeout} {.spec.cooldown} {.spec.repetitions}"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "2s 10s 1");

  const std::string broken = dir_ + "/broken.yaml";
  std::ofstream(broken)
      << "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: broken}\n"
         "spec:\n  targets: [{name: x, port: 8080}]\n  scenarios: [{name: hello, request: {path: /}}]\n"
         "  load: {threads: four}\n";
  r = Kubectl({"apply", "-f", broken});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("spec.load.threads"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Invalid"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace fairbench
