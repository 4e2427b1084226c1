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

#include "common/api/loader.h"
#include "common/base64.h"
#include "common/histogram.h"
#include "common/units.h"
#include "controller/bootstrap/agent_endpoint.h"
#include "controller/bootstrap/shutdown_signals.h"
#include "controller/cli/local_run.h"
#include "controller/cli/progress.h"
#include "controller/cli/selftest_judge.h"
#include "controller/hub/agent_hub.h"

namespace fairbench::controller {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kServerProgram = "fairbench-test-delay-server";
constexpr std::chrono::milliseconds kServerDelay{1};
// The open model's connections, C = R·S/5 (10 to 1000). Each sends one
// request every C/R, so during the stall only C requests go out on time —
// the first due on each connection — and the rest wait unsent: a harness
// timing from the send (uncorrected) sees C < R·S/2 requests above S/2 and
// fails, by a factor 2.5. When the server resumes each connection has R·S/C
// = 5 requests queued, sent one after the other, which adds a few round
// trips to the requests at the tail of its backlog.
int64_t OpenConnections(int64_t rate, std::chrono::nanoseconds stall) {
  const auto c = static_cast<int64_t>(static_cast<double>(rate) * std::chrono::duration<double>(stall).count() / 5);
  return std::clamp<int64_t>(c, 10, 1000);
}
constexpr int64_t kClosedConnections = 4;  // "a few": each sees the stall once

int BadInput(const std::string& message) {
  std::fprintf(stderr, "fairbench selftest: %s\n", message.c_str());
  return 2;
}

std::string SelfDir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

// The parent of `pid` from /proc/PID/stat; 0 when unknown.
pid_t ParentOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(in, stat);
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close + 1));
  std::string state;
  long ppid = 0;
  rest >> state >> ppid;
  return static_cast<pid_t>(ppid);
}

// The delay server this process started (a descendant running
// kServerProgram); 0 when there is none.
pid_t FindServer() {
  const pid_t self = getpid();
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return 0;
  pid_t found = 0;
  while (dirent* e = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0' || pid == self) continue;
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/" + std::string(e->d_name) + "/exe", ec);
    if (ec || exe.filename() != kServerProgram) continue;
    pid_t p = static_cast<pid_t>(pid);
    for (int depth = 0; depth < 16 && p > 1; ++depth) {
      p = ParentOf(p);
      if (p == self) {
        found = static_cast<pid_t>(pid);
        break;
      }
    }
    if (found != 0) break;
  }
  closedir(proc);
  return found;
}

// What happened to the stall of one cell.
struct StallDone {
  bool injected = false;
  std::chrono::nanoseconds length{0};  // from SIGSTOP to SIGCONT, as sent
  std::string error;
};

// An observer of one selftest run: passes everything to the progress,
// keeps the cell's record, and when the cell starts measuring stops the
// server for the stall, centred in the measurement. The server is always
// resumed, whatever happens to the run.
class StallInjector final : public RunObserver {
 public:
  StallInjector(RunObserver& progress, std::chrono::nanoseconds offset, std::chrono::nanoseconds stall)
      : progress_(progress), offset_(offset), stall_(stall) {}
  ~StallInjector() override { Finish(); }

  void OnStage(const api::BenchmarkRun& run, const api::CurrentCell& current) override {
    progress_.OnStage(run, current);
    if (current.stage == api::Stage::kMeasuring && !thread_.joinable()) {
      thread_ = std::thread([this, start = Clock::now()] { Inject(start); });
    }
  }
  void OnLive(const api::CurrentCell& current, double rps, double elapsed) override {
    progress_.OnLive(current, rps, elapsed);
  }
  void OnCellDone(const report::RunRecord& record, const report::CellRecord& cell) override {
    progress_.OnCellDone(record, cell);
    cell_ = cell;
  }
  void OnMessage(const std::string& message) override { progress_.OnMessage(message); }

  // Waits for the stall to be over (cancelling it if it has not begun).
  StallDone Finish() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    std::lock_guard<std::mutex> lock(mu_);
    return done_;
  }
  const std::optional<report::CellRecord>& cell() const { return cell_; }

 private:
  void Inject(Clock::time_point measuring) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_until(lock, measuring + offset_, [&] { return cancelled_; })) {
        done_.error = "the measurement ended before the stall was due";
        return;
      }
    }
    const pid_t server = FindServer();
    if (server == 0) {
      std::lock_guard<std::mutex> lock(mu_);
      done_.error = std::string("no ") + kServerProgram + " started by this process was found";
      return;
    }
    // Not cancellable from here: the server must be resumed on time.
    const auto stopped = Clock::now();
    if (kill(server, SIGSTOP) != 0) {
      std::lock_guard<std::mutex> lock(mu_);
      done_.error = "SIGSTOP: " + std::string(std::strerror(errno));
      return;
    }
    std::this_thread::sleep_until(stopped + stall_);
    kill(server, SIGCONT);
    const auto resumed = Clock::now();
    std::lock_guard<std::mutex> lock(mu_);
    done_.injected = true;
    done_.length = resumed - stopped;
  }

  RunObserver& progress_;
  const std::chrono::nanoseconds offset_, stall_;
  std::optional<report::CellRecord> cell_;  // the orchestrator's thread only
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool cancelled_ = false;  // guarded by mu_
  StallDone done_;          // guarded by mu_
};

