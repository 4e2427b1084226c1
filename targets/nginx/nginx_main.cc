// fairbench-target-nginx --port P [--host H] [--threads N] [--request-log FILE]
//     [--tls [--cert FILE --key FILE]] [--http2]
//     [--nginx PATH] [--work-dir DIR] [--print-config]
//
// --tls serves HTTPS (TLS 1.2 and 1.3) with the given certificate, or with a
// self-signed one made at start (ECDSA P-256, for localhost, 127.0.0.1, ::1
// and --host) and written into the work dir as tls.crt and tls.key.
// --http2 serves HTTP/2: with --tls as h2 chosen by ALPN (HTTP/1.1 for
// clients that do not offer h2), without it as h2c with prior knowledge only.
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
#include <fcntl.h>
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
#include <memory>
#include <thread>
#include <vector>

#include "common/certificates.h"
#include "common/signals.h"
#include "common/tls_files.h"
#include "targets/common/request_log.h"
#include "targets/common/target_flags.h"
#include "targets/nginx/access_log_tail.h"
#include "targets/nginx/nginx_config.h"

namespace {

using fairbench::Result;
using fairbench::Status;

Result<std::string> MakeTempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern =
      std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/fairbench-target-nginx.XXXXXX";
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

// Writes `data` into a new file `path` made with `mode`.
bool WriteNewFile(const std::string& path, const std::string& data, mode_t mode) {
  unlink(path.c_str());  // a kept --work-dir holds the last start's
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return false;
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  return close(fd) == 0 && done == data.size();
}

// The content of `path`, or "" when it cannot be read.
std::string ReadWholeFile(const std::string& path) {
  std::string out;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
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

// nginx opens its listening sockets before it installs its signal
// handlers, and writes its pid file after: a SIGQUIT sent while the port
// already accepts but before the pid file names nginx (a stop asked for
// during its start) would kill it by the default action, not stop it.
// Waits until the pid file names `pid` (false) or nginx exits (true, with
// *raw), for up to `timeout_ms`.
bool WaitForSignalHandlers(pid_t pid, const std::string& pid_file, int* raw, int timeout_ms) {
  const std::string want = std::to_string(pid) + "\n";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid, raw, WNOHANG) == pid) return true;
    if (ReadWholeFile(pid_file) == want) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

struct LauncherOptions {
  fairbench::targets::TargetFlags flags;
  std::string nginx = "/usr/sbin/nginx";
  std::string work_dir;
  bool print_config = false;
  bool tls = false;
  bool http2 = false;
  std::string cert_file;
  std::string key_file;
};

void AddLauncherFlags(CLI::App& app, LauncherOptions* o) {
  fairbench::targets::AddTargetFlags(app, &o->flags);
  app.add_option("--nginx", o->nginx, "the nginx binary")->capture_default_str();
  app.add_option("--work-dir", o->work_dir, "directory for config, logs and pid file (kept); default: a temp dir");
  app.add_flag("--print-config", o->print_config, "print the config and exit");
  app.add_flag("--tls", o->tls, "serve HTTPS (a self-signed certificate unless --cert and --key)");
  app.add_flag("--http2", o->http2, "serve HTTP/2: h2 by ALPN with --tls, h2c (prior knowledge only) without");
  app.add_option("--cert", o->cert_file, "the certificate (PEM, a chain) for --tls");
  app.add_option("--key", o->key_file, "the certificate's private key (PEM) for --tls");
}

// Checks --tls, --cert and --key together and makes the certificate's
// paths absolute; false (having said why) when they do not fit.
bool CheckTlsFlags(LauncherOptions* o) {
  if ((!o->cert_file.empty() || !o->key_file.empty()) && !o->tls) {
    std::fprintf(stderr, "--cert and --key need --tls\n");
    return false;
  }
  if (o->cert_file.empty() != o->key_file.empty()) {
    std::fprintf(stderr, "--cert and --key go together: give both or neither\n");
    return false;
  }
  if (o->cert_file.empty()) return true;
  auto cert = fairbench::tls::ReadCertificates(o->cert_file, "--cert");
  auto key = cert.ok() ? fairbench::tls::ReadPrivateKey(o->key_file, "--key") : cert.status();
  const fairbench::Status fits =
      key.ok() ? fairbench::tls::CheckKeyPair(*cert, *key, "--cert and --key") : key.status();
  if (!fits.ok()) {
    std::fprintf(stderr, "%s\n", fits.message().c_str());
    return false;
  }
  // nginx resolves relative paths against its prefix, the work dir.
  o->cert_file = std::filesystem::absolute(o->cert_file).string();
  o->key_file = std::filesystem::absolute(o->key_file).string();
  return true;
}

// The directory nginx runs in: --work-dir, kept, or a temp dir removed
// when this goes.
class WorkDir {
 public:
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;
  ~WorkDir() {
    std::error_code ignored;
    if (temp_) std::filesystem::remove_all(path_, ignored);
  }

