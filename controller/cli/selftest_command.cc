#include "controller/cli/selftest_command.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "api/loader.h"
#include "api/validate.h"
#include "common/base64.h"
#include "common/histogram.h"
#include "common/units.h"
#include "controller/bootstrap/agent_endpoint.h"
#include "controller/bootstrap/shutdown_signals.h"
#include "controller/cli/calibration.h"
#include "controller/cli/local_run.h"
#include "controller/cli/progress.h"
#include "controller/cli/selftest_judge.h"
#include "controller/hub/agent_hub.h"

namespace fairbench::controller {
namespace {

int BadInput(const std::string& message) {
  std::fprintf(stderr, "fairbench selftest: %s\n", message.c_str());
  return 2;
}

std::string SelfDir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

double Ms(uint64_t us) { return static_cast<double>(us) / 1000.0; }
double Ms(std::chrono::nanoseconds d) { return std::chrono::duration<double, std::milli>(d).count(); }

nlohmann::json ChecksJson(const StallVerdict& v) {
  nlohmann::json checks = nlohmann::json::array();
  for (const SelftestCheck& c : v.checks) {
    checks.push_back({{"cell", c.cell},
                      {"name", c.name},
                      {"unit", c.unit},
                      {"measured", c.measured},
                      {"low", c.low},
                      {"high", c.high},
                      {"error", c.error},
                      {"passed", c.passed}});
  }
  return checks;
}

nlohmann::json LatencyJson(const Histogram& h) {
  return {{"p50", Ms(h.ValueAtPercentile(50))},
          {"p99", Ms(h.ValueAtPercentile(99))},
          {"p999", Ms(h.ValueAtPercentile(99.9))},
          {"max", Ms(h.max())}};
}

nlohmann::json CellJson(const CellOutcome& c, int64_t connections) {
  nlohmann::json j = {{"requests", c.latency.count()},
                      {"connections", connections},
                      {"requestsPerSecond", c.record.result.requests_per_second},
                      {"stallMs", Ms(c.stall.length)},
                      {"latencyMs", LatencyJson(c.latency)}};
  if (c.uncorrected.count() > 0) j["uncorrectedLatencyMs"] = LatencyJson(c.uncorrected);
  return j;
}

std::string Hostname() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) return "this machine";
  return host;
}

void PrintText(const CellOutcome& open, const CellOutcome& closed, const StallVerdict& v, const StallVerdict& naive,
               const std::string& stall, int64_t rate) {
  std::printf("fairbench selftest: a %s stall of the delay server (%lld ms per request) in each cell\n", stall.c_str(),
              static_cast<long long>(kServerDelay.count()));
  std::printf("  %-7s %9s %11s %9s %9s %9s %9s %10s\n", "cell", "requests", "requests/s", "p50 ms", "p99 ms",
              "p99.9 ms", "max ms", "stall ms");
  for (const auto& [name, c] : {std::pair<const char*, const CellOutcome*>{"open", &open}, {"closed", &closed}}) {
    const Histogram& h = c->latency;
    std::printf("  %-7s %9llu %11.0f %9.2f %9.2f %9.2f %9.2f %10.2f\n", name,
                static_cast<unsigned long long>(h.count()), c->record.result.requests_per_second,
                Ms(h.ValueAtPercentile(50)), Ms(h.ValueAtPercentile(99)), Ms(h.ValueAtPercentile(99.9)), Ms(h.max()),
                Ms(c->stall.length));
  }
  std::printf("\n  %-7s %-16s %-24s %11s %11s  %s\n", "cell", "check", "expected", "measured", "error", "verdict");
  for (const SelftestCheck& c : v.checks) {
    std::printf("  %-7s %-16s %-24s %11.2f %+11.2f  %s\n", c.cell.c_str(), c.name.c_str(), c.expected.c_str(),
                c.measured, c.error, c.passed ? "PASS" : "FAIL");
  }
  // The omission, in numbers: what the closed loop did not send.
  const double omitted = closed.record.result.requests_per_second * Ms(closed.stall.length) / 1000;
  std::printf(
      "\nCoordinated omission: both cells met the same stall. The open model (%lld requests/s offered) counts every "
      "request due during it (p99 %.1f ms); the closed loop sent nothing while it waited, about %.0f requests at "
      "its rate, so only its %lld requests in flight saw the stall and its p99 is %.2f ms.\n",
      static_cast<long long>(rate), Ms(open.latency.ValueAtPercentile(99)), omitted,
      static_cast<long long>(kClosedConnections), Ms(closed.latency.ValueAtPercentile(99)));
  if (open.uncorrected.count() > 0) {
    const SelftestCheck& rank = naive.checks[1];  // the open model's percentile at rank N − R·S/2
    std::printf(
        "Timed from when each request was sent (uncorrected), the open cell's %s is %.2f ms against %s: such "
        "a harness would %s.\n",
        rank.name.c_str(), rank.measured, rank.expected.c_str(), naive.passed ? "pass too" : "FAIL this test");
  }
  std::printf("\nThe harness %s on %s.\n", v.passed ? "PASSED" : "FAILED", Hostname().c_str());
}

}  // namespace

