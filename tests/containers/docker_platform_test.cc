// `fairbench run --platform docker` against the test engine, with the
// reference targets' images (containers.images): the real binary, real
// containers, the kernel enforcing the limits. The docker CLI is the
// independent view: what the engine itself says of each container while the
// run goes on, and what is left afterwards.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <thread>

#include "testing/support/bin_dir.h"
#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"
#include "tests/containers/docker_env.h"

namespace fairbench::containers {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::Subprocess;
using testing::SubprocessOptions;

// What the engine says of the targets of one run while it goes on: polled
// every 100 ms from another thread.
class EngineWatch {
 public:
  explicit EngineWatch(std::string run) : run_(std::move(run)) {
    thread_ = std::thread([this] {
      while (!stop_) {
        const std::vector<std::string> ids = ContainersLabelled("fairbench.dev/run=" + run_, /*running_only=*/true);
        {
          std::lock_guard<std::mutex> lock(mu_);
          max_running_ = std::max(max_running_, ids.size());
        }
        for (const std::string& id : ids) {
          if (seen_.count(id)) continue;
          json inspect = Inspect(id);
          if (!inspect.is_object()) continue;
          std::lock_guard<std::mutex> lock(mu_);
          seen_.insert(id);
          by_target_[inspect["Config"]["Labels"].value("fairbench.dev/target", "")] = inspect;
        }
        std::this_thread::sleep_for(100ms);
      }
    });
  }
  ~EngineWatch() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  size_t max_running() {
    std::lock_guard<std::mutex> lock(mu_);
    return max_running_;
  }
  std::map<std::string, json> by_target() {
    std::lock_guard<std::mutex> lock(mu_);
    return by_target_;
  }

 private:
  std::string run_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  size_t max_running_ = 0;
  std::set<std::string> seen_;
  std::map<std::string, json> by_target_;
  std::thread thread_;
};

class DockerPlatformTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::TempDir::Create("fairbench-docker");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
    run_ = "docker-" + std::to_string(getpid());
  }
  void TearDown() override {
    for (const std::string& id : ContainersLabelled("fairbench.dev/run=" + run_)) Docker({"rm", "-f", id});
  }
  std::string Path(const std::string& name) const { return dir_->path().string() + "/" + name; }

  static std::string Target(const std::string& name, const std::string& image, const std::string& cpu,
                            const std::string& memory, int64_t nofile, const std::string& extra = "") {
    return "  - name: " + name + "\n    image: " + image +
           "\n    args: [--host, 127.0.0.1, --port, \"{port}\", --threads, \"1\"]\n    resources: {cpu: \"" + cpu +
           "\", memory: " + memory + "}\n    nofile: " + std::to_string(nofile) + "\n" + extra;
  }
  std::string WriteRun(const std::string& targets, const std::string& duration = "1s",
                       const std::string& levels = "8") {
    const std::string text =
        "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: " + run_ + "}\nspec:\n  targets:\n" +
        targets +
        "  scenarios:\n  - name: hello\n    request: {path: /}\n    expect: {status: 200, body: \"Hello, World!\"}\n"
        "  - name: json\n    request: {path: /api/status}\n    expect: {status: 200}\n"
        "  load: {threads: 1, connections: [" +
        levels + "], warmup: 300ms, duration: " + duration + ", timeout: 2s, agents: 1}\n  cooldown: 200ms\n";
    std::ofstream(Path("run.yaml")) << text;
    return Path("run.yaml");
  }
  std::vector<std::string> Argv(const std::string& run_file, std::vector<std::string> extra = {}) const {
    std::vector<std::string> a = {testing::BinaryPath("fairbench"),
                                  "run",
                                  run_file,
                                  "--platform",
                                  "docker",
                                  "--docker-host",
                                  DockerHost(),
                                  "--output",
                                  Path("out"),
                                  "--lock-file",
                                  Path("load.lock"),
                                  "-q"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  Result<Subprocess> Start(std::vector<std::string> argv, std::vector<std::pair<std::string, std::string>> env = {}) {
    SubprocessOptions o;
    o.argv = std::move(argv);
    for (auto& [k, v] : env) o.env[k] = v;
    o.stdout_to = testing::Redirect::File(Path("stdout.txt"), true);
    o.stderr_to = testing::Redirect::File(Path("stderr.txt"), true);
    return Subprocess::Start(o);
  }
  int Run(std::vector<std::string> argv, std::chrono::seconds timeout = 120s) {
    auto p = Start(std::move(argv));
    EXPECT_TRUE(p.ok()) << p.status().message();
    if (!p.ok()) return -1;
    auto s = p->Wait(timeout);
    EXPECT_TRUE(s.ok()) << "fairbench did not finish in time";
    return s.ok() && s->exited ? s->exit_code : -1;
  }
  std::string Stderr() const { return ReadFile(Path("stderr.txt")); }
  json Record() const { return json::parse(ReadFile(Path("out/results.json")), nullptr, false); }
  static bool WaitForCells(const std::string& file, size_t n, std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      const json j = json::parse(ReadFile(file), nullptr, false);
      if (!j.is_discarded() && j.contains("cells") && j["cells"].size() >= n) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }
  // Until a target container of this run runs; its id.
  std::string WaitForRunningTarget(std::chrono::seconds timeout) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      auto ids = ContainersLabelled("fairbench.dev/run=" + run_, true);
      if (!ids.empty()) return ids[0];
      std::this_thread::sleep_for(50ms);
    }
    return "";
  }

  std::optional<testing::TempDir> dir_;
  std::string run_;
};

