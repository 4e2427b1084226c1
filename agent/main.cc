// fairbench-agent: the load generator.
//
//   fairbench-agent load URL [options]                  standalone, wrk's interface and output
//   fairbench-agent --controller HOST:PORT --token T    serve a controller's load jobs
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "agent/agent_client.h"
#include "agent/load_command.h"
#include "common/cli.h"
#include "common/signals.h"

namespace {

int Connect(const std::string& controller, std::string token, const std::string& token_file, const std::string& id,
            const std::string& node, const std::string& cpus, double give_up_s) {
  using fairbench::agent::AgentClient;
  using fairbench::agent::AgentClientOptions;
  if (!token_file.empty()) {
    std::ifstream in(token_file);
    if (!in || !std::getline(in, token)) {
      std::fprintf(stderr, "fairbench-agent: --token-file: cannot read '%s'\n", token_file.c_str());
      return 2;
    }
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
  AgentClientOptions options;
  options.controller = controller;
  options.token = token;
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
  app.add_option("--token", token, "Shared secret the controller expects (or FAIRBENCH_AGENT_TOKEN)");
  app.add_option("--token-file", token_file, "Read the token from a file");
  app.add_option("--id", id, "Agent id (default: hostname-pid)");
  app.add_option("--node", node, "Node name reported to the controller (default: hostname)");
  app.add_option("--cpus", cpus, "Pin worker threads to these CPUs, e.g. 2-3");
  app.add_option("--give-up-after", give_up, "Exit when no controller could be reached for this many seconds (0: never)");
  fairbench::agent::LoadFlags load;
  CLI::App* load_cmd = fairbench::agent::AddLoadCommand(app, load);
  if (auto code = fairbench::ParseCommandLine(app, argc, argv, "fairbench-agent")) return *code;
  if (load_cmd->parsed()) return fairbench::agent::RunLoadCommand(load);
  if (controller_opt->count() > 0) return Connect(controller, token, token_file, id, node, cpus, give_up);
  std::fprintf(stderr, "fairbench-agent: give a command (load URL) or --controller HOST:PORT (see --help)\n");
  return 2;
}
