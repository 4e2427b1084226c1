// What every target's main shares (target_main.h), in process: the ids of
// /users/{id}, the command line with --describe, the request log behind
// CountRequest, the facts of the build.
#include "targets/common/target_main.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include "testing/support/temp_dir.h"

namespace fairbench::targets {
namespace {

// The study's ids, as every target answers them. Catches: a sign, a blank
// or a trailing letter taken as an id (from_chars alone stops at the first
// non-digit), an id past 2^64 - 1 wrapped instead of refused, leading
// zeros kept.
TEST(TargetMainTest, UserIdsAreDecimalDigitsThatFitIn64Bits) {
  EXPECT_EQ(ParseUserId("7"), 7u);
  EXPECT_EQ(ParseUserId("007"), 7u);
  EXPECT_EQ(ParseUserId("18446744073709551615"), std::numeric_limits<uint64_t>::max());
  for (const char* bad : {"", "18446744073709551616", "-1", "+1", "1a", " 1", "1 ", "0x10", "٣"}) {
    EXPECT_FALSE(ParseUserId(bad).has_value()) << "'" << bad << "'";
  }
}

std::optional<int> Parse(std::vector<std::string> args, TargetFlags* flags, std::string* out) {
  args.insert(args.begin(), "fairbench-target-test");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  CLI::App app{"test target"};
  std::string extra;
  app.add_option("--extra", extra);
  ::testing::internal::CaptureStdout();
  auto exit = ParseTargetCommandLine(app, static_cast<int>(argv.size()), argv.data(), flags, [](const TargetFlags& f) {
    return "{\"threads\":" + std::to_string(f.threads) + "}";
  });
  *out = ::testing::internal::GetCapturedStdout();
  return exit;
}

// Catches: --describe that still needs --port (the orchestrator asks for the
// facts of a target it has not placed yet), facts printed from the defaults
// instead of the parsed flags, --describe that goes on to serve, a missing
// --port or a bad flag that serves anyway, a target's own flag refused.
TEST(TargetMainTest, DescribeNeedsNoPortAndPrintsTheFactsOfTheParsedFlags) {
  TargetFlags flags;
  std::string out;
  EXPECT_EQ(Parse({"--describe", "--threads", "3"}, &flags, &out), 0);
  EXPECT_EQ(out, "{\"threads\":3}\n");

  TargetFlags serve;
  EXPECT_EQ(Parse({"--port", "8080", "--host", "::1", "--request-log", "r.log", "--extra", "x"}, &serve, &out),
            std::nullopt);
  EXPECT_EQ(out, "");
  EXPECT_EQ(serve.port, 8080);
  EXPECT_EQ(serve.host, "::1");
  EXPECT_EQ(serve.request_log, "r.log");

  TargetFlags bad;
  auto no_port = Parse({"--threads", "2"}, &bad, &out);
  ASSERT_TRUE(no_port.has_value());
  EXPECT_NE(*no_port, 0);
  auto unknown = Parse({"--port", "1", "--nope"}, &bad, &out);
  ASSERT_TRUE(unknown.has_value());
  EXPECT_NE(*unknown, 0);
  auto help = Parse({"--help"}, &bad, &out);
  ASSERT_TRUE(help.has_value());
  EXPECT_EQ(*help, 0);
}

// Catches: requests counted before the log is started lost or counted twice,
// CountRequest not reaching the log's counter (the total would be 0), the
// total written before the last request, SIGPIPE left fatal (a client that
// goes away would end the target).
TEST(TargetMainTest, CountedRequestsReachTheRequestLogAndSigpipeIsIgnored) {
  auto none = StartServing("");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr);
  struct sigaction sa {};
  ASSERT_EQ(sigaction(SIGPIPE, nullptr, &sa), 0);
  EXPECT_EQ(sa.sa_handler, SIG_IGN);

  auto dir = testing::TempDir::Create();
  ASSERT_TRUE(dir.ok());
  auto log = StartServing(dir->File("requests.log"));
  ASSERT_TRUE(log.ok()) << log.status().message();
  ASSERT_NE(*log, nullptr);
  for (int i = 0; i < 1234; ++i) CountRequest();
  (*log)->Stop();
  std::ifstream in(dir->File("requests.log"));
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("total 1234\n"), std::string::npos) << text.str();

  auto unwritable = StartServing("/proc/no-such-folder/requests.log");
  EXPECT_FALSE(unwritable.ok());
}

// The build's facts come from the macros of the file that includes the
// header (targets_test defines FAIRBENCH_FRAMEWORK_REVISION only), the
// allocator from the process. Catches: the macros read where the library
// is compiled (every server would say "unknown"), LD_PRELOAD not shown, the
// glibc version not the running one (checked against confstr's).
TEST(TargetMainTest, BuildFactsAreTheIncludersMacrosAndTheProcesssAllocator) {
  const BuildFacts build = ThisBuild();
  EXPECT_EQ(build.revision, "test-revision");
  EXPECT_EQ(build.version, "unknown");
  EXPECT_TRUE(build.compiler.rfind("gcc ", 0) == 0 || build.compiler.rfind("clang ", 0) == 0) << build.compiler;

  char libc[64] = {};
  ASSERT_GT(confstr(_CS_GNU_LIBC_VERSION, libc, sizeof libc), 0u);  // "glibc 2.36"
  const std::string glibc = std::string("glibc malloc (") + libc + ")";
  const char* was = std::getenv("LD_PRELOAD");
  const std::string saved = was != nullptr ? was : "";
  unsetenv("LD_PRELOAD");
  EXPECT_EQ(AllocatorFact(), glibc);
  setenv("LD_PRELOAD", "libmimalloc.so.2", 1);
  EXPECT_EQ(AllocatorFact(), "LD_PRELOAD=libmimalloc.so.2 (replaces " + glibc + " where it defines malloc)");
  if (was != nullptr) setenv("LD_PRELOAD", saved.c_str(), 1);
  else unsetenv("LD_PRELOAD");
}

}  // namespace
}  // namespace fairbench::targets
