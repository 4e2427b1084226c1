// LocalPlatform's targets as real processes: what they read back.
#include "controller/platform/local/local_platform.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include "testing/support/temp_dir.h"

namespace fairbench::controller {
namespace {

// A target that only sleeps: ReadBack needs a process, not a server.
api::Target Sleeper(int64_t nofile) {
  api::Target t;
  t.name = "sleeper";
  t.port = 1;
  t.nofile = nofile;
  t.local = api::LocalProcess{};
  t.local->command = {"sleep", "30"};
  return t;
}

std::string ReadBackOf(LocalPlatform& platform, int64_t nofile) {
  DeployRequest r;
  r.run.name = "readback";
  r.target = Sleeper(nofile);
  auto deployed = platform.Deploy(r, {});
  EXPECT_TRUE(deployed.ok()) << deployed.status().ToString();
  if (!deployed.ok()) return "";
  const std::vector<std::string> facts = (*deployed)->ReadBack();
  EXPECT_TRUE((*deployed)->Teardown().ok());
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

}  // namespace
}  // namespace fairbench::controller
