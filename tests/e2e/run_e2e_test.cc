// fairbench run, end to end: the real `fairbench` binary drives real agents
// against real target processes on this machine; the tests read what it
// wrote (results.json) and what the targets themselves logged.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "testing/support/bin_dir.h"
#include "testing/support/proc.h"
#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"

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

// One 100 ms bucket of a target's --request-log.
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
    if (a == "total") continue;
    out.push_back({std::stod(a) / 1000.0, b});
  }
  return out;
}

double ParseTime(const std::string& rfc3339) {
  std::tm tm{};
  std::istringstream ss(rfc3339.substr(0, 19));
  ss >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  double frac = 0;
  if (rfc3339.size() > 20 && rfc3339[19] == '.') frac = std::stod("0" + rfc3339.substr(19, rfc3339.find('Z') - 19));
  return static_cast<double>(timegm(&tm)) + frac;
}

class RunE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::TempDir::Create("fairbench-e2e");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
    out_ = dir_->path().string() + "/out";
    lock_ = dir_->path().string() + "/load.lock";
  }
  std::string Target(const std::string& name, const std::string& server = "beast") {
    return "  - name: " + name + "\n    local:\n      command: [" + testing::BinaryPath("fairbench-target-" + server) +
           ", --port, \"{port}\", --threads, \"1\", --request-log, " + dir_->path().string() + "/" + name +
           ".requests]\n";
  }
  std::string WriteRun(const std::string& targets, const std::string& extra_scenarios = "", int agents = 1,
                       const std::string& duration = "1s", const std::string& extra_load = "") {
    const std::string text =
        "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: e2e}\nspec:\n  targets:\n" + targets +
        "  scenarios:\n"
        "  - name: hello\n    request: {path: /}\n    expect: {status: 200, body: \"Hello, World!\"}\n"
        "  - name: json\n    request: {path: /api/status}\n    expect: {status: 200, contentType: application/json}\n" +
        extra_scenarios + "  load: {threads: 1, connections: [8], warmup: 300ms, duration: " + duration +
        ", timeout: 1s, agents: " + std::to_string(agents) + extra_load + "}\n  cooldown: 500ms\n";
    const std::string path = dir_->path().string() + "/run.yaml";
    std::ofstream(path) << text;
    return path;
  }
  Result<Subprocess> Start(const std::string& run_file, std::vector<std::string> extra = {},
                           std::map<std::string, std::string> env = {}, std::string working_dir = "") {
    SubprocessOptions o;
    o.env = std::move(env);
    o.working_dir = std::move(working_dir);
    o.argv = {testing::BinaryPath("fairbench"), "run", run_file, "--output", out_, "--lock-file", lock_};
    o.argv.insert(o.argv.end(), extra.begin(), extra.end());
    o.stdout_to = testing::Redirect::File(dir_->path().string() + "/stdout.txt", true);
    o.stderr_to = testing::Redirect::File(dir_->path().string() + "/stderr.txt", true);
    return Subprocess::Start(o);
  }
  // Runs fairbench to the end; returns its exit code.
  int Run(const std::string& run_file, std::vector<std::string> extra = {}, std::map<std::string, std::string> env = {},
          std::string working_dir = "") {
    auto p = Start(run_file, extra, std::move(env), std::move(working_dir));
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (!p.ok()) return -1;
    auto status = p->Wait(120s);
    EXPECT_TRUE(status.ok()) << "fairbench run did not finish";
    return status.ok() ? status->exit_code : -1;
  }
  json Results() {
    const json j = json::parse(ReadFile(out_ + "/results.json"), nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << ReadFile(dir_->path().string() + "/stderr.txt");
    return j;
  }
  std::string Stderr() { return ReadFile(dir_->path().string() + "/stderr.txt"); }
  // Waits until results.json holds at least n cells.
  bool WaitForCells(size_t n, std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      const json j = json::parse(ReadFile(out_ + "/results.json"), nullptr, false);
      if (!j.is_discarded() && j.contains("cells") && j["cells"].size() >= n) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }

  std::optional<testing::TempDir> dir_;
  std::string out_;
  std::string lock_;
};

// What /proc says about the targets while a run goes on: a thread that
// reads, every 20 ms, the CPU time and memory of each process whose command
// line names `marker` followed by a target's request log (new processes
// are looked for every 200 ms).
class ProcSampler {
 public:
  struct Sample {
    double at = 0;      // seconds since the epoch
    double cpu = 0;     // user + system seconds so far
    uint64_t rss = 0;   // bytes (VmRSS)
    uint64_t anon = 0;  // bytes (RssAnon)
  };
  explicit ProcSampler(std::string marker) : marker_(std::move(marker)), thread_([this] { Loop(); }) {}
  ~ProcSampler() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  // The samples of target `name` between `from` and `to`; call after Stop().
  std::vector<Sample> Between(const std::string& name, double from, double to) const {
    std::vector<Sample> out;
    const auto it = samples_.find(name);
    if (it == samples_.end()) return out;
    for (const Sample& s : it->second) {
      if (s.at >= from && s.at <= to) out.push_back(s);
    }
    return out;
  }

