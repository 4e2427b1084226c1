// fairbench: fair, reproducible HTTP benchmarks of web servers.
//
//   fairbench run FILE... [--output DIR] [--resume]   on this machine, targets and agents pinned to CPUs
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "controller/run_command.h"

int main(int argc, char** argv) {
  CLI::App app{"fairbench: fair, reproducible HTTP benchmarks of web servers"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("fairbench ") + FAIRBENCH_VERSION);
  fairbench::controller::RunFlags run;
  CLI::App* run_cmd = fairbench::controller::AddRunCommand(app, run);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "fairbench: %s (see --help)\n", e.what());
    return 2;
  }
  if (run_cmd->parsed()) return fairbench::controller::RunRunCommand(run);
  return 2;
}
