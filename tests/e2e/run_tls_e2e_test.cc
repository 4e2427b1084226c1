// fairbench run with the agents' stream over mutual TLS, end to end: the
// real fairbench binary starts its hub with TLS, gives the agents it spawns
// their TLS files, and the cells' results arrive. While the run goes on,
// each agent is looked at from /proc: the token is in its environment,
// never in its command line, and it listens on no port.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "testing/kubetest/tls_material.h"
#include "testing/support/bin_dir.h"
#include "testing/support/proc.h"
#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"

namespace fairbench {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

std::string ReadFile(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Listening TCP sockets (and unconnected UDP ones) that belong to `pid`.
size_t ListeningSockets(pid_t pid) {
  std::set<std::string> inodes;
  const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
  for (const auto& e :
       std::filesystem::directory_iterator(fd_dir, std::filesystem::directory_options::skip_permission_denied)) {
    std::error_code ec;
    const std::string t = std::filesystem::read_symlink(e.path(), ec).string();
    if (!ec && t.rfind("socket:[", 0) == 0) inodes.insert(t.substr(8, t.size() - 9));
  }
  size_t n = 0;
  for (const std::string table : {"tcp", "tcp6", "udp", "udp6"}) {
    std::istringstream in(ReadFile("/proc/" + std::to_string(pid) + "/net/" + table));
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string sl, local, remote, state, a, b, c, uid, timeout, inode;
      f >> sl >> local >> remote >> state >> a >> b >> c >> uid >> timeout >> inode;
      if (inodes.count(inode) == 0) continue;
      const bool tcp = table.rfind("tcp", 0) == 0;
      if ((tcp && state == "0A") || (!tcp && remote.find_first_not_of("0:") == std::string::npos)) ++n;
    }
  }
  return n;
}

class RunTlsE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::TempDir::Create("fairbench-tls-e2e");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
    auto m = kubetest::TlsMaterial::Generate();
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    auto client = m->IssueClient("fairbench-agent");
    ASSERT_TRUE(client.ok());
    for (const auto& [name, text] : std::vector<std::pair<std::string, std::string>>{{"ca.crt", m->ca.cert_pem},
                                                                                     {"hub.crt", m->server.cert_pem},
                                                                                     {"hub.key", m->server.key_pem},
                                                                                     {"agent.crt", client->cert_pem},
                                                                                     {"agent.key", client->key_pem}}) {
      std::ofstream(dir_->File(name)) << text;
    }
  }
  std::string WriteRun() {
    const std::string text =
        "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: tls}\nspec:\n  targets:\n"
        "  - name: alpha\n    local:\n      command: [" +
        testing::BinaryPath("fairbench-target-beast") +
        ", --port, \"{port}\", --threads, \"1\"]\n"
        "  scenarios:\n  - name: hello\n    request: {path: /}\n    expect: {status: 200}\n"
        "  load: {threads: 1, connections: [8], warmup: 300ms, duration: 2s, timeout: 1s, agents: 2}\n"
        "  cooldown: 200ms\n";
    std::ofstream(dir_->File("run.yaml")) << text;
    return dir_->File("run.yaml");
  }
  Result<testing::Subprocess> Start(std::vector<std::string> extra) {
    testing::SubprocessOptions o;
    o.argv = {testing::BinaryPath("fairbench"), "run", WriteRun(), "--output", dir_->File("out"), "--lock-file",
              dir_->File("load.lock")};
    o.argv.insert(o.argv.end(), extra.begin(), extra.end());
    o.stdout_to = testing::Redirect::Null();
    o.stderr_to = testing::Redirect::File(dir_->File("stderr.txt"));
    return testing::Subprocess::Start(o);
  }
  std::vector<std::string> MutualTlsFlags() {
    return {"--hub-tls-cert",      dir_->File("hub.crt"),   "--hub-tls-key",   dir_->File("hub.key"),
            "--hub-tls-client-ca", dir_->File("ca.crt"),    "--agent-tls-ca",  dir_->File("ca.crt"),
            "--agent-tls-cert",    dir_->File("agent.crt"), "--agent-tls-key", dir_->File("agent.key")};
  }

  std::optional<testing::TempDir> dir_;
};

