// Shared set-up for the test kubelet's tests: Kubernetes' own control plane
// (the cluster the tests share, testing/support/kube_cluster.h), a namespace
// of the test's own, a real fairbench-test-kubelet process registered as a
// node of a name no other test uses (its own node certificate, under the
// Node authorizer and NodeRestriction, serving HTTPS in the cluster's node
// network namespace, where kube-apiserver's node proxy and pods/log reach
// it), the cluster's kubectl, and an image map naming the programs pods may
// run. Pods are pinned to the test's node with spec.nodeName; the node
// carries a NoSchedule taint of its own so that kube-scheduler puts no other
// test's pod on it. The test's Node is deleted when the test ends.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "controller/kube/client.h"
#include "controller/kube/exec_credential.h"
#include "controller/kube/kubeconfig.h"
#include "testing/kubetest/cluster_fault_proxy.h"
#include "testing/support/bin_dir.h"
#include "testing/support/kube_cluster.h"
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

// The taint every test kubelet's node carries: kube-scheduler binds no
// other test's pod to it (pods pinned with spec.nodeName pass, as on a real
// kubelet, which admits them without looking at NoSchedule taints).
inline constexpr char kIsolationTaint[] = "fairbench.dev/kubelet-test=only-pinned:NoSchedule";

// A /24 of 127.0.X for one test's pods, held (an flock on a file of its
// name) until the test ends: tests of this suite run in parallel, and two
// kubelets giving their pods one address would make their targets' binds
// collide.
class PodIpRange {
 public:
  static std::optional<PodIpRange> Claim() {
    for (int i = 0; i < 150; ++i) {
      const int x = 100 + (static_cast<int>(getpid()) + i) % 150;
      const std::string lock = "/tmp/fairbench-kubelet-test-127.0." + std::to_string(x) + ".lock";
      const int fd = open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
      if (fd < 0) continue;
      if (flock(fd, LOCK_EX | LOCK_NB) == 0) return PodIpRange(fd, "127.0." + std::to_string(x));
      close(fd);
    }
    return std::nullopt;
  }
  PodIpRange(PodIpRange&& o) noexcept : fd_(std::exchange(o.fd_, -1)), base_(std::move(o.base_)) {}
  PodIpRange& operator=(PodIpRange&&) = delete;
  ~PodIpRange() {
    if (fd_ >= 0) close(fd_);
  }
  const std::string& base() const { return base_; }

 private:
  PodIpRange(int fd, std::string base) : fd_(fd), base_(std::move(base)) {}
  int fd_ = -1;
  std::string base_;
};

class KubeletTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = fairbench::testing::SharedKubeCluster();
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    cluster_ = *c;
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    auto created =
        fairbench::testing::TestNamespace::Create(*cluster_, std::string("kubelet-") + (info ? info->name() : "test"));
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    ns_.emplace(std::move(*created));
    // The namespace's name is unique in the cluster: so is the node's.
    node_ = ns_->name();
    auto dir = fairbench::testing::TempDir::Create("fairbench-kubelet");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_ = std::make_unique<fairbench::testing::TempDir>(std::move(*dir));
    // kubectl as the cluster's administrator, in the test's namespace.
    kubeconfig_ = dir_->File("kubeconfig");
    std::ofstream(kubeconfig_) << fairbench::testing::KubeconfigFor(*cluster_, ns());
    // The test's client: a FaultProxy without faults, plain HTTP on
    // loopback, forwarding as the administrator (also what raw requests
    // to the API server's routes go through).
    auto proxy = kubetest::StartFaultProxy(*cluster_);
    ASSERT_TRUE(proxy.ok()) << proxy.status().ToString();
    proxy_ = std::move(*proxy);
    kube::RestConfig cfg;
    cfg.server = proxy_->url();
    cfg.timeout = 10s;
    // Fast retries: a test must not wait for production backoffs.
    kube::ClientOptions co;
    co.retry_backoff = {5ms, 50ms, 2.0, 0.0};
    co.max_retry_after = 2s;
    auto client = kube::Client::Create(cfg, co);
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(*client);
    auto range = PodIpRange::Claim();
    ASSERT_TRUE(range.has_value()) << "every 127.0.X range for pods is taken";
    ip_range_.emplace(std::move(*range));
    ip_base_ = ip_range_->base();
    std::ofstream images(dir_->File("images.yaml"));
    images << "example.org/fairbench/httplib:dev: ["
           << fairbench::testing::BinaryPath("fairbench-target-cpp-httplib-debian") << "]\n"
           << "example.org/fairbench/grpc:dev: [" << fairbench::testing::BinaryPath("fairbench-target-grpc") << "]\n"
           << "example.org/sh:1: [/bin/sh, -c]\n";
  }

  void TearDown() override {
    if (kubelet_ && kubelet_->running()) {
      // 10 s: the kubelet's endpoint waits out an idle keep-alive
      // connection of kube-apiserver's (cpp-httplib's 5 s) before it exits.
      (void)kubelet_->Terminate(SIGTERM, 10s);
    }
    if (client_ && ns_) {
      // The node is gone: its pods would wait for it for ever (until the pod
      // garbage collector's quarantine passes). Removed at once, then the
      // Node itself (cluster-scoped; its Lease goes with it, owned by it).
      kube::DeleteOptions now;
      now.grace_period_seconds = 0;
      (void)client_->DeleteCollection(kube::resources::Pods(), ns(), {}, now);
      if (started_) {
        auto d = client_->Delete(kube::resources::Nodes(), "", node_);
        EXPECT_TRUE(d.ok() || d.reason() == kube::Reason::kNotFound) << d.error().ToString();
      }
    }
    client_.reset();
    if (proxy_) proxy_->Stop();
    ns_.reset();
  }

  const std::string& ns() const { return ns_->name(); }

  // Starts the kubelet as node node_ and waits for its "listening on" line.
  void StartKubelet(std::vector<std::string> extra = {}) {
    auto creds = cluster_->Node(node_);
    ASSERT_TRUE(creds.ok()) << creds.status().ToString();
    bool taints = false;
    for (size_t i = 0; i + 1 < extra.size(); ++i) {
      if (extra[i] == "--taints") {
        extra[i + 1] += std::string(",") + kIsolationTaint;
        taints = true;
      }
    }
    if (!taints) extra.insert(extra.end(), {"--taints", kIsolationTaint});
    fairbench::testing::SubprocessOptions o;
    o.argv = {fairbench::testing::BinaryPath("fairbench-test-kubelet"),
              "--kubeconfig",
              creds->kubeconfig,
              "--tls-cert-file",
              creds->cert,
              "--tls-private-key-file",
              creds->key,
              "--proxy-kubeconfig",
              creds->proxy_kubeconfig,
              "--listen-netns",
              cluster_->node_netns(),
              "--listen",
              cluster_->node_address() + ":0",
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
    started_ = true;
    ASSERT_TRUE(
        Eventually([&] { return ReadFile(dir_->File("kubelet.out")).find("listening on") != std::string::npos; }, 20s))
        << ReadFile(dir_->File("kubelet.err"));
    const std::string out = ReadFile(dir_->File("kubelet.out"));
    kubelet_port_ = std::stoi(out.substr(out.rfind(':') + 1));
  }

  // kubectl with a private HOME and cache; returns exit code and output.
  kube::CommandResult Kubectl(std::vector<std::string> args, std::chrono::milliseconds timeout = 30s) {
    const std::string kubectl = cluster_->kubectl();
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
    auto p = client_->Get(kube::resources::Pods(), ns(), name);
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

  fairbench::testing::KubeCluster* cluster_ = nullptr;
  std::optional<fairbench::testing::TestNamespace> ns_;
  std::unique_ptr<fairbench::testing::TempDir> dir_;
  std::unique_ptr<kubetest::FaultProxy> proxy_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<fairbench::testing::Subprocess> kubelet_;
  std::optional<PodIpRange> ip_range_;
  std::string kubeconfig_;
  std::string node_;
  std::string cpus_ = "0-1";
  std::string ip_base_;
  int kubelet_port_ = 0;
  int manifests_ = 0;
  bool started_ = false;
};

}  // namespace fairbench::kubelet::testenv
