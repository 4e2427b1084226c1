// fairbench-target-nginx --port P [--host H] [--threads N] [--request-log FILE]
//     [--nginx PATH] [--work-dir DIR] [--print-config]
//
// Runs Debian's nginx with the study's endpoints (nginx.conf.in): writes the
// config for this port into a work dir (a fresh temp dir unless --work-dir)
// and starts nginx in the foreground ("daemon off") as its child. It stays
// as a thin parent rather than exec'ing nginx, for three things nginx
// cannot do itself: turning the access log into --request-log lines while
// nginx runs, making SIGTERM/SIGINT a graceful stop (nginx's SIGQUIT: the
// requests in flight finish and are logged) that exits 0, and removing the
// temp dir afterwards. --threads sets worker_processes. If nginx exits on
// its own, so does the launcher, with nginx's exit code (1 if killed).
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "common/signals.h"
#include "targets/common/request_log.h"
#include "targets/common/target_flags.h"
#include "targets/nginx/access_log_tail.h"
#include "targets/nginx/nginx_config.h"

namespace {

using fairbench::Result;
using fairbench::Status;

Result<std::string> MakeTempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/fairbench-target-nginx.XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) return Status::IoError("mkdtemp " + pattern + ": " + std::strerror(errno));
  return std::string(buf.data());
}

// Forks nginx. The child gets a clean signal state and dies with us
// (PR_SET_PDEATHSIG) so that a killed launcher leaves no server behind.
Result<pid_t> StartNginx(const std::string& nginx, const std::string& dir) {
  std::string conf = dir + "/nginx.conf";
  std::string error_log = dir + "/error.log";
  std::vector<std::string> args = {nginx, "-p", dir, "-c", conf, "-e", error_log};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return Status::IoError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);  // we died before prctl took effect
    execv(argv[0], argv.data());
    std::fprintf(stderr, "fairbench-target-nginx: exec %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  return pid;
}

// Waits for `pid` (SIGCHLD is blocked and taken here) up to `timeout_ms`.
bool WaitChild(pid_t pid, int* raw, int timeout_ms) {
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    if (waitpid(pid, raw, WNOHANG) == pid) return true;
    auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    timespec ts{static_cast<time_t>(left.count() / 1000000000), static_cast<long>(left.count() % 1000000000)};
    sigtimedwait(&chld, nullptr, &ts);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fairbench reference target on Debian's nginx"};
  fairbench::targets::TargetFlags flags;
  fairbench::targets::AddTargetFlags(app, &flags);
  std::string nginx = "/usr/sbin/nginx";
  std::string work_dir;
  bool print_config = false;
  app.add_option("--nginx", nginx, "the nginx binary")->capture_default_str();
  app.add_option("--work-dir", work_dir, "directory for config, logs and pid file (kept); default: a temp dir");
  app.add_flag("--print-config", print_config, "print the config and exit");
  CLI11_PARSE(app, argc, argv);

  signal(SIGPIPE, SIG_IGN);
  const fairbench::BlockedSignals signals({SIGTERM, SIGINT, SIGCHLD});

  const bool temp_dir = work_dir.empty();
  if (temp_dir) {
    auto made = MakeTempDir();
    if (!made.ok()) {
      std::fprintf(stderr, "%s\n", made.status().ToString().c_str());
      return 1;
    }
    work_dir = *made;
  }
  // When we are root, nginx's workers run as nobody and need to reach the
  // temp paths inside.
  chmod(work_dir.c_str(), 0755);
  auto cleanup = [&] {
    std::error_code ignored;
    if (temp_dir) std::filesystem::remove_all(work_dir, ignored);
  };

  fairbench::targets::NginxTargetConfig config;
  config.host = flags.host;
  config.port = flags.port;
  config.workers = flags.threads;
  config.dir = work_dir;
  config.access_log = !flags.request_log.empty();
  auto text = fairbench::targets::RenderNginxConfig(config);
  if (!text.ok()) {
    std::fprintf(stderr, "%s\n", text.status().ToString().c_str());
    cleanup();
    return 1;
  }
  if (print_config) {
    std::fputs(text->c_str(), stdout);
    cleanup();
    return 0;
  }
  {
    std::ofstream out(work_dir + "/nginx.conf");
    out << *text;
    if (!out) {
      std::fprintf(stderr, "cannot write %s/nginx.conf\n", work_dir.c_str());
      cleanup();
      return 1;
    }
  }

  std::unique_ptr<fairbench::targets::RequestLog> log;
  if (!flags.request_log.empty()) {
    auto opened = fairbench::targets::RequestLog::Open(flags.request_log);
    if (!opened.ok()) {
      std::fprintf(stderr, "%s\n", opened.status().ToString().c_str());
      cleanup();
      return 1;
    }
    log = std::move(*opened);
  }

  auto pid = StartNginx(nginx, work_dir);
  if (!pid.ok()) {
    std::fprintf(stderr, "%s\n", pid.status().ToString().c_str());
    cleanup();
    return 1;
  }
  std::printf("fairbench-target-nginx: nginx pid %d on %s:%u with %d workers, config %s/nginx.conf\n",
              static_cast<int>(*pid), flags.host.c_str(), static_cast<unsigned>(flags.port), flags.threads,
              work_dir.c_str());
  std::fflush(stdout);

  std::atomic<bool> stop_tail{false};
  std::unique_ptr<fairbench::targets::AccessLogTail> tail;
  std::thread tailer;
  if (log) {
    tail = std::make_unique<fairbench::targets::AccessLogTail>(work_dir + "/access.log", log.get());
    tailer = std::thread([&] {
      while (!stop_tail.load()) {
        // The log may not exist yet (nginx creates it on its first
        // request); the next poll tries again.
        (void)tail->Poll(fairbench::targets::UnixMillisNow());
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
  }

  int raw = 0;
  bool asked_to_stop = false;
  while (true) {
    const int sig = signals.Wait();
    if (sig == SIGCHLD) {
      if (waitpid(*pid, &raw, WNOHANG) == *pid) break;
      continue;
    }
    asked_to_stop = true;
    kill(*pid, SIGQUIT);  // graceful: finish (and log) the requests in flight
    if (WaitChild(*pid, &raw, 5000)) break;
    kill(*pid, SIGTERM);
    if (WaitChild(*pid, &raw, 2000)) break;
    kill(*pid, SIGKILL);
    waitpid(*pid, &raw, 0);
    break;
  }

  if (tail) {
    stop_tail.store(true);
    tailer.join();
    if (Status s = tail->Finish(); !s.ok()) std::fprintf(stderr, "%s\n", s.ToString().c_str());
  }
  const bool clean = WIFEXITED(raw) && WEXITSTATUS(raw) == 0;
  if (!clean) {
    std::ifstream err(work_dir + "/error.log");
    std::fprintf(stderr, "fairbench-target-nginx: nginx ended (%s %d); error log:\n%s\n",
                 WIFEXITED(raw) ? "exit" : "signal", WIFEXITED(raw) ? WEXITSTATUS(raw) : WTERMSIG(raw),
                 std::string(std::istreambuf_iterator<char>(err), {}).c_str());
  }
  cleanup();
  if (clean) return 0;
  if (asked_to_stop) return 1;
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : 1;
}
