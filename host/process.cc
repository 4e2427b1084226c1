#include "host/process.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

namespace fairbench::host {

std::string ExitInfo::ToString() const {
  if (exited) return "exited with code " + std::to_string(code);
  return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
}

namespace {

ExitInfo FromWaitStatus(int status) {
  ExitInfo e;
  if (WIFEXITED(status)) {
    e.exited = true;
    e.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    e.signal = WTERMSIG(status);
  }
  return e;
}

// The child's argv and environment as the arrays execvpe takes. Built
// before fork: after it, only async-signal-safe calls. Not copyable or
// movable, since the arrays point into the strings.
class ExecArgs {
 public:
  explicit ExecArgs(const ProcessOptions& options) : args_(options.argv) {
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string kv(*e);
      const std::string key = kv.substr(0, kv.find('='));
      if (options.env.count(key) == 0) env_strings_.push_back(kv);
    }
    for (const auto& [k, v] : options.env) env_strings_.push_back(k + "=" + v);
    for (std::string& s : env_strings_) envp_.push_back(s.data());
    envp_.push_back(nullptr);
    for (std::string& s : args_) argv_.push_back(s.data());
    argv_.push_back(nullptr);
  }
  ExecArgs(const ExecArgs&) = delete;
  ExecArgs& operator=(const ExecArgs&) = delete;

  char* const* argv() const { return argv_.data(); }
  char* const* envp() const { return envp_.data(); }

 private:
  std::vector<std::string> env_strings_;
  std::vector<std::string> args_;
  std::vector<char*> envp_;
  std::vector<char*> argv_;
};

// The CPU mask and open-files limit the child sets on itself.
struct ChildLimits {
  cpu_set_t cpus;
  rlimit nofile{};

  explicit ChildLimits(const ProcessOptions& options) {
    CPU_ZERO(&cpus);
    for (int c : options.cpus) CPU_SET(c, &cpus);
    getrlimit(RLIMIT_NOFILE, &nofile);
    if (options.nofile > 0) nofile.rlim_cur = std::min<rlim_t>(options.nofile, nofile.rlim_max);
  }
};

// The descriptors opened for the child before fork: its stdin, stdout and
// stderr, the cgroup.procs files it joins, and the close-on-exec pipe on
// which it reports why it could not exec (end of file: the exec happened).
struct ChildFds {
  int log = -1;
  int err = -1;
  int null = -1;
  std::vector<int> cgroups;
  int err_pipe[2] = {-1, -1};

  // The parent's copies of all but the pipe's read end.
  void CloseAllButPipeReader() {
    for (int* fd : {&err_pipe[1], &log, &err, &null}) CloseOne(fd);
    for (int f : cgroups) close(f);
    cgroups.clear();
  }
  void CloseAll() {
    CloseAllButPipeReader();
    CloseOne(&err_pipe[0]);
  }

