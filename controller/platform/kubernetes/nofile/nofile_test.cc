// Runs the fairbench-nofile helper as a target pod would, and compares what
// it reports with what the wrapped shell sees (`ulimit -n`).
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/cpu_view.h"

namespace {

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Takes CAP_SYS_RESOURCE away from this (child) process for good, so that
// the hard limit cannot be raised, as in an unprivileged container.
void DropSysResource() {
  prctl(PR_CAPBSET_DROP, CAP_SYS_RESOURCE, 0, 0, 0);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capget, &header, data) != 0) return;
  data[0].effective &= ~(1u << CAP_SYS_RESOURCE);
  data[0].permitted &= ~(1u << CAP_SYS_RESOURCE);
  data[0].inheritable &= ~(1u << CAP_SYS_RESOURCE);
  syscall(SYS_capset, &header, data);
}

bool HasSysResource() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  return (data[0].effective & (1u << CAP_SYS_RESOURCE)) != 0;
}

// Runs `argv` with the given NOFILE limits (unset: inherited) and, unless
// `privileged`, without CAP_SYS_RESOURCE. Bounded: killed after 10 s.
Outcome RunHelper(const std::vector<std::string>& argv, std::optional<rlim_t> soft = std::nullopt,
                  std::optional<rlim_t> hard = std::nullopt, bool privileged = false) {
  char dir_template[] = "/tmp/nofile-test-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  const std::string out_path = dir + "/out", err_path = dir + "/err";
  const pid_t pid = fork();
  if (pid == 0) {
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(out, 1);
    dup2(err, 2);
    if (!privileged) DropSysResource();
    if (soft || hard) {
      rlimit lim{};
      getrlimit(RLIMIT_NOFILE, &lim);
      if (hard) lim.rlim_max = *hard;
      if (soft) lim.rlim_cur = *soft;
      if (lim.rlim_cur > lim.rlim_max) lim.rlim_cur = lim.rlim_max;
      if (setrlimit(RLIMIT_NOFILE, &lim) != 0) _exit(99);
    }
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(98);
  }
  Outcome o;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      ADD_FAILURE() << "the helper did not finish within 10 s";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  o.out = Slurp(out_path);
  o.err = Slurp(err_path);
  unlink(out_path.c_str());
  unlink(err_path.c_str());
  rmdir(dir.c_str());
  return o;
}

const std::string kHelper = NOFILE_BIN;

// The helper's stderr without its "fairbench-cpus: {...}" line (tested on
// its own below), which is the last line before the command runs.
std::string WithoutCpus(const std::string& err) {
  const size_t at = err.find(fairbench::kCpuViewPrefix);
  if (at == std::string::npos) return err;
  const size_t end = err.find('\n', at);
  return err.substr(0, at) + (end == std::string::npos ? "" : err.substr(end + 1));
}

// Catches: the soft limit not raised to the request (the target keeps the
// runtime's default, often 1024), or a report that differs from what the
// command actually gets.
TEST(NofileHelperTest, RaisesSoftLimitToRequest) {
  const Outcome o =
      RunHelper({kHelper, "--nofile=4096", "--", "/bin/sh", "-c", "ulimit -n"}, rlim_t{1024}, rlim_t{8192});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, "4096\n");
  EXPECT_EQ(WithoutCpus(o.err), "fairbench-nofile: nofile 4096\n");
}

// Catches: a limit above the request left in place (nofile is part of the
// benchmark's fairness: every target gets the same).
TEST(NofileHelperTest, LowersSoftLimitToRequest) {
  const Outcome o =
      RunHelper({kHelper, "--nofile=300", "--", "/bin/sh", "-c", "ulimit -n"}, rlim_t{2048}, rlim_t{8192});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, "300\n");
}

// Catches: a request above an unraisable hard limit passing silently (the
// target would run with fewer files than the report claims).
TEST(NofileHelperTest, FailsClearlyAboveTheHardLimit) {
  const Outcome o =
      RunHelper({kHelper, "--nofile=65536", "--", "/bin/sh", "-c", "echo ran"}, rlim_t{512}, rlim_t{1024});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(o.out, "");  // the command did not run
  EXPECT_EQ(o.err,
            "fairbench-nofile: asked for nofile 65536, the hard limit is 1024 and cannot be raised (no "
            "CAP_SYS_RESOURCE)\n");
}

