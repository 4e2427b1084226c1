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
  bool tls = false;
  bool http2 = false;
  std::string cert_file;
  std::string key_file;
  app.add_flag("--tls", tls, "serve HTTPS (a self-signed certificate unless --cert and --key)");
  app.add_flag("--http2", http2, "serve HTTP/2: h2 by ALPN with --tls, h2c (prior knowledge only) without");
  app.add_option("--cert", cert_file, "the certificate (PEM, a chain) for --tls");
  app.add_option("--key", key_file, "the certificate's private key (PEM) for --tls");
  CLI11_PARSE(app, argc, argv);
  if ((!cert_file.empty() || !key_file.empty()) && !tls) {
    std::fprintf(stderr, "--cert and --key need --tls\n");
    return 2;
  }
  if (cert_file.empty() != key_file.empty()) {
    std::fprintf(stderr, "--cert and --key go together: give both or neither\n");
    return 2;
  }
  if (!cert_file.empty()) {
    auto cert = fairbench::tls::ReadCertificates(cert_file, "--cert");
    auto key = cert.ok() ? fairbench::tls::ReadPrivateKey(key_file, "--key") : cert.status();
    const fairbench::Status fits = key.ok() ? fairbench::tls::CheckKeyPair(*cert, *key, "--cert and --key") : key.status();
    if (!fits.ok()) {
      std::fprintf(stderr, "%s\n", fits.message().c_str());
      return 2;
    }
    // nginx resolves relative paths against its prefix, the work dir.
    cert_file = std::filesystem::absolute(cert_file).string();
    key_file = std::filesystem::absolute(key_file).string();
  }

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
  config.tls = tls;
  config.http2 = http2;
  const bool self_signed = tls && cert_file.empty();
  config.cert_file = self_signed ? work_dir + "/tls.crt" : cert_file;
  config.key_file = self_signed ? work_dir + "/tls.key" : key_file;
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

  if (self_signed) {
    auto pair = fairbench::tls::IssueCertificate(
        fairbench::tls::ServerSpec("fairbench-target-nginx", fairbench::tls::SubjectAltNamesFor(flags.host)));
    const bool written =
        pair.ok() && WriteNewFile(config.cert_file, pair->cert_pem, 0644) && WriteNewFile(config.key_file, pair->key_pem, 0600);
    if (!written) {
      std::fprintf(stderr, "cannot make a self-signed certificate in %s: %s\n", work_dir.c_str(),
                   pair.ok() ? "write failed" : pair.status().ToString().c_str());
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

  // A kept --work-dir may hold the pid file of an earlier nginx.
  unlink((work_dir + "/nginx.pid").c_str());
  auto pid = StartNginx(nginx, work_dir);
  if (!pid.ok()) {
    std::fprintf(stderr, "%s\n", pid.status().ToString().c_str());
    cleanup();
    return 1;
  }
  const char* protocols = tls ? (http2 ? "h2 and https" : "https") : (http2 ? "h2c" : "http");
  std::printf("fairbench-target-nginx: nginx pid %d on %s:%u (%s) with %d workers, config %s/nginx.conf%s%s\n",
              static_cast<int>(*pid), flags.host.c_str(), static_cast<unsigned>(flags.port), protocols, flags.threads,
              work_dir.c_str(), self_signed ? ", self-signed certificate " : "",
              self_signed ? config.cert_file.c_str() : "");
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
    if (WaitForSignalHandlers(*pid, work_dir + "/nginx.pid", &raw, 5000)) break;
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
    std::fprintf(stderr, "fairbench-target-nginx: nginx ended (%s %d); error log:\n%s\n",
                 WIFEXITED(raw) ? "exit" : "signal", WIFEXITED(raw) ? WEXITSTATUS(raw) : WTERMSIG(raw),
                 ReadWholeFile(work_dir + "/error.log").c_str());
  }
  cleanup();
  if (clean) return 0;
  if (asked_to_stop) return 1;
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : 1;
}