 private:
  void Loop() {
    const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
    std::map<std::string, std::string> targets;  // /proc/PID → target name
    for (int turn = 0; !stop_; ++turn) {
      if (turn % 10 == 0) {  // look for new targets every 200 ms
        for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
          const std::string pid = entry.path().filename().string();
          if (pid.find_first_not_of("0123456789") != std::string::npos || targets.count(entry.path())) continue;
          std::string cmdline = ReadFile(entry.path() / "cmdline");
          std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
          const size_t at = cmdline.find(marker_);
          if (at == std::string::npos || cmdline.find("fairbench-target-") == std::string::npos) continue;
          const size_t end = cmdline.find(".requests", at);
          if (end == std::string::npos) continue;
          targets[entry.path()] = cmdline.substr(at + marker_.size(), end - at - marker_.size());
        }
      }
      for (auto it = targets.begin(); it != targets.end();) {
        const std::string stat = ReadFile(it->first + "/stat");
        const size_t close = stat.rfind(')');
        if (close == std::string::npos) {
          it = targets.erase(it);  // gone
          continue;
        }
        std::istringstream rest(stat.substr(close + 2));
        std::vector<std::string> f;
        for (std::string field; rest >> field;) f.push_back(field);
        Sample s;
        s.at = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
        if (f.size() >= 13) s.cpu = static_cast<double>(std::stoull(f[11]) + std::stoull(f[12])) / hz;  // utime, stime
        std::istringstream status(ReadFile(it->first + "/status"));
        for (std::string line; std::getline(status, line);) {
          uint64_t kb = 0;
          if (std::sscanf(line.c_str(), "VmRSS: %lu kB", &kb) == 1) s.rss = kb * 1024;
          if (std::sscanf(line.c_str(), "RssAnon: %lu kB", &kb) == 1) s.anon = kb * 1024;
        }
        if (f.size() >= 13 && s.rss > 0) samples_[it->second].push_back(s);
        ++it;
      }
      std::this_thread::sleep_for(20ms);
    }
  }

  std::string marker_;
  std::atomic<bool> stop_{false};
  std::map<std::string, std::vector<Sample>> samples_;  // by target; the sampling thread only, until Stop()
  std::thread thread_;
};

uint64_t TimelineRequests(const json& cell) {
  uint64_t n = 0;
  for (const json& p : cell["timeline"]) n += p["requests"].get<uint64_t>();
  return n;
}

// requests/s × the measured window equals what the target counted in that
// window. Its log has 100 ms buckets: the window holds every bucket that
// lies inside it and a share of the first one it cuts (the load is steady
// there, after the warmup) — and all of the last one, since the load stops
// at the window's end (the drain adds at most one request per connection).
// Tolerance: half a bucket and two requests per connection (the target's
// sampler may wake late and move requests into an earlier bucket; the
// estimate came within 0.1–0.8 % of the count, a tenth of a bucket, in 20
// cells), and for the bounds a quarter of a bucket.
// Catches: requests/s over the wrong window (warmup or drain included, the
// agents' connect time counted), per-agent figures not added up, or a
// count that is not the target's.
void ExpectRequestsPerSecondMatchesTheTarget(const json& res, const std::vector<Bucket>& log) {
  const double from = ParseTime(res["startTime"]);
  const double to = ParseTime(res["endTime"]);
  const double rps = res["requestsPerSecond"].get<double>();
  double inside = 0, overlapping = 0, estimate = 0, buckets = 0;
  for (const Bucket& b : log) {
    const double end = b.start + 0.1;
    if (end <= from || b.start >= to) continue;
    const auto n = static_cast<double>(b.count);
    overlapping += n;
    ++buckets;
    if (b.start >= from && end <= to) {
      inside += n;
      estimate += n;
    } else if (b.start < from) {
      estimate += n * (end - from) / 0.1;
    } else {
      estimate += n;
    }
  }
  ASSERT_GT(buckets, 0) << res.dump();
  const double measured = rps * (to - from);
  const double bucket = overlapping / buckets;
  const double slack = 2.0 * res["connections"].get<double>();
  std::cout << res["target"].get<std::string>() << "/" << res["scenario"].get<std::string>() << ": " << measured
            << " requests in the window, the target counted " << estimate << " (" << inside << "…" << overlapping << ")"
            << std::endl;
  EXPECT_GE(measured, inside - slack - 0.25 * bucket) << res.dump();
  EXPECT_LE(measured, overlapping + slack + 0.25 * bucket) << res.dump();
  EXPECT_NEAR(measured, estimate, 0.5 * bucket + slack)
      << "requests/s × window vs the target's own count; " << res.dump();
}

// targetCpu (cores) and memoryLoaded against /proc sampled during the
// window. CPU: within 0.1 core + 20 % of what the target's utime + stime
// grew by (the orchestrator samples every 200 ms, /proc counts 10 ms ticks,
// and the two sub-windows differ by up to a sample at each end). Memory:
// the working set of the target's cgroup (or its RSS without one) is at
// least the anonymous memory /proc shows and at most the whole RSS plus
// 16 MiB of kernel memory (socket buffers, page tables). Catches: CPU in
// the wrong unit or over the wrong span, another process's usage, memory
// in the wrong unit.
void ExpectUsageMatchesProc(const json& res, const std::vector<ProcSampler::Sample>& samples) {
  ASSERT_GE(samples.size(), 10u) << "too few /proc samples in the window of " << res.dump();
  const ProcSampler::Sample& a = samples.front();
  const ProcSampler::Sample& b = samples.back();
  ASSERT_GT(b.at - a.at, 0.5);
  const double cores = (b.cpu - a.cpu) / (b.at - a.at);
  ASSERT_TRUE(res.contains("targetCpu")) << res.dump();
  EXPECT_NEAR(res["targetCpu"].get<double>(), cores, 0.1 + 0.2 * cores) << res.dump();
  uint64_t anon = UINT64_MAX, rss = 0;
  for (const ProcSampler::Sample& s : samples) {
    anon = std::min(anon, s.anon);
    rss = std::max(rss, s.rss);
  }
  ASSERT_TRUE(res.contains("memoryLoaded")) << res.dump();
  const auto memory = res["memoryLoaded"].get<uint64_t>();
  std::cout << res["target"].get<std::string>() << "/" << res["scenario"].get<std::string>() << ": target CPU "
            << res["targetCpu"].get<double>() << " cores, /proc " << cores << "; memory " << memory << " B, /proc anon "
            << anon << " B, RSS " << rss << " B" << std::endl;
  EXPECT_GE(memory, anon) << res.dump();
  EXPECT_LE(memory, rss + (16u << 20)) << res.dump();
}

