#include "testing/support/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

extern char** environ;

namespace fairbench::testing {
namespace {

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

ExitStatus Decode(int raw) {
  ExitStatus s;
  if (WIFEXITED(raw)) {
    s.exited = true;
    s.exit_code = WEXITSTATUS(raw);
  } else if (WIFSIGNALED(raw)) {
    s.signaled = true;
    s.term_signal = WTERMSIG(raw);
  }
  return s;
}

void CloseFd(int* fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

// The fds a child gets for one standard stream: `child_fd` is dup2'ed onto
// the stream, `parent_fd` is the pipe end the parent keeps.
struct StreamPlan {
  int child_fd = -1;
  int parent_fd = -1;
};

Result<StreamPlan> PlanStream(const Redirect& r, bool is_input) {
  StreamPlan plan;
  switch (r.kind) {
    case Redirect::Kind::kInherit: return plan;
    case Redirect::Kind::kNull:
      plan.child_fd = open("/dev/null", (is_input ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
      if (plan.child_fd < 0) return Status::IoError(Errno("open /dev/null"));
      return plan;
    case Redirect::Kind::kFile: {
      int flags = is_input ? O_RDONLY : (O_WRONLY | O_CREAT | (r.append ? O_APPEND : O_TRUNC));
      plan.child_fd = open(r.path.c_str(), flags | O_CLOEXEC, 0644);
      if (plan.child_fd < 0) return Status::IoError(Errno("open " + r.path));
      return plan;
    }
    case Redirect::Kind::kPipe: {
      int fds[2];
      if (pipe2(fds, O_CLOEXEC) != 0) return Status::IoError(Errno("pipe2"));
      plan.child_fd = is_input ? fds[0] : fds[1];
      plan.parent_fd = is_input ? fds[1] : fds[0];
      return plan;
    }
  }
  return plan;
}

}  // namespace

std::string ExitStatus::ToString() const {
  if (exited) return "exit " + std::to_string(exit_code);
  if (signaled) return "signal " + std::to_string(term_signal) + " (" + strsignal(term_signal) + ")";
  return "unknown";
}

Result<Subprocess> Subprocess::Start(SubprocessOptions options) {
  if (options.argv.empty()) return Status::InvalidArgument("Subprocess: empty argv");

  // Everything the child needs is built before fork(): after it, only
  // async-signal-safe calls are allowed (the parent may have threads).
  std::vector<char*> argv;
  for (auto& a : options.argv) argv.push_back(a.data());
  argv.push_back(nullptr);

  std::vector<std::string> env_strings;
  if (!options.clear_environment) {
    for (char** e = environ; *e != nullptr; ++e) {
      std::string entry(*e);
      std::string key = entry.substr(0, entry.find('='));
      if (options.env.count(key) == 0) env_strings.push_back(std::move(entry));
    }
  }
  for (const auto& [k, v] : options.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  StreamPlan plans[3];
  const Redirect* redirects[3] = {&options.stdin_from, &options.stdout_to, &options.stderr_to};
  auto close_plans = [&plans] {
    for (auto& p : plans) {
      CloseFd(&p.child_fd);
      CloseFd(&p.parent_fd);
    }
  };
  for (int i = 0; i < 3; ++i) {
    auto plan = PlanStream(*redirects[i], i == 0);
    if (!plan.ok()) {
      close_plans();
      return plan.status();
    }
    plans[i] = *plan;
  }

  int err_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close_plans();
    return Status::IoError(Errno("pipe2"));
  }

  const char* workdir = options.working_dir.empty() ? nullptr : options.working_dir.c_str();
  const bool own_group = options.own_process_group;
  pid_t pid = fork();
  if (pid < 0) {
    close_plans();
    close(err_pipe[0]);
    close(err_pipe[1]);
    return Status::IoError(Errno("fork"));
  }
  if (pid == 0) {
    // Child. Report the first failure through err_pipe as {step, errno}.
    auto fail = [&](int step) {
      int msg[2] = {step, errno};
      ssize_t ignored = write(err_pipe[1], msg, sizeof(msg));
      (void)ignored;
      _exit(127);
    };
    if (own_group && setpgid(0, 0) != 0) fail(1);
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, nullptr);
    for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2, SIGCHLD}) signal(sig, SIG_DFL);
    for (int i = 0; i < 3; ++i) {
      if (plans[i].child_fd < 0) continue;
      if (plans[i].child_fd == i) {
        // dup2 onto itself keeps close-on-exec set; clear it by hand.
        if (fcntl(i, F_SETFD, 0) != 0) fail(2);
      } else if (dup2(plans[i].child_fd, i) < 0) {
        fail(2);
      }
    }
    if (workdir != nullptr && chdir(workdir) != 0) fail(3);
    execvpe(argv[0], argv.data(), envp.data());
    fail(4);
  }

