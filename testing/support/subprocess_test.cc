#include "testing/support/subprocess.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "testing/support/temp_dir.h"

namespace fairbench::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Alive and not a zombie (an orphan is reaped by whatever init runs here,
// which may take a moment or, in some containers, never happen).
bool Alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  auto paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
}

SubprocessOptions Cmd(std::vector<std::string> argv) {
  SubprocessOptions o;
  o.argv = std::move(argv);
  return o;
}

Subprocess MustStart(SubprocessOptions o) {
  auto p = Subprocess::Start(std::move(o));
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return std::move(*p);
}

TEST(SubprocessTest, ReportsExitCode) {
  auto p = MustStart(Cmd({"/bin/sh", "-c", "exit 3"}));
  auto st = p.Wait(seconds(5));
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_TRUE(st->exited);
  EXPECT_EQ(st->exit_code, 3);
  EXPECT_FALSE(st->success());
  EXPECT_EQ(st->ToString(), "exit 3");
  // Reaped once, the same answer every time.
  EXPECT_EQ(p.Wait(milliseconds(0))->exit_code, 3);
}

TEST(SubprocessTest, MissingProgramIsAnErrorNotAnExitCode) {
  auto p = Subprocess::Start(Cmd({"/nonexistent/fairbench-program"}));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(p.status().message().find("No such file"), std::string::npos) << p.status().message();
}

TEST(SubprocessTest, WaitTimesOutThenKillEndsIt) {
  auto p = MustStart(Cmd({"sleep", "30"}));
  auto early = p.Wait(milliseconds(20));
  EXPECT_EQ(early.status().code(), Status::Code::kDeadlineExceeded);
  EXPECT_TRUE(p.running());
  ASSERT_TRUE(p.Kill(SIGTERM).ok());
  auto st = p.Wait(seconds(5));
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(st->signaled);
  EXPECT_EQ(st->term_signal, SIGTERM);
}

TEST(SubprocessTest, EnvironmentWorkingDirAndPipes) {
  auto dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  SubprocessOptions o;
  o.argv = {"/bin/sh", "-c", "echo \"$FAIRBENCH_X $(pwd)\"; echo oops >&2"};
  o.env = {{"FAIRBENCH_X", "hello"}};
  o.working_dir = dir->path().string();
  o.stdout_to = Redirect::Pipe();
  o.stderr_to = Redirect::File(dir->File("err.txt"));
  auto p = MustStart(std::move(o));
  auto out = p.ReadStdout(seconds(5));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "hello " + std::filesystem::canonical(dir->path()).string() + "\n");
  ASSERT_TRUE(p.Wait(seconds(5))->success());
  std::ifstream err(dir->File("err.txt"));
  std::stringstream ss;
  ss << err.rdbuf();
  EXPECT_EQ(ss.str(), "oops\n");
}

TEST(SubprocessTest, ClearEnvironment) {
  SubprocessOptions o;
  o.argv = {"/usr/bin/env"};
  o.clear_environment = true;
  o.env = {{"ONLY", "1"}};
  o.stdout_to = Redirect::Pipe();
  auto p = MustStart(std::move(o));
  EXPECT_EQ(*p.ReadStdout(seconds(5)), "ONLY=1\n");
}

TEST(SubprocessTest, DestructorKillsTheWholeGroup) {
  auto dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  pid_t grandchild = 0;
  {
    // The shell forks a sleeper and reports its pid, like nginx's master.
    SubprocessOptions o;
    o.argv = {"/bin/sh", "-c", "sleep 30 & echo $! > " + dir->File("pid") + "; wait"};
    auto p = MustStart(std::move(o));
    auto deadline = std::chrono::steady_clock::now() + seconds(5);
    while (grandchild == 0 && std::chrono::steady_clock::now() < deadline) {
      std::ifstream in(dir->File("pid"));
      in >> grandchild;
      if (grandchild == 0) std::this_thread::sleep_for(milliseconds(5));
    }
    ASSERT_GT(grandchild, 0);
    EXPECT_TRUE(Alive(grandchild));
  }
  // SIGKILL was sent to the group; the sleeper (reparented) dies promptly.
  auto deadline = std::chrono::steady_clock::now() + seconds(5);
  while (Alive(grandchild) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_FALSE(Alive(grandchild));
}

TEST(SubprocessTest, TerminateEscalatesToSigkill) {
  auto p = MustStart(Cmd({"/bin/sh", "-c", "trap '' TERM; sleep 30"}));
  std::this_thread::sleep_for(milliseconds(50));  // let the shell install its trap
  auto st = p.Terminate(SIGTERM, milliseconds(100));
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_TRUE(st->signaled);
  EXPECT_EQ(st->term_signal, SIGKILL);
}

}  // namespace
}  // namespace fairbench::testing