// Standard output to /dev/null while it lives: the runs' reports go to
// their folders only, so that stdout holds the verdict alone.
class QuietStdout {
 public:
  QuietStdout() {
    std::fflush(stdout);
    saved_ = dup(STDOUT_FILENO);
    const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (saved_ >= 0 && null >= 0) dup2(null, STDOUT_FILENO);
    if (null >= 0) close(null);
  }
  ~QuietStdout() {
    std::fflush(stdout);
    if (saved_ >= 0) {
      dup2(saved_, STDOUT_FILENO);
      close(saved_);
    }
  }
  QuietStdout(const QuietStdout&) = delete;
  QuietStdout& operator=(const QuietStdout&) = delete;

 private:
  int saved_ = -1;
};

struct CellOutcome {
  Histogram latency, uncorrected;
  report::CellRecord record;
  StallDone stall;
};

std::string RunYaml(const std::string& name, int64_t rate, int64_t connections, const std::string& duration,
                    std::chrono::nanoseconds stall) {
  const auto timeout_s = std::chrono::duration_cast<std::chrono::seconds>(stall).count() + 10;
  std::ostringstream y;
  y << "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: " << name << "}\nspec:\n"
    << "  targets:\n  - name: delay-server\n"
    << "    local: {command: [" << kServerProgram << ", --port, \"{port}\", --delay, " << kServerDelay.count()
    << "ms]}\n"
    << "  scenarios:\n  - name: stall\n    request: {method: GET, path: /}\n"
    << "    expect: {status: 200, body: \"Hello, World!\"}\n"
    << "  load: {threads: 1, agents: 1, connections: [" << connections << "], warmup: 1s, duration: " << duration
    << ", timeout: " << timeout_s << "s, rate: " << rate << "}\n"
    << "  cooldown: 0s\n";
  return y.str();
}

Result<Histogram> DecodeHistogram(const std::string& base64) {
  auto bytes = Base64Decode(base64);
  if (!bytes.ok()) return bytes.status();
  return Histogram::DecodeCompressed(*bytes);
}

// One cell through the real orchestrator on the local platform, with the
// stall injected.
Result<CellOutcome> RunCell(const std::string& name, size_t index, int64_t rate, int64_t connections,
                            const SelftestFlags& f, std::chrono::nanoseconds duration, std::chrono::nanoseconds stall,
                            const std::string& output, const LocalRunContext& base, Progress& progress,
                            int* exit_code) {
  api::ParseOptions po;
  po.source = name;
  po.validation.platform = api::Platform::kLocal;
  auto run = api::ParseRun(RunYaml(name, rate, connections, f.duration, stall), po);
  if (!run.ok()) return run.status();

  RunFlags rf;
  rf.files = {name};
  rf.output = (std::filesystem::path(output) / name).string();
  rf.quiet = true;
  rf.lock_file = f.lock_file;
  StallInjector injector(progress, (duration - stall) / 2, stall);
  const LocalRunContext context{rf,
                                base.target_cpus,
                                base.agent_cpus,
                                base.program_dir,
                                base.agent_binary,
                                base.agent_args,
                                base.agents,
                                base.token,
                                base.controller_address,
                                base.target_stop_grace,
                                &injector,
                                progress,
                                base.signals,
                                base.running};
  {
    QuietStdout quiet;
    CarryOutRun(*run, output, index, 2, context, exit_code);
  }
  CellOutcome out;
  out.stall = injector.Finish();
  if (*exit_code != 0) {
    return Status::Internal("the " + name + " cell's run ended with exit code " + std::to_string(*exit_code) +
                            " (see " + rf.output + ")");
  }
  if (!injector.cell().has_value()) {
    return Status::Internal("the " + name + " cell recorded nothing (see " + rf.output + ")");
  }
  out.record = *injector.cell();
  if (out.record.result.state != api::CellState::kSucceeded) {
    return Status::Internal("the " + name + " cell failed: " + out.record.result.message);
  }
  if (!out.stall.injected) return Status::Internal("the " + name + " cell: " + out.stall.error);
  auto latency = DecodeHistogram(out.record.latency_histogram);
  if (!latency.ok()) return latency.status();
  out.latency = std::move(*latency);
  if (!out.record.uncorrected_histogram.empty()) {
    auto uncorrected = DecodeHistogram(out.record.uncorrected_histogram);
    if (!uncorrected.ok()) return uncorrected.status();
    out.uncorrected = std::move(*uncorrected);
  }
  return out;
}

