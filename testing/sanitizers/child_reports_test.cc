// A sanitizer report in a child process reaches the test that started it.
#include "testing/sanitizers/child_reports.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "testing/support/bin_dir.h"
#include "testing/support/subprocess.h"

namespace fairbench::testing {
namespace {

// Runs fairbench-sanitizer-fault MODE (its stderr to /dev/null: the report
// must come through the log directory) and returns what it reported.
std::string ReportOf(const std::string& mode) {
  SubprocessOptions o;
  o.argv = {BinaryPath("fairbench-sanitizer-fault"), mode};
  o.stdout_to = Redirect::Null();
  o.stderr_to = Redirect::Null();
  auto child = Subprocess::Start(o);
  EXPECT_TRUE(child.ok()) << child.status().ToString();
  if (!child.ok()) return "";
  auto status = child->Wait(std::chrono::seconds(60));
  EXPECT_TRUE(status.ok()) << status.status().ToString();
  if (status.ok()) {
    EXPECT_FALSE(status->success()) << "the sanitizer let " << mode << " exit 0";
  }
  std::string all;
  for (const std::string& r : TakeChildReports()) all += r;
  return all;
}

TEST(ChildReportsTest, ChildrenReportToTheTestsDirectory) {
  ASSERT_FALSE(ChildReportsDir().empty());
  EXPECT_TRUE(TakeChildReports().empty()) << "no child has run yet";
}

#if defined(__SANITIZE_THREAD__)
TEST(ChildReportsTest, DataRaceInAChildIsCollected) {
  EXPECT_NE(ReportOf("race").find("WARNING: ThreadSanitizer: data race"), std::string::npos);
}
#endif

#if defined(__SANITIZE_ADDRESS__)
TEST(ChildReportsTest, HeapOverflowInAChildIsCollected) {
  EXPECT_NE(ReportOf("overflow").find("ERROR: AddressSanitizer: heap-buffer-overflow"), std::string::npos);
}

TEST(ChildReportsTest, UndefinedBehaviourInAChildIsCollected) {
  EXPECT_NE(ReportOf("ub").find("runtime error: signed integer overflow"), std::string::npos);
}
#endif

}  // namespace
}  // namespace fairbench::testing