TEST_F(RunE2eTest, TwoTargetsTwoAgentsOneAtATimeNothingLost) {
  const std::string run = WriteRun(Target("alpha") + Target("beta", "cpp-httplib-debian"), "", /*agents=*/2);
  ProcSampler proc(dir_->path().string() + "/");
  ASSERT_EQ(Run(run), 0) << Stderr();
  proc.Stop();
  const json r = Results();
  ASSERT_EQ(r["cells"].size(), 4u);
  // The load window of each cell: from the warmup's start to the end of the
  // measurement, when the agents stop sending. (The next target is deployed
  // only after the drain, the teardown and the release of the slot.)
  struct Window {
    std::string target;
    double from, to;
  };
  std::vector<Window> windows;
  for (const json& c : r["cells"]) {
    const json& res = c["result"];
    ASSERT_EQ(res["state"], "Succeeded") << res.dump();
    EXPECT_EQ(c["agents"], 2);
    const double start = ParseTime(res["startTime"]);
    const double end = ParseTime(res["endTime"]);
    windows.push_back({res["target"], start - 0.3, end});
    // (b) the cell's totals equal the sum of its snapshots…
    uint64_t measured = 0;
    for (const json& p : c["timeline"]) {
      if (p["phase"] == "measure") measured += p["requests"].get<uint64_t>();
    }
    EXPECT_EQ(measured, res["requests"].get<uint64_t>());
  }
  // (a) no two targets' measurement windows overlap…
  for (const Window& a : windows) {
    for (const Window& b : windows) {
      if (a.target == b.target) continue;
      EXPECT_TRUE(a.to <= b.from || b.to <= a.from) << a.target << " and " << b.target << " overlap";
    }
  }
  // …and no target served a request during another target's load window.
  for (const std::string name : {"alpha", "beta"}) {
    const auto log = RequestLog(dir_->path().string() + "/" + name + ".requests");
    ASSERT_FALSE(log.empty()) << name;
    for (const Bucket& b : log) {
      for (const Window& w : windows) {
        if (w.target == name) continue;
        EXPECT_FALSE(b.start + 0.1 > w.from + 0.05 && b.start < w.to - 0.05)
            << name << " served " << b.count << " requests at " << std::fixed << b.start << " during " << w.target
            << "'s window " << w.from << ".." << w.to;
      }
    }
    // (b) …and the count the target itself served: every request of every
    // cell (warmup, measurement, drain) plus the probes before the load
    // (readiness, one verification per scenario).
    uint64_t served = 0;
    for (const Bucket& b : log) served += b.count;
    uint64_t sent = 0, abandoned = 0;
    for (const json& c : r["cells"]) {
      if (c["result"]["target"] != name) continue;
      sent += TimelineRequests(c) + c["drained"].get<uint64_t>();
      abandoned += c["abandoned"].get<uint64_t>();
    }
    EXPECT_GE(served, sent + 2) << name;
    EXPECT_LE(served, sent + abandoned + 2 + 20) << name << ": more requests than the agents and the probes made";
  }
  // (c) requests/s, target CPU and memory are what the target itself and
  // /proc say about the cell's window.
  for (const json& c : r["cells"]) {
    const json& res = c["result"];
    const std::string name = res["target"];
    ExpectRequestsPerSecondMatchesTheTarget(res, RequestLog(dir_->path().string() + "/" + name + ".requests"));
    ExpectUsageMatchesProc(res, proc.Between(name, ParseTime(res["startTime"]), ParseTime(res["endTime"])));
  }
  EXPECT_TRUE(std::filesystem::exists(out_ + "/report.md"));
  EXPECT_TRUE(std::filesystem::exists(out_ + "/report.html"));
  EXPECT_TRUE(std::filesystem::exists(out_ + "/cells/alpha_hello_c8_r1.txt"));
}

TEST_F(RunE2eTest, AKilledAgentFailsItsCellAndTheRunGoesOn) {
  const std::string run = WriteRun(Target("alpha"), "", 1, "3s");
  auto p = Start(run);
  ASSERT_TRUE(p.ok());
  // Kill this run's agent (a child of this fairbench; other tests may be
  // running theirs) in the middle of the first cell.
  std::this_thread::sleep_for(2500ms);
  SubprocessOptions kill;
  kill.argv = {"pkill", "-KILL", "-P", std::to_string(p->pid()), "-f", "fairbench-agent --controller"};
  auto k = Subprocess::Start(kill);
  ASSERT_TRUE(k.ok());
  ASSERT_TRUE(k->Wait(5s).ok());
  auto status = p->Wait(60s);
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->exit_code, 3) << Stderr();
  const json r = Results();
  ASSERT_EQ(r["cells"].size(), 2u);
  EXPECT_EQ(r["cells"][0]["result"]["state"], "Failed");
  EXPECT_EQ(r["cells"][0]["result"]["reason"], "AgentFailed");
  EXPECT_NE(r["cells"][0]["result"]["message"].get<std::string>().find("disconnected"), std::string::npos);
  EXPECT_EQ(r["cells"][1]["result"]["state"], "Succeeded") << "a new agent takes over the next cell";
  EXPECT_EQ(r["run"]["status"]["phase"], "Failed");
}

TEST_F(RunE2eTest, ATargetThatExitsIsAFindingAndTheNextTargetRuns) {
  // The first target dies 2 s after it starts: during its first cell.
  const std::string dying = "  - name: dying\n    local:\n      command: [timeout, -s, KILL, \"2\", " +
                            testing::BinaryPath("fairbench-target-beast") + ", --port, \"{port}\", --threads, \"1\"]\n";
  const std::string run = WriteRun(dying + Target("healthy"), "", 1, "2s");
  EXPECT_EQ(Run(run), 3) << Stderr();
  const json r = Results();
  ASSERT_EQ(r["cells"].size(), 4u);
  EXPECT_EQ(r["cells"][0]["result"]["state"], "Failed");
  EXPECT_EQ(r["cells"][0]["result"]["reason"], "TargetExited");
  EXPECT_NE(r["cells"][0]["result"]["message"].get<std::string>().find("killed by signal 9"), std::string::npos)
      << r["cells"][0]["result"].dump();
  EXPECT_EQ(r["cells"][1]["result"]["state"], "Skipped");
  EXPECT_EQ(r["cells"][1]["result"]["reason"], "TargetExited");
  EXPECT_EQ(r["cells"][2]["result"]["state"], "Succeeded");
  EXPECT_EQ(r["cells"][3]["result"]["state"], "Succeeded");
}

