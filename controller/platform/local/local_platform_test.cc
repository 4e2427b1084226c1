// LocalPlatform's targets as real processes: what they read back.
#include "controller/platform/local/local_platform.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
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
  EXPECT_EQ(facts.size(), 1u);
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
  ASSERT_EQ(facts.size(), 2u);
  EXPECT_EQ(facts[1], R"(facts: {"framework":"drogon","threads":4})");
  api::Target broken = Sleeper(1000, "fairbench-target-facts: {broken");
  broken.name = "broken";  // a log file of its own
  EXPECT_EQ(ReadBackAll(**platform, broken).size(), 1u);
}

TEST(TargetFactsFromLogTest, FindsTheLineAnywhereInTheLog) {
  EXPECT_EQ(TargetFactsFromLog("listening\nfairbench-target-facts: {\"a\": 1}\nmore\n"), R"(facts: {"a":1})");
  EXPECT_EQ(TargetFactsFromLog("x fairbench-target-facts: {\"a\": 1}\n"), std::nullopt);
  EXPECT_EQ(TargetFactsFromLog("fairbench-target-facts: [1]\n"), std::nullopt);
  EXPECT_EQ(TargetFactsFromLog(""), std::nullopt);
}

}  // namespace
}  // namespace fairbench::controller
