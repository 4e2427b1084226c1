#include "host/process.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace fairbench::host {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

class ProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fairbench-process-test-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static ExitInfo WaitFor(Process& p) {
    for (int i = 0; i < 200; ++i) {
      if (auto e = p.Poll()) return *e;
      std::this_thread::sleep_for(25ms);
    }
    return p.Stop(0ms);
  }
  static std::string Read(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  fs::path dir_;
};

// Catches: the child's environment losing the controller's variables, or
// an added variable not replacing the inherited one of the same name.
TEST_F(ProcessTest, AddsToTheInheritedEnvironmentAndOverridesByName) {
  setenv("FAIRBENCH_PROCESS_TEST_KEPT", "kept", 1);
  setenv("FAIRBENCH_PROCESS_TEST_SET", "old", 1);
  ProcessOptions o;
  o.argv = {"sh", "-c", "echo \"$FAIRBENCH_PROCESS_TEST_KEPT $FAIRBENCH_PROCESS_TEST_SET\""};
  o.env = {{"FAIRBENCH_PROCESS_TEST_SET", "new"}};
  o.log_file = (dir_ / "log").string();
  auto p = Process::Start(o);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  const ExitInfo e = WaitFor(*p);
  EXPECT_TRUE(e.exited && e.code == 0) << e.ToString();
  EXPECT_EQ(Read(dir_ / "log"), "kept new\n");
}

// Catches: stderr not split from stdout when stderr_file is set, or not
// following stdout into log_file when it is not.
TEST_F(ProcessTest, SendsStderrToItsOwnFileOrElseToTheLog) {
  ProcessOptions o;
  o.argv = {"sh", "-c", "echo out; echo err >&2"};
  o.log_file = (dir_ / "both").string();
  auto p = Process::Start(o);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  WaitFor(*p);
  EXPECT_EQ(Read(dir_ / "both"), "out\nerr\n");

  o.log_file = (dir_ / "out").string();
  o.stderr_file = (dir_ / "err").string();
  auto q = Process::Start(o);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  WaitFor(*q);
  EXPECT_EQ(Read(dir_ / "out"), "out\n");
  EXPECT_EQ(Read(dir_ / "err"), "err\n");
}

// Catches: the working directory, open-files limit or stdin from /dev/null
// not set in the child before exec.
TEST_F(ProcessTest, RunsInTheWorkingDirectoryWithTheFileLimitAndNoInput) {
  ProcessOptions o;
  o.argv = {"sh", "-c", "pwd; ulimit -n; cat"};
  o.working_dir = dir_.string();
  o.nofile = 1000;
  o.log_file = (dir_ / "log").string();
  auto p = Process::Start(o);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  const ExitInfo e = WaitFor(*p);
  EXPECT_TRUE(e.exited && e.code == 0) << e.ToString();
  EXPECT_EQ(Read(dir_ / "log"), fs::canonical(dir_).string() + "\n1000\n");
}

// Catches: a failed exec or chdir reported as a process that exits with 127
// instead of a Status naming the program (and the directory).
TEST_F(ProcessTest, AFailedExecOrChdirIsAStatusThatSaysWhy) {
  ProcessOptions o;
  o.argv = {"fairbench-no-such-program"};
  auto p = Process::Start(o);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "cannot run 'fairbench-no-such-program': No such file or directory");

  o.argv = {"true"};
  o.working_dir = (dir_ / "missing").string();
  auto q = Process::Start(o);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().message(), "cannot run 'true' in '" + o.working_dir + "': No such file or directory");

  EXPECT_FALSE(Process::Start(ProcessOptions{}).ok());
}

// Catches: a log file or cgroup.procs file that cannot be opened starting
// the process anyway, or an error that does not name the file.
TEST_F(ProcessTest, AFileThatCannotBeOpenedIsAnErrorNamingIt) {
  ProcessOptions o;
  o.argv = {"true"};
  o.log_file = (dir_ / "missing" / "log").string();
  auto p = Process::Start(o);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "cannot open log file '" + o.log_file + "': No such file or directory");

  o.log_file.clear();
  o.stderr_file = (dir_ / "missing" / "err").string();
  auto q = Process::Start(o);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().message(), "cannot open log file '" + o.stderr_file + "': No such file or directory");

  o.stderr_file.clear();
  o.cgroup_procs = {(dir_ / "missing" / "cgroup.procs").string()};
  auto r = Process::Start(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "cannot open '" + o.cgroup_procs[0] + "': No such file or directory");
}

// Catches: the child not writing its own pid to each cgroup.procs file
// (the pid formatted by hand after fork).
TEST_F(ProcessTest, WritesItsPidToEachCgroupProcsFile) {
  const fs::path a = dir_ / "a.procs", b = dir_ / "b.procs";
  std::ofstream(a).close();
  std::ofstream(b).close();
  ProcessOptions o;
  o.argv = {"true"};
  o.cgroup_procs = {a.string(), b.string()};
  auto p = Process::Start(o);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  WaitFor(*p);
  EXPECT_EQ(Read(a), std::to_string(p->pid()));
  EXPECT_EQ(Read(b), std::to_string(p->pid()));
}

}  // namespace
}  // namespace fairbench::host