// Catches: --at-most failing like the strict mode, or not reaching the
// hard limit it can have.
TEST(NofileHelperTest, AtMostWarnsAndContinuesAtTheHardLimit) {
  const Outcome o = RunHelper({kHelper, "--nofile=65536", "--at-most", "--", "/bin/sh", "-c", "ulimit -n"}, rlim_t{512},
                              rlim_t{1024});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, "1024\n");
  EXPECT_EQ(WithoutCpus(o.err),
            "fairbench-nofile: asked for nofile 65536, the hard limit is 1024 and cannot be raised (no "
            "CAP_SYS_RESOURCE); continuing with less (--at-most)\nfairbench-nofile: nofile 1024\n");
}

// Catches: the hard limit not raised when the container has
// CAP_SYS_RESOURCE (skipped where this test process lacks it).
TEST(NofileHelperTest, RaisesHardLimitWithCapSysResource) {
  if (!HasSysResource()) GTEST_SKIP() << "no CAP_SYS_RESOURCE here";
  const Outcome o =
      RunHelper({kHelper, "--nofile=4096", "--", "/bin/sh", "-c", "ulimit -Hn"}, rlim_t{512}, rlim_t{1024}, true);
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, "4096\n");
}

// Catches: arguments of the command taken as the helper's own options, and
// the command not replacing the helper (exec, same pid).
TEST(NofileHelperTest, PassesArgumentsThroughAndExecs) {
  const Outcome o =
      RunHelper({kHelper, "--nofile=256", "--", "/bin/sh", "-c", "echo \"$0 $1\"", "--nofile=9", "--at-most"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, "--nofile=9 --at-most\n");
}

// What the container got, read by the helper before it runs the target,
// against what the target itself is given by the kernel (its own
// /proc/self/status, read by the command after the exec).
// Catches: the line missing, printed after the exec (never), or read from
// another process than the one the target becomes.
TEST(NofileHelperTest, SaysTheCpusTheCommandGets) {
  const Outcome o = RunHelper({kHelper, "--nofile=256", "--", "/bin/sh", "-c",
                               "sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  const auto view = fairbench::CpuViewFromLog(o.err);
  ASSERT_TRUE(view.has_value()) << o.err;
  EXPECT_EQ(view->cpus + "\n", o.out);
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string id;
  boot >> id;
  EXPECT_EQ(view->boot_id, id);
  EXPECT_FALSE(view->online.empty());
}

// Catches: bad usage running something anyway, or exiting 0.
TEST(NofileHelperTest, BadUsageExits2) {
  EXPECT_EQ(RunHelper({kHelper, "--", "/bin/true"}).exit_code, 2);
  EXPECT_EQ(RunHelper({kHelper, "--nofile=0", "--", "/bin/true"}).exit_code, 2);
  EXPECT_EQ(RunHelper({kHelper, "--nofile=12x", "--", "/bin/true"}).exit_code, 2);
  EXPECT_EQ(RunHelper({kHelper, "--nofile=64"}).exit_code, 2);
  EXPECT_EQ(RunHelper({kHelper, "--bogus", "--nofile=64", "--", "/bin/true"}).exit_code, 2);
}

// Catches: a missing command reported as success or as a limit problem.
TEST(NofileHelperTest, MissingCommandExits127) {
  const Outcome o = RunHelper({kHelper, "--nofile=64", "--", "/nonexistent/server"});
  EXPECT_EQ(o.exit_code, 127);
  EXPECT_NE(o.err.find("cannot run '/nonexistent/server'"), std::string::npos) << o.err;
}

// Catches: an init container that cannot install the helper (no cp in the
// agent image), or an installed copy that is not executable.
TEST(NofileHelperTest, InstallCopiesAnExecutable) {
  char dir_template[] = "/tmp/nofile-install-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  const std::string dest = dir + "/fairbench-nofile";
  EXPECT_EQ(RunHelper({kHelper, "--install", dest}).exit_code, 0);
  struct stat st {};
  ASSERT_EQ(stat(dest.c_str(), &st), 0);
  EXPECT_NE(st.st_mode & S_IXUSR, 0u);
  const Outcome o = RunHelper({dest, "--nofile=128", "--", "/bin/sh", "-c", "ulimit -n"});
  EXPECT_EQ(o.out, "128\n") << o.err;
  unlink(dest.c_str());
  rmdir(dir.c_str());
}

// Catches: a dynamically linked helper, which would not run in target
// images with another libc (or none).
TEST(NofileHelperTest, IsStaticallyLinked) {
  const std::string elf = Slurp(kHelper);
  ASSERT_GT(elf.size(), 4u);
  if (!NOFILE_STATIC) GTEST_SKIP() << "sanitizer builds link it dynamically";
  EXPECT_EQ(elf.find("/lib64/ld-linux"), std::string::npos) << "has an ELF interpreter: not static";
}

}  // namespace