  static Result<std::unique_ptr<WorkDir>> Make(const std::string& given) {
    std::string path = given;
    if (given.empty()) {
      auto made = MakeTempDir();
      if (!made.ok()) return made.status();
      path = *made;
    }
    // When we are root, nginx's workers run as nobody and need to reach the
    // temp paths inside.
    chmod(path.c_str(), 0755);
    return std::unique_ptr<WorkDir>(new WorkDir(path, given.empty()));
  }

  const std::string& path() const { return path_; }

 private:
  WorkDir(std::string path, bool temp) : path_(std::move(path)), temp_(temp) {}

  std::string path_;
  bool temp_;
};

fairbench::targets::NginxTargetConfig ConfigFor(const LauncherOptions& o, const std::string& work_dir) {
  fairbench::targets::NginxTargetConfig config;
  config.host = o.flags.host;
  config.port = o.flags.port;
  config.workers = o.flags.threads;
  config.dir = work_dir;
  config.access_log = !o.flags.request_log.empty();
  config.tls = o.tls;
  config.http2 = o.http2;
  const bool self_signed = o.tls && o.cert_file.empty();
  config.cert_file = self_signed ? work_dir + "/tls.crt" : o.cert_file;
  config.key_file = self_signed ? work_dir + "/tls.key" : o.key_file;
  return config;
}

bool WriteConfig(const std::string& work_dir, const std::string& text) {
  std::ofstream out(work_dir + "/nginx.conf");
  out << text;
  if (!out) {
    std::fprintf(stderr, "cannot write %s/nginx.conf\n", work_dir.c_str());
    return false;
  }
  return true;
}

bool WriteSelfSignedCertificate(const LauncherOptions& o, const fairbench::targets::NginxTargetConfig& config) {
  auto pair = fairbench::tls::IssueCertificate(
      fairbench::tls::ServerSpec("fairbench-target-nginx", fairbench::tls::SubjectAltNamesFor(o.flags.host)));
  const bool written = pair.ok() && WriteNewFile(config.cert_file, pair->cert_pem, 0644) &&
                       WriteNewFile(config.key_file, pair->key_pem, 0600);
  if (!written) {
    std::fprintf(stderr, "cannot make a self-signed certificate in %s: %s\n", config.dir.c_str(),
                 pair.ok() ? "write failed" : pair.status().ToString().c_str());
  }
  return written;
}

void PrintStarted(const LauncherOptions& o, pid_t pid, const fairbench::targets::NginxTargetConfig& config,
                  bool self_signed) {
  const char* protocols = o.tls ? (o.http2 ? "h2 and https" : "https") : (o.http2 ? "h2c" : "http");
  std::printf("fairbench-target-nginx: nginx pid %d on %s:%u (%s) with %d workers, config %s/nginx.conf%s%s\n",
              static_cast<int>(pid), o.flags.host.c_str(), static_cast<unsigned>(o.flags.port), protocols,
              o.flags.threads, config.dir.c_str(), self_signed ? ", self-signed certificate " : "",
              self_signed ? config.cert_file.c_str() : "");
  std::fflush(stdout);
}

// Turns nginx's access log into request-log lines on a thread of its own
// while nginx runs; Finish() takes the rest once nginx has ended.
class AccessLogPump {
 public:
  AccessLogPump(const std::string& access_log, fairbench::targets::RequestLog* log)
      : tail_(access_log, log), thread_([this] { Run(); }) {}
  AccessLogPump(const AccessLogPump&) = delete;
  AccessLogPump& operator=(const AccessLogPump&) = delete;
  ~AccessLogPump() {
    if (thread_.joinable()) Finish();
  }

  void Finish() {
    stop_.store(true);
    thread_.join();
    if (Status s = tail_.Finish(); !s.ok()) std::fprintf(stderr, "%s\n", s.ToString().c_str());
  }