TEST_F(RunE2eTest, AnOomKilledTargetIsNamedSo) {
  if (geteuid() != 0) GTEST_SKIP() << "memory limits need a cgroup, which needs root";
  // Serves, then (1.5 s in, during the first cell) becomes a process that
  // eats memory without end: the cgroup's 64 MiB limit must stop it.
  const std::string hungry = "  - name: hungry\n    resources: {memory: 64Mi}\n    local:\n      command: [sh, -c, '" +
                             testing::BinaryPath("fairbench-target-beast") +
                             " --port \"$0\" --threads 1 & sleep 1.5; exec tail /dev/zero', \"{port}\"]\n";
  const std::string run = WriteRun(hungry, "", 1, "2s");
  EXPECT_EQ(Run(run), 3) << Stderr();
  const json r = Results();
  ASSERT_EQ(r["cells"].size(), 2u);
  EXPECT_EQ(r["cells"][0]["result"]["reason"], "TargetExited");
  EXPECT_NE(r["cells"][0]["result"]["message"].get<std::string>().find("OOMKilled"), std::string::npos)
      << r["cells"][0]["result"].dump();
  EXPECT_EQ(r["cells"][1]["result"]["state"], "Skipped");
}

TEST_F(RunE2eTest, AKilledControllerResumesWithoutLosingFinishedCells) {
  const std::string run = WriteRun(Target("alpha") + Target("beta"));
  auto p = Start(run);
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(WaitForCells(1, 60s)) << Stderr();
  const std::vector<pid_t> children = testing::ChildProcesses(p->pid());
  ASSERT_FALSE(children.empty()) << "the controller has no agent or target";
  ASSERT_TRUE(p->Kill(SIGKILL).ok());
  ASSERT_TRUE(p->Wait(10s).ok());
  const json before = Results();
  ASSERT_GE(before["cells"].size(), 1u);
  ASSERT_LT(before["cells"].size(), 4u);
  // The controller's children (agents, targets) died with it.
  for (pid_t child : children) {
    bool gone = false;
    for (int i = 0; i < 100 && !gone; ++i) {
      gone = ::kill(child, 0) != 0 || testing::GoneOrZombie(child);
      if (!gone) std::this_thread::sleep_for(20ms);
    }
    EXPECT_TRUE(gone) << "process " << child << " outlived its controller";
  }

  EXPECT_EQ(Run(run, {"--resume"}), 0) << Stderr();
  const json after = Results();
  ASSERT_EQ(after["cells"].size(), 4u);
  for (size_t i = 0; i < before["cells"].size(); ++i) {
    EXPECT_EQ(after["cells"][i], before["cells"][i]) << "finished cell " << i << " changed on resume";
  }
  EXPECT_EQ(after["run"]["status"]["phase"], "Succeeded");
}

TEST_F(RunE2eTest, AFailingEndpointIsReportedAndNotLoaded) {
  const std::string broken =
      "  - name: wrong\n    request: {path: /api/status}\n    expect: {status: 200, body: nope}\n";
  const std::string run = WriteRun(Target("alpha"), broken);
  EXPECT_EQ(Run(run), 3) << Stderr();
  const json r = Results();
  ASSERT_EQ(r["cells"].size(), 3u);
  const json& wrong = r["cells"][2];
  EXPECT_EQ(wrong["result"]["state"], "Skipped");
  EXPECT_EQ(wrong["result"]["reason"], "VerificationFailed");
  EXPECT_NE(wrong["result"]["message"].get<std::string>().find("expected body 'nope'"), std::string::npos);
  EXPECT_TRUE(!wrong.contains("timeline") || wrong["timeline"].empty());
  EXPECT_NE(ReadFile(out_ + "/report.md").find("VerificationFailed"), std::string::npos);
  // The target served the other two cells, the probes, and nothing more.
  uint64_t served = 0;
  for (const Bucket& b : RequestLog(dir_->path().string() + "/alpha.requests")) served += b.count;
  uint64_t sent = 0, abandoned = 0;
  for (const json& c : r["cells"]) {
    if (c.contains("timeline")) sent += TimelineRequests(c) + c["drained"].get<uint64_t>();
    if (c.contains("abandoned")) abandoned += c["abandoned"].get<uint64_t>();
  }
  EXPECT_LE(served, sent + abandoned + 3 + 20);
}

