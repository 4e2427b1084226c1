#include "controller/platform/kubernetes/stats_summary.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "api/time_text.h"

namespace fairbench::controller::k8s {
namespace {

using Json = nlohmann::json;

Json Captured() {
  std::ifstream in(std::string(K8S_TESTDATA) + "/stats_summary.json");
  std::stringstream s;
  s << in.rdbuf();
  return Json::parse(s.str());
}

// Catches: the wrong pod (same name, other namespace), the wrong container
// (the init container), the pod-level totals, usageBytes instead of the
// working set, or the controller's clock instead of the sample's own time.
TEST(StatsSummaryTest, ReadsTheTargetContainer) {
  auto u = UsageFromSummary(Captured(), "bench", "cpp-frameworks-drogon", "target");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->memory_bytes, 52428800u);
  EXPECT_DOUBLE_EQ(u->cpu_seconds, 123.456789012);
  EXPECT_EQ(api::FormatTime(u->sampled_at), "2026-12-01T02:30:07.25Z");
}

// Catches: a missing pod or container read as zero usage.
TEST(StatsSummaryTest, MissingPodOrContainerIsNotFound) {
  EXPECT_EQ(UsageFromSummary(Captured(), "bench", "nope", "target").status().code(), Status::Code::kNotFound);
  EXPECT_EQ(UsageFromSummary(Captured(), "bench", "cpp-frameworks-drogon", "nope").status().code(),
            Status::Code::kNotFound);
  EXPECT_EQ(UsageFromSummary(Json::object(), "bench", "p", "c").status().code(), Status::Code::kNotFound);
}

// Catches: a container listed before its first sample read as zero usage.
TEST(StatsSummaryTest, NoSampleYetIsUnavailable) {
  Json s = Captured();
  s["pods"][1]["containers"][1]["cpu"].erase("usageCoreNanoSeconds");
  EXPECT_EQ(UsageFromSummary(s, "bench", "cpp-frameworks-drogon", "target").status().code(),
            Status::Code::kUnavailable);
}

// Catches: cores computed from two samples with the same kubelet
// timestamp (a division by zero) instead of "no value".
TEST(StatsSummaryTest, CoresBetweenSamplesUsesTheirTimes) {
  auto a = UsageFromSummary(Captured(), "bench", "cpp-frameworks-drogon", "target");
  ASSERT_TRUE(a.ok());
  TargetUsage b = *a;
  EXPECT_FALSE(CoresBetween(*a, b).has_value());
  b.sampled_at += std::chrono::seconds(10);
  b.cpu_seconds += 35;
  EXPECT_DOUBLE_EQ(*CoresBetween(*a, b), 3.5);
}

// Catches: a summary path without the node proxy prefix or the query that
// keeps the kubelet's answer small.
TEST(StatsSummaryTest, Path) {
  EXPECT_EQ(SummaryPath("n1"), "/api/v1/nodes/n1/proxy/stats/summary?only_cpu_and_memory=true");
}

}  // namespace
}  // namespace fairbench::controller::k8s