 private:
  void Run() {
    while (!stop_.load()) {
      // The log may not exist yet (nginx creates it on its first
      // request); the next poll tries again.
      (void)tail_.Poll(fairbench::targets::UnixMillisNow());
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  std::atomic<bool> stop_{false};
  fairbench::targets::AccessLogTail tail_;
  std::thread thread_;
};

// How nginx ended: its wait status, and whether we asked it to stop.
struct NginxEnd {
  int raw = 0;
  bool asked_to_stop = false;
};

// Waits for nginx to exit by itself, or for SIGTERM/SIGINT, which stop it
// gracefully (SIGQUIT), then harder the longer it takes.
NginxEnd Supervise(pid_t pid, const std::string& work_dir, const fairbench::BlockedSignals& signals) {
  NginxEnd end;
  while (true) {
    const int sig = signals.Wait();
    if (sig == SIGCHLD) {
      if (waitpid(pid, &end.raw, WNOHANG) == pid) return end;
      continue;
    }
    end.asked_to_stop = true;
    if (WaitForSignalHandlers(pid, work_dir + "/nginx.pid", &end.raw, 5000)) return end;
    kill(pid, SIGQUIT);  // graceful: finish (and log) the requests in flight
    if (WaitChild(pid, &end.raw, 5000)) return end;
    kill(pid, SIGTERM);
    if (WaitChild(pid, &end.raw, 2000)) return end;
    kill(pid, SIGKILL);
    waitpid(pid, &end.raw, 0);
    return end;
  }
}

// 0 after a clean exit; else says why with nginx's error log, and returns
// 1 when we stopped it, nginx's exit code (1 if killed) when it ended alone.
int ExitCode(const NginxEnd& end, const std::string& work_dir) {
  const int raw = end.raw;
  if (WIFEXITED(raw) && WEXITSTATUS(raw) == 0) return 0;
  std::fprintf(stderr, "fairbench-target-nginx: nginx ended (%s %d); error log:\n%s\n",
               WIFEXITED(raw) ? "exit" : "signal", WIFEXITED(raw) ? WEXITSTATUS(raw) : WTERMSIG(raw),
               ReadWholeFile(work_dir + "/error.log").c_str());
  if (end.asked_to_stop) return 1;
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fairbench reference target on Debian's nginx"};
  LauncherOptions o;
  AddLauncherFlags(app, &o);
  CLI11_PARSE(app, argc, argv);
  if (!CheckTlsFlags(&o)) return 2;

  signal(SIGPIPE, SIG_IGN);
  const fairbench::BlockedSignals signals({SIGTERM, SIGINT, SIGCHLD});

  auto dir = WorkDir::Make(o.work_dir);
  if (!dir.ok()) {
    std::fprintf(stderr, "%s\n", dir.status().ToString().c_str());
    return 1;
  }
  const std::string& work_dir = (*dir)->path();
  const fairbench::targets::NginxTargetConfig config = ConfigFor(o, work_dir);
  const bool self_signed = o.tls && o.cert_file.empty();
  auto text = fairbench::targets::RenderNginxConfig(config);
  if (!text.ok()) {
    std::fprintf(stderr, "%s\n", text.status().ToString().c_str());
    return 1;
  }
  if (o.print_config) {
    std::fputs(text->c_str(), stdout);
    return 0;
  }
  if (!WriteConfig(work_dir, *text)) return 1;
  if (self_signed && !WriteSelfSignedCertificate(o, config)) return 1;

  std::unique_ptr<fairbench::targets::RequestLog> log;
  if (!o.flags.request_log.empty()) {
    auto opened = fairbench::targets::RequestLog::Open(o.flags.request_log);
    if (!opened.ok()) {
      std::fprintf(stderr, "%s\n", opened.status().ToString().c_str());
      return 1;
    }
    log = std::move(*opened);
  }

  // A kept --work-dir may hold the pid file of an earlier nginx.
  unlink((work_dir + "/nginx.pid").c_str());
  auto pid = StartNginx(o.nginx, work_dir);
  if (!pid.ok()) {
    std::fprintf(stderr, "%s\n", pid.status().ToString().c_str());
    return 1;
  }
  PrintStarted(o, *pid, config, self_signed);

  std::unique_ptr<AccessLogPump> pump;
  if (log) pump = std::make_unique<AccessLogPump>(work_dir + "/access.log", log.get());
  const NginxEnd end = Supervise(*pid, work_dir, signals);
  if (pump) pump->Finish();
  return ExitCode(end, work_dir);
}
