// CarryOutRun: one BenchmarkRun carried out by `fairbench run` on this
// machine — its output folder (logs/, the controller's log, results.json
// checked against --resume), its platform (processes, or containers of the
// Docker engine), the orchestrator, and the report written (report.md,
// report.html) and printed.
//
// Blocking; the command's thread only. What is shared by every run of the
// command (the flags, the agents' hub, the observer) is given in
// LocalRunContext and not owned.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "api/benchmark_run.h"
#include "controller/bootstrap/shutdown_signals.h"
#include "controller/cli/progress.h"
#include "controller/cli/run_command.h"
#include "controller/hub/agent_pool.h"
#include "controller/orchestrator/orchestrator.h"

namespace fairbench::controller {

struct LocalRunContext {
  const RunFlags& flags;
  std::vector<int> target_cpus, agent_cpus;  // from the flags; empty: the run's own
  std::string program_dir;                   // this binary's folder: bare program names are looked up here first
  std::string agent_binary;
  std::vector<std::string> agent_args;  // the agents' TLS flags
  AgentPool& agents;                    // the hub
  std::string token;                    // the agents' (given in their environment)
  std::string controller_address;       // the hub, as the agents dial it
  std::chrono::milliseconds target_stop_grace{10000};
  RunObserver* observer;
  Progress& progress;
  const ShutdownSignals& signals;
  // Called with the orchestrator before it runs and with null after, so
  // that a signal reaches it.
  std::function<void(Orchestrator*)> running;
};

// Carries out `run` (its files relative to `base_dir`; one of `count`
// runs of the command: more than one, each in its own folder under the
// output). Sets *exit_code as RunRunCommand documents (1, 2,
// 3, 128 + the signal; left as it was when the run succeeded); returns
// false when the runs after it must not start.
bool CarryOutRun(const api::BenchmarkRun& run, const std::string& base_dir, size_t count,
                 const LocalRunContext& context, int* exit_code);

}  // namespace fairbench::controller