// Scenarios made by wrk scripts, on two agents: the study's JSON echo POST
// from a file beside the run file (with init() arguments), a counter in the
// path given inline, and a script whose first request the target does not
// answer. Each agent runs the script's setup() for its own thread and its
// own done(), whose output the cell keeps per agent and the report shows;
// the endpoint check before the load uses the script's first request.
// Catches: the script not sent to every agent (one output), done() given
// the merged cell instead of the agent's own numbers (their sum would not
// be the cell's), the check skipped or made with another request (the
// missing endpoint loaded, the counter's /users/1 not matched), a script
// file not read relative to the run file.
TEST_F(RunE2eTest, ScriptedScenariosRunOnEveryAgentAndKeepEachDone) {
  std::ofstream(dir_->path() / "post_echo.lua")
      << "wrk.method = \"POST\"\n"
         "wrk.path   = \"/api/echo\"\n"
         "wrk.body   = '{\"name\":\"Alice\",\"age\":30}'\n"
         "wrk.headers[\"Content-Type\"] = \"application/json\"\n"
         "local threads = 0\n"
         "function setup(thread) threads = threads + 1 end\n"
         "function init(args) if args[1] ~= \"alpha\" then error(\"no args\") end end\n"
         "function done(summary, latency)\n"
         "  io.write(string.format(\"echo done: %d requests, %d threads, p50 %d\\n\", summary.requests, threads,\n"
         "                         latency:percentile(50)))\n"
         "end\n";
  const std::string scripted =
      "  - name: echo\n    script: {file: post_echo.lua, args: [alpha]}\n"
      "    expect: {status: 200, json: {name: Alice, age: 30}}\n"
      "  - name: users\n    script:\n      inline: |\n"
      "        local n = 0\n"
      "        function request() n = n + 1; return wrk.format(nil, \"/users/\" .. n) end\n"
      "        function done(summary) io.write(\"users done: \" .. summary.requests .. \"\\n\") end\n"
      "    expect: {status: 200, json: {id: 1, name: User 1}}\n"
      "  - name: missing\n    script: {inline: 'function request() return wrk.format(nil, \"/nope\") end'}\n";
  const std::string run = WriteRun(Target("alpha"), scripted, /*agents=*/2);
  EXPECT_EQ(Run(run), 3) << Stderr();  // a scenario failed its check
  const json r = Results();
  ASSERT_EQ(r["cells"].size(), 5u);
  std::map<std::string, json> cells;
  for (const json& c : r["cells"]) cells[c["result"]["scenario"]] = c;
  for (const std::string name : {"echo", "users"}) {
    const json& c = cells[name];
    ASSERT_EQ(c["result"]["state"], "Succeeded") << c["result"].dump();
    ASSERT_EQ(c["scriptOutput"].size(), 2u) << name << ": " << c.dump().substr(0, 500);
    uint64_t sum = 0;
    for (const json& o : c["scriptOutput"]) {
      const std::string text = o["text"];
      const std::string prefix = name + " done: ";
      ASSERT_EQ(text.rfind(prefix, 0), 0u) << text;
      sum += std::stoull(text.substr(prefix.size()));
      if (name == "echo") {
        EXPECT_NE(text.find(" requests, 1 threads, p50 "), std::string::npos) << text;
      }
    }
    EXPECT_EQ(sum, c["result"]["requests"].get<uint64_t>()) << name << ": each agent's done() sees its own requests";
    EXPECT_GT(sum, 50u);
  }
  EXPECT_EQ(cells["missing"]["result"]["state"], "Skipped");
  EXPECT_EQ(cells["missing"]["result"]["reason"], "VerificationFailed");
  EXPECT_NE(cells["missing"]["result"]["message"].get<std::string>().find("/nope"), std::string::npos)
      << cells["missing"]["result"].dump();
  const std::string report = ReadFile(out_ + "/report.md");
  EXPECT_NE(report.find("Script output: done()"), std::string::npos);
  EXPECT_NE(report.find("echo done: "), std::string::npos);
  EXPECT_NE(report.find("wrk script post_echo.lua alpha"), std::string::npos);
}

TEST_F(RunE2eTest, BrokenRunFilesAreRefusedWithTheirMessage) {
  const std::string path = dir_->path().string() + "/bad.yaml";
  std::ofstream(path)
      << "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: bad}\nspec:\n"
         "  targets: []\n  scenarios:\n  - name: hello\n    request: {path: /}\n  load: {conections: [1]}\n";
  EXPECT_EQ(Run(path), 2);
  const std::string err = Stderr();
  EXPECT_NE(err.find("spec.load.conections: unknown field (did you mean \"connections\"?)"), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(out_ + "/results.json"));
  std::ofstream(path) << "spec: [unclosed\n";
  EXPECT_EQ(Run(path), 2);
  EXPECT_NE(Stderr().find("bad.yaml:"), std::string::npos);
  // A script file that is not there is an error on its field, before any
  // target starts. Catches: the file read only when the scenario runs.
  std::ofstream(path) << "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: bad}\nspec:\n"
                         "  targets:\n"
                      << Target("alpha")
                      << "  scenarios:\n  - name: echo\n"
                         "    script: {file: post_echo.lua}\n";
  EXPECT_EQ(Run(path), 2);
  EXPECT_NE(Stderr().find("spec.scenarios[0].script.file: cannot read \"post_echo.lua\" (relative to the run file)"),
            std::string::npos)
      << Stderr();
}

// A profile asked for a cell the run does not have is bad input: one line
// naming the field, exit code 2, nothing started or written. Catches: a
// typo in spec.profile running the whole benchmark without the profile.
TEST_F(RunE2eTest, AProfileOfACellThatDoesNotExistIsRefused) {
  const std::string run = WriteRun(Target("alpha"));
  std::ofstream(run, std::ios::app) << "  profile: {cells: [{target: alpha, scenario: hello, connections: 100}]}\n";
  EXPECT_EQ(Run(run), 2);
  const std::string err = Stderr();
  EXPECT_EQ(err.rfind(run + ":", 0), 0u) << err;
  EXPECT_NE(err.find(": spec.profile.cells[0].connections: no cell runs at 100 connections (scenario hello runs at: "
                     "8)\n"),
            std::string::npos)
      << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_FALSE(std::filesystem::exists(out_ + "/results.json"));
}

// load.rate with load.pipeline > 1 is bad input: one line naming
// spec.load.pipeline, exit code 2, no target started, nothing written.
// Catches: the run file letting it through, so that the target is deployed
// and verified and then every cell fails at the agent (AgentFailed: job.rate:
// a constant rate cannot be combined with pipeline > 1).
TEST_F(RunE2eTest, ARateWithPipeliningIsRefusedBeforeAnythingStarts) {
  const std::string marker = dir_->path().string() + "/target-started";
  const std::string run =
      WriteRun("  - name: alpha\n    local:\n      command: [/bin/sh, -c, \"touch " + marker + "; exec sleep 30\"]\n",
               "", 1, "1s", ", rate: 100, pipeline: 4");
  EXPECT_EQ(Run(run), 2);
  const std::string err = Stderr();
  EXPECT_EQ(err.rfind(run + ":", 0), 0u) << err;
  EXPECT_NE(err.find(": spec.load.pipeline: cannot be combined with load.rate: a constant rate sends one request at a "
                     "time on each connection (set pipeline to 1, or remove rate)\n"),
            std::string::npos)
      << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the target was started";
  EXPECT_FALSE(std::filesystem::exists(out_ + "/results.json"));
}

