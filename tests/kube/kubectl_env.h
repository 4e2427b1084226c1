// The fixture of the tests that run the real kubectl (and helm) against the
// test API server: HTTPS with the administrator's client certificate, a
// private HOME and cache per test, the fairbench client on the same
// kubeconfig. kubectl and helm must be present (PATH or .tools/bin from
// `scripts/setup --with-tools`); if they are not, the tests fail and say so.
// A test that needs other server options (RBAC) overrides ServerOptions.
#pragma once

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "controller/kube/exec_credential.h"
#include "tests/kube/kube_test_env.h"
#include "testing/support/bin_dir.h"

namespace fairbench::kube {

class Kubectl : public testenv::KubeTest {
 protected:
  virtual apiserver::TestApiServerOptions ServerOptions() const {
    apiserver::TestApiServerOptions o;
    o.tls = true;
    return o;
  }
  void SetUp() override {
    kubectl_ = fairbench::testing::FindTool("kubectl");
    ASSERT_FALSE(kubectl_.empty()) << "kubectl not found on PATH nor in " << FAIRBENCH_SOURCE_DIR
                                   << "/.tools/bin: run scripts/setup --with-tools";
    Start(ServerOptions());
    char tmpl[] = "/tmp/fairbench-kubectl-XXXXXX";
    dir_ = mkdtemp(tmpl);
    kubeconfig_ = dir_ + "/kubeconfig";
    ASSERT_TRUE(server_->WriteKubeconfig(kubeconfig_).ok());
    auto cfg = LoadKubeconfig({{kubeconfig_}, "", nullptr});
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    auto c = Client::Create(*cfg, testenv::FastRetries());
    ASSERT_TRUE(c.ok());
    client_ = std::move(*c);
  }
  void TearDown() override {
    KubeTest::TearDown();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  std::vector<std::string> Args(std::vector<std::string> args) const {
    // A private HOME and cache: no state from the machine or earlier runs.
    args.insert(args.begin(), {"--kubeconfig", kubeconfig_, "--cache-dir", dir_ + "/cache"});
    return args;
  }
  // `tool` (kubectl by default) with the kubeconfig; HOME is the test's.
  CommandResult RunTool(const std::string& tool, std::vector<std::string> args) {
    auto r = RunCommand(tool, std::move(args), {{"HOME", dir_}, {"KUBECONFIG", ""}}, std::chrono::seconds(60));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : CommandResult{};
  }
  CommandResult Run(std::vector<std::string> args) { return RunTool(kubectl_, Args(std::move(args))); }
  // Runs and expects success; returns stdout.
  std::string Ok(std::vector<std::string> args) {
    std::string shown;
    for (const auto& a : args) shown += " " + a;
    auto r = Run(std::move(args));
    EXPECT_EQ(r.exit_code, 0) << "kubectl" << shown << "\n" << r.out << r.err;
    return r.out;
  }
  std::string Data(const std::string& name) const { return testenv::TestData(name); }

  std::string kubectl_;
  std::string dir_;
  std::string kubeconfig_;
};

}  // namespace fairbench::kube
