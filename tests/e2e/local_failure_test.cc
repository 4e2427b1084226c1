// fairbench run when the machine misbehaves: the output folder becomes
// read-only or the disk fills mid-run, the user interrupts a cell (SIGTERM,
// SIGINT), a target will not stop when asked. Real processes throughout:
// the fairbench binary, its agents, targets on loopback; the file system
// faults are real too (a read-only bind mount and a full tmpfs, each in a
// mount namespace of the run's own, so that nothing outside it sees them).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "testing/support/bin_dir.h"
#include "testing/support/proc.h"
#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"
#include "testing/support/time_scale.h"

namespace fairbench {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::Subprocess;
using testing::SubprocessOptions;

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double WallNow() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

// One 100 ms bucket of a target's --request-log (see targets/common/request_log.h).
struct Bucket {
  double start = 0;  // seconds since the epoch
  uint64_t count = 0;
};

std::vector<Bucket> RequestLog(const std::filesystem::path& p) {
  std::vector<Bucket> out;
  std::ifstream in(p);
  std::string a;
  uint64_t b = 0;
  while (in >> a >> b) {
    if (a != "total") out.push_back({std::stod(a) / 1000.0, b});
  }
  return out;
}

uint64_t Served(const std::vector<Bucket>& log) {
  uint64_t n = 0;
  for (const Bucket& b : log) n += b.count;
  return n;
}

void ExpectAllGone(const std::vector<pid_t>& pids) {
  for (pid_t pid : pids) {
    bool gone = false;
    for (int i = 0; i < 100 && !gone; ++i) {
      gone = testing::GoneOrZombie(pid);
      if (!gone) std::this_thread::sleep_for(20ms);
    }
    EXPECT_TRUE(gone) << "process " << pid << " (" << ReadFile("/proc/" + std::to_string(pid) + "/comm")
                      << ") outlived the run";
  }
}

// The start of the last 100 ms in which the target served a request.
double LastRequest(const std::vector<Bucket>& log) {
  double last = 0;
  for (const Bucket& b : log) {
    if (b.count > 0) last = std::max(last, b.start);
  }
  return last;
}

// The run stopped at the first write that failed: the cell under way when
// the folder failed (0.3 s warmup + 0.5 s) was the last one loaded — no
// other cell started. (Going on would load 4 more cells, 4 s and more.)
void ExpectNoLoadAfterTheNextCell(const std::vector<Bucket>& log, double failed_at) {
  const double last = LastRequest(log);
  std::cout << "the target's last request " << last - failed_at << " s after the folder failed" << std::endl;
  EXPECT_LT(last, failed_at + 2.0) << "the run went on loading after it could no longer write its record";
}

const json* Condition(const json& record, const std::string& type) {
  for (const json& c : record["run"]["status"]["conditions"]) {
    if (c["type"] == type) return &c;
  }
  return nullptr;
}

class LocalFailureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::TempDir::Create("fairbench-failure");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
    out_ = Path("out");
    lock_ = Path("load.lock");
  }
  std::string Path(const std::string& name) const { return dir_->path().string() + "/" + name; }
  // A beast target that logs every request it serves in NAME.requests.
  std::string Target(const std::string& name) const {
    return "  - name: " + name + "\n    local:\n      command: [" + testing::BinaryPath("fairbench-target-beast") +
           ", --port, \"{port}\", --threads, \"1\", --request-log, " + Path(name + ".requests") + "]\n";
  }
  // A server that answers like the others but ignores SIGTERM.
  std::string Stubborn(const std::string& name) const {
    return "  - name: " + name + "\n    local:\n      command: [" +
           testing::BinaryPath("fairbench-test-misbehaving-server") +
           ", --port, \"{port}\", --mode, ok, --ignore-sigterm]\n";
  }
  // Scenarios hello and json (json only when `two`), at the connection
  // levels given: cells in the order target × scenario × level.
  std::string WriteRun(const std::string& targets, const std::string& levels, const std::string& duration,
                       bool two = true) {
    std::string text =
        "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: failure}\nspec:\n  targets:\n" +
        targets + "  scenarios:\n  - name: hello\n    request: {path: /}\n    expect: {status: 200}\n";
    if (two) text += "  - name: json\n    request: {path: /api/status}\n    expect: {status: 200}\n";
    text += "  load: {threads: 1, connections: [" + levels + "], warmup: 300ms, duration: " + duration +
            ", timeout: 1s, agents: 1}\n  cooldown: 200ms\n";
    const std::string path = Path("run.yaml");
    std::ofstream(path) << text;
    return path;
  }
  std::vector<std::string> RunArgv(const std::string& run_file, const std::string& out) const {
    return {testing::BinaryPath("fairbench"), "run", run_file, "--output", out, "--lock-file", lock_, "-q"};
  }
  Result<Subprocess> Start(std::vector<std::string> argv) {
    SubprocessOptions o;
    o.argv = std::move(argv);
    o.stdout_to = testing::Redirect::File(Path("stdout.txt"), true);
    o.stderr_to = testing::Redirect::File(Path("stderr.txt"), true);
    return Subprocess::Start(o);
  }
  int Wait(Subprocess& p, std::chrono::seconds timeout) {
    auto status = p.Wait(timeout);
    EXPECT_TRUE(status.ok()) << "fairbench did not finish within " << timeout.count() << " s";
    if (!status.ok()) return -1;
    EXPECT_TRUE(status->exited) << status->ToString();
    return status->exited ? status->exit_code : -1;
  }
  std::string Stderr() const { return ReadFile(Path("stderr.txt")); }
  // Until `file` (a results.json) holds at least n cells.
  static bool WaitForCells(const std::string& file, size_t n, std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      const json j = json::parse(ReadFile(file), nullptr, false);
      if (!j.is_discarded() && j.contains("cells") && j["cells"].size() >= n) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }
  // Mount namespaces need root (CAP_SYS_ADMIN) and util-linux's unshare.
  static bool CanUseMountNamespaces(std::string* why) {
    SubprocessOptions o;
    o.argv = {"unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt && command -v nsenter"};
    o.stdout_to = testing::Redirect::Null();
    o.stderr_to = testing::Redirect::Null();
    auto p = Subprocess::Start(o);
    if (!p.ok()) {
      *why = p.status().message();
      return false;
    }
    auto s = p->Wait(10s);
    *why = "unshare -m / mount / nsenter are not usable here (needs root)";
    return s.ok() && s->success();
  }

  std::optional<testing::TempDir> dir_;
  std::string out_;
  std::string lock_;
};