  // Parent.
  close(err_pipe[1]);
  for (auto& p : plans) CloseFd(&p.child_fd);
  int msg[2] = {0, 0};
  ssize_t n;
  do {
    n = read(err_pipe[0], msg, sizeof(msg));
  } while (n < 0 && errno == EINTR);
  close(err_pipe[0]);
  if (n > 0) {
    int raw = 0;
    waitpid(pid, &raw, 0);
    for (auto& p : plans) CloseFd(&p.parent_fd);
    static const char* kSteps[] = {"", "setpgid", "dup2", "chdir", "exec"};
    std::string step = (msg[0] >= 1 && msg[0] <= 4) ? kSteps[msg[0]] : "start";
    std::string what = step + " " + options.argv[0];
    if (msg[0] == 3) what = "chdir " + options.working_dir;
    return Status::FailedPrecondition(what + ": " + std::strerror(msg[1]));
  }

  Subprocess p;
  p.pid_ = pid;
  p.group_ = own_group;
  p.stdin_fd_ = plans[0].parent_fd;
  p.stdout_fd_ = plans[1].parent_fd;
  p.stderr_fd_ = plans[2].parent_fd;
  return p;
}

Subprocess::Subprocess(Subprocess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      group_(other.group_),
      status_(std::exchange(other.status_, std::nullopt)),
      stdin_fd_(std::exchange(other.stdin_fd_, -1)),
      stdout_fd_(std::exchange(other.stdout_fd_, -1)),
      stderr_fd_(std::exchange(other.stderr_fd_, -1)) {}

Subprocess& Subprocess::operator=(Subprocess&& other) noexcept {
  if (this != &other) {
    Release();
    pid_ = std::exchange(other.pid_, -1);
    group_ = other.group_;
    status_ = std::exchange(other.status_, std::nullopt);
    stdin_fd_ = std::exchange(other.stdin_fd_, -1);
    stdout_fd_ = std::exchange(other.stdout_fd_, -1);
    stderr_fd_ = std::exchange(other.stderr_fd_, -1);
  }
  return *this;
}

Subprocess::~Subprocess() { Release(); }

void Subprocess::Release() {
  if (pid_ > 0) {
    if (running()) {
      kill(group_ ? -pid_ : pid_, SIGKILL);
      int raw = 0;
      while (waitpid(pid_, &raw, 0) < 0 && errno == EINTR) {
      }
    } else if (group_) {
      // The leader is gone but helpers it forked may still hold ports; the
      // group id cannot be reused while any member lives.
      kill(-pid_, SIGKILL);
    }
  }
  pid_ = -1;
  status_.reset();
  CloseFd(&stdin_fd_);
  CloseFd(&stdout_fd_);
  CloseFd(&stderr_fd_);
}

Status Subprocess::Kill(int signal, bool to_group) {
  if (pid_ <= 0) return Status::FailedPrecondition("Subprocess: no child");
  if (!running()) return Status::Ok();
  pid_t target = (to_group && group_) ? -pid_ : pid_;
  if (kill(target, signal) != 0 && errno != ESRCH) return Status::IoError(Errno("kill"));
  return Status::Ok();
}

std::optional<ExitStatus> Subprocess::Poll() {
  if (pid_ <= 0) return std::nullopt;
  if (status_) return status_;
  int raw = 0;
  pid_t r = waitpid(pid_, &raw, WNOHANG);
  if (r == pid_) status_ = Decode(raw);
  return status_;
}

Result<ExitStatus> Subprocess::Wait(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return Status::FailedPrecondition("Subprocess: no child");
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::microseconds(200);
  while (true) {
    if (auto s = Poll()) return *s;
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::DeadlineExceeded("pid " + std::to_string(pid_) + " still running after " +
                                      std::to_string(timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(10000));
  }
}

Result<ExitStatus> Subprocess::Terminate(int signal, std::chrono::milliseconds grace) {
  if (auto s = Poll()) return *s;
  if (Status st = Kill(signal); !st.ok()) return st;
  auto r = Wait(grace);
  if (r.ok()) return r;
  if (Status st = Kill(SIGKILL, /*to_group=*/true); !st.ok()) return st;
  return Wait(std::chrono::seconds(10));
}

Result<std::string> Subprocess::ReadStdout(std::chrono::milliseconds timeout) { return ReadPipe(&stdout_fd_, timeout); }

Result<std::string> Subprocess::ReadStderr(std::chrono::milliseconds timeout) { return ReadPipe(&stderr_fd_, timeout); }

Result<std::string> Subprocess::ReadPipe(int* fd, std::chrono::milliseconds timeout) {
  if (*fd < 0) return Status::FailedPrecondition("Subprocess: stream is not a pipe");
  std::string out;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Status::DeadlineExceeded("pipe not closed in time; read so far: " + out);
    pollfd p{*fd, POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Status::IoError(Errno("poll"));
    if (r == 0) continue;
    ssize_t n = read(*fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IoError(Errno("read"));
    if (n == 0) {
      CloseFd(fd);
      return out;
    }
    out.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace fairbench::testing