// A target's program named without a slash (as examples/quickstart.yaml
// does) is found next to the fairbench binary whatever the working folder
// and PATH, and the report says which file ran; a program found nowhere is
// a failed deploy that says where it looked. Catches: the lookup beside the
// binary dropped (every cell would fail "No such file or directory"), the
// resolved path missing from the report.
TEST_F(RunE2eTest, BareProgramNamesAreFoundNextToFairbench) {
  const std::string bin = std::filesystem::path(testing::BinaryPath("fairbench")).parent_path().string();
  const std::string targets =
      "  - name: alpha\n    local:\n      command: [fairbench-target-beast, --port, \"{port}\", --threads, \"1\"]\n"
      "  - name: ghost\n    local:\n      command: [no-such-fairbench-server, --port, \"{port}\"]\n";
  const std::string run = WriteRun(targets, "", 1, "500ms");
  ASSERT_EQ(Run(run, {}, {{"PATH", "/usr/bin:/bin"}}, dir_->path().string()), 3) << Stderr();
  const json r = Results();
  ASSERT_EQ(r["cells"].size(), 4u);
  EXPECT_EQ(r["cells"][0]["result"]["state"], "Succeeded") << r["cells"][0]["result"].dump();
  EXPECT_EQ(r["cells"][1]["result"]["state"], "Succeeded");
  const json& ghost = r["cells"][2]["result"];
  EXPECT_EQ(ghost["reason"], "DeployFailed");
  EXPECT_NE(ghost["message"].get<std::string>().find("'no-such-fairbench-server' not found (searched " + bin),
            std::string::npos)
      << ghost.dump();
  bool named = false;
  for (const json& note : r["environment"]["notes"]) {
    named |= note.get<std::string>().rfind("target alpha ran " + bin + "/fairbench-target-beast --port ", 0) == 0;
  }
  EXPECT_TRUE(named) << r["environment"].dump();
  EXPECT_NE(ReadFile(out_ + "/report.md").find("target alpha ran " + bin + "/fairbench-target-beast"),
            std::string::npos);
}

// HTTPS, h2 and h2c end to end: the run file's scheme, protocol and
// streams reach the agents over the hub's stream (the job), the agents
// speak each protocol to nginx, and the requests nginx logged match what
// the cells counted. Catches: a protocol or streams field dropped between
// the run file and the agent's engine (nginx's h2c port answers nothing
// else, its TLS port no plain text), a count that is not the server's.
TEST_F(RunE2eTest, HttpsH2AndH2cTargetsReachNginxInTheirProtocol) {
  auto target = [&](const std::string& name, const std::string& fields, const std::string& flags) {
    return "  - name: " + name + "\n" + fields + "    local:\n      command: [" +
           testing::BinaryPath("fairbench-target-nginx") + ", --port, \"{port}\", --threads, \"1\", --request-log, " +
           dir_->path().string() + "/" + name + ".requests" + flags + "]\n";
  };
  const std::string targets = target("tls", "    scheme: https\n", ", --tls") +
                              target("h2", "    scheme: https\n    protocol: h2\n", ", --tls, --http2") +
                              target("h2c", "    protocol: h2c\n", ", --http2");
  const std::string run = WriteRun(targets, "", 1, "1s", ", streams: 4");
  ASSERT_EQ(Run(run), 0) << Stderr();
  const json r = Results();
  ASSERT_EQ(r["cells"].size(), 6u);
  for (const std::string name : {"tls", "h2", "h2c"}) {
    uint64_t sent = 0, abandoned = 0;
    for (const json& c : r["cells"]) {
      const json& res = c["result"];
      if (res["target"] != name) continue;
      EXPECT_EQ(res["state"], "Succeeded") << res.dump();
      EXPECT_GT(res["requests"].get<uint64_t>(), 0u) << name;
      EXPECT_FALSE(res.contains("errors")) << name << ": " << res.dump();
      EXPECT_EQ(c["connectionsPeak"], 8) << name;
      // Requests in flight by Little's law (requests/s x mean latency): 8
      // connections with 4 streams each keep 16 to 32 in flight over HTTP/2
      // (refilled once 2 are free), 8 over HTTP/1.1.
      const double in_flight = c["littlesLawConnections"].get<double>();
      EXPECT_EQ(c["littlesLawInFlight"], name == "tls" ? 8 : 32) << name;  // what Little's law is held to
      if (name == "tls") {
        EXPECT_LT(in_flight, 12) << name;
      } else {
        EXPECT_GT(in_flight, 14) << name << ": the streams did not reach the agent";
      }
      sent += TimelineRequests(c) + c["drained"].get<uint64_t>();
      abandoned += c["abandoned"].get<uint64_t>();
    }
    uint64_t served = 0;
    for (const Bucket& b : RequestLog(dir_->path().string() + "/" + name + ".requests")) served += b.count;
    // Every request of every cell (warmup, measurement, drain) plus the
    // probes before the load (readiness, one check per scenario).
    EXPECT_GE(served, sent + 2) << name;
    EXPECT_LE(served, sent + abandoned + 2 + 20) << name;
  }
}