// The output folder turns read-only between two cells (a read-only bind
// mount over it, in the run's own mount namespace — as root, permission
// bits would not stop anything). The run stops at the next write with an
// error naming the file and the system's reason, exit code 1; the record
// it wrote last is whole and says as many cells as the error; the target
// and agent are gone. Catches: a write error swallowed (the run would go
// on and end 0 or 3 with a stale record), an error without the path or
// errno text, a record truncated by the failed write, children left behind.
TEST_F(LocalFailureTest, AnOutputFolderThatBecomesReadOnlyStopsTheRunAndKeepsTheLastRecord) {
  std::string why;
  if (!CanUseMountNamespaces(&why)) GTEST_SKIP() << why;
  const std::string run = WriteRun(Target("alpha"), "2, 4, 8", "500ms");
  std::vector<std::string> argv = {"unshare", "-m", "--propagation", "private"};
  for (const std::string& a : RunArgv(run, out_)) argv.push_back(a);
  auto p = Start(argv);  // unshare execs fairbench: p is fairbench
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE(WaitForCells(out_ + "/results.json", 1, 60s)) << Stderr();
  const std::vector<pid_t> children = testing::ChildProcesses(p->pid());
  ASSERT_FALSE(children.empty());
  SubprocessOptions ro;
  ro.argv = {"nsenter",
             "-t",
             std::to_string(p->pid()),
             "-m",
             "sh",
             "-c",
             "mount --bind \"$0\" \"$0\" && mount -o remount,bind,ro \"$0\"",
             out_};
  auto m = Subprocess::Start(ro);
  ASSERT_TRUE(m.ok());
  auto ms = m->Wait(10s);
  ASSERT_TRUE(ms.ok() && ms->success()) << "could not make the folder read-only";
  const double failed_at = WallNow();
  const size_t cells_when_made_ro = json::parse(ReadFile(out_ + "/results.json"))["cells"].size();

  EXPECT_EQ(Wait(*p, 60s), 1) << Stderr();
  const std::string err = Stderr();
  std::cout << err;
  EXPECT_NE(err.find("fairbench: the run stopped: cannot write '" + out_ + "/"), std::string::npos) << err;
  EXPECT_NE(err.find("': Read-only file system; " + out_ + "/results.json holds the last record written whole: "),
            std::string::npos)
      << err;
  // The record: whole, and what the error says it is.
  const json r = json::parse(ReadFile(out_ + "/results.json"), nullptr, false);
  ASSERT_FALSE(r.is_discarded()) << "results.json is not whole";
  ASSERT_GE(r["cells"].size(), 1u);
  ASSERT_LT(r["cells"].size(), 6u) << "the run went on after the folder became read-only";
  EXPECT_LE(r["cells"].size(), cells_when_made_ro + 1);
  EXPECT_NE(err.find("whole: " + std::to_string(r["cells"].size()) + " of 6 cells"), std::string::npos) << err;
  ExpectNoLoadAfterTheNextCell(RequestLog(Path("alpha.requests")), failed_at);
  for (const json& c : r["cells"]) EXPECT_EQ(c["result"]["state"], "Succeeded") << c["result"].dump();
  EXPECT_FALSE(std::filesystem::exists(out_ + "/results.json.tmp"));
  ExpectAllGone(children);
  // `fairbench compare` reads it as a record.
  SubprocessOptions cmp;
  cmp.argv = {testing::BinaryPath("fairbench"), "compare", out_ + "/results.json", out_ + "/results.json"};
  cmp.stdout_to = testing::Redirect::Null();
  cmp.stderr_to = testing::Redirect::File(Path("compare.txt"));
  auto c = Subprocess::Start(cmp);
  ASSERT_TRUE(c.ok());
  auto cs = c->Wait(30s);
  ASSERT_TRUE(cs.ok());
  EXPECT_TRUE(cs->success()) << cs->ToString() << ": " << ReadFile(Path("compare.txt"));
}