// Two reference targets' images: every cell succeeds with the numbers a
// local run has; the engine's own inspect of each running target shows the
// spec's CPU quota, memory (no swap), nofile and the target CPUs; never two
// targets at once; nothing left afterwards. The target's CPU, as the
// engine's cgroup counts it, stays under its quota while it is saturated
// (the kernel's throttling is the independent bound).
// Catches: a limit not passed to the engine (CpuQuota, MemorySwap, Ulimits
// dropped), two targets deployed together, a container not removed, usage
// read from the wrong container or scaled wrong (ns taken as µs: 1000×).
TEST_F(DockerPlatformTest, TwoTargetsRunOneAtATimeWithTheirLimitsEnforced) {
  FAIRBENCH_NEED_ENGINE();
  const std::string run = WriteRun(Target("beast", Image("fairbench-target-beast"), "500m", "256Mi", 4096) +
                                   Target("httplib", Image("fairbench-target-cpp-httplib-debian"), "1", "128Mi", 8192));
  EngineWatch watch(run_);
  const int code = Run(Argv(run));
  watch.Stop();
  ASSERT_EQ(code, 0) << Stderr();
  const json record = Record();
  ASSERT_EQ(record["cells"].size(), 4u);
  for (const json& c : record["cells"]) {
    const json& r = c["result"];
    EXPECT_EQ(r["state"], "Succeeded") << r.dump();
    EXPECT_GT(r["requests"].get<uint64_t>(), 100u) << r.dump();
    EXPECT_GT(r["latency"].value("p50", 0.0), 0.0) << r.dump();
    ASSERT_TRUE(r.contains("targetCpu")) << r.dump();
    ASSERT_TRUE(r.contains("memoryLoaded")) << r.dump();
    const double cores = r["targetCpu"].get<double>();
    const double quota = r["target"] == "beast" ? 0.5 : 1.0;
    EXPECT_LE(cores, quota * 1.1) << r["target"] << ": more CPU than its quota";
    EXPECT_GT(cores, 0.005) << r["target"] << ": usage not read (or scaled down)";
    EXPECT_GT(r["memoryLoaded"].get<uint64_t>(), 100'000u);
  }
  EXPECT_EQ(record["environment"]["platform"], "docker");
  EXPECT_EQ(watch.max_running(), 1u) << "two targets ran at once";
  auto seen = watch.by_target();
  ASSERT_EQ(seen.size(), 2u);
  const json& beast = seen["beast"]["HostConfig"];
  EXPECT_EQ(beast["CpuQuota"], 50'000);
  EXPECT_EQ(beast["CpuPeriod"], 100'000);
  EXPECT_EQ(beast["Memory"], 256LL << 20);
  EXPECT_EQ(beast["MemorySwap"], 256LL << 20) << "memory must be without swap";
  EXPECT_EQ(beast["NetworkMode"], "host");
  EXPECT_EQ(beast["Ulimits"], json::parse(R"([{"Name":"nofile","Soft":4096,"Hard":4096}])"));
  EXPECT_FALSE(beast["CpusetCpus"].get<std::string>().empty());
  const json& httplib = seen["httplib"]["HostConfig"];
  EXPECT_EQ(httplib["CpuQuota"], 100'000);
  EXPECT_EQ(httplib["Memory"], 128LL << 20);
  EXPECT_EQ(httplib["Ulimits"][0]["Soft"], 8192);
  // What each target got, read from its container's process by the kernel's
  // account (its /proc and cgroups), against what the engine was told.
  // Catches: status.cpus missing on this platform, a quota or a memory
  // limit read from the wrong cgroup, the pinning not what the engine set.
  const json& cpus = record["run"]["status"]["cpus"];
  ASSERT_EQ(cpus.size(), 2u) << record["run"]["status"].dump(1);
  EXPECT_EQ(cpus[0]["target"], "beast");
  EXPECT_EQ(cpus[0]["cpus"], beast["CpusetCpus"]) << cpus[0].dump(1);
  EXPECT_EQ(cpus[0]["cpuQuota"], "500m") << cpus[0].dump(1);
  EXPECT_EQ(cpus[0]["memoryLimit"], "256Mi") << cpus[0].dump(1);
  EXPECT_EQ(cpus[0]["disjointFromAgents"], "True") << cpus[0].dump(1);
  EXPECT_EQ(cpus[0]["exclusive"], "Unknown") << "nothing keeps other processes of this machine off";
  EXPECT_EQ(cpus[1]["cpuQuota"], "1") << cpus[1].dump(1);
  EXPECT_EQ(cpus[1]["memoryLimit"], "128Mi") << cpus[1].dump(1);
  EXPECT_TRUE(ContainersLabelled("fairbench.dev/run=" + run_).empty()) << "containers left behind";
  // The log the engine kept, in logs/, and the limit read back.
  EXPECT_TRUE(std::filesystem::exists(Path("out/logs/beast.log")));
  const std::string report = ReadFile(Path("out/report.md"));
  EXPECT_NE(report.find("nofile in force: 4096"), std::string::npos) << report.substr(0, 3000);
  // Which image ran, as the engine names it. Catches: no identity of the
  // target in the record (a result store could not tell two builds apart),
  // or the tag's name where the image's id belongs.
  for (const auto& [target, image] : {std::pair{"beast", Image("fairbench-target-beast")},
                                      std::pair{"httplib", Image("fairbench-target-cpp-httplib-debian")}}) {
    auto id = Docker({"image", "inspect", "--format", "{{.Id}}", image});
    ASSERT_EQ(id.exit_code, 0) << id.err;
    std::string want = id.out;
    while (!want.empty() && want.back() == '\n') want.pop_back();
    EXPECT_NE(record["environment"]["notes"].dump().find(std::string("target ") + target + ": identity: image " + want),
              std::string::npos)
        << record["environment"]["notes"].dump(1);
  }
  // The peak memory of each container, noted at its teardown: above what
  // was seen loaded, below its limit. Catches: the peak read after the
  // container (and its cgroup) was removed, or never noted.
  for (const char* target : {"beast", "httplib"}) {
    std::smatch m;
    const std::string notes = record["environment"]["notes"].dump();
    ASSERT_TRUE(
        std::regex_search(notes, m, std::regex(std::string("target ") + target + R"(: memory peak ([0-9.]+) MiB)")))
        << notes;
    const double peak = std::stod(m[1]) * 1024 * 1024;
    EXPECT_LT(peak, (std::string(target) == "beast" ? 256.0 : 128.0) * 1024 * 1024);
    for (const json& c : record["cells"]) {
      if (c["result"]["target"] == target) {
        EXPECT_GE(peak * 1.01, c["result"]["memoryLoaded"].get<double>());
      }
    }
  }
}

// A target whose memory limit is too small for what it does is OOM-killed
// by the kernel; the engine's OOMKilled becomes the cell's reason, and the
// run goes on to the next target. The target's command (over the image's
// entrypoint) serves, then grows a shell variable without bound.
// Catches: OOMKilled not read from the engine (the reason would be a bare
// exit code), the run stopping at the first failed target, a CPU quota
// above the machine's CPUs passed as NanoCpus (refused by the engine).
TEST_F(DockerPlatformTest, ATargetOverItsMemoryLimitIsOomKilledAndTheRunGoesOn) {
  FAIRBENCH_NEED_ENGINE();
  const std::string grow =
      "  - name: greedy\n    image: " + Image("fairbench-target-beast") +
      "\n    command: [/bin/sh, -c, \"/usr/local/bin/fairbench-target-beast --host 127.0.0.1 --port {port} --threads 1 & "
      "sleep 0.5; x=0123456789; while :; do x=$x$x; done\"]\n    resources: {cpu: \"1\", memory: 64Mi}\n    nofile: 4096\n";
  // The second target asks for 4 CPUs, as the study does, on a machine with
  // fewer: the engine refuses such a NanoCpus, so the quota goes in as
  // CpuQuota and the CPU set is the limit (the report says so).
  const std::string run = WriteRun(grow + Target("beast", Image("fairbench-target-beast"), "4", "128Mi", 4096), "2s");
  const int code = Run(Argv(run));
  EXPECT_EQ(code, 3) << Stderr();
  const json record = Record();
  ASSERT_EQ(record["cells"].size(), 4u) << record.dump().substr(0, 2000);
  std::map<std::string, std::string> states;
  for (const json& c : record["cells"]) {
    const json& r = c["result"];
    if (r["target"] == "greedy") {
      EXPECT_NE(r["state"], "Succeeded");
      EXPECT_NE(r["message"].get<std::string>().find("OOMKilled"), std::string::npos) << r.dump();
    } else {
      EXPECT_EQ(r["state"], "Succeeded") << r.dump();
    }
  }
  EXPECT_TRUE(ContainersLabelled("fairbench.dev/run=" + run_).empty());
  EXPECT_NE(ReadFile(Path("out/report.md")).find("target beast: CPU quota 4 cores is more than the"),
            std::string::npos);
}

// A target container killed mid-cell (docker kill, from outside) fails its
// cells with the engine's exit code as the reason.
// Catches: Gone() not asking the engine (the cell would time out on errors
// instead), the signal not named.
TEST_F(DockerPlatformTest, AContainerKilledMidCellFailsItsCellsWithTheReason) {
  FAIRBENCH_NEED_ENGINE();
  const std::string run = WriteRun(Target("beast", Image("fairbench-target-beast"), "1", "128Mi", 4096), "4s");
  auto p = Start(Argv(run));
  ASSERT_TRUE(p.ok());
  const std::string id = WaitForRunningTarget(60s);
  ASSERT_FALSE(id.empty()) << Stderr();
  std::this_thread::sleep_for(1500ms);  // into the first cell's window
  ASSERT_EQ(Docker({"kill", id}).exit_code, 0);
  auto s = p->Wait(120s);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->exit_code, 3) << Stderr();
  const json record = Record();
  ASSERT_GE(record["cells"].size(), 1u);
  const json& r = record["cells"][0]["result"];
  EXPECT_EQ(r["state"], "Failed") << r.dump();
  EXPECT_NE(r["message"].get<std::string>().find("exited with code 137 (killed by signal 9)"), std::string::npos)
      << r.dump();
  EXPECT_TRUE(ContainersLabelled("fairbench.dev/run=" + run_).empty());
}

// SIGTERM to fairbench run mid-cell: the load stops within a second (the
// container's CPU stops growing), the run exits 143, and its containers are
// removed.
// Catches: a teardown skipped on cancel (the container outlives the run),
// the load going on to the end of the cell.
TEST_F(DockerPlatformTest, SigtermMidCellStopsTheLoadAndRemovesTheContainers) {
  FAIRBENCH_NEED_ENGINE();
  const std::string run = WriteRun(Target("beast", Image("fairbench-target-beast"), "1", "128Mi", 4096), "20s");
  auto p = Start(Argv(run));
  ASSERT_TRUE(p.ok());
  const std::string id = WaitForRunningTarget(60s);
  ASSERT_FALSE(id.empty()) << Stderr();
  std::this_thread::sleep_for(2s);
  const auto sent = std::chrono::steady_clock::now();
  ASSERT_TRUE(p->Kill(SIGTERM).ok());
  auto s = p->Wait(60s);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->exit_code, 143) << Stderr();
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - sent);
  std::cout << "fairbench run exited " << took.count() << " ms after SIGTERM\n";
  // The load stops first, then the container is stopped and removed: the
  // whole within a few seconds, where the cell had 18 s to go.
  EXPECT_LT(took.count(), 5000) << "the load went on after SIGTERM";
  EXPECT_TRUE(ContainersLabelled("fairbench.dev/run=" + run_).empty()) << "containers left behind";
  const json record = Record();
  ASSERT_TRUE(record.is_object());
  // The load ended within a second of the signal: the record's window of the
  // cancelled cell, if kept, is far shorter than 20 s.
}

// A first run killed outright (SIGKILL: no teardown) leaves its container;
// the next run removes it before it starts, and says so.
// Catches: leftovers never cleaned, a live run's containers taken for
// leftovers (the owner's pid and start time are both checked).
TEST_F(DockerPlatformTest, ASecondRunRemovesWhatAKilledFirstRunLeft) {
  FAIRBENCH_NEED_ENGINE();
  const std::string run = WriteRun(Target("beast", Image("fairbench-target-beast"), "1", "128Mi", 4096), "20s");
  auto p = Start(Argv(run));
  ASSERT_TRUE(p.ok());
  const std::string id = WaitForRunningTarget(60s);
  ASSERT_FALSE(id.empty()) << Stderr();
  ASSERT_TRUE(p->Kill(SIGKILL, /*to_group=*/true).ok());
  ASSERT_TRUE(p->Wait(10s).ok());
  ASSERT_EQ(ContainersLabelled("fairbench.dev/run=" + run_).size(), 1u) << "SIGKILL left no container: nothing to test";
  std::filesystem::remove_all(Path("out"));
  const std::string quick = WriteRun(Target("beast", Image("fairbench-target-beast"), "1", "128Mi", 4096), "500ms");
  std::vector<std::string> argv = Argv(quick);
  argv.pop_back();  // not -q: the message about the leftovers
  EXPECT_EQ(Run(argv), 0) << Stderr();
  EXPECT_NE(Stderr().find("removed 1 container(s) left by an earlier fairbench run that is gone"), std::string::npos)
      << Stderr();
  EXPECT_TRUE(Inspect(id).is_null()) << "the leftover container is still there";
  EXPECT_TRUE(ContainersLabelled("fairbench.dev/run=" + run_).empty());
}

// Bad input, each one line naming the cause, and no container left.
// Catches: a raw curl or runc error passed through, exit 1 for bad input,
// a container created and not removed on a failed start.
TEST_F(DockerPlatformTest, BadInputGetsOneLineNamingTheCause) {
  FAIRBENCH_NEED_ENGINE();
  // No engine at the socket.
  std::string run = WriteRun(Target("beast", Image("fairbench-target-beast"), "1", "128Mi", 4096));
  std::vector<std::string> argv = Argv(run);
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == "--docker-host") argv[i + 1] = "unix://" + Path("no-engine.sock");
  }
  EXPECT_EQ(Run(argv), 2);
  EXPECT_EQ(Trim(Stderr()), "fairbench: the Docker engine's socket " + Path("no-engine.sock") +
                                " does not exist: no Docker engine runs here (scripts/docker-engine start starts one; "
                                "--docker-host names another)");

  // A socket this user may not open: run as nobody against root's socket
  // (the run file readable by nobody).
  const std::string socket = DockerHost().substr(7);
  std::filesystem::permissions(dir_->path(), std::filesystem::perms(0755));
  std::filesystem::permissions(run, std::filesystem::perms(0644));
  std::vector<std::string> as_nobody = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
  for (const std::string& a : Argv(run)) as_nobody.push_back(a);
  for (size_t i = 0; i < as_nobody.size(); ++i) {
    if (as_nobody[i] == "--output") as_nobody[i + 1] = "/tmp/fairbench-docker-nobody-" + std::to_string(getpid());
    if (as_nobody[i] == "--lock-file")
      as_nobody[i + 1] = "/tmp/fairbench-docker-nobody-" + std::to_string(getpid()) + ".lock";
  }
  EXPECT_EQ(Run(as_nobody), 2);
  EXPECT_NE(Stderr().find("permission denied on the Docker engine's socket " + socket), std::string::npos) << Stderr();
  std::filesystem::remove_all("/tmp/fairbench-docker-nobody-" + std::to_string(getpid()));

  // A missing image: the cells' reason, no container.
  run = WriteRun(Target("ghost", "fairbench.test/no-such-image:0", "1", "128Mi", 4096));
  EXPECT_EQ(Run(Argv(run)), 3) << Stderr();
  json record = Record();
  ASSERT_FALSE(record["cells"].empty());
  EXPECT_NE(record["cells"][0]["result"]["message"].get<std::string>().find(
                "image fairbench.test/no-such-image:0 is not in the Docker engine (build it with scripts/images"),
            std::string::npos)
      << record["cells"][0]["result"].dump();
  std::filesystem::remove_all(Path("out"));

  // nofile above the machine's hard limit: the field and the way out.
  run = WriteRun(Target("beast", Image("fairbench-target-beast"), "1", "128Mi", 1 << 20));
  EXPECT_EQ(Run(Argv(run)), 3) << Stderr();
  record = Record();
  ASSERT_FALSE(record["cells"].empty());
  const std::string nofile = record["cells"][0]["result"]["message"];
  EXPECT_NE(nofile.find("spec.targets[0].nofile: 1048576 is more than the Docker engine may give a container here"),
            std::string::npos)
      << nofile;
  EXPECT_NE(nofile.find("--max-nofile"), std::string::npos) << nofile;
  EXPECT_TRUE(ContainersLabelled("fairbench.dev/run=" + run_).empty()) << "a container that failed to start was kept";
  std::filesystem::remove_all(Path("out"));

  // ... and with --max-nofile the run goes through, and the report says so.
  EXPECT_EQ(Run(Argv(run, {"--max-nofile", "4096"})), 0) << Stderr();
  EXPECT_NE(ReadFile(Path("out/report.md")).find("nofile 1048576 capped at 4096 by --max-nofile"), std::string::npos);
  std::filesystem::remove_all(Path("out"));

  // An image whose user cannot bind the port (80, without capabilities).
  const std::string low =
      "  - name: low\n    image: " + Image("fairbench-target-beast") +
      "\n    port: 80\n    args: [--host, 127.0.0.1, --port, \"80\", --threads, \"1\"]\n    nofile: 4096\n";
  run = WriteRun(low);
  EXPECT_EQ(Run(Argv(run)), 3) << Stderr();
  record = Record();
  ASSERT_FALSE(record["cells"].empty());
  const std::string bind = record["cells"][0]["result"]["message"];
  EXPECT_NE(bind.find("exited with code"), std::string::npos) << bind;
  EXPECT_NE(bind.find("before it was ready"), std::string::npos) << bind;
  EXPECT_NE(bind.find("ermission denied"), std::string::npos) << "the server's own words from its log: " << bind;
  EXPECT_TRUE(ContainersLabelled("fairbench.dev/run=" + run_).empty());

  // A target without an image: the field, before anything starts.
  std::ofstream(Path("noimage.yaml")) << "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: x}\n"
                                         "spec:\n  targets:\n  - name: a\n    local: {command: [x]}\n  scenarios:\n"
                                         "  - name: hello\n    request: {path: /}\n";
  EXPECT_EQ(Run(Argv(Path("noimage.yaml"))), 2);
  EXPECT_NE(Stderr().find("spec.targets[0].image: required with --platform docker"), std::string::npos) << Stderr();
}