// examples/grpc-api-variants.yaml, shortened: both API variants of the
// reference gRPC target, a unary and a server-streaming scenario, counted
// against what the target itself served. Catches: calls not counted as the
// cell's requests (requests 0), the grpc-status table dropped on the way
// from the agents (result.grpc missing), messages miscounted (stream ≠ 10 ×
// calls), the example's message or descriptor set gone stale (its check
// before the load fails), and calls the agents did not make (the target's
// own count disagrees).
TEST_F(RunE2eTest, TheGrpcExampleComparesBothApiVariantsCountedByTheTarget) {
  const std::string example = ReadFile(std::string(FAIRBENCH_EXAMPLES_DIR) + "/grpc-api-variants.yaml");
  ASSERT_FALSE(example.empty());
  ASSERT_EQ(ReadFile(std::string(FAIRBENCH_EXAMPLES_DIR) + "/grpc-echo.desc"), ReadFile(FAIRBENCH_ECHO_DESCRIPTOR_SET))
      << "examples/grpc-echo.desc is not what protoc makes of targets/grpc/echo.proto: copy "
      << FAIRBENCH_ECHO_DESCRIPTOR_SET;
  std::string text = example;
  auto replace = [&](const std::string& from, const std::string& to) {
    size_t n = 0;
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()), ++n) {
      text.replace(at, from.size(), to);
    }
    EXPECT_GT(n, 0u) << from;
  };
  replace("duration: 5s", "duration: 1s");
  replace("warmup: 1s", "warmup: 300ms");
  replace("cooldown: 1s", "cooldown: 300ms");
  for (const std::string api : {"callback", "sync"}) {
    replace("[fairbench-target-grpc, --port, \"{port}\", --threads, \"1\", --api, " + api + "]",
            "[fairbench-target-grpc, --port, \"{port}\", --threads, \"1\", --api, " + api + ", --request-log, " +
                dir_->path().string() + "/" + api + ".requests]");
  }
  const std::string run = dir_->path().string() + "/grpc-api-variants.yaml";
  std::ofstream(run) << text;
  std::filesystem::copy_file(std::string(FAIRBENCH_EXAMPLES_DIR) + "/grpc-echo.desc", dir_->path() / "grpc-echo.desc");
  ASSERT_EQ(Run(run), 0) << Stderr();
  const json r = Results();
  ASSERT_EQ(r["cells"].size(), 4u);
  for (const std::string api : {"callback", "sync"}) {
    uint64_t sent = 0, abandoned = 0;
    for (const json& c : r["cells"]) {
      const json& res = c["result"];
      if (res["target"] != "grpc-" + api) continue;
      ASSERT_EQ(res["state"], "Succeeded") << res.dump();
      const uint64_t calls = res["requests"].get<uint64_t>();
      EXPECT_GT(calls, 100u) << res.dump();
      EXPECT_FALSE(res.contains("errors")) << res.dump();
      ASSERT_TRUE(res.contains("grpc")) << res.dump();
      const json& g = res["grpc"];
      ASSERT_EQ(g["statuses"].size(), 1u) << g.dump();
      EXPECT_EQ(g["statuses"][0]["code"], "OK");
      EXPECT_EQ(g["statuses"][0]["calls"].get<uint64_t>(), calls);
      EXPECT_EQ(g["messages"].get<uint64_t>(), res["scenario"] == "stream" ? 10 * calls : calls) << g.dump();
      // 10 connections × 10 streams: what Little's law is held to, and the
      // calls/s × latency of a closed loop agree with it. Catches: the
      // streams not counted (every gRPC cell flagged, 10× too many).
      EXPECT_EQ(c["littlesLawInFlight"], 100) << res.dump();
      EXPECT_NEAR(c["littlesLawConnections"].get<double>(), 100, 25) << res.dump();
      EXPECT_FALSE(c.contains("flags") && c["flags"].dump().find("LittlesLawMismatch") != std::string::npos)
          << c["flags"].dump();
      sent += TimelineRequests(c) + c["drained"].get<uint64_t>();
      abandoned += c["abandoned"].get<uint64_t>();
    }
    // Every call of every cell (warmup, measurement, drain) plus one check
    // per scenario before the load; the health checks are not Echo calls.
    uint64_t served = 0;
    for (const Bucket& b : RequestLog(dir_->path().string() + "/" + api + ".requests")) served += b.count;
    EXPECT_GE(served, sent + 2) << api;
    EXPECT_LE(served, sent + abandoned + 2) << api << ": more calls than the agents and the checks made";
  }
  const std::string report = ReadFile(out_ + "/report.md");
  EXPECT_NE(report.find("## gRPC calls"), std::string::npos);
  // Catches: a gRPC scenario described as an HTTP request mix ("mix of 0 requests").
  EXPECT_NE(report.find("`gRPC fairbench.echo.v1.Echo/ServerStream`"), std::string::npos);
  EXPECT_NE(report.find("OK "), std::string::npos);
}

