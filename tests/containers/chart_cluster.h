// A cluster on one machine with pods as real containers, for the chart's
// end-to-end tests: Kubernetes' own control plane (etcd, kube-apiserver
// with TLS, Node,RBAC authorization, NodeRestriction and Pod Security
// admission; kube-controller-manager, whose Deployment and ReplicaSet
// controllers make the chart's pods and whose garbage collector removes
// what lost its owner; kube-scheduler binding them), built from Kubernetes'
// Go modules by scripts/kube; three test kubelets in container mode as its
// nodes (a target node on CPU 0, two load nodes on CPUs 0-1), each with
// its node certificate; and the chart installed by `helm install` (helm
// built from its Go module, within the server's version skew) with the
// images this build made (containers.images) into namespace "fairbench",
// created and labelled with kubectl to enforce the restricted Pod
// Security Standard — docs/local-cluster.md's steps. Nothing else is given to the
// controllers: they run as the chart's Deployment, with in-cluster
// configuration and the chart's service account and RBAC.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "testing/support/bin_dir.h"
#include "testing/support/ports.h"
#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"
#include "tests/containers/docker_env.h"
#include "tests/operator/cluster_test.h"

namespace fairbench::containers {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;
using operator_test::Eventually;

using operator_test::FreePort;

// Start, Logs, Run, Ok and Phase come from the operator tests' cluster;
// its Prepare (tokens, the process-mode image map) is not used.
class ChartCluster : public operator_test::ClusterTest {
 protected:
  static constexpr const char* kNamespace = "fairbench";
  // Node names of these tests: a kubelet removes what an earlier one of
  // its node left behind, so a test killed half-way leaves nothing.
  static constexpr const char* kNodes[3] = {"chart-target", "chart-load-1", "chart-load-2"};

  void SetUp() override {
    FAIRBENCH_NEED_ENGINE();
    auto dir = testing::TempDir::Create("fairbench-chart-e2e");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
    root_ = dir_->path();
    kubeconfig_ = (root_ / "kubeconfig").string();
    auto cluster = testing::KubeCluster::Up((root_ / "cluster").string());
    ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
    cluster_.emplace(std::move(*cluster));
    kubectl_ = cluster_->kubectl();
    helm_ = cluster_->bin_dir() + "/helm";
    audit_log_ = cluster_->audit_log();
    fs::copy_file(cluster_->admin_kubeconfig(), kubeconfig_, fs::copy_options::overwrite_existing);
    const char* roles[3] = {"fairbench.dev/role=target", "fairbench.dev/role=load", "fairbench.dev/role=load"};
    // A load node holds a controller (100m) beside an agent (one whole
    // CPU): two CPUs of capacity; the target node has CPU 0 alone.
    const char* cpus[3] = {"0", "0-1", "0-1"};
    for (int i = 0; i < 3; ++i) {
      auto creds = cluster_->Node(kNodes[i]);
      ASSERT_TRUE(creds.ok()) << creds.status().ToString();
      Start(kNodes[i], {testing::BinaryPath("fairbench-test-kubelet"),
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
                        "--node",
                        kNodes[i],
                        "--cpus",
                        cpus[i],
                        "--memory",
                        "4Gi",
                        "--labels",
                        roles[i],
                        "--container-runtime",
                        "docker",
                        "--docker-host",
                        DockerHost(),
                        "--pod-ip-base",
                        "127.0.4" + std::to_string(i),
                        "--listen",
                        cluster_->node_address() + ":0",
                        "--log-dir",
                        (root_ / kNodes[i]).string(),
                        "--heartbeat",
                        "1s",
                        "--restart-backoff",
                        "10s",
                        "--stats-period",
                        "2s"});
    }
    ASSERT_TRUE(Eventually(
        [&] {
          return Run({"get", "nodes"}).out.find(kNodes[2]) != std::string::npos;
        },
        20s))
        << Logs();
    // The namespace enforces "restricted": every pod the chart and the
    // operator make must pass it.
    Ok({"create", "namespace", kNamespace});
    Ok({"label", "namespace", kNamespace, "pod-security.kubernetes.io/enforce=restricted",
        "pod-security.kubernetes.io/warn=restricted"});
    BeforeInstall();
    Install();
  }
  // What a test puts in the namespace before the chart goes in (a Secret
  // its values name).
  virtual void BeforeInstall() {}

  void TearDown() override {
    // SIGTERM: each kubelet removes its pods' containers as it stops.
    for (const char* n : kNodes) {
      auto it = processes_.find(n);
      if (it == processes_.end()) continue;
      (void)it->second.Kill(SIGTERM);
      (void)it->second.Wait(30s);
      processes_.erase(it);
    }
    processes_.clear();
    for (const char* n : kNodes) {
      EXPECT_TRUE(ContainersLabelled(std::string("fairbench.dev/test-kubelet-node=") + n).empty())
          << "a container of node " << n << " outlived its kubelet";
    }
  }