TEST_F(RunTlsE2eTest, ARunOverMutualTlsSucceedsAndItsAgentsKeepTheTokenOutOfPs) {
  auto p = Start(MutualTlsFlags());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  // Look at the agents while they serve the cell.
  std::set<pid_t> seen;
  const auto until = std::chrono::steady_clock::now() + 30s;
  while (seen.size() < 2 && std::chrono::steady_clock::now() < until && !p->Poll()) {
    for (pid_t agent : testing::ChildProcesses(p->pid(), "fairbench-agent")) {
      if (testing::GoneOrZombie(agent)) continue;
      if (seen.count(agent)) continue;
      const std::string base = "/proc/" + std::to_string(agent);
      std::string environ = ReadFile(base + "/environ");
      std::string cmdline = ReadFile(base + "/cmdline");
      std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
      std::string token;
      std::istringstream vars(environ);
      for (std::string var; std::getline(vars, var, '\0');) {
        if (var.rfind("FAIRBENCH_AGENT_TOKEN=", 0) == 0) token = var.substr(22);
      }
      if (cmdline.empty()) continue;  // still starting, or gone
      ASSERT_EQ(token.size(), 32u) << "the agent's token comes in its environment: " << cmdline;
      EXPECT_EQ(cmdline.find(token), std::string::npos) << "token in the command line: " << cmdline;
      EXPECT_EQ(cmdline.find("--token"), std::string::npos) << cmdline;
      EXPECT_NE(cmdline.find("--tls-ca " + dir_->File("ca.crt")), std::string::npos) << cmdline;
      EXPECT_NE(cmdline.find("--tls-cert " + dir_->File("agent.crt")), std::string::npos) << cmdline;
      // Connected (it has said Hello by the time the cell runs) and listening on nothing.
      EXPECT_EQ(ListeningSockets(agent), 0u) << cmdline;
      seen.insert(agent);
    }
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(seen.size(), 2u);
  auto status = p->Wait(60s);
  ASSERT_TRUE(status.ok());
  ASSERT_EQ(status->exit_code, 0) << ReadFile(dir_->File("stderr.txt"));
  const json r = json::parse(ReadFile(dir_->File("out/results.json")));
  ASSERT_EQ(r["cells"].size(), 1u);
  const json& res = r["cells"][0]["result"];
  EXPECT_EQ(res["state"], "Succeeded") << res.dump();
  EXPECT_GT(res["requests"].get<uint64_t>(), 100u);
  EXPECT_EQ(r["cells"][0]["agents"], 2);
}

// Mistakes in the TLS flags are bad input (exit 2) naming the flag, before
// anything starts.
TEST_F(RunTlsE2eTest, InconsistentTlsFlagsAreBadInput) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--hub-tls-cert", dir_->File("hub.crt"), "--hub-tls-key", dir_->File("hub.key")}, "--agent-tls-ca: required"},
      {{"--hub-tls-cert", dir_->File("hub.crt"), "--hub-tls-key", dir_->File("hub.key"), "--hub-tls-client-ca",
        dir_->File("ca.crt"), "--agent-tls-ca", dir_->File("ca.crt")},
       "--agent-tls-cert and --agent-tls-key: required"},
      {{"--hub-tls-cert", dir_->File("hub.crt"), "--hub-tls-key", dir_->File("agent.key"), "--agent-tls-ca",
        dir_->File("ca.crt")},
       "does not belong to the certificate"},
      {{"--agent-tls-ca", dir_->File("ca.crt")}, "the hub speaks plain text"},
      {{"--hub-hello-timeout", "soon"}, "--hub-hello-timeout"},
  };
  for (const auto& [flags, message] : cases) {
    auto p = Start(flags);
    ASSERT_TRUE(p.ok());
    auto status = p->Wait(20s);
    ASSERT_TRUE(status.ok());
    EXPECT_EQ(status->exit_code, 2) << message;
    EXPECT_NE(ReadFile(dir_->File("stderr.txt")).find(message), std::string::npos)
        << ReadFile(dir_->File("stderr.txt"));
  }
}

}  // namespace
}  // namespace fairbench
