// The fixture of the tests that run the real kubectl (and helm) built with
// the cluster (KubeCluster::kubectl()) against the real kube-apiserver the
// tests share: HTTPS with the administrator's client certificate, a
// kubeconfig whose context is the test's own namespace, a private HOME and
// cache per test, and the fairbench client on that same kubeconfig (HTTPS
// to the API server itself, not through the fault proxy).
#pragma once

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "controller/kube/exec_credential.h"
#include "tests/kube/kube_test_env.h"

namespace fairbench::kube {

// A kubeconfig for `cluster` with the context's namespace `ns`, as its
// administrator (client certificate) or, with `token`, as whoever the
// bearer token names.
inline bool WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  return f.good();
}

class Kubectl : public testenv::KubeTest {
 protected:
  void SetUp() override {
    KubeTest::SetUp();
    if (HasFatalFailure()) return;
    kubectl_ = cluster_->kubectl();
    char tmpl[] = "/tmp/fairbench-kubectl-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    kubeconfig_ = dir_ + "/kubeconfig";
    ASSERT_TRUE(WriteTextFile(kubeconfig_, fairbench::testing::KubeconfigFor(*cluster_, ns())));
    auto cfg = LoadKubeconfig({{kubeconfig_}, "", nullptr});
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    auto c = Client::Create(*cfg, testenv::FastRetries());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
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
