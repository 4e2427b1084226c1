// fairbench-agent: the load generator.
//
//   fairbench-agent load URL [options]   standalone, wrk's interface and output
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "agent/load_command.h"

int main(int argc, char** argv) {
  CLI::App app{"fairbench-agent: a wrk-equivalent HTTP load generator"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("fairbench-agent ") + FAIRBENCH_VERSION);
  fairbench::agent::LoadFlags load;
  CLI::App* load_cmd = fairbench::agent::AddLoadCommand(app, load);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One clear line, exit code 2, whatever the mistake.
    std::fprintf(stderr, "fairbench-agent: %s (see --help)\n", e.what());
    return 2;
  }
  if (load_cmd->parsed()) return fairbench::agent::RunLoadCommand(load);
  return 2;
}
