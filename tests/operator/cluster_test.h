// A cluster on one machine for the operator's tests: Kubernetes' own
// control plane (Cluster(): etcd, kube-apiserver, kube-controller-manager
// and kube-scheduler, built from Kubernetes' Go modules by scripts/kube),
// or the test API server where a test needs an API fault at a chosen
// moment (ApiServer()); test kubelets as its nodes; fairbench-controller;
// each process logging to a file of its own in a temporary folder, and
// kubectl pointed at the API server through that folder's kubeconfig.
//
// On Kubernetes, fairbench-controller runs as the chart's ServiceAccount
// with the chart's RBAC (helm template, the ServiceAccount and RBAC
// objects applied; a token from the TokenRequest API), the kubelets as
// nodes (system:node:NAME certificates, under the Node authorizer and
// NodeRestriction). On the test API server it authenticates with a token of
// its own (the user kControllerUser). Both write an audit log. RecordControllerApiUsage(), called
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
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "controller/kube/exec_credential.h"
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
    kubectl_ = testing::FindTool("kubectl");
    ASSERT_FALSE(kubectl_.empty()) << "kubectl not found: run scripts/setup --with-tools";
    auto dir = testing::TempDir::Create(prefix);
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
    root_ = dir_->path();
    kubeconfig_ = (root_ / "kubeconfig").string();
    controller_kubeconfig_ = (root_ / "controller-kubeconfig").string();
    agent_port_ = FreePort();
    // kube-apiserver's token file: an administrator (the kubeconfig's, for
    // the kubelets and fairbench fetch; kubectl sends no token over plain
    // HTTP and is anonymous) and the controller.
    audit_log_ = (root_ / "audit.log").string();
    admin_token_ = "admin-" + std::to_string(getpid());
    controller_token_ = "controller-" + std::to_string(getpid());
    std::ofstream(root_ / "tokens.csv") << admin_token_ << ",fairbench-admin,1,\"system:masters\"\n"
                                         << controller_token_ << "," << kControllerUser
                                         << ",2,\"system:serviceaccounts,system:serviceaccounts:default\"\n";
    const std::string bin = testing::BinDir();
    std::ofstream(root_ / "images.yaml") << "example.org/fairbench/agent:dev: [" << bin << "/fairbench-agent]\n"
                                          << "example.org/fairbench/target:dev: [" << bin
                                          << "/fairbench-target-cpp-httplib-debian]\n";
  }
  // The test API server on `listen`, its kubeconfig written; with `crd`, the
  // product CRD applied and established; `extra` arguments (--faults …).
  void ApiServer(const std::string& listen = "127.0.0.1:0", bool crd = true, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {testing::BinaryPath("fairbench-test-apiserver"), "--listen", listen,
                                     "--write-kubeconfig", kubeconfig_, "--token-auth-file",
                                     (root_ / "tokens.csv").string(), "--anonymous-auth", "--audit-log",
                                     (root_ / "audit.log").string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    Start("apiserver", std::move(argv));
    ASSERT_TRUE(Eventually([&] { return fs::exists(kubeconfig_) && fs::file_size(kubeconfig_) > 0; }, 10s));
    // The controller's kubeconfig: the same server, the controller's token.
    std::string text = ReadFile(kubeconfig_);
    const size_t at = text.find("token: " + admin_token_);
    ASSERT_NE(at, std::string::npos) << text;
    text.replace(at + 7, admin_token_.size(), controller_token_);
    std::ofstream(controller_kubeconfig_) << text;
    if (crd) InstallCrd();
  }
  // Kubernetes' own control plane (testing::KubeCluster), its admin
  // kubeconfig as kubeconfig_ and the kubectl built with it; with `crd`, the
  // product CRD applied and established; the controllers' kubeconfig: the
  // chart's ServiceAccount in "default" with the chart's RBAC.
  // `all_namespaces`: the installation watches every namespace
  // (controller.watchAllNamespaces: its controllers run without --namespace).
  void Cluster(bool crd = true, bool all_namespaces = false) {
    auto c = testing::KubeCluster::Up((root_ / "cluster").string());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    cluster_.emplace(std::move(*c));
    kubectl_ = cluster_->kubectl();
    audit_log_ = cluster_->audit_log();
    fs::copy_file(cluster_->admin_kubeconfig(), kubeconfig_, fs::copy_options::overwrite_existing);
    if (crd) InstallCrd();
    controller_kubeconfig_ = Installation("default", all_namespaces);
  }
  // An installation's identity on Kubernetes: the chart rendered for
  // namespace `ns` (helm template), its ServiceAccount, Roles,
  // ClusterRoles and bindings applied, and a kubeconfig with a token the
  // TokenRequest API issued for that ServiceAccount — what the chart's
  // controller pods run as. Returns the kubeconfig's path.
  std::string Installation(const std::string& ns, bool all_namespaces = false) {
    const std::string helm = cluster_->bin_dir() + "/helm";
    auto rendered = kube::RunCommand(helm, {"template", "fairbench", std::string(FAIRBENCH_SOURCE_DIR) + "/charts/fairbench",
                                            "--namespace", ns, "--set",
                                            std::string("controller.watchAllNamespaces=") + (all_namespaces ? "true" : "false")},
                                     {{"HOME", root_.string()}}, 60s);
    EXPECT_TRUE(rendered.ok() && rendered->exit_code == 0) << (rendered.ok() ? rendered->err : rendered.status().ToString());
    if (!rendered.ok()) return "";
    std::string kept;
    static const std::set<std::string> kKinds = {"ServiceAccount", "Role", "RoleBinding", "ClusterRole",
                                                 "ClusterRoleBinding"};
    std::string doc;
    auto flush = [&] {
      std::smatch m;
      if (std::regex_search(doc, m, std::regex("(^|\\n)kind: (\\w+)")) && kKinds.count(m[2].str())) kept += "---\n" + doc;
      doc.clear();
    };
    std::istringstream in(rendered->out);
    for (std::string line; std::getline(in, line);) {
      if (line == "---") {
        flush();
      } else {
        doc += line + "\n";
      }
    }
    flush();
    const fs::path file = root_ / ("installation-" + ns + ".yaml");
    std::ofstream(file) << kept;
    Ok({"apply", "-f", file.string()});
    const std::string token = Ok({"create", "token", "fairbench-controller", "-n", ns, "--duration", "10h"});
    EXPECT_FALSE(token.empty());
    const std::string path = (root_ / ("controller-" + ns + ".kubeconfig")).string();
    std::ofstream(path) << "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: "
                        << cluster_->server() << "\n    certificate-authority: " << cluster_->dir()
                        << "/pki/ca.crt\nusers:\n- name: u\n  user:\n    token: "
                        << token.substr(0, token.find_last_not_of("\n") + 1)
                        << "\ncontexts:\n- name: c\n  context: {cluster: c, user: u, namespace: " << ns
                        << "}\ncurrent-context: c\n";
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
      if (event.is_discarded() || event.value(json::json_pointer("/user/username"), std::string()) != kControllerUser) continue;
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
    for (const json& kind : used) {
      EXPECT_TRUE(known.count(kind) != 0)
          << "fairbench-controller made a request " << listed_file
          << " does not list, so the chart does not grant it: " << kind.dump()
          << "\n(run the operator tests, then FAIRBENCH_UPDATE_API_USAGE=1 ctest -R ChartRbacTest to list it; "
             "then grant it in charts/fairbench/templates/rbac.yaml)";
    }
  }
  void InstallCrd() {
    Ok({"apply", "-f", std::string(FAIRBENCH_SOURCE_DIR) + "/manifests/crd/benchmarkruns.fairbench.dev.yaml"});
    // kubectl 1.37's wait fails at once ("conditions accessor error") on a
    // CRD whose status has no conditions yet: asked again until it waits.
    ASSERT_TRUE(Eventually(
        [&] { return Run({"wait", "--for=condition=Established", "crd/benchmarkruns.fairbench.dev", "--timeout=20s"})
                         .exit_code == 0; },
        30s))
        << Run({"get", "crd", "benchmarkruns.fairbench.dev", "-o", "yaml"}).out;
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
  // A test kubelet as node `node`: on Kubernetes with the node's own
  // certificate, serving HTTPS; on the test API server as its administrator.
  void Kubelet(const std::string& node, const std::string& cpus, const std::string& labels, const std::string& ip_base) {
    std::vector<std::string> argv = {testing::BinaryPath("fairbench-test-kubelet"), "--node", node, "--cpus", cpus,
                                     "--memory", "4Gi", "--labels", labels, "--images",
                                     (root_ / "images.yaml").string(), "--pod-ip-base", ip_base, "--listen",
                                     (cluster_ ? cluster_->node_address() : "127.0.0.1") + ":0", "--log-dir",
                                     (root_ / node).string(), "--heartbeat", "1s"};
    if (cluster_) {
      auto creds = cluster_->Node(node);
      ASSERT_TRUE(creds.ok()) << creds.status().ToString();
      argv.insert(argv.end(), {"--kubeconfig", creds->kubeconfig, "--tls-cert-file", creds->cert,
                               "--tls-private-key-file", creds->key, "--proxy-kubeconfig", creds->proxy_kubeconfig,
                               "--listen-netns", cluster_->node_netns()});
    } else {
      argv.insert(argv.end(), {"--kubeconfig", kubeconfig_});
    }
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
  std::string admin_token_;
  std::string controller_token_;
  int agent_port_ = 0;
  std::string audit_log_;
  // Declared before the processes, so destroyed after them: kubelets and
  // controllers go before the cluster they talk to.
  std::optional<testing::KubeCluster> cluster_;
  std::map<std::string, testing::Subprocess> processes_;
};

}  // namespace fairbench::operator_test
