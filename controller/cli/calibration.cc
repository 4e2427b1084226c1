#include "controller/cli/calibration.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "api/loader.h"
#include "api/validate.h"
#include "common/base64.h"

namespace fairbench::controller {
namespace {

using Clock = std::chrono::steady_clock;

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
Result<CellOutcome> RunCell(const std::string& name, int64_t rate, int64_t connections,
                            const std::string& duration_text, const std::string& lock_file,
                            std::chrono::nanoseconds duration, std::chrono::nanoseconds stall,
                            const std::string& output, const LocalRunContext& base, Progress& progress,
                            int* exit_code) {
  api::ParseOptions po;
  po.source = name;
  po.validation.platform = api::Platform::kLocal;
  auto run = api::ParseRun(RunYaml(name, rate, connections, duration_text, stall), po);
  if (!run.ok()) return run.status();

  RunFlags rf;
  rf.files = {name};
  rf.output = (std::filesystem::path(output) / name).string();
  rf.quiet = true;
  rf.lock_file = lock_file;
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
    CarryOutRun(*run, output, 2, context, exit_code);
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

}  // namespace

Result<CalibrationOutcome> RunCalibration(const CalibrationSettings& s, const std::string& output,
                                          const LocalRunContext& base, Progress& progress, int* exit_code) {
  auto open = RunCell("selftest-open", s.rate, OpenConnections(s.rate, s.stall), s.duration_text, s.lock_file,
                      s.duration, s.stall, output, base, progress, exit_code);
  if (!open.ok()) return open.status();
  if (base.signals.first() != 0) return Status::Cancelled("interrupted");
  auto closed = RunCell("selftest-closed", 0, kClosedConnections, s.duration_text, s.lock_file, s.duration, s.stall,
                        output, base, progress, exit_code);
  if (!closed.ok()) return closed.status();
  CalibrationOutcome o{std::move(*open), std::move(*closed), {}, {}, {}};
  // Each cell's stall as it was sent (from SIGSTOP to SIGCONT: a busy
  // machine wakes the injecting thread late by a few ms).
  StallExpectation& e = o.expectation;
  e.stall = o.open.stall.length;
  e.closed_stall = o.closed.stall.length;
  e.delay = kServerDelay;
  e.rate = static_cast<double>(s.rate);
  e.closed_connections = kClosedConnections;
  o.verdict = JudgeStall(o.open.latency, o.closed.latency, e);
  o.naive = JudgeStall(o.open.uncorrected, o.closed.latency, e);
  return o;
}

report::CalibrationRecord CalibrationRecordOf(const CalibrationOutcome& o, const std::string& host) {
  report::CalibrationRecord r;
  r.passed = o.verdict.passed;
  r.host = host;
  r.stall_ms = std::chrono::duration<double, std::milli>(o.expectation.stall).count();
  r.delay_ms = std::chrono::duration<double, std::milli>(o.expectation.delay).count();
  r.rate = o.expectation.rate;
  r.closed_connections = o.expectation.closed_connections;
  r.uncorrected_would_pass = o.naive.passed;
  for (const SelftestCheck& c : o.verdict.checks) {
    r.checks.push_back(
        report::CalibrationCheck{c.cell, c.name, c.expected, c.unit, c.measured, c.low, c.high, c.error, c.passed});
  }
  return r;
}

}  // namespace fairbench::controller
