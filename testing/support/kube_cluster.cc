#include "testing/support/kube_cluster.h"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <regex>
#include <thread>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"

namespace fairbench::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Runs scripts/kube with `args`; its standard output, or an error with
// what it said on standard error.
Result<std::string> RunKube(const std::vector<std::string>& args, const std::string& err_file,
                            std::chrono::milliseconds timeout) {
  SubprocessOptions o;
  o.argv = {KubeScript()};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.stdout_to = Redirect::Pipe();
  o.stderr_to = Redirect::File(err_file);
  auto p = Subprocess::Start(o);
  if (!p.ok()) return p.status();
  auto out = p->ReadStdout(timeout);
  auto st = p->Wait(5s);
  std::string said = ReadAll(err_file);
  if (!st.ok()) {
    p->Terminate(SIGTERM, 5s);
    return Status::DeadlineExceeded("scripts/kube " + args[0] + " did not finish in time:\n" + said);
  }
  if (!st->success()) {
    return Status::Unavailable("scripts/kube " + args[0] + " failed (" + st->ToString() + "):\n" + said);
  }
  return out.ok() ? *out : std::string();
}

}  // namespace

std::string KubeScript() { return std::string(FAIRBENCH_SOURCE_DIR) + "/scripts/kube"; }

Result<std::string> KubeBinDir() {
  auto dir = TempDir::Create("fairbench-kube-build");
  if (!dir.ok()) return dir.status();
  // The first build of the control plane takes minutes; after, nothing.
  auto bin = RunKube({"build"}, dir->File("build.log"), 40min);
  if (!bin.ok()) return bin.status();
  return Trim(*bin);
}

Result<KubeCluster> KubeCluster::Up(const std::string& dir, const std::vector<std::string>& apiserver_args) {
  auto bin = KubeBinDir();
  if (!bin.ok()) return bin.status();
  std::vector<std::string> args = {"up", "--dir", dir, "--die-with", std::to_string(getpid())};
  for (const std::string& a : apiserver_args) args.insert(args.end(), {"--apiserver-arg", a});
  auto up = RunKube(args, dir + ".up.log", 3min);
  std::error_code ec;
  if (!up.ok()) return up.status();
  fs::remove(dir + ".up.log", ec);
  KubeCluster c;
  c.dir_ = dir;
  c.bin_dir_ = *bin;
  return c;
}

Result<KubeCluster> KubeCluster::Attach(const std::string& dir) {
  if (Trim(ReadAll(dir + "/server")).empty()) {
    return Status::FailedPrecondition("no Kubernetes cluster runs in " + dir + " (scripts/kube up --dir " + dir + ")");
  }
  auto bin = KubeBinDir();
  if (!bin.ok()) return bin.status();
  KubeCluster c;
  c.dir_ = dir;
  c.bin_dir_ = *bin;
  c.owned_ = false;
  return c;
}

KubeCluster::KubeCluster(KubeCluster&& other) noexcept
    : dir_(std::exchange(other.dir_, "")), bin_dir_(std::move(other.bin_dir_)), owned_(other.owned_) {}

KubeCluster& KubeCluster::operator=(KubeCluster&& other) noexcept {
  if (this != &other) {
    Down(true);
    dir_ = std::exchange(other.dir_, "");
    bin_dir_ = std::move(other.bin_dir_);
    owned_ = other.owned_;
  }
  return *this;
}

KubeCluster::~KubeCluster() {
  // FAIRBENCH_KEEP_TEMP=1 keeps the logs and the audit log, as TempDir does.
  const char* keep = std::getenv("FAIRBENCH_KEEP_TEMP");
  Down(keep == nullptr || std::string(keep) != "1");
}

void KubeCluster::Down(bool remove) {
  if (dir_.empty()) return;
  if (!owned_) {
    dir_.clear();
    return;
  }
  std::vector<std::string> args = {"down", "--dir", dir_};
  if (!remove) args.push_back("--keep");
  (void)RunKube(args, dir_ + ".down.log", 60s);
  std::error_code ec;
  fs::remove(dir_ + ".down.log", ec);
  if (remove) dir_.clear();
}

std::string KubeCluster::server() const { return Trim(ReadAll(dir_ + "/server")); }
std::string KubeCluster::node_netns() const { return Trim(ReadAll(dir_ + "/node-netns")); }
std::string KubeCluster::node_address() const { return Trim(ReadAll(dir_ + "/node-address")); }