 private:
  static void CloseOne(int* fd) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
};

int OpenForAppend(const std::string& path) {
  return open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

// Opens everything in ChildFds; on failure, closes what it opened.
Status OpenChildFds(const ProcessOptions& options, ChildFds& fds) {
  fds.log = options.log_file.empty() ? open("/dev/null", O_WRONLY | O_CLOEXEC) : OpenForAppend(options.log_file);
  if (fds.log < 0) return Status::IoError("cannot open log file '" + options.log_file + "': " + std::strerror(errno));
  fds.err = options.stderr_file.empty() ? dup(fds.log) : OpenForAppend(options.stderr_file);
  if (fds.err < 0) {
    const int e = errno;
    fds.CloseAll();
    return Status::IoError("cannot open log file '" + options.stderr_file + "': " + std::strerror(e));
  }
  fcntl(fds.err, F_SETFD, FD_CLOEXEC);
  fds.null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  for (const std::string& procs : options.cgroup_procs) {
    const int fd = open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      const int e = errno;
      fds.CloseAll();
      return Status::IoError("cannot open '" + procs + "': " + std::strerror(e));
    }
    fds.cgroups.push_back(fd);
  }
  if (pipe2(fds.err_pipe, O_CLOEXEC) != 0) {
    const int e = errno;
    fds.CloseAll();
    return Status::IoError(std::string("pipe: ") + std::strerror(e));
  }
  return Status::Ok();
}

// In the child: hands errno to the parent through the pipe and exits.
[[noreturn]] void ReportErrnoAndExit(int err_pipe_writer) {
  const int e = errno;
  [[maybe_unused]] ssize_t n = write(err_pipe_writer, &e, sizeof e);
  _exit(127);
}

// In the child: writes its pid to each cgroup.procs file, formatted by hand
// (no allocation after fork).
void JoinCgroups(const ChildFds& fds) {
  char digits[24];
  int n = 0;
  for (pid_t self = getpid(); self > 0; self /= 10) digits[n++] = static_cast<char>('0' + self % 10);
  char text[24];
  for (int i = 0; i < n; ++i) text[i] = digits[n - 1 - i];
  for (int fd : fds.cgroups) {
    if (write(fd, text, static_cast<size_t>(n)) != n) ReportErrnoAndExit(fds.err_pipe[1]);
  }
}

// In the child, between fork and exec: async-signal-safe calls only.
[[noreturn]] void RunChild(const ProcessOptions& options, const ExecArgs& exec, const ChildLimits& limits,
                           const ChildFds& fds, pid_t parent) {
  setpgid(0, 0);
  // Join the cgroups first: everything the child does from here is charged there.
  JoinCgroups(fds);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the controller died between fork and prctl
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  signal(SIGPIPE, SIG_DFL);
  if (!options.cpus.empty()) sched_setaffinity(0, sizeof limits.cpus, &limits.cpus);
  if (options.nofile > 0) setrlimit(RLIMIT_NOFILE, &limits.nofile);
  dup2(fds.null, 0);
  dup2(fds.log, 1);
  dup2(fds.err, 2);
  if (!options.working_dir.empty() && chdir(options.working_dir.c_str()) != 0) ReportErrnoAndExit(fds.err_pipe[1]);
  execvpe(exec.argv()[0], exec.argv(), exec.envp());
  ReportErrnoAndExit(fds.err_pipe[1]);
}

// In the parent: waits for the exec (the pipe closes) or the child's errno
// (then reaps it and says why).
Status AwaitExec(const ProcessOptions& options, pid_t pid, int err_pipe_reader) {
  int child_errno = 0;
  const ssize_t n = read(err_pipe_reader, &child_errno, sizeof child_errno);
  close(err_pipe_reader);
  if (n != sizeof child_errno) return Status::Ok();
  int status = 0;
  waitpid(pid, &status, 0);
  const std::string what = options.working_dir.empty() ? "" : " in '" + options.working_dir + "'";
  return Status::InvalidArgument("cannot run '" + options.argv[0] + "'" + what + ": " + std::strerror(child_errno));
}

}  // namespace

Result<Process> Process::Start(const ProcessOptions& options) {
  if (options.argv.empty()) return Status::InvalidArgument("no command to run");
  // Everything the child needs is prepared before fork: after it, only
  // async-signal-safe calls.
  const ExecArgs exec(options);
  const ChildLimits limits(options);
  ChildFds fds;
  if (Status s = OpenChildFds(options, fds); !s.ok()) return s;
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    fds.CloseAll();
    return Status::IoError(std::string("fork: ") + std::strerror(e));
  }
  if (pid == 0) RunChild(options, exec, limits, fds, parent);
  const int err_pipe_reader = fds.err_pipe[0];
  fds.CloseAllButPipeReader();
  setpgid(pid, pid);  // also in the parent, so the group exists before we signal it
  if (Status s = AwaitExec(options, pid, err_pipe_reader); !s.ok()) return s;
  Process p;
  p.pid_ = pid;
  return p;
}

Process::Process(Process&& other) noexcept : pid_(other.pid_), exit_(other.exit_) { other.pid_ = -1; }

Process& Process::operator=(Process&& other) noexcept {
  if (this != &other) {
    if (pid_ > 0 && !exit_) Stop(std::chrono::milliseconds(0));
    pid_ = other.pid_;
    exit_ = other.exit_;
    other.pid_ = -1;
  }
  return *this;
}

Process::~Process() {
  if (pid_ > 0 && !exit_) Stop(std::chrono::milliseconds(0));
}

std::optional<ExitInfo> Process::Poll() {
  if (exit_ || pid_ <= 0) return exit_;
  int status = 0;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) exit_ = FromWaitStatus(status);
  return exit_;
}

