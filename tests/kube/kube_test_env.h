// Shared set-up for the Kubernetes tests: Kubernetes' own control plane
// (the cluster the tests share, testing/support/kube_cluster.h), a namespace
// of the test's own, a FaultProxy in front of the API server for the faults
// a test injects, a Client pointed at the proxy (plain HTTP on loopback; the
// proxy forwards as the cluster's administrator), and helpers to install the
// tests' BenchmarkRun CRD and build objects.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "controller/kube/client.h"
#include "controller/kube/kubeconfig.h"
#include "testing/kubetest/cluster_fault_proxy.h"
#include "testing/support/kube_cluster.h"
#include "testing/kubetest/yaml_json.h"

extern "C" char** environ;

namespace fairbench::kube::testenv {

inline std::string TestData(const std::string& name) { return std::string(KUBE_TESTDATA) + "/" + name; }

inline Json LoadYaml(const std::string& name) {
  auto text = ReadSmallFile(TestData(name));
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  auto j = kubetest::YamlToJson(text.ok() ? *text : "");
  EXPECT_TRUE(j.ok()) << j.status().ToString();
  return j.ok() ? *j : Json();
}

// A client with fast retries: tests must not wait for production backoffs.
inline ClientOptions FastRetries(Clock* clock = nullptr) {
  ClientOptions o;
  o.max_attempts = 5;
  o.retry_backoff = {std::chrono::milliseconds(5), std::chrono::milliseconds(50), 2.0, 0.0};
  o.max_retry_after = std::chrono::seconds(2);
  o.clock = clock;
  return o;
}

inline std::unique_ptr<Client> ClientFor(const std::string& url, ClientOptions options = FastRetries(),
                                         std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
  RestConfig cfg;
  cfg.server = url;
  cfg.timeout = timeout;
  auto c = Client::Create(cfg, options);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(*c);
}

// The tests' BenchmarkRun CRD (testdata/benchmarkrun-crd.yaml): a group of
// its own, so that it lives in the shared cluster beside the product's.
inline const std::string kTestGroup = "kubetest.fairbench.dev";
inline ResourceType TestRuns() { return {kTestGroup, "v1alpha1", "BenchmarkRun", "benchmarkruns", Scope::kNamespaced}; }

inline Json BenchmarkRun(const std::string& name, int threads = 4, const std::string& ns = "default") {
  return {{"apiVersion", kTestGroup + "/v1alpha1"},
          {"kind", "BenchmarkRun"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", {{"targets", {{{"name", "drogon"}, {"port", 8080}}}}, {"load", {{"threads", threads}}}}}};
}

inline Json ConfigMapJson(const std::string& name, const Json& data, const Json& labels = Json::object()) {
  Json cm = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}}}, {"data", data}};
  if (!labels.empty()) cm["metadata"]["labels"] = labels;
  return cm;
}

inline std::string Rv(const Json& o) { return o["metadata"].value("resourceVersion", ""); }

// Waits for a condition, polling; returns whether it became true.
template <typename F>
bool Eventually(F f, std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
  auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return f();
}

// A child process whose stdout and stderr the test reads as it runs (a
// `kubectl get --watch`, a slot holder to be killed). Killed on destruction.
class ChildProcess {
 public:
  static std::unique_ptr<ChildProcess> Spawn(const std::string& path, const std::vector<std::string>& args,
                                             const std::vector<std::string>& extra_env = {}) {
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) return nullptr;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, out[1], 2);
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
    env_strings.insert(env_strings.end(), extra_env.begin(), extra_env.end());
    std::vector<char*> envp;
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_strings = {path};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_strings) argv.push_back(a.data());
    argv.push_back(nullptr);
    auto child = std::unique_ptr<ChildProcess>(new ChildProcess());
    int rc = posix_spawn(&child->pid_, path.c_str(), &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    if (rc != 0) {
      close(out[0]);
      return nullptr;
    }
    child->fd_ = out[0];
    fcntl(child->fd_, F_SETFL, O_NONBLOCK);
    return child;
  }
  ~ChildProcess() {
    Kill();
    if (fd_ >= 0) close(fd_);
  }
  // Reads output until `needle` appears (true) or the timeout passes.
  bool WaitFor(const std::string& needle, std::chrono::milliseconds timeout) {
    auto until = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      char buf[4096];
      ssize_t n;
      while ((n = read(fd_, buf, sizeof buf)) > 0) output_.append(buf, static_cast<size_t>(n));
      if (output_.find(needle, searched_) != std::string::npos) return true;
      if (std::chrono::steady_clock::now() >= until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  const std::string& output() const { return output_; }
  // Later WaitFor calls look only at output after this point.
  void Mark() { searched_ = output_.size(); }

 private:
  ChildProcess() = default;
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string output_;
  size_t searched_ = 0;
};

class KubeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = fairbench::testing::SharedKubeCluster();
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    cluster_ = *c;
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    auto ns = fairbench::testing::TestNamespace::Create(*cluster_, info != nullptr ? info->name() : "kube");
    ASSERT_TRUE(ns.ok()) << ns.status().ToString();
    ns_.emplace(std::move(*ns));
    auto proxy = kubetest::StartFaultProxy(*cluster_);
    ASSERT_TRUE(proxy.ok()) << proxy.status().ToString();
    proxy_ = std::move(*proxy);
    client_ = ClientFor(proxy_->url());
  }

  void TearDown() override {
    // Clients first: their keep-alive connections let the proxy stop at once.
    client_.reset();
    if (proxy_) proxy_->Stop();
    proxy_.reset();
    ns_.reset();
  }

  // The test's own namespace.
  const std::string& ns() const { return ns_->name(); }
  kubetest::FaultInjector& faults() { return proxy_->faults(); }
  const std::string& url() const { return proxy_->url(); }

  // Installs the tests' BenchmarkRun CRD (one for the whole shared cluster:
  // created by the first test that needs it) and waits until it is served.
  void InstallCrd() {
    Json crd = LoadYaml("benchmarkrun-crd.yaml");
    auto created = client_->Create(resources::CustomResourceDefinitions(), "", crd);
    ASSERT_TRUE(created.ok() || created.reason() == Reason::kAlreadyExists) << created.error().ToString();
    ASSERT_TRUE(Eventually(
        [&] {
          auto got =
              client_->Get(resources::CustomResourceDefinitions(), "", crd["metadata"]["name"].get<std::string>());
          if (!got.ok()) return false;
          for (const auto& c : (*got)["status"].value("conditions", Json::array())) {
            if (c.value("type", "") == "Established" && c.value("status", "") == "True") return true;
          }
          return false;
        },
        std::chrono::seconds(30)));
  }

  fairbench::testing::KubeCluster* cluster_ = nullptr;
  std::optional<fairbench::testing::TestNamespace> ns_;
  std::unique_ptr<kubetest::FaultProxy> proxy_;
  std::unique_ptr<Client> client_;
};

}  // namespace fairbench::kube::testenv
