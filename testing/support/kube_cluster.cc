#include "testing/support/kube_cluster.h"

#include <unistd.h>

#include <csignal>
#include <cstdlib>

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

KubeCluster::KubeCluster(KubeCluster&& other) noexcept
    : dir_(std::exchange(other.dir_, "")), bin_dir_(std::move(other.bin_dir_)) {}

KubeCluster& KubeCluster::operator=(KubeCluster&& other) noexcept {
  if (this != &other) {
    Down(true);
    dir_ = std::exchange(other.dir_, "");
    bin_dir_ = std::move(other.bin_dir_);
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

}  // namespace fairbench::testing