void Process::Kill(int sig) {
  if (pid_ <= 0 || exit_) return;
  if (::kill(-pid_, sig) != 0) ::kill(pid_, sig);
}

ExitInfo Process::Stop(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return {};
  if (Poll()) {
    ::kill(-pid_, SIGKILL);  // stragglers of the group
    return *exit_;
  }
  if (grace.count() > 0) {
    Kill(SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + grace;
    while (std::chrono::steady_clock::now() < deadline) {
      if (Poll()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ::kill(-pid_, SIGKILL);
  if (!exit_) {
    int status = 0;
    waitpid(pid_, &status, 0);
    exit_ = FromWaitStatus(status);
    exit_->killed_after_grace = grace.count() > 0 && !exit_->exited && exit_->signal == SIGKILL;
  }
  return *exit_;
}

Result<TreeUsage> SampleProcessTree(pid_t root) {
  // One pass over /proc: parent links, RSS and CPU of every process.
  struct Info {
    pid_t ppid;
    uint64_t rss_pages;
    uint64_t ticks;
  };
  std::map<pid_t, Info> all;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return Status::IoError("cannot read /proc");
  while (dirent* d = readdir(dir)) {
    char* end = nullptr;
    const long pid = std::strtol(d->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    std::ifstream in("/proc/" + std::string(d->d_name) + "/stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string field;
    std::vector<std::string> f;
    while (rest >> field) f.push_back(field);
    // After "pid (comm) ": state(0) ppid(1) … utime(11) stime(12) … rss(21)
    if (f.size() < 22) continue;
    all[static_cast<pid_t>(pid)] =
        Info{static_cast<pid_t>(std::stol(f[1])), std::stoull(f[21]), std::stoull(f[11]) + std::stoull(f[12])};
  }
  closedir(dir);
  if (all.count(root) == 0) return Status::NotFound("process " + std::to_string(root) + " is gone");
  std::map<pid_t, std::vector<pid_t>> children;
  for (const auto& [pid, info] : all) children[info.ppid].push_back(pid);
  TreeUsage u;
  const long page = sysconf(_SC_PAGESIZE);
  const long hz = sysconf(_SC_CLK_TCK);
  std::vector<pid_t> stack{root};
  while (!stack.empty()) {
    const pid_t p = stack.back();
    stack.pop_back();
    const Info& info = all[p];
    u.rss_bytes += info.rss_pages * static_cast<uint64_t>(page);
    u.cpu_seconds += static_cast<double>(info.ticks) / static_cast<double>(hz);
    ++u.processes;
    for (pid_t c : children[p]) stack.push_back(c);
  }
  return u;
}

std::vector<pid_t> ProcessTreePids(pid_t root) {
  std::map<pid_t, std::vector<pid_t>> children;
  bool alive = false;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return {};
  while (dirent* d = readdir(dir)) {
    char* end = nullptr;
    const long pid = std::strtol(d->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    std::ifstream in("/proc/" + std::string(d->d_name) + "/stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    const size_t close = line.rfind(')');
    if (close == std::string::npos || close + 2 >= line.size()) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string state;
    long ppid = 0;
    if (!(rest >> state >> ppid) || state == "Z") continue;  // a zombie has nothing left to sample
    alive = alive || pid == root;
    children[static_cast<pid_t>(ppid)].push_back(static_cast<pid_t>(pid));
  }
  closedir(dir);
  if (!alive) return {};
  std::vector<pid_t> out{root};
  for (size_t i = 0; i < out.size(); ++i) {
    for (pid_t c : children[out[i]]) out.push_back(c);
  }
  return out;
}

std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) out.push_back(c);
  }
  return out;
}

namespace {

// sched_setaffinity for every thread of this process (/proc/self/task).
void PinEveryThread(const std::vector<int>& cpus) {
  if (cpus.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    const pid_t tid = static_cast<pid_t>(std::atoi(task.path().filename().c_str()));
    if (tid > 0) sched_setaffinity(tid, sizeof set, &set);
  }
}

}  // namespace

ProcessPin::ProcessPin(const std::vector<int>& cpus) : before_(AllowedCpus()) { PinEveryThread(cpus); }

ProcessPin::~ProcessPin() { PinEveryThread(before_); }

}  // namespace fairbench::host