double Ms(uint64_t us) { return static_cast<double>(us) / 1000.0; }
double Ms(std::chrono::nanoseconds d) { return std::chrono::duration<double, std::milli>(d).count(); }

nlohmann::json ChecksJson(const StallVerdict& v) {
  nlohmann::json checks = nlohmann::json::array();
  for (const SelftestCheck& c : v.checks) {
    checks.push_back({{"cell", c.cell}, {"name", c.name}, {"unit", c.unit}, {"measured", c.measured},
                      {"low", c.low}, {"high", c.high}, {"error", c.error}, {"passed", c.passed}});
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
  std::printf("fairbench selftest: a %s stall of the delay server (%lld ms per request) in each cell\n",
              stall.c_str(), static_cast<long long>(kServerDelay.count()));
  std::printf("  %-7s %9s %11s %9s %9s %9s %9s %10s\n", "cell", "requests", "requests/s", "p50 ms", "p99 ms",
              "p99.9 ms", "max ms", "stall ms");
  for (const auto& [name, c] : {std::pair<const char*, const CellOutcome*>{"open", &open}, {"closed", &closed}}) {
    const Histogram& h = c->latency;
    std::printf("  %-7s %9llu %11.0f %9.2f %9.2f %9.2f %9.2f %10.2f\n", name,
                static_cast<unsigned long long>(h.count()),
                c->record.result.requests_per_second, Ms(h.ValueAtPercentile(50)), Ms(h.ValueAtPercentile(99)),
                Ms(h.ValueAtPercentile(99.9)), Ms(h.max()), Ms(c->stall.length));
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
    std::printf("Timed from when each request was sent (uncorrected), the open cell's %s is %.2f ms against %s: such "
                "a harness would %s.\n",
                rank.name.c_str(), rank.measured, rank.expected.c_str(), naive.passed ? "pass too" : "FAIL this test");
  }
  std::printf("\nThe harness %s on %s.\n", v.passed ? "PASSED" : "FAILED", Hostname().c_str());
}

}  // namespace

CLI::App* AddSelftestCommand(CLI::App& app, SelftestFlags& f) {
  CLI::App* cmd = app.add_subcommand(
      "selftest", "Test the tester: stall the delay server for a known time mid-cell and check what the open and "
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
  if (*stall < std::chrono::milliseconds(50) || *stall > std::chrono::seconds(10)) {
    return BadInput("--stall: between 50ms and 10s (shorter, the server's own delay and the machine's noise "
                    "blur it)");
  }
  if (*duration < 2 * *stall + std::chrono::seconds(1)) {
    return BadInput("--duration: at least twice the stall plus 1s, so that the stall lies wholly inside the "
                    "measurement");
  }
  if (static_cast<double>(f.rate) * std::chrono::duration<double>(*stall).count() < 40) {
    return BadInput("--rate × --stall: at least 40 requests due during the stall, or its percentiles mean little");
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
  LocalRunContext base{unused, {}, {}, program_dir, agent_binary, {}, endpoint.hub(), token, endpoint.address(),
                       std::chrono::milliseconds(5000), &progress, progress, signals,
                       [&](Orchestrator* o) {
                         std::lock_guard<std::mutex> lock(current_mu);
                         current = o;
                         if (o != nullptr && signals.first() != 0) {
                           o->Cancel("interrupted by " + SignalName(signals.first()));
                         }
                       }};

  int exit_code = 0;
  std::optional<CellOutcome> open, closed;
  std::string error;
  auto cell = [&](const std::string& name, size_t index, int64_t rate,
                  int64_t connections) -> std::optional<CellOutcome> {
    if (signals.first() != 0 || !error.empty()) return std::nullopt;
    auto c = RunCell(name, index, rate, connections, f, *duration, *stall, output, base, progress, &exit_code);
    if (!c.ok()) {
      error = c.status().message();
      return std::nullopt;
    }
    return std::move(*c);
  };
  open = cell("selftest-open", 0, f.rate, OpenConnections(f.rate, *stall));
  closed = cell("selftest-closed", 1, 0, kClosedConnections);
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

  // Each cell's stall as it was sent (from SIGSTOP to SIGCONT: a busy
  // machine wakes the injecting thread late by a few ms).
  StallExpectation e;
  e.stall = open->stall.length;
  e.closed_stall = closed->stall.length;
  e.delay = kServerDelay;
  e.rate = static_cast<double>(f.rate);
  e.closed_connections = kClosedConnections;
  const StallVerdict verdict = JudgeStall(open->latency, closed->latency, e);
  const StallVerdict naive = JudgeStall(open->uncorrected, closed->latency, e);
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
