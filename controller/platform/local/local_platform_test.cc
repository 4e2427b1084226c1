// LocalPlatform's targets as real processes: what they read back.
#include "controller/platform/local/local_platform.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "testing/support/temp_dir.h"

namespace fairbench::controller {
namespace {

// A target that only sleeps: ReadBack needs a process, not a server.
// `log_first` is printed before it sleeps.
api::Target Sleeper(int64_t nofile, const std::string& log_first = "") {
  api::Target t;
  t.name = "sleeper";
  t.port = 1;
  t.nofile = nofile;
  t.local = api::LocalProcess{};
  t.local->command = {"sh", "-c", "printf '%s\\n' \"$0\"; exec sleep 30", log_first};
  return t;
}

std::vector<std::string> ReadBackAll(LocalPlatform& platform, const api::Target& target) {
  DeployRequest r;
  r.run.name = "readback";
  r.target = target;
  auto deployed = platform.Deploy(r, {});
  EXPECT_TRUE(deployed.ok()) << deployed.status().ToString();
  if (!deployed.ok()) return {};
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // it has written its first line
  std::vector<std::string> facts = (*deployed)->ReadBack();
  EXPECT_TRUE((*deployed)->Teardown().ok());
  return facts;
}

std::string ReadBackOf(LocalPlatform& platform, int64_t nofile) {
  const std::vector<std::string> facts = ReadBackAll(platform, Sleeper(nofile));
  EXPECT_EQ(facts.size(), 2u);  // and the identity of the binary
  return facts.empty() ? "" : facts[0];
}

// Catches: the report claiming the nofile the spec asked for instead of the
// one the process got (this machine's hard limit caps it silently), or a
// read-back from the wrong process or the wrong line of its limits.
TEST(LocalPlatformTest, ReadsBackTheFileLimitInForce) {
  auto dir = testing::TempDir::Create("fairbench-local-platform");
  ASSERT_TRUE(dir.ok());
  LocalPlatformOptions o;
  o.log_dir = dir->path().string();
  o.base_dir = dir->path().string();
  o.use_cgroups = false;
  auto platform = LocalPlatform::Create(o);
  ASSERT_TRUE(platform.ok()) << platform.status().ToString();
  rlimit lim{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &lim), 0);
  ASSERT_GT(lim.rlim_max, 1000u);

  const std::string fits = ReadBackOf(**platform, 1000);
  EXPECT_EQ(fits.rfind("nofile in force: 1000, read back from /proc/", 0), 0u) << fits;
  EXPECT_NE(fits.find("(asked for 1000)"), std::string::npos) << fits;