// The disk fills mid-run: the output folder is a 16 MiB tmpfs (in the run's
// own mount namespace), filled to the last block once a cell is recorded.
// The run stops with ENOSPC named, exit 1; the record is whole, and a run
// resumed from it (on a disk with room) keeps its cells and finishes.
// Catches: ENOSPC swallowed or a short write taken for success (the record
// would be cut off: no longer JSON), the temporary file left to hold the
// space, a record that cannot be resumed.
TEST_F(LocalFailureTest, AFullDiskStopsTheRunAndTheLastRecordResumes) {
  std::string why;
  if (!CanUseMountNamespaces(&why)) GTEST_SKIP() << why;
  const std::string run = WriteRun(Target("alpha"), "2, 4, 8", "500ms");
  const std::string saved = Path("saved");
  std::filesystem::create_directories(out_);
  std::filesystem::create_directories(saved);
  // sh: mount the tmpfs over OUT, run fairbench there, then copy what it
  // left (but the filler) to SAVED, where the test can read it after the
  // namespace is gone.
  std::vector<std::string> argv = {
      "unshare",
      "-m",
      "--propagation",
      "private",
      "sh",
      "-c",
      "mount -t tmpfs -o size=16m tmpfs \"$0\" || exit 90; \"$@\"; rc=$?; rm -f \"$0/filler\"; "
      "cp -a \"$0/.\" \"" +
          saved + "/\"; exit $rc",
      out_};
  for (const std::string& a : RunArgv(run, out_)) argv.push_back(a);
  auto p = Start(argv);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  // The folder as the run sees it.
  const std::string inside = "/proc/" + std::to_string(p->pid()) + "/root" + out_;
  ASSERT_TRUE(WaitForCells(inside + "/results.json", 1, 60s)) << Stderr();
  std::vector<pid_t> children;
  for (pid_t fairbench : testing::ChildProcesses(p->pid())) {
    for (pid_t c : testing::ChildProcesses(fairbench)) children.push_back(c);
  }
  ASSERT_FALSE(children.empty());
  {
    std::ofstream filler(inside + "/filler", std::ios::binary);
    const std::string block(1 << 16, 'x');
    size_t written = 0;
    while (filler.write(block.data(), static_cast<std::streamsize>(block.size())) && written < (64u << 20)) {
      written += block.size();
    }
    ASSERT_LT(written, 64u << 20) << "the tmpfs did not fill";
  }
  const double failed_at = WallNow();
  EXPECT_EQ(Wait(*p, 60s), 1) << Stderr();
  const std::string err = Stderr();
  std::cout << err;
  EXPECT_NE(err.find("fairbench: the run stopped: cannot write '" + out_ + "/"), std::string::npos) << err;
  EXPECT_NE(err.find("': No space left on device; " + out_ + "/results.json holds the last record written whole: "),
            std::string::npos)
      << err;
  ExpectAllGone(children);
  ExpectNoLoadAfterTheNextCell(RequestLog(Path("alpha.requests")), failed_at);
  const json before = json::parse(ReadFile(saved + "/results.json"), nullptr, false);
  ASSERT_FALSE(before.is_discarded()) << "results.json is not whole";
  ASSERT_GE(before["cells"].size(), 1u);
  ASSERT_LT(before["cells"].size(), 6u);
  EXPECT_FALSE(std::filesystem::exists(saved + "/results.json.tmp"));

  // Resumed where there is room: the cells kept, the rest run.
  std::vector<std::string> again = RunArgv(run, saved);
  again.push_back("--resume");
  auto r = Start(again);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Wait(*r, 60s), 0) << Stderr();
  const json after = json::parse(ReadFile(saved + "/results.json"));
  ASSERT_EQ(after["cells"].size(), 6u);
  for (size_t i = 0; i < before["cells"].size(); ++i) {
    EXPECT_EQ(after["cells"][i], before["cells"][i]) << "finished cell " << i << " changed on resume";
  }
  EXPECT_EQ(after["run"]["status"]["phase"], "Succeeded");
}

