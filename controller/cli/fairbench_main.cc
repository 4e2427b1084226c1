// fairbench: fair, reproducible HTTP benchmarks of web servers.
//
//   fairbench run FILE... [--output DIR] [--resume]   on this machine, targets and agents pinned to CPUs
//   fairbench fetch RUN --output DIR                  a Kubernetes run's record into a folder
//   fairbench compare BASE.json NEW.json              two runs cell by cell, with their noise
//   fairbench import FILE... --store PATH             results.json files into a result store
//   fairbench history [series|check] --store PATH     the runs of a result store, one series, the CI gate
//   fairbench serve --store PATH [--listen H:P]       a read-only web page over a result store
//   fairbench selftest [--stall 500ms] [--json]      test the tester: a known stall, both load models
//   fairbench crd                                     the BenchmarkRun CRD, for kubectl apply
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "common/allocator.h"
#include "api/crd.h"
#include "common/cli.h"
#include "controller/cli/compare_command.h"
#include "controller/cli/fetch_command.h"
#include "controller/cli/history_command.h"
#include "controller/cli/import_command.h"
#include "controller/cli/run_command.h"
#include "controller/cli/selftest_command.h"
#include "controller/cli/serve_command.h"

int main(int argc, char** argv) {
  fairbench::KeepLargeBlocksInTheHeap();
  CLI::App app{"fairbench: fair, reproducible HTTP benchmarks of web servers"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("fairbench ") + FAIRBENCH_VERSION);
  fairbench::controller::RunFlags run;
  CLI::App* run_cmd = fairbench::controller::AddRunCommand(app, run);
  fairbench::controller::FetchFlags fetch;
  CLI::App* fetch_cmd = fairbench::controller::AddFetchCommand(app, fetch);
  fairbench::controller::CompareFlags compare;
  CLI::App* compare_cmd = fairbench::controller::AddCompareCommand(app, compare);
  fairbench::controller::ImportFlags import;
  CLI::App* import_cmd = fairbench::controller::AddImportCommand(app, import);
  fairbench::controller::HistoryFlags history;
  const fairbench::controller::HistoryCommand history_cmd = fairbench::controller::AddHistoryCommand(app, history);
  fairbench::controller::ServeFlags serve;
  CLI::App* serve_cmd = fairbench::controller::AddServeCommand(app, serve);
  fairbench::controller::SelftestFlags selftest;
  CLI::App* selftest_cmd = fairbench::controller::AddSelftestCommand(app, selftest);
  CLI::App* crd_cmd = app.add_subcommand("crd", "Print the BenchmarkRun CustomResourceDefinition (YAML)");
  if (auto code = fairbench::ParseCommandLine(app, argc, argv, "fairbench")) return *code;
  if (run_cmd->parsed()) return fairbench::controller::RunRunCommand(run);
  if (fetch_cmd->parsed()) return fairbench::controller::RunFetchCommand(fetch);
  if (compare_cmd->parsed()) return fairbench::controller::RunCompareCommand(compare);
  if (import_cmd->parsed()) return fairbench::controller::RunImportCommand(import);
  if (history_cmd.history->parsed()) return fairbench::controller::RunHistoryCommand(history_cmd, history);
  if (serve_cmd->parsed()) return fairbench::controller::RunServeCommand(serve);
  if (selftest_cmd->parsed()) return fairbench::controller::RunSelftestCommand(selftest);
  if (crd_cmd->parsed()) {
    std::fputs(fairbench::api::BenchmarkRunCrdYaml().c_str(), stdout);
    return 0;
  }
  return 2;
}