  if (lim.rlim_max != RLIM_INFINITY && lim.rlim_max < (1u << 20)) {
    const std::string capped = ReadBackOf(**platform, 1 << 20);
    EXPECT_EQ(capped.rfind("nofile in force: " + std::to_string(lim.rlim_max) + ", read back from /proc/", 0), 0u)
        << capped;
    EXPECT_NE(capped.find("asked for 1048576; this machine's hard limit is lower"), std::string::npos) << capped;
  }
}

// Catches: the facts a target prints when it starts (its framework, worker
// model, JSON library… from its own build) not read back from its log, or
// read from a line that is not the facts line.
TEST(LocalPlatformTest, ReadsBackTheFactsATargetPrints) {
  auto dir = testing::TempDir::Create("fairbench-local-platform");
  ASSERT_TRUE(dir.ok());
  LocalPlatformOptions o;
  o.log_dir = dir->path().string();
  o.base_dir = dir->path().string();
  o.use_cgroups = false;
  auto platform = LocalPlatform::Create(o);
  ASSERT_TRUE(platform.ok()) << platform.status().ToString();
  const auto facts =
      ReadBackAll(**platform, Sleeper(1000, R"(fairbench-target-facts: {"framework": "drogon", "threads": 4})"));
  ASSERT_EQ(facts.size(), 3u);
  EXPECT_EQ(facts[1], R"(facts: {"framework":"drogon","threads":4})");
  EXPECT_EQ(facts[2].rfind("identity: binary ", 0), 0u) << facts[2];
  api::Target broken = Sleeper(1000, "fairbench-target-facts: {broken");
  broken.name = "broken";  // a log file of its own
  EXPECT_EQ(ReadBackAll(**platform, broken).size(), 2u);
}

TEST(TargetFactsFromLogTest, FindsTheLineAnywhereInTheLog) {
  EXPECT_EQ(TargetFactsFromLog("listening\nfairbench-target-facts: {\"a\": 1}\nmore\n"), R"(facts: {"a":1})");
  EXPECT_EQ(TargetFactsFromLog("x fairbench-target-facts: {\"a\": 1}\n"), std::nullopt);
  EXPECT_EQ(TargetFactsFromLog("fairbench-target-facts: [1]\n"), std::nullopt);
  EXPECT_EQ(TargetFactsFromLog(""), std::nullopt);
}

class LocalProfileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::TempDir::Create("fairbench-local-profile");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
  }
  std::unique_ptr<LocalPlatform> Platform(const std::string& perf = "perf") {
    LocalPlatformOptions o;
    o.log_dir = dir_->path().string();
    o.base_dir = dir_->path().string();
    o.use_cgroups = false;
    o.perf_program = perf;
    auto platform = LocalPlatform::Create(o);
    EXPECT_TRUE(platform.ok()) << platform.status().ToString();
    return platform.ok() ? std::move(*platform) : nullptr;
  }
  std::unique_ptr<TargetInstance> Deploy(LocalPlatform& platform, std::vector<std::string> command) {
    DeployRequest r;
    r.run.name = "profile";
    r.target.name = "busy";
    r.target.local = api::LocalProcess{};
    r.target.local->command = std::move(command);
    auto deployed = platform.Deploy(r, {});
    EXPECT_TRUE(deployed.ok()) << deployed.status().ToString();
    return deployed.ok() ? std::move(*deployed) : nullptr;
  }
  std::optional<testing::TempDir> dir_;
};

// The target's whole process tree is sampled (a shell and the busy child it
// started), for as long as asked, and folded; perf's files are removed.
// Catches: only the first process sampled (nginx's workers missed), stacks
// not folded, perf left running or its data left behind.
TEST_F(LocalProfileTest, SamplesTheTargetsProcessTree) {
  auto platform = Platform();
  ASSERT_TRUE(platform);
  auto target = Deploy(*platform, {"sh", "-c", "yes > /dev/null & exec sleep 30"});
  ASSERT_TRUE(target);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the child is up
  ProfileRequest request;
  request.frequency_hz = 499;
  request.max_duration = std::chrono::seconds(10);
  auto session = target->StartProfile(request);
  if (!session.ok()) GTEST_SKIP() << "perf cannot sample here: " << session.status().message();
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  const report::CellProfile p = (*session)->Finish({});
  EXPECT_TRUE(target->Teardown().ok());
  if (p.state == report::ProfileState::kUnavailable) GTEST_SKIP() << "perf cannot sample here: " << p.message;
  ASSERT_EQ(p.state, report::ProfileState::kRecorded) << p.message;
  EXPECT_EQ(p.frequency_hz, 499);
  EXPECT_GE(p.seconds, 0.9);
  EXPECT_LE(p.seconds, 5.0);
  // The child is pinned to the target CPUs, which a busy machine shares:
  // how many samples it gets depends on its share of them.
  EXPECT_GT(p.samples, 0u);
  EXPECT_EQ(p.command.rfind("perf record -F 499 -g -p ", 0), 0u) << p.command;
  EXPECT_NE(p.command.find(','), std::string::npos) << "the child was not sampled: " << p.command;
  bool child = false;
  for (const report::FoldedStack& s : p.stacks) child = child || s.frames.rfind("yes;", 0) == 0;
  EXPECT_TRUE(child) << "no stack of the shell's child";
  for (const auto& entry : std::filesystem::directory_iterator(dir_->path())) {
    EXPECT_EQ(entry.path().extension(), ".log") << entry.path() << " left behind";
  }
}