// SIGTERM or SIGINT in the middle of a cell's measurement: the load stops
// within a second — by the target's own count of what it served, in 100 ms
// buckets — the target and agent are stopped, the exit code is 128 + the
// signal, and the record says the run was interrupted by that signal in
// which cell, in which stage and how far. Catches: a signal that does not
// reach the agents (the target's log would run on to the cell's end, 3 s
// later), children left running, the interrupted cell recorded as a
// result, a record that does not say where it stopped, a wrong exit code.
class InterruptTest : public LocalFailureTest, public ::testing::WithParamInterface<int> {};

TEST_P(InterruptTest, TheLoadStopsWithinASecondAndTheRecordSaysWhere) {
  const int sig = GetParam();
  const std::string name = sig == SIGTERM ? "SIGTERM" : "SIGINT";
  const std::string run = WriteRun(Target("alpha"), "8", "4s");
  auto p = Start(RunArgv(run, out_));
  ASSERT_TRUE(p.ok());
  // Into the measurement: the target has served load for a while.
  const auto give_up = std::chrono::steady_clock::now() + 60s;
  while (Served(RequestLog(Path("alpha.requests"))) < 2000 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(20ms);
  }
  std::this_thread::sleep_for(1s);
  const std::vector<pid_t> children = testing::ChildProcesses(p->pid());
  ASSERT_GE(children.size(), 2u) << "a target and an agent";
  const double signalled = WallNow();
  ASSERT_TRUE(p->Kill(sig).ok());
  EXPECT_EQ(Wait(*p, 20s), 128 + sig) << Stderr();
  const double exited = WallNow();
  ExpectAllGone(children);

  const std::vector<Bucket> log = RequestLog(Path("alpha.requests"));
  double last = 0;
  bool loaded_at_signal = false;
  for (const Bucket& b : log) {
    if (b.count == 0) continue;
    last = std::max(last, b.start);
    loaded_at_signal |= b.start >= signalled - 0.5 && b.start < signalled;
  }
  ASSERT_TRUE(loaded_at_signal) << "the target was not under load when the signal came";
  std::cout << name << ": the target's last request began within " << last - signalled + 0.1
            << " s of the signal (100 ms buckets); fairbench exited " << exited - signalled << " s after it"
            << std::endl;
  EXPECT_LE(last, signalled + 1.0) << "the target served requests more than a second after " << name;

  const json r = json::parse(ReadFile(out_ + "/results.json"), nullptr, false);
  ASSERT_FALSE(r.is_discarded());
  EXPECT_EQ(r["run"]["status"]["phase"], "Cancelled");
  EXPECT_TRUE(r["cells"].empty()) << "the interrupted cell is not a result";
  const json* progressing = Condition(r, "Progressing");
  ASSERT_NE(progressing, nullptr);
  const std::string message = (*progressing)["message"];
  const std::string head = "interrupted by " + name + " during cell alpha/hello/c8/r1, measuring: ";
  EXPECT_EQ(message.rfind(head, 0), 0u) << message;
  EXPECT_NE(message.find(" s of 4.0 s measured; 0 of 2 cells finished"), std::string::npos) << message;
  EXPECT_NE(Stderr().find("fairbench: " + message), std::string::npos) << Stderr();
  EXPECT_NE(ReadFile(out_ + "/report.md").find("**The run was stopped**: " + message + "."), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Signals, InterruptTest, ::testing::Values(SIGTERM, SIGINT),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return i.param == SIGTERM ? "Sigterm" : "Sigint";
                         });

