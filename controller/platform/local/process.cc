#include "controller/platform/local/process.h"

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

namespace fairbench::controller {

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

}  // namespace

Result<Process> Process::Start(const ProcessOptions& options) {
  if (options.argv.empty()) return Status::InvalidArgument("no command to run");
  // Everything the child needs is prepared before fork: after it, only
  // async-signal-safe calls.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv(*e);
    const std::string key = kv.substr(0, kv.find('='));
    if (options.env.count(key) == 0) env_strings.push_back(kv);
  }
  for (const auto& [k, v] : options.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = options.argv;
  std::vector<char*> argv;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (int c : options.cpus) CPU_SET(c, &cpus);
  rlimit nofile{};
  getrlimit(RLIMIT_NOFILE, &nofile);
  if (options.nofile > 0) nofile.rlim_cur = std::min<rlim_t>(options.nofile, nofile.rlim_max);
  int log_fd = options.log_file.empty() ? open("/dev/null", O_WRONLY | O_CLOEXEC)
                                        : open(options.log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return Status::IoError("cannot open log file '" + options.log_file + "': " + std::strerror(errno));
  int err_fd = options.stderr_file.empty()
                   ? dup(log_fd)
                   : open(options.stderr_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (err_fd < 0) {
    close(log_fd);
    return Status::IoError("cannot open log file '" + options.stderr_file + "': " + std::strerror(errno));
  }
  fcntl(err_fd, F_SETFD, FD_CLOEXEC);
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  std::vector<int> cgroup_fds;
  for (const std::string& procs : options.cgroup_procs) {
    const int fd = open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      for (int f : cgroup_fds) close(f);
      close(log_fd);
      close(err_fd);
      close(null_fd);
      return Status::IoError("cannot open '" + procs + "': " + std::strerror(errno));
    }
    cgroup_fds.push_back(fd);
  }
  auto close_cgroup_fds = [&] {
    for (int f : cgroup_fds) close(f);
  };
  int err_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close_cgroup_fds();
    close(log_fd);
    close(err_fd);
    close(null_fd);
    return Status::IoError(std::string("pipe: ") + std::strerror(errno));
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close_cgroup_fds();
    close(log_fd);
    close(err_fd);
    close(null_fd);
    close(err_pipe[0]);
    close(err_pipe[1]);
    return Status::IoError(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    setpgid(0, 0);
    // Join the cgroups first: everything the child does from here is charged there.
    {
      char digits[24];
      int n = 0;
      for (pid_t self = getpid(); self > 0; self /= 10) digits[n++] = static_cast<char>('0' + self % 10);
      char text[24];
      for (int i = 0; i < n; ++i) text[i] = digits[n - 1 - i];
      for (int fd : cgroup_fds) {
        if (write(fd, text, static_cast<size_t>(n)) != n) {
          const int e = errno;
          [[maybe_unused]] ssize_t w = write(err_pipe[1], &e, sizeof e);
          _exit(127);
        }
      }
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the controller died between fork and prctl
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    if (!options.cpus.empty()) sched_setaffinity(0, sizeof cpus, &cpus);
    if (options.nofile > 0) setrlimit(RLIMIT_NOFILE, &nofile);
    dup2(null_fd, 0);
    dup2(log_fd, 1);
    dup2(err_fd, 2);
    if (!options.working_dir.empty() && chdir(options.working_dir.c_str()) != 0) {
      const int e = errno;
      [[maybe_unused]] ssize_t n = write(err_pipe[1], &e, sizeof e);
      _exit(127);
    }
    execvpe(argv[0], argv.data(), envp.data());
    const int e = errno;
    [[maybe_unused]] ssize_t n = write(err_pipe[1], &e, sizeof e);
    _exit(127);
  }
  close(err_pipe[1]);
  close_cgroup_fds();
  close(log_fd);
  close(err_fd);
  close(null_fd);
  setpgid(pid, pid);  // also in the parent, so the group exists before we signal it
  int child_errno = 0;
  const ssize_t n = read(err_pipe[0], &child_errno, sizeof child_errno);
  close(err_pipe[0]);
  if (n == sizeof child_errno) {
    int status = 0;
    waitpid(pid, &status, 0);
    const std::string what = options.working_dir.empty() ? "" : " in '" + options.working_dir + "'";
    return Status::InvalidArgument("cannot run '" + options.argv[0] + "'" + what + ": " + std::strerror(child_errno));
  }
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
    all[static_cast<pid_t>(pid)] = Info{static_cast<pid_t>(std::stol(f[1])), std::stoull(f[21]),
                                        std::stoull(f[11]) + std::stoull(f[12])};
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

}  // namespace fairbench::controller