// The nginx target's image serves 8080 (its EXPOSE); a run file that says
// port: 42881 with no command or args would start it, wait out the
// readiness timeout and fail every cell NotReady. It is refused before
// anything starts: exit 2, the field and the fix, no output folder, and the
// engine's own event stream holds no container of the run.
// Catches: the check left to the deploy (a container created, cells
// failed, exit 3), ExposedPorts not read from the engine's inspect, the
// field or the fix missing from the message.
TEST_F(DockerPlatformTest, APortTheImageDoesNotListenOnIsRefusedBeforeAnyContainer) {
  FAIRBENCH_NEED_ENGINE();
  run_ += "-port";  // a label no other test of this process uses: its events are this test's
  const std::string image = Image("fairbench-target-nginx");
  ASSERT_EQ(Inspect(image)["Config"]["ExposedPorts"], json::parse(R"({"8080/tcp":{}})")) << image;
  const std::string since = std::to_string(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count() -
      1);
  const std::string run = WriteRun("  - name: nginx\n    image: " + image + "\n    port: 42881\n    nofile: 4096\n");
  EXPECT_EQ(Run(Argv(run)), 2) << Stderr();
  EXPECT_EQ(Trim(Stderr()), run + ": spec.targets[0].port: 42881 is not where image " + image +
                                " listens: it listens on 8080 (its EXPOSE), and neither command, args nor env give its "
                                "server \"{port}\" or 42881: set port: 8080, or pass --port {port} (args: [--port, "
                                "\"{port}\"])");
  EXPECT_FALSE(std::filesystem::exists(Path("out"))) << "the output folder was made: the run had started";
  // What the engine did for this run's label, from its own event stream.
  const auto created = [&] {
    const std::string until = std::to_string(
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count() +
        1);
    auto r = Docker({"events", "--since", since, "--until", until, "--filter", "type=container", "--filter",
                     "label=fairbench.dev/run=" + run_, "--format", "{{.Action}}"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out + r.err;
  };
  const std::string during = created();
  EXPECT_EQ(during.find("create"), std::string::npos) << "a container of the run was created: " << during;
  // The same query sees a container created with the run's label.
  ASSERT_EQ(Docker({"create", "--label", "fairbench.dev/run=" + run_, image}).exit_code, 0);
  std::string after = created();
  for (int i = 0; i < 5 && after.find("create") == std::string::npos; ++i) after = created();
  EXPECT_NE(after.find("create"), std::string::npos)
      << "the engine's events do not show what was created, so the check above proves nothing: " << after;
}

}  // namespace
}  // namespace fairbench::containers
