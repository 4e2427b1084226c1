// The BenchmarkRun CRD in manifests/ is the one the API model generates, it
// builds with kustomize, and real kubectl installs it in the test API server
// and then accepts the study's run and refuses a broken one with the
// server's 422 message.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/api/crd.h"
#include "controller/kube/exec_credential.h"
#include "tests/kube/kube_test_env.h"
#include "testing/support/bin_dir.h"

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

class ManifestsKubectlTest : public kube::testenv::KubeTest {
 protected:
  void SetUp() override {
    kubectl_ = testing::FindTool("kubectl");
    ASSERT_FALSE(kubectl_.empty()) << "kubectl not found: run scripts/setup --with-tools";
    apiserver::TestApiServerOptions o;
    o.tls = true;
    Start(o);
    char tmpl[] = "/tmp/fairbench-manifests-XXXXXX";
    dir_ = mkdtemp(tmpl);
    ASSERT_TRUE(server_->WriteKubeconfig(dir_ + "/kubeconfig").ok());
  }
  void TearDown() override {
    KubeTest::TearDown();
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  kube::CommandResult Kubectl(std::vector<std::string> args) {
    args.insert(args.begin(), {"--kubeconfig", dir_ + "/kubeconfig", "--cache-dir", dir_ + "/cache"});
    auto r = kube::RunCommand(kubectl_, args, {{"HOME", dir_}, {"KUBECONFIG", ""}}, 60s);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : kube::CommandResult{};
  }
  std::string kubectl_;
  std::string dir_;
};

TEST_F(ManifestsKubectlTest, KustomizeBuildsTheInstall) {
  const auto r = Kubectl({"kustomize", kRoot + "/manifests"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("name: benchmarkruns.fairbench.dev"), std::string::npos);
}

TEST_F(ManifestsKubectlTest, KubectlInstallsTheCrdAndTheStudyRun) {
  auto r = Kubectl({"apply", "-k", kRoot + "/manifests"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  r = Kubectl({"wait", "--for=condition=Established", "crd/benchmarkruns.fairbench.dev", "--timeout=30s"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  r = Kubectl({"apply", "-f", kRoot + "/examples/study.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("benchmarkrun.fairbench.dev/cpp-frameworks created"), std::string::npos) << r.out;
  r = Kubectl({"get", "br"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("PHASE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cpp-frameworks"), std::string::npos) << r.out;
  // The server applied the CRD's defaults: they are the model's.
  r = Kubectl({"get", "br", "cpp-frameworks", "-o", "jsonpath={.spec.load.timeout} {.spec.cooldown} {.spec.repetitions}"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "2s 10s 1");

  const std::string broken = dir_ + "/broken.yaml";
  std::ofstream(broken) << "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: broken}\n"
                           "spec:\n  targets: [{name: x, port: 8080}]\n  scenarios: [{name: hello, request: {path: /}}]\n"
                           "  load: {threads: four}\n";
  r = Kubectl({"apply", "-f", broken});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("spec.load.threads"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Invalid"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace fairbench
