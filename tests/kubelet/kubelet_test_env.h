// Shared set-up for the test kubelet's tests: the test API server in this
// process (plain HTTP, loopback), a kubeconfig for it, a real
// fairbench-test-kubelet process registered as a node, the real kubectl,
// and an image map naming the programs pods may run.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "controller/kube/client.h"
#include "controller/kube/exec_credential.h"
#include "controller/kube/kubeconfig.h"
#include "testing/apiserver/test_apiserver.h"
#include "testing/support/bin_dir.h"
#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"

namespace fairbench::kubelet::testenv {

using kube::Json;
using namespace std::chrono_literals;

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

template <typename F>
bool Eventually(F f, std::chrono::milliseconds timeout = 10s) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (f()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return f();
}

class KubeletTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = fairbench::testing::TempDir::Create("fairbench-kubelet");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_ = std::make_unique<fairbench::testing::TempDir>(std::move(*dir));
    const apiserver::TestApiServerOptions options;
    auto s = apiserver::TestApiServer::Start(options);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
    kubeconfig_ = dir_->File("kubeconfig");
    ASSERT_TRUE(server_->WriteKubeconfig(kubeconfig_).ok());
    kube::RestConfig cfg;
    cfg.server = server_->url();
    cfg.timeout = 5s;
    auto c = kube::Client::Create(cfg);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = std::move(*c);
    // One /24 per test process: tests of this suite run in parallel.
    ip_base_ = "127.0." + std::to_string(100 + getpid() % 150);
    std::ofstream images(dir_->File("images.yaml"));
    images << "example.org/fairbench/httplib:dev: [" << fairbench::testing::BinaryPath("fairbench-target-cpp-httplib-debian")
           << "]\n"
           << "example.org/fairbench/grpc:dev: [" << fairbench::testing::BinaryPath("fairbench-target-grpc") << "]\n"
           << "example.org/sh:1: [/bin/sh, -c]\n";
  }

  void TearDown() override {
    if (kubelet_ && kubelet_->running()) {
      (void)kubelet_->Terminate(SIGTERM, 5s);
    }
    client_.reset();
    if (server_) server_->Stop();
  }

  // Starts the kubelet and waits for its "listening on" line.
  void StartKubelet(const std::vector<std::string>& extra = {}) {
    fairbench::testing::SubprocessOptions o;
    o.argv = {fairbench::testing::BinaryPath("fairbench-test-kubelet"),
              "--kubeconfig",
              kubeconfig_,
              "--node",
              node_,
              "--cpus",
              cpus_,
              "--memory",
              "4Gi",
              "--images",
              dir_->File("images.yaml"),
              "--pod-ip-base",
              ip_base_,
              "--listen",
              "127.0.0.1:0",
              "--log-dir",
              dir_->File("logs"),
              "--heartbeat",
              "1s",
              "--restart-backoff",
              "200ms",
              "--stats-period",
              "2s"};
    o.argv.insert(o.argv.end(), extra.begin(), extra.end());
    o.stdout_to = fairbench::testing::Redirect::File(dir_->File("kubelet.out"));
    o.stderr_to = fairbench::testing::Redirect::File(dir_->File("kubelet.err"));
    auto p = fairbench::testing::Subprocess::Start(o);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    kubelet_ = std::make_unique<fairbench::testing::Subprocess>(std::move(*p));
    ASSERT_TRUE(Eventually([&] {
      return ReadFile(dir_->File("kubelet.out")).find("listening on") != std::string::npos;
    })) << ReadFile(dir_->File("kubelet.err"));
    const std::string out = ReadFile(dir_->File("kubelet.out"));
    kubelet_port_ = std::stoi(out.substr(out.rfind(':') + 1));
  }

  // kubectl with a private HOME and cache; returns exit code and output.
  kube::CommandResult Kubectl(std::vector<std::string> args, std::chrono::milliseconds timeout = 30s) {
    static const std::string kubectl = fairbench::testing::FindTool("kubectl");
    EXPECT_FALSE(kubectl.empty()) << "kubectl not found on PATH nor in .tools/bin";
    args.insert(args.begin(), {"--kubeconfig", kubeconfig_, "--cache-dir", dir_->File("cache")});
    auto r = kube::RunCommand(kubectl, args, {{"HOME", dir_->path().string()}, {"KUBECONFIG", ""}}, timeout);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : kube::CommandResult{};
  }
  std::string KubectlOk(std::vector<std::string> args) {
    std::string shown;
    for (const auto& a : args) shown += " " + a;
    auto r = Kubectl(std::move(args));
    EXPECT_EQ(r.exit_code, 0) << "kubectl" << shown << "\n" << r.out << r.err;
    return r.out;
  }
  // Applies a manifest (YAML text) with kubectl.
  void Apply(const std::string& yaml) {
    const std::string f = dir_->File("manifest-" + std::to_string(manifests_++) + ".yaml");
    std::ofstream(f) << yaml;
    KubectlOk({"apply", "-f", f});
  }

  std::optional<Json> Pod(const std::string& name) {
    auto p = client_->Get(kube::resources::Pods(), "default", name);
    if (!p.ok()) return std::nullopt;
    return *p;
  }
  // Waits until the pod exists and `pred` holds for it; returns it.
  Json WaitPod(const std::string& name, const std::function<bool(const Json&)>& pred,
               std::chrono::milliseconds timeout = 15s) {
    Json last;
    bool ok = Eventually(
        [&] {
          auto p = Pod(name);
          if (!p) return false;
          last = *p;
          return pred(*p);
        },
        timeout);
    EXPECT_TRUE(ok) << "pod " << name << " never matched; last: " << last.dump(2)
                    << "\nkubelet: " << ReadFile(dir_->File("kubelet.err"));
    return last;
  }
  static std::string Phase(const Json& pod) { return pod.value("status", Json::object()).value("phase", ""); }
  static std::string Condition(const Json& pod, const std::string& type) {
    for (const Json& c : pod.value("status", Json::object()).value("conditions", Json::array())) {
      if (c.value("type", "") == type) return c.value("status", "");
    }
    return "";
  }

  std::unique_ptr<fairbench::testing::TempDir> dir_;
  std::unique_ptr<apiserver::TestApiServer> server_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<fairbench::testing::Subprocess> kubelet_;
  std::string kubeconfig_;
  std::string node_ = "node-a";
  std::string cpus_ = "0-1";
  std::string ip_base_;
  int kubelet_port_ = 0;
  int manifests_ = 0;
};

}  // namespace fairbench::kubelet::testenv
