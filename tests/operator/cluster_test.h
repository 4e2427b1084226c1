// A cluster on one machine for the operator's tests: Kubernetes' own
// control plane (Cluster(): etcd, kube-apiserver, kube-controller-manager
// and kube-scheduler, built from Kubernetes' Go modules by scripts/kube);
// test kubelets as its nodes; fairbench-controller; each process logging to
// a file of its own in a temporary folder, and kubectl pointed at the API
// server through that folder's kubeconfig. Where a test needs API faults,
// the controllers reach the API server through a FaultProxy
// (ControllersThroughFaultProxy()).
//
// fairbench-controller runs as the chart's ServiceAccount with the chart's
// RBAC (helm template, the ServiceAccount and RBAC objects applied; a token
// from the TokenRequest API: the user kControllerUser), the kubelets as
// nodes (system:node:NAME certificates, under the Node authorizer and
// NodeRestriction). The API server writes an audit log. RecordControllerApiUsage(), called
// when a test ends, keeps what the controllers asked of the API (verb,
// resource, subresource, scope) in FAIRBENCH_API_USAGE_DIR/<test>.json and
// checks it against tests/chart/controller-api-usage.json, the list the
// chart's RBAC rules are tested against (tests/chart).
#pragma once

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "controller/kube/exec_credential.h"
#include "testing/kubetest/cluster_fault_proxy.h"
#include "testing/support/bin_dir.h"
#include "testing/support/kube_cluster.h"
#include "testing/support/ports.h"
#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"

namespace fairbench::operator_test {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;

inline std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A loopback port free at the moment of asking, below the ephemeral range
// (testing::FreeLoopbackPort).
inline int FreePort() {
  auto p = testing::FreeLoopbackPort();
  return p.ok() ? *p : 0;
}

// Polls `f` every 100 ms until it holds or `timeout` passes.
template <typename F>
bool Eventually(F f, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (f()) return true;
    std::this_thread::sleep_for(100ms);
  }
  return f();
}

// Who fairbench-controller is to the API server in these tests: the
// service account the chart runs it as.
inline constexpr char kControllerUser[] = "system:serviceaccount:default:fairbench-controller";

// One kind of request, as RBAC sees it: {verb, apiGroup, resource,
// subresource, namespaced} (namespaced: false = cluster-scoped or across
// all namespaces), or {verb, nonResourceURL}.
inline json ApiRequestKind(const json& audit_event) {
  json k = {{"verb", audit_event.value("verb", std::string())}};
  if (!audit_event.contains("objectRef")) {
    std::string path = audit_event.value("requestURI", std::string());
    path = path.substr(0, path.find('?'));
    k["nonResourceURL"] = path;
    return k;
  }
  const json& ref = audit_event.at("objectRef");
  k["apiGroup"] = audit_event.value(json::json_pointer("/objectRef/apiGroup"), std::string());
  k["resource"] = audit_event.value(json::json_pointer("/objectRef/resource"), std::string());
  if (ref.contains("subresource")) k["subresource"] = ref["subresource"];
  k["namespaced"] = ref.contains("namespace");
  return k;
}