std::string KubeCluster::LogTail(const std::string& component, size_t bytes) const {
  std::string text = ReadAll(dir_ + "/logs/" + component + ".log");
  if (text.size() > bytes) text = "…" + text.substr(text.size() - bytes);
  return text;
}

Result<KubeCluster::NodeCredentials> KubeCluster::Node(const std::string& node) const {
  auto out = RunKube({"node-kubeconfig", node, "--dir", dir_}, dir_ + "/node-" + node + ".log", 60s);
  if (!out.ok()) return out.status();
  const std::string nodes = dir_ + "/nodes/" + node;
  return NodeCredentials{Trim(*out), nodes + ".crt", nodes + ".key", nodes + "-proxy.kubeconfig"};
}

Result<std::string> KubeCluster::Compact() const {
  auto out = RunKube({"compact", "--dir", dir_}, dir_ + "/compact.log", 30s);
  if (!out.ok()) return out.status();
  return Trim(*out);
}

Result<std::string> AdminKubectl(const KubeCluster& cluster, const std::vector<std::string>& args,
                                 const std::string& stdin_text) {
  auto tmp = TempDir::Create("fairbench-kubectl");
  if (!tmp.ok()) return tmp.status();
  SubprocessOptions o;
  o.argv = {cluster.kubectl(), "--kubeconfig", cluster.admin_kubeconfig()};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.env = {{"HOME", tmp->path().string()}, {"KUBECONFIG", ""}};
  if (!stdin_text.empty()) {
    std::ofstream(tmp->File("stdin")) << stdin_text;
    o.stdin_from = Redirect::File(tmp->File("stdin"));
  }
  o.stdout_to = Redirect::Pipe();
  o.stderr_to = Redirect::File(tmp->File("stderr"));
  auto p = Subprocess::Start(o);
  if (!p.ok()) return p.status();
  auto out = p->ReadStdout(60s);
  auto st = p->Wait(5s);
  std::string shown = "kubectl";
  for (const std::string& a : args) shown += " " + a;
  if (!st.ok() || !st->success()) {
    return Status::Unavailable(shown + " failed: " + ReadAll(tmp->File("stderr")));
  }
  return out.ok() ? *out : std::string();
}

Result<KubeCluster*> SharedKubeCluster() {
  static std::mutex mu;
  // Destroyed in the reverse order: the cluster stops (and its folder goes)
  // before the folder it lives in is removed. Removed first, the folder
  // would take the cluster's pid files with it, and nothing could stop it.
  static std::optional<TempDir> own_dir;
  static std::optional<KubeCluster> cluster;
  std::lock_guard<std::mutex> lock(mu);
  if (cluster) return &*cluster;
  const char* dir = std::getenv("FAIRBENCH_KUBE_CLUSTER");
  if (dir != nullptr && *dir != '\0') {
    auto c = KubeCluster::Attach(dir);
    if (!c.ok()) return c.status();
    cluster.emplace(std::move(*c));
    return &*cluster;
  }
  auto tmp = TempDir::Create("fairbench-kube-shared");
  if (!tmp.ok()) return tmp.status();
  auto c = KubeCluster::Up(tmp->File("cluster"), {"--watch-cache-sizes=configmaps#0"});  // as tests/CMakeLists.txt
  if (!c.ok()) return c.status();
  own_dir.emplace(std::move(*tmp));
  cluster.emplace(std::move(*c));
  // Stopped when this process ends: by the statics' destructors, or, when
  // they do not run (a test that aborts or is killed), by scripts/kube's
  // watchdog (--die-with).
  return &*cluster;
}