// A target that ignores SIGTERM (the misbehaving server with
// --ignore-sigterm: its log says it got the signal and went on) is killed
// once --target-stop-grace has passed; the record's notes and the
// controller's log say so; its cell stays a result and the next target
// runs. Catches: a teardown that waits forever or kills at once (the gap
// to the next target's cell would be below the 2 s grace, or the default
// 10 s), a forced kill not told, the cell lost with it.
TEST_F(LocalFailureTest, ATargetThatIgnoresSigtermIsKilledAfterTheGracePeriod) {
  const std::string run = WriteRun(Stubborn("stubborn") + Target("alpha"), "4", "500ms", /*two=*/false);
  std::vector<std::string> argv = RunArgv(run, out_);
  argv.insert(argv.end(), {"--target-stop-grace", "2s"});
  auto p = Start(argv);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(Wait(*p, 60s), 0) << Stderr();
  const json r = json::parse(ReadFile(out_ + "/results.json"));
  ASSERT_EQ(r["cells"].size(), 2u);
  EXPECT_EQ(r["cells"][0]["result"]["target"], "stubborn");
  EXPECT_EQ(r["cells"][0]["result"]["state"], "Succeeded") << r["cells"][0]["result"].dump();
  EXPECT_EQ(r["cells"][1]["result"]["state"], "Succeeded");
  const std::string note = "target stubborn: teardown: did not exit within 2 s of SIGTERM; killed (SIGKILL)";
  int found = 0;
  for (const json& n : r["environment"]["notes"]) found += n.get<std::string>() == note;
  EXPECT_EQ(found, 1) << r["environment"]["notes"].dump();
  for (const json& n : r["environment"]["notes"]) {
    EXPECT_EQ(n.get<std::string>().find("target alpha: teardown"), std::string::npos) << "alpha stopped on SIGTERM";
  }
  EXPECT_NE(
      ReadFile(out_ + "/logs/controller.log")
          .find("target stubborn could not be torn down cleanly: did not exit within 2 s of SIGTERM; killed (SIGKILL)"),
      std::string::npos);
  EXPECT_NE(ReadFile(out_ + "/logs/stubborn.log").find("SIGTERM ignored"), std::string::npos)
      << "the target never saw SIGTERM";
  // From the end of stubborn's cell to the start of alpha's warmup: the
  // grace, then alpha's start, readiness and verification.
  auto seconds = [](const json& t) {
    std::tm tm{};
    const std::string s = t.get<std::string>();
    std::istringstream ss(s.substr(0, 19));
    ss >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
    double frac = 0;
    if (s.size() > 20 && s[19] == '.') frac = std::stod("0" + s.substr(19, s.find('Z') - 19));
    return static_cast<double>(timegm(&tm)) + frac;
  };
  const double gap = seconds(r["cells"][1]["result"]["startTime"]) - 0.3 - seconds(r["cells"][0]["result"]["endTime"]);
  std::cout << "from stubborn's cell end to alpha's warmup: " << gap << " s (grace 2 s)" << std::endl;
  EXPECT_GE(gap, 2.0);
  EXPECT_LT(gap, 6.0);
}

// A second signal ends fairbench at once, even while it waits out a
// target's grace period; the target dies with it (PR_SET_PDEATHSIG).
// Catches: a second signal ignored (the run would wait out the 60 s
// grace), children outliving a forced exit.
TEST_F(LocalFailureTest, ASecondSignalExitsAtOnce) {
  const std::string run = WriteRun(Stubborn("stubborn"), "4", "5s", /*two=*/false);
  std::vector<std::string> argv = RunArgv(run, out_);
  argv.insert(argv.end(), {"--target-stop-grace", "60s"});
  auto p = Start(argv);
  ASSERT_TRUE(p.ok());
  // Until the target and the agent are up, and a second more (under load).
  const auto give_up = std::chrono::steady_clock::now() + 60s;
  while (testing::ChildProcesses(p->pid()).size() < 2 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(20ms);
  std::this_thread::sleep_for(1500ms);
  const std::vector<pid_t> children = testing::ChildProcesses(p->pid());
  ASSERT_GE(children.size(), 2u);
  ASSERT_TRUE(p->Kill(SIGTERM).ok());
  // The first signal stops the load, then waits for the stubborn target.
  std::this_thread::sleep_for(1500ms);
  ASSERT_FALSE(p->Poll().has_value()) << "fairbench should still wait for the target's grace period";
  const auto second = std::chrono::steady_clock::now();
  ASSERT_TRUE(p->Kill(SIGINT).ok());
  EXPECT_EQ(Wait(*p, 10s), 128 + SIGTERM) << Stderr();
  // (Scaled: a sanitizer's runtime has its own work to do at exit.)
  EXPECT_LT(std::chrono::steady_clock::now() - second, testing::Scaled(1s));
  EXPECT_NE(Stderr().find("SIGINT again: exiting at once"), std::string::npos) << Stderr();
  ExpectAllGone(children);
}

}  // namespace
}  // namespace fairbench