// Where perf is missing or refuses (perf_event_paranoid), the profile says
// why in one line, and nothing else fails. Catches: a missing perf failing
// the cell, a refusal reported as an empty profile.
TEST_F(LocalProfileTest, AMissingOrRefusingPerfSaysWhy) {
  auto missing = Platform(dir_->path().string() + "/no-such-perf");
  ASSERT_TRUE(missing);
  auto target = Deploy(*missing, {"sleep", "30"});
  ASSERT_TRUE(target);
  auto none = target->StartProfile(ProfileRequest{});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("perf is not installed here"), std::string::npos) << none.status().message();
  EXPECT_NE(none.status().message().find("linux-perf"), std::string::npos);
  EXPECT_TRUE(target->Teardown().ok());

  // A perf that answers as a machine with kernel.perf_event_paranoid = 3 does.
  const std::string refusing = dir_->path().string() + "/perf";
  std::ofstream(refusing) << "#!/bin/sh\n"
                             "echo 'Error:' >&2\n"
                             "echo 'Access to performance monitoring and observability operations is limited.' >&2\n"
                             "exit 255\n";
  chmod(refusing.c_str(), 0755);
  auto refused = Platform(refusing);
  ASSERT_TRUE(refused);
  target = Deploy(*refused, {"sleep", "30"});
  ASSERT_TRUE(target);
  auto session = target->StartProfile(ProfileRequest{});
  ASSERT_TRUE(session.ok()) << session.status().message();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const report::CellProfile p = (*session)->Finish({});
  EXPECT_TRUE(target->Teardown().ok());
  EXPECT_EQ(p.state, report::ProfileState::kUnavailable);
  EXPECT_EQ(p.message.rfind("perf could not sample: Access to performance monitoring and observability operations is "
                            "limited. (kernel.perf_event_paranoid is ",
                            0),
            0u)
      << p.message;
  EXPECT_NE(p.message.find("profile-busy.log"), std::string::npos);
}

// A command with "{port}" gets a free port: the target says which.
TEST_F(LocalProfileTest, APortChosenAtRunTimeIsReadBack) {
  auto platform = Platform();
  ASSERT_TRUE(platform);
  auto target = Deploy(*platform, {"sh", "-c", "exec sleep 30", "{port}"});
  ASSERT_TRUE(target);
  const std::vector<std::string> facts = target->ReadBack();
  EXPECT_TRUE(target->Teardown().ok());
  ASSERT_FALSE(facts.empty());
  EXPECT_EQ(facts[0], "port: " + std::to_string(target->placement().port) + " (chosen at run time)");
  EXPECT_NE(target->placement().port, 8080);
}

}  // namespace
}  // namespace fairbench::controller

namespace fairbench::controller {
namespace {

// Catches: no identity of the binary that ran in the record (a result store
// could not tell two builds of a target apart), the program named from the
// command rather than what the process runs (`sh -c "exec sleep"` runs
// sleep), or a digest of anything but the program's bytes (checked against
// coreutils' sha256sum).
TEST_F(LocalProfileTest, TheBinaryThatRanIsNamedWithItsDigest) {
  auto platform = Platform();
  ASSERT_TRUE(platform);
  auto target = Deploy(*platform, {"sh", "-c", "exec sleep 30", "{port}"});
  ASSERT_TRUE(target);
  // Read once the shell has exec'd sleep (a target is read once ready).
  std::vector<std::string> facts;
  for (int i = 0; i < 500; ++i) {
    facts = target->ReadBack();
    if (facts.back().find("sleep") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(target->Teardown().ok());
  // sha256sum prints "HASH  PATH" for the program PATH finds, resolved.
  FILE* p = ::popen("sha256sum \"$(readlink -f \"$(command -v sleep)\")\"", "r");
  ASSERT_NE(p, nullptr);
  char line[512] = {};
  ASSERT_NE(std::fgets(line, sizeof line, p), nullptr);
  ::pclose(p);
  std::string text(line);
  if (!text.empty() && text.back() == '\n') text.pop_back();
  ASSERT_GT(text.size(), 66u) << text;
  const std::string digest = text.substr(0, 64);
  const std::string sleep = text.substr(66);
  EXPECT_NE(std::find(facts.begin(), facts.end(), "identity: binary " + sleep + " sha256:" + digest), facts.end())
      << ::testing::PrintToString(facts);
}

}  // namespace
}  // namespace fairbench::controller