Result<TestNamespace> TestNamespace::Create(const KubeCluster& cluster, const std::string& prefix,
                                            const std::map<std::string, std::string>& labels) {
  static std::atomic<int> serial{0};
  // Lower-case, digits and '-' only, at most 63 characters (an RFC 1123 label).
  std::string name;
  for (char ch : prefix) {
    if (std::isalnum(static_cast<unsigned char>(ch)) != 0) {
      name += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    } else if (!name.empty() && name.back() != '-') {
      name += '-';
    }
  }
  name = name.substr(0, 40);
  while (!name.empty() && name.back() == '-') name.pop_back();
  if (name.empty()) name = "t";
  name += "-" + std::to_string(getpid()) + "-" + std::to_string(serial.fetch_add(1));
  std::string yaml = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + name +
                     "\n  labels:\n"
                     "    fairbench.dev/test: \"true\"\n";
  for (const auto& [k, v] : labels) yaml += "    " + k + ": \"" + v + "\"\n";
  auto created = AdminKubectl(cluster, {"create", "-f", "-"}, yaml);
  if (!created.ok()) return created.status();
  // The ServiceAccount admission refuses pods until kube-controller-manager
  // has made the namespace's "default" ServiceAccount: a test starts after.
  const auto until = std::chrono::steady_clock::now() + 30s;
  for (;;) {
    auto sa =
        AdminKubectl(cluster, {"get", "serviceaccount", "default", "-n", name, "-o", "name", "--ignore-not-found"});
    if (sa.ok() && !Trim(*sa).empty()) break;
    if (std::chrono::steady_clock::now() > until) {
      return Status::DeadlineExceeded("namespace " + name + " has no default ServiceAccount after 30 s");
    }
    std::this_thread::sleep_for(50ms);
  }
  TestNamespace ns;
  ns.kubectl_ = cluster.kubectl();
  ns.kubeconfig_ = cluster.admin_kubeconfig();
  ns.name_ = name;
  return ns;
}

TestNamespace::TestNamespace(TestNamespace&& other) noexcept
    : kubectl_(std::move(other.kubectl_)),
      kubeconfig_(std::move(other.kubeconfig_)),
      name_(std::exchange(other.name_, "")) {}

TestNamespace& TestNamespace::operator=(TestNamespace&& other) noexcept {
  if (this != &other) {
    this->~TestNamespace();
    kubectl_ = std::move(other.kubectl_);
    kubeconfig_ = std::move(other.kubeconfig_);
    name_ = std::exchange(other.name_, "");
  }
  return *this;
}

TestNamespace::~TestNamespace() {
  if (name_.empty()) return;
  // The namespace controller removes what is left in it; nobody waits.
  SubprocessOptions o;
  o.argv = {kubectl_, "--kubeconfig", kubeconfig_, "delete", "namespace", name_, "--wait=false", "--ignore-not-found"};
  o.stdout_to = Redirect::Null();
  o.stderr_to = Redirect::Null();
  auto p = Subprocess::Start(o);
  if (p.ok()) (void)p->Wait(30s);
  name_.clear();
}

std::string KubeconfigFor(const KubeCluster& cluster, const std::string& ns, const std::string& token) {
  const std::string user = token.empty() ? "    client-certificate: " + cluster.pki("admin.crt") +
                                               "\n    client-key: " + cluster.pki("admin.key") + "\n"
                                         : "    token: " + token + "\n";
  return "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n    server: " + cluster.server() +
         "\n    certificate-authority: " + cluster.pki("ca.crt") + "\nusers:\n- name: test\n  user:\n" + user +
         "contexts:\n- name: test\n  context: {cluster: test, user: test, namespace: " + ns +
         "}\ncurrent-context: test\n";
}

Status InstallProductCrd(const KubeCluster& cluster) {
  auto applied = AdminKubectl(
      cluster, {"apply", "-f", std::string(FAIRBENCH_SOURCE_DIR) + "/manifests/crd/benchmarkruns.fairbench.dev.yaml"});
  if (!applied.ok()) return applied.status();
  // kubectl 1.37's wait fails at once ("conditions accessor error") on a CRD
  // whose status has no conditions yet: asked again until it waits.
  Status last = Status::Ok();
  for (int i = 0; i < 30; ++i) {
    auto waited = AdminKubectl(
        cluster, {"wait", "--for=condition=Established", "crd/benchmarkruns.fairbench.dev", "--timeout=20s"});
    if (waited.ok()) return Status::Ok();
    last = waited.status();
    std::this_thread::sleep_for(200ms);
  }
  return last;
}

std::string ChartIdentityObjects(const std::string& rendered) {
  static const std::regex kKind(R"((^|\n)kind: (ServiceAccount|Role|RoleBinding|ClusterRole|ClusterRoleBinding)\n)");
  std::string kept, doc;
  auto flush = [&] {
    if (std::regex_search(doc, kKind)) kept += "---\n" + doc;
    doc.clear();
  };
  std::istringstream in(rendered);
  for (std::string line; std::getline(in, line);) {
    if (line == "---") {
      flush();
    } else {
      doc += line + "\n";
    }
  }
  flush();
  return kept;
}

}  // namespace fairbench::testing