class ClusterTest : public ::testing::Test {
 protected:
  // kubectl, a temporary folder named after `prefix`, an agent port, and
  // the image map every kubelet runs pods from.
  void Prepare(const std::string& prefix) {
    auto dir = testing::TempDir::Create(prefix);
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
    root_ = dir_->path();
    kubeconfig_ = (root_ / "kubeconfig").string();
    controller_kubeconfig_ = (root_ / "controller-kubeconfig").string();
    agent_port_ = FreePort();
    const std::string bin = testing::BinDir();
    std::ofstream(root_ / "images.yaml") << "example.org/fairbench/agent:dev: [" << bin << "/fairbench-agent]\n"
                                         << "example.org/fairbench/target:dev: [" << bin
                                         << "/fairbench-target-cpp-httplib-debian]\n";
  }
  // Kubernetes' own control plane (testing::KubeCluster), its admin
  // kubeconfig as kubeconfig_ and the kubectl built with it; with `crd`, the
  // product CRD applied and established; the controllers' kubeconfig: the
  // chart's ServiceAccount in "default" with the chart's RBAC.
  // `all_namespaces`: the installation watches every namespace
  // (controller.watchAllNamespaces: its controllers run without --namespace).
  // `apiserver_args`: more kube-apiserver flags.
  void Cluster(bool crd = true, bool all_namespaces = false, const std::vector<std::string>& apiserver_args = {}) {
    auto c = testing::KubeCluster::Up((root_ / "cluster").string(), apiserver_args);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    cluster_.emplace(std::move(*c));
    kubectl_ = cluster_->kubectl();
    audit_log_ = cluster_->audit_log();
    fs::copy_file(cluster_->admin_kubeconfig(), kubeconfig_, fs::copy_options::overwrite_existing);
    if (crd) InstallCrd();
    controller_kubeconfig_ = Installation("default", all_namespaces);
  }
  // The controllers of "default" reach the API server through a FaultProxy
  // injecting `faults` (FaultConfig text) into their requests only
  // (user=kControllerUser): their kubeconfig points at the proxy, with the
  // same ServiceAccount token, which the real API server checks. kubectl,
  // the kubelets and `fairbench fetch` see a healthy server.
  void ControllersThroughFaultProxy(const std::string& faults) {
    auto config = kubetest::FaultConfig::Parse(faults + ",user=" + kControllerUser);
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    auto proxy = kubetest::StartFaultProxy(*cluster_);
    ASSERT_TRUE(proxy.ok()) << proxy.status().ToString();
    proxy_ = std::move(*proxy);
    proxy_->faults().Configure(*config);
    std::string text = ReadFile(controller_kubeconfig_);
    const std::string server = "    server: " + cluster_->server() + "\n";
    const size_t at = text.find(server);
    ASSERT_NE(at, std::string::npos) << text;
    text.replace(at, server.size(), "    server: " + proxy_->url() + "\n");
    const size_t ca = text.find("    certificate-authority: ");
    ASSERT_NE(ca, std::string::npos) << text;
    text.erase(ca, text.find('\n', ca) + 1 - ca);
    controller_kubeconfig_ = (root_ / "controller-through-faults.kubeconfig").string();
    std::ofstream(controller_kubeconfig_) << text;
  }
  // An installation's identity on Kubernetes: the chart rendered for
  // namespace `ns` (helm template), its ServiceAccount, Roles,
  // ClusterRoles and bindings applied, and a kubeconfig with a token the
  // TokenRequest API issued for that ServiceAccount — what the chart's
  // controller pods run as. Returns the kubeconfig's path.
  std::string Installation(const std::string& ns, bool all_namespaces = false) {
    const std::string helm = cluster_->bin_dir() + "/helm";
    auto rendered = kube::RunCommand(
        helm,
        {"template", "fairbench", std::string(FAIRBENCH_SOURCE_DIR) + "/charts/fairbench", "--namespace", ns, "--set",
         std::string("controller.watchAllNamespaces=") + (all_namespaces ? "true" : "false")},
        {{"HOME", root_.string()}}, 60s);
    EXPECT_TRUE(rendered.ok() && rendered->exit_code == 0)
        << (rendered.ok() ? rendered->err : rendered.status().ToString());
    if (!rendered.ok()) return "";
    const std::string kept = testing::ChartIdentityObjects(rendered->out);
    const fs::path file = root_ / ("installation-" + ns + ".yaml");
    std::ofstream(file) << kept;
    Ok({"apply", "-f", file.string()});
    const std::string token = Ok({"create", "token", "fairbench-controller", "-n", ns, "--duration", "10h"});
    EXPECT_FALSE(token.empty());
    const std::string path = (root_ / ("controller-" + ns + ".kubeconfig")).string();
    std::ofstream(path) << testing::KubeconfigFor(*cluster_, ns, token.substr(0, token.find_last_not_of("\n") + 1));
    return path;
  }
  // What the controllers asked of the API server in this test, from the
  // audit log: written to FAIRBENCH_API_USAGE_DIR/<suite>.<test>.json, and
  // each kind of request checked against the list the chart's RBAC rules
  // are tested against (a request missing there would be forbidden in a
  // cluster the chart installed).
  void RecordControllerApiUsage() {
    if (!fs::exists(audit_log_)) return;
    std::set<json> used;
    std::ifstream in(audit_log_);
    std::string line;
    while (std::getline(in, line)) {
      const json event = json::parse(line, nullptr, false);
      if (event.is_discarded() || event.value(json::json_pointer("/user/username"), std::string()) != kControllerUser)
        continue;
      used.insert(ApiRequestKind(event));
    }
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const std::string test = std::string(info->test_suite_name()) + "." + info->name();
    std::error_code ec;
    fs::create_directories(FAIRBENCH_API_USAGE_DIR, ec);
    std::ofstream(fs::path(FAIRBENCH_API_USAGE_DIR) / (test + ".json"))
        << json{{"test", test}, {"user", kControllerUser}, {"requests", json(used)}}.dump(1) << "\n";
    const fs::path listed_file = fs::path(FAIRBENCH_SOURCE_DIR) / "tests/chart/controller-api-usage.json";
    const json listed = json::parse(ReadFile(listed_file), nullptr, false);
    ASSERT_FALSE(listed.is_discarded()) << listed_file;
    std::set<json> known(listed["requests"].begin(), listed["requests"].end());
    // Granted by the chart though not reached every time (tests/chart/
    // chart_rbac_test.cc, UnreachedRequests): an Event repeated within the
    // recorder's aggregation window is patched, which only some runs (under
    // faults, retries) bring about.
    known.insert(json{{"verb", "patch"}, {"apiGroup", ""}, {"resource", "events"}, {"namespaced", true}});
    for (const json& kind : used) {
      EXPECT_TRUE(known.count(kind) != 0)
          << "fairbench-controller made a request " << listed_file
          << " does not list, so the chart does not grant it: " << kind.dump()
          << "\n(run the operator tests, then FAIRBENCH_UPDATE_API_USAGE=1 ctest -R ChartRbacTest to list it; "
             "then grant it in charts/fairbench/templates/rbac.yaml)";
    }
  }
  void InstallCrd() {
    const Status s = testing::InstallProductCrd(*cluster_);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  // Starts `argv` as process `name` (replacing one of that name), output in NAME.log.
  void Start(const std::string& name, std::vector<std::string> argv) {
    testing::SubprocessOptions o;
    o.argv = std::move(argv);
    o.stdout_to = testing::Redirect::File((root_ / (name + ".log")).string(), true);
    o.stderr_to = testing::Redirect::File((root_ / (name + ".log")).string(), true);
    auto p = testing::Subprocess::Start(o);
    ASSERT_TRUE(p.ok()) << name << ": " << p.status().ToString();
    processes_.erase(name);
    processes_.emplace(name, std::move(*p));
  }
  // A test kubelet as node `node`, with the node's own certificate,
  // serving HTTPS in the cluster's node network namespace.
  // `extra`: more of its flags (--cpu-manager-policy static …).
  void Kubelet(const std::string& node, const std::string& cpus, const std::string& labels, const std::string& ip_base,
               const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {testing::BinaryPath("fairbench-test-kubelet"),
                                     "--node",
                                     node,
                                     "--cpus",
                                     cpus,
                                     "--memory",
                                     "4Gi",
                                     "--labels",
                                     labels,
                                     "--images",
                                     (root_ / "images.yaml").string(),
                                     "--pod-ip-base",
                                     ip_base,
                                     "--listen",
                                     cluster_->node_address() + ":0",
                                     "--log-dir",
                                     (root_ / node).string(),
                                     "--heartbeat",
                                     "1s"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto creds = cluster_->Node(node);
    ASSERT_TRUE(creds.ok()) << creds.status().ToString();
    argv.insert(argv.end(),
                {"--kubeconfig", creds->kubeconfig, "--tls-cert-file", creds->cert, "--tls-private-key-file",
                 creds->key, "--proxy-kubeconfig", creds->proxy_kubeconfig, "--listen-netns", cluster_->node_netns()});
    Start(node, std::move(argv));
  }
  std::string Log(const std::string& name) { return ReadFile(root_ / (name + ".log")); }
  // The last 3,000 characters of every process's log, for failure messages.
  std::string Logs() {
    std::string out;
    if (cluster_) {
      for (const char* c : {"kube-apiserver", "kube-controller-manager", "kube-scheduler"}) {
        out += std::string("--- ") + c + "\n" + cluster_->LogTail(c, 1500) + "\n";
      }
    }
    for (const auto& [name, p] : processes_) {
      std::string text = Log(name);
      if (text.size() > 3000) text = "…" + text.substr(text.size() - 3000);
      out += "--- " + name + "\n" + text + "\n";
    }
    return out;
  }
  kube::CommandResult Run(std::vector<std::string> args) {
    args.insert(args.begin(), {"--kubeconfig", kubeconfig_, "--cache-dir", (root_ / "cache").string()});
    auto r = kube::RunCommand(kubectl_, args, {{"HOME", root_.string()}, {"KUBECONFIG", ""}}, 60s);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : kube::CommandResult{};
  }
  // Runs kubectl and expects success; returns its output.
  std::string Ok(std::vector<std::string> args) {
    std::string shown;
    for (const auto& a : args) shown += " " + a;
    auto r = Run(std::move(args));
    EXPECT_EQ(r.exit_code, 0) << "kubectl" << shown << "\n" << r.out << r.err;
    return r.out;
  }
  json Get(const std::string& what, const std::string& ns = "default") {
    auto r = Run({"get", what, "-n", ns, "-o", "json"});
    return r.exit_code == 0 ? json::parse(r.out, nullptr, false) : json();
  }
  std::string Phase(const std::string& run, const std::string& ns = "default") {
    return Run({"get", "br", run, "-n", ns, "-o", "jsonpath={.status.phase}"}).out;
  }

  std::string kubectl_;
  std::optional<testing::TempDir> dir_;
  fs::path root_;
  std::string kubeconfig_;
  std::string controller_kubeconfig_;  // the controller's own identity (kControllerUser)
  int agent_port_ = 0;
  std::string audit_log_;
  // Declared before the processes, so destroyed after them: kubelets and
  // controllers go before the cluster they talk to.
  std::optional<testing::KubeCluster> cluster_;
  std::unique_ptr<kubetest::FaultProxy> proxy_;  // between the controllers and the API server, when faults are due
  std::map<std::string, testing::Subprocess> processes_;
};

}  // namespace fairbench::operator_test