CLI::App* AddSelftestCommand(CLI::App& app, SelftestFlags& f) {
  CLI::App* cmd = app.add_subcommand(
      "selftest",
      "Test the tester: stall the delay server for a known time mid-cell and check what the open and "
      "the closed model report");
  cmd->add_option("--stall", f.stall, "How long the server is stopped in each cell (default 500ms)");
  cmd->add_option("--rate", f.rate, "The open model's requests/s (default 1000)")->check(CLI::Range(10, 100000));
  cmd->add_option("--duration", f.duration, "Each cell's measurement (default 4s; at least twice the stall + 1s)");
  cmd->add_flag("--json", f.json, "The verdict as JSON on stdout");
  cmd->add_option("-o,--output", f.output, "Keep the two runs' folders here (default: a temporary folder, removed)");
  cmd->add_option("--lock-file", f.lock_file, "Machine-wide lock that serialises fairbench runs");
  return cmd;
}

int RunSelftestCommand(const SelftestFlags& f) {
  auto stall = ParseDuration(f.stall);
  if (!stall.ok()) return BadInput("--stall: " + stall.status().message());
  auto duration = ParseDuration(f.duration);
  if (!duration.ok()) return BadInput("--duration: " + duration.status().message());
  CalibrationSettings settings;
  settings.stall = *stall;
  settings.duration = *duration;
  settings.duration_text = f.duration;
  settings.rate = f.rate;
  settings.lock_file = f.lock_file;
  if (auto problem = api::CheckCalibration(settings.stall, settings.duration, settings.rate)) {
    return BadInput("--" + std::string(problem->field) + ": " + problem->message);
  }
  const std::string program_dir = SelfDir();
  const std::string agent_binary = program_dir + "/fairbench-agent";
  if (access(agent_binary.c_str(), X_OK) != 0) return BadInput("cannot find fairbench-agent at " + agent_binary);
  if (access((program_dir + "/" + kServerProgram).c_str(), X_OK) != 0) {
    return BadInput(std::string("cannot find ") + kServerProgram + " next to fairbench, in " + program_dir);
  }

  std::string output = f.output;
  bool remove_output = false;
  if (output.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/fairbench-selftest-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) return BadInput("cannot create a folder in " + pattern);
    output = pattern;
    remove_output = true;
  }

  Orchestrator* current = nullptr;
  std::mutex current_mu;
  ShutdownSignals signals(
      [&](int sig) {
        std::lock_guard<std::mutex> lock(current_mu);
        if (current != nullptr) current->Cancel("interrupted by " + SignalName(sig));
      },
      [](int first, int) { return 128 + first; });
  const std::string token = NewAgentToken();
  auto hub = ResolveHubFlags(HubFlags{});
  if (!hub.ok()) return BadInput(hub.status().message());
  AgentEndpoint endpoint(token, "fairbench-controller", *hub);
  if (Status s = endpoint.Listen("127.0.0.1:0"); !s.ok()) return BadInput(s.message());
  Progress progress(isatty(STDERR_FILENO) != 0, f.json);
  RunFlags unused;
  LocalRunContext base{unused,
                       {},
                       {},
                       program_dir,
                       agent_binary,
                       {},
                       endpoint.hub(),
                       token,
                       endpoint.address(),
                       std::chrono::milliseconds(5000),
                       &progress,
                       progress,
                       signals,
                       [&](Orchestrator* o) {
                         std::lock_guard<std::mutex> lock(current_mu);
                         current = o;
                         if (o != nullptr && signals.first() != 0) {
                           o->Cancel("interrupted by " + SignalName(signals.first()));
                         }
                       }};

  int exit_code = 0;
  std::string error;
  auto outcome = RunCalibration(settings, output, base, progress, &exit_code);
  if (!outcome.ok()) error = outcome.status().message();
  endpoint.Shutdown();
  signals.Stop();
  // Kept when a cell failed, for its logs; an interrupted selftest leaves nothing.
  if (remove_output && (error.empty() || signals.first() != 0)) {
    std::error_code ec;
    std::filesystem::remove_all(output, ec);
  }
  if (signals.first() != 0) return 128 + signals.first();
  if (!error.empty()) {
    std::fprintf(stderr, "fairbench selftest: %s; the runs' folders are in %s\n", error.c_str(), output.c_str());
    return 1;
  }

  const StallExpectation& e = outcome->expectation;
  const StallVerdict& verdict = outcome->verdict;
  const StallVerdict& naive = outcome->naive;
  const CellOutcome* open = &outcome->open;
  const CellOutcome* closed = &outcome->closed;
  if (f.json) {
    nlohmann::json j = {{"passed", verdict.passed},
                        {"host", Hostname()},
                        {"delayMs", Ms(e.delay)},
                        {"rate", f.rate},
                        {"closedConnections", kClosedConnections},
                        {"open", CellJson(*open, OpenConnections(f.rate, *stall))},
                        {"closed", CellJson(*closed, kClosedConnections)},
                        {"checks", ChecksJson(verdict)},
                        {"uncorrectedWouldPass", naive.passed},
                        {"uncorrectedChecks", ChecksJson(naive)}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    PrintText(*open, *closed, verdict, naive, f.stall, f.rate);
  }
  return verdict.passed ? 0 : 1;
}

}  // namespace fairbench::controller