  // charts/fairbench's values as a user sets them: the images built from
  // this checkout, short leader leases so that a standby takes over in
  // seconds, free ports, each controller listening on its pod's own IP (the
  // pods of these nodes share the machine's network), then a test's own
  // (more_values_, set before SetUp). Chosen once.
  std::vector<std::string> Values() {
    if (agent_port_ == 0) {
      agent_port_ = FreePort();
      metrics_port_ = FreePort();
    }
    std::vector<std::string> values = {"--namespace", kNamespace,
                                       "--set",       "image.registry=fairbench.test",
                                       "--set",       "image.tag=test",
                                       "--set",       "controller.listenAddress=$(POD_IP)",
                                       "--set",       "controller.agentPort=" + std::to_string(agent_port_),
                                       "--set",       "controller.metricsPort=" + std::to_string(metrics_port_),
                                       "--set",       "controller.leaderElection.leaseDuration=4s",
                                       "--set",       "controller.leaderElection.renewDeadline=3s",
                                       "--set",       "controller.leaderElection.retryPeriod=500ms",
                                       "--set",       "controller.agentTimeout=90s"};
    values.insert(values.end(), more_values_.begin(), more_values_.end());
    return values;
  }
  kube::CommandResult Helm(std::vector<std::string> args) {
    args.insert(args.end(), {"--kubeconfig", kubeconfig_});
    auto r = kube::RunCommand(helm_, args, {{"HOME", root_.string()}, {"KUBECONFIG", ""}}, 120s);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : kube::CommandResult{};
  }
  // One template of what `helm install` created, as `helm template`
  // renders it (not the agents' token Secret: its token is new each time).
  std::string Render(const std::string& template_file) {
    std::vector<std::string> args = {"template", "fairbench", (kRoot / "charts/fairbench").string(), "--show-only",
                                     template_file};
    const auto values = Values();
    args.insert(args.end(), values.begin(), values.end());
    auto r = Helm(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }
  void Install() {
    std::vector<std::string> args = {"install", "fairbench", (kRoot / "charts/fairbench").string()};
    const auto values = Values();
    args.insert(args.end(), values.begin(), values.end());
    auto r = Helm(args);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err << Logs();
    ASSERT_NE(r.out.find("STATUS: deployed"), std::string::npos) << r.out;
    // One controller leads and is Ready; the other stands by.
    ASSERT_TRUE(Eventually([&] { return !Leader().empty() && ReadyControllers() == 1; }, 90s))
        << Run({"get", "pods", "-n", kNamespace, "-o", "wide"}).out << Run({"describe", "pods", "-n", kNamespace}).out
        << Logs();
  }

  std::string Leader() {
    return Run({"get", "lease", "fairbench-controller", "-n", kNamespace, "-o", "jsonpath={.spec.holderIdentity}"}).out;
  }
  int ReadyControllers() {
    const json pods = Get("pods", "-l", "app.kubernetes.io/component=controller");
    int ready = 0;
    for (const json& p : pods.value("items", json::array())) {
      for (const json& c : p["status"].value("conditions", json::array())) {
        if (c["type"] == "Ready" && c["status"] == "True") ready++;
      }
    }
    return ready;
  }

  // A two-target BenchmarkRun of the reference target images.
  std::string RunText(const std::string& name, const std::string& targets, const std::string& duration = "1500ms") {
    return "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: " + name +
           ", namespace: " + kNamespace + "}\nspec:\n  targets:\n" + targets +
           "  scenarios:\n  - name: hello\n    request: {path: /}\n    expect: {status: 200, body: \"Hello, World!\"}\n"
           "  load: {threads: 1, connections: [8], warmup: 500ms, duration: " +
           duration +
           ", timeout: 1s, agents: 2}\n  cooldown: 200ms\n  placement:\n"
           "    target: {nodeSelector: {fairbench.dev/role: target}}\n"
           "    agents: {nodeSelector: {fairbench.dev/role: load}}\n";
  }
  // A target of image fairbench-target-SERVER on a port of its own (the
  // pods share the machine's loopback).
  std::string Target(const std::string& name, const std::string& server, const std::string& memory = "128Mi",
                     const std::string& command = "") {
    const std::string port = std::to_string(FreePort());
    const std::string cmd = !command.empty() ? command
                                             : "[/usr/local/bin/fairbench-target-" + server +
                                                   ", --host, 0.0.0.0, --port, \"" + port + "\", --threads, \"1\"]";
    return "  - name: " + name + "\n    image: " + Image("fairbench-target-" + server) + "\n    port: " + port +
           "\n    command: " + cmd + "\n    resources: {cpu: \"1\", memory: " + memory + "}\n    nofile: 8192\n";
  }
  void Apply(const std::string& name, const std::string& text) {
    const fs::path file = root_ / (name + ".yaml");
    std::ofstream(file) << text;
    Ok({"apply", "-f", file.string()});
  }
  std::string Phase(const std::string& run) { return ClusterTest::Phase(run, kNamespace); }
  bool Finishes(const std::string& run, std::chrono::seconds timeout = 180s) {
    return Eventually(
        [&] {
          const std::string p = Phase(run);
          return p == "Succeeded" || p == "Failed" || p == "Cancelled";
        },
        timeout);
  }

  json Get(const std::string& what, const std::string& flag = "", const std::string& value = "") {
    std::vector<std::string> args = {"get", what, "-n", kNamespace, "-o", "json"};
    if (!flag.empty()) args.insert(args.end(), {flag, value});
    auto r = Run(args);
    return r.exit_code == 0 ? json::parse(r.out, nullptr, false) : json();
  }

  std::string helm_;
  int metrics_port_ = 0;
  std::vector<std::string> more_values_;  // helm flags of a test's own, after the common ones
};

}  // namespace fairbench::containers
