// fairbench-agent: the load generator.
//
//   fairbench-agent load URL [options]                  standalone, wrk's interface and output
//   fairbench-agent --controller HOST:PORT --token-file F [--tls-ca F …]   serve a controller's load jobs
//
// The token comes from a file or FAIRBENCH_AGENT_TOKEN: --token on the
// command line works but warns, since every user of the machine sees a
// command line in ps (it is blanked in /proc/self/cmdline once read, which
// narrows the window but cannot close it).
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "agent/agent_client.h"
#include "agent/load_command.h"
#include "common/cli.h"
#include "common/signals.h"

namespace {

// Overwrites the value of --token in this process's arguments, which is
// what /proc/<pid>/cmdline (and so ps) shows.
void BlankTokenArgument(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    char* value = nullptr;
    if (std::strcmp(argv[i], "--token") == 0 && i + 1 < argc) value = argv[i + 1];
    else if (std::strncmp(argv[i], "--token=", 8) == 0) value = argv[i] + 8;
    if (value != nullptr) std::memset(value, '*', std::strlen(value));
  }
}

int Connect(const std::string& controller, std::string token, const std::string& token_file, const std::string& id,
            const std::string& node, const std::string& cpus, double give_up_s, const fairbench::agent::AgentTls& tls) {
  using fairbench::agent::AgentClient;
  using fairbench::agent::AgentClientOptions;
  const bool token_on_command_line = !token.empty();
  if (!token_file.empty()) {
    std::ifstream in(token_file);
    if (!in || !std::getline(in, token)) {
      std::fprintf(stderr, "fairbench-agent: --token-file: cannot read '%s'\n", token_file.c_str());
      return 2;
    }
    // A file written by hand or by `echo` ends in a newline (or CRLF).
    while (!token.empty() && (token.back() == '\r' || token.back() == ' ' || token.back() == '\t')) token.pop_back();
  }
  if (token.empty()) {
    if (const char* env = std::getenv("FAIRBENCH_AGENT_TOKEN")) token = env;
  }
  if (token.empty()) {
    std::fprintf(stderr, "fairbench-agent: a token is required (--token, --token-file or FAIRBENCH_AGENT_TOKEN)\n");
    return 2;
  }
  if (controller.find(':') == std::string::npos) {
    std::fprintf(stderr, "fairbench-agent: --controller must be HOST:PORT, got '%s'\n", controller.c_str());
    return 2;
  }
  // Checked now, so that a wrong path is bad input (exit 2); read again at
  // every dial.
  if (auto credentials = fairbench::agent::AgentCredentials(tls); !credentials.ok()) {
    std::fprintf(stderr, "fairbench-agent: %s\n", credentials.status().message().c_str());
    return 2;
  }
  AgentClientOptions options;
  options.controller = controller;
  options.token = token;
  options.tls = tls;
  options.agent_id = id;
  options.node = node;
  options.give_up_after = std::chrono::milliseconds(static_cast<int64_t>(give_up_s * 1000));
  if (!cpus.empty()) {
    auto list = fairbench::agent::ParseCpusFlag(cpus);
    if (!list.ok()) {
      std::fprintf(stderr, "fairbench-agent: --cpus: %s\n", list.status().message().c_str());
      return 2;
    }
    options.cpus = *list;
  }
  // After the checks: bad input stays one line.
  if (token_on_command_line) {
    std::fprintf(stderr,
                 "fairbench-agent: warning: --token puts the secret on the command line, where ps shows it to every "
                 "user of this machine; use --token-file or FAIRBENCH_AGENT_TOKEN\n");
  }
  std::signal(SIGPIPE, SIG_IGN);
  AgentClient client(options);  // starts no thread
  // Before client.Run() starts any thread: they all inherit the mask.
  fairbench::SignalWatcher signal_watcher({SIGINT, SIGTERM}, [&client](int) { client.Shutdown(); });
  const fairbench::Status s = client.Run();
  signal_watcher.Stop();
  if (!s.ok()) {
    std::fprintf(stderr, "fairbench-agent: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fairbench-agent: a wrk-equivalent HTTP load generator"};
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", std::string("fairbench-agent ") + FAIRBENCH_VERSION);
  std::string controller, token, token_file, id, node, cpus;
  double give_up = 0;
  auto* controller_opt = app.add_option("--controller", controller, "Serve load jobs of the controller at HOST:PORT");
  app.add_option("--token", token,
                 "Shared secret the controller expects; visible in ps: prefer --token-file or FAIRBENCH_AGENT_TOKEN");
  app.add_option("--token-file", token_file, "Read the token from a file (its first line)");
  fairbench::agent::AgentTls tls;
  app.add_option("--tls-ca", tls.ca_file, "Dial the controller over TLS and verify it against this CA (PEM)");
  app.add_option("--tls-cert", tls.cert_file, "This agent's certificate (PEM), for a controller that requires one");
  app.add_option("--tls-key", tls.key_file, "The private key of --tls-cert (PEM)");
  app.add_option("--tls-server-name", tls.server_name,
                 "The name the controller's certificate must carry (default: the host of --controller)");
  app.add_option("--id", id, "Agent id (default: hostname-pid)");
  app.add_option("--node", node, "Node name reported to the controller (default: hostname)");
  app.add_option("--cpus", cpus, "Pin worker threads to these CPUs, e.g. 2-3");
  app.add_option("--give-up-after", give_up,
                 "Exit when no controller could be reached for this many seconds (0: never)");
  fairbench::agent::LoadFlags load;
  CLI::App* load_cmd = fairbench::agent::AddLoadCommand(app, load);
  if (auto code = fairbench::ParseCommandLine(app, argc, argv, "fairbench-agent")) return *code;
  BlankTokenArgument(argc, argv);
  if (load_cmd->parsed()) return fairbench::agent::RunLoadCommand(load);
  if (controller_opt->count() > 0) return Connect(controller, token, token_file, id, node, cpus, give_up, tls);
  std::fprintf(stderr, "fairbench-agent: give a command (load URL) or --controller HOST:PORT (see --help)\n");
  return 2;
}