// A gRPC call that does not end as the scenario expects is reported, not
// loaded; a gRPC target whose health check never says SERVING is not ready;
// a server-streaming call's first and last message arrive when the server
// sends them.
// Catches: expect.grpcStatus ignored by the check, the response message not
// compared, readiness.grpc.service not asked.
TEST_F(RunE2eTest, GrpcChecksBeforeTheLoadAndReadinessByHealth) {
  std::filesystem::copy_file(FAIRBENCH_ECHO_DESCRIPTOR_SET, dir_->path() / "echo.desc");
  auto target = [&](const std::string& name, const std::string& readiness) {
    return "  - name: " + name + "\n    protocol: grpc\n" + readiness + "    local:\n      command: [" +
           testing::BinaryPath("fairbench-target-grpc") + ", --port, \"{port}\", --threads, \"1\"]\n";
  };
  const std::string text =
      "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: grpc-checks}\nspec:\n  targets:\n" +
      target("echo", "") +
      target("unready", "    readiness: {timeout: 2s, grpc: {service: fairbench.nope.v1.Nope}}\n") +
      "  scenarios:\n"
      "  - name: unavailable\n    grpc: {method: fairbench.echo.v1.Echo/Unary, message: {status: 14}, descriptorSet: echo.desc}\n"
      "    expect: {grpcStatus: UNAVAILABLE}\n"
      "  - name: wrong-status\n    grpc: {method: fairbench.echo.v1.Echo/Unary, message: {status: 5}, descriptorSet: echo.desc}\n"
      "  - name: wrong-reply\n    grpc: {method: fairbench.echo.v1.Echo/Unary, message: {payload: aGk=}, descriptorSet: echo.desc}\n"
      "    expect: {json: {payload: aG8=}}\n"
      "  - name: slow-stream\n    grpc: {method: fairbench.echo.v1.Echo/ServerStream, message: {messages: 3, delayMs: 20},"
      " descriptorSet: echo.desc}\n"
      "  load: {threads: 1, connections: [4], streams: 2, warmup: 200ms, duration: 1s}\n  cooldown: 200ms\n";
  const std::string run = dir_->path().string() + "/run.yaml";
  std::ofstream(run) << text;
  EXPECT_EQ(Run(run), 3) << Stderr();
  const json r = Results();
  std::map<std::string, json> cells;
  for (const json& c : r["cells"])
    cells[c["result"]["target"].get<std::string>() + "/" + c["result"]["scenario"].get<std::string>()] = c["result"];
  // UNAVAILABLE was asked for: every call ended so, none an error.
  const json& unavailable = cells["echo/unavailable"];
  ASSERT_EQ(unavailable["state"], "Succeeded") << unavailable.dump();
  EXPECT_EQ(unavailable["grpc"]["statuses"][0]["code"], "UNAVAILABLE") << unavailable.dump();
  EXPECT_EQ(unavailable["grpc"]["statuses"][0]["calls"], unavailable["requests"]);
  EXPECT_FALSE(unavailable.contains("errors")) << unavailable.dump();
  EXPECT_EQ(cells["echo/wrong-status"]["reason"], "VerificationFailed");
  EXPECT_NE(cells["echo/wrong-status"]["message"].get<std::string>().find("expected gRPC status OK, got NOT_FOUND"),
            std::string::npos)
      << cells["echo/wrong-status"].dump();
  EXPECT_EQ(cells["echo/wrong-reply"]["reason"], "VerificationFailed");
  EXPECT_NE(cells["echo/wrong-reply"]["message"].get<std::string>().find("aGk="), std::string::npos)
      << cells["echo/wrong-reply"].dump();
  // The server waits 20 ms before each of 3 replies: the first message
  // comes after 20 ms, the last after 60 ms. Catches the first and the last
  // message's latency swapped, taken from the wrong clock, or lost on the
  // way from the agents.
  const json& slow = cells["echo/slow-stream"];
  ASSERT_EQ(slow["state"], "Succeeded") << slow.dump();
  EXPECT_EQ(slow["grpc"]["messages"].get<uint64_t>(), 3 * slow["requests"].get<uint64_t>());
  const double first_p50 = slow["grpc"]["firstMessageLatency"]["p50"].get<double>();
  const double last_p50 = slow["grpc"]["lastMessageLatency"]["p50"].get<double>();
  EXPECT_GE(first_p50, 20'000) << slow.dump();
  EXPECT_LT(first_p50, 35'000) << slow.dump();
  EXPECT_GE(last_p50, 60'000) << slow.dump();
  EXPECT_LT(last_p50, 90'000) << slow.dump();
  for (const std::string scenario : {"unavailable", "wrong-status", "wrong-reply", "slow-stream"}) {
    const json& c = cells["unready/" + scenario];
    EXPECT_EQ(c["state"], "Failed") << c.dump();
    EXPECT_EQ(c["reason"], "NotReady") << c.dump();
    EXPECT_NE(c["message"].get<std::string>().find("code = NotFound desc = service name unknown"), std::string::npos)
        << c.dump();
  }
}

// An slo's capacity search on a gRPC target: constant-rate trials over
// HTTP/2 streams against a server that answers each call 5 ms late.
// Catches: the rate not reaching gRPC jobs (achieved far from offered), the
// latency not measured from the due time (p50 under the server's 5 ms), the
// trials not doubling from startRate, and calls the target never served.
TEST_F(RunE2eTest, AGrpcSloSearchRunsConstantRateTrials) {
  std::filesystem::copy_file(FAIRBENCH_ECHO_DESCRIPTOR_SET, dir_->path() / "echo.desc");
  const std::string text =
      "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: grpc-slo}\nspec:\n  targets:\n"
      "  - name: echo\n    protocol: grpc\n    local:\n      command: [" +
      testing::BinaryPath("fairbench-target-grpc") +
      ", --port, \"{port}\", --threads, \"1\", --delay-ms, \"5\", --request-log, " + dir_->path().string() +
      "/echo.requests]\n"
      "  scenarios:\n"
      "  - name: unary\n    grpc: {method: fairbench.echo.v1.Echo/Unary, message: {payload: aGk=}, descriptorSet: echo.desc}\n"
      "    slo: {p99: 500ms, startRate: 100, maxSteps: 3}\n"
      "  load: {threads: 1, connections: [4], streams: 4, warmup: 200ms, duration: 1s}\n  cooldown: 200ms\n";
  const std::string run = dir_->path().string() + "/run.yaml";
  std::ofstream(run) << text;
  ASSERT_EQ(Run(run), 0) << Stderr();
  const json r = Results();
  ASSERT_EQ(r["cells"].size(), 1u);
  const json& cell = r["cells"][0];
  ASSERT_EQ(cell["result"]["state"], "Succeeded") << cell["result"].dump();
  ASSERT_TRUE(cell.contains("capacity")) << cell.dump().substr(0, 800);
  const json& trials = cell["capacity"]["trials"];
  ASSERT_EQ(trials.size(), 3u) << cell["capacity"].dump();
  double offered = 100, sum = 0;
  for (const json& t : trials) {
    EXPECT_EQ(t["offered"].get<double>(), offered) << t.dump();
    EXPECT_NEAR(t["achieved"].get<double>(), offered, 0.1 * offered) << t.dump();
    EXPECT_GE(t["p50Us"].get<double>(), 5000) << t.dump();
    EXPECT_TRUE(t["pass"].get<bool>()) << t.dump();
    sum += t["achieved"].get<double>();
    offered *= 2;
  }
  EXPECT_EQ(cell["capacity"]["rate"].get<double>(), 400) << cell["capacity"].dump();
  uint64_t served = 0;
  for (const Bucket& b : RequestLog(dir_->path().string() + "/echo.requests")) served += b.count;
  EXPECT_GE(static_cast<double>(served), 0.9 * sum) << "the target served fewer calls than the trials counted";
}

}  // namespace
}  // namespace fairbench
