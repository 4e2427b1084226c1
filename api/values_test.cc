// The small value types of the API: quantities, CPU lists, times, names,
// field paths, suggestions.
#include <gtest/gtest.h>

#include "api/cpu_list.h"
#include "api/diagnostics.h"
#include "api/field_path.h"
#include "api/names.h"
#include "api/quantity.h"
#include "api/time_text.h"

namespace fairbench::api {
namespace {

TEST(QuantityTest, ParsesCpuLikeKubernetes) {
  EXPECT_EQ(ParseCpu("4")->millicores, 4000);
  EXPECT_EQ(ParseCpu("0.5")->millicores, 500);
  EXPECT_EQ(ParseCpu("1.25")->millicores, 1250);
  EXPECT_EQ(ParseCpu("500m")->millicores, 500);
  EXPECT_EQ(ParseCpu("0.1")->millicores + ParseCpu("0.2")->millicores, 300);  // no floating point drift
  EXPECT_EQ(ParseCpu("0")->millicores, 0);
  EXPECT_EQ(ParseCpu("4x").status().message(), "\"4x\" is not a CPU quantity (use e.g. \"4\", \"0.5\", \"500m\")");
  EXPECT_FALSE(ParseCpu("").ok());
  EXPECT_FALSE(ParseCpu("m").ok());
  EXPECT_FALSE(ParseCpu("-1").ok());
  EXPECT_EQ(ParseCpu("0.0005").status().message(), "\"0.0005\" is finer than the smallest CPU unit, 1m");
  EXPECT_FALSE(ParseCpu("1.5m").ok());
}

TEST(QuantityTest, FormatsCpuCanonically) {
  EXPECT_EQ(FormatCpu({4000}), "4");
  EXPECT_EQ(FormatCpu({500}), "500m");
  EXPECT_EQ(FormatCpu({1500}), "1500m");
}

TEST(QuantityTest, ParsesAndFormatsMemory) {
  EXPECT_EQ(ParseMemory("1Gi")->bytes, int64_t{1} << 30);
  EXPECT_EQ(ParseMemory("512Mi")->bytes, int64_t{512} << 20);
  EXPECT_EQ(ParseMemory("1G")->bytes, 1'000'000'000);
  EXPECT_EQ(ParseMemory("1048576")->bytes, 1048576);
  EXPECT_EQ(ParseMemory("1GB").status().message(),
            "\"1GB\" is not a memory quantity (use e.g. \"1Gi\", \"512Mi\", \"1G\")");
  EXPECT_EQ(FormatMemory({int64_t{1} << 30}), "1Gi");
  EXPECT_EQ(FormatMemory({int64_t{1536} << 20}), "1536Mi");
  EXPECT_EQ(FormatMemory({1'000'000'000}), "1G");
  EXPECT_EQ(FormatMemory({1536}), "1536");
  EXPECT_EQ(FormatMemory({0}), "0");
}

TEST(CpuListTest, ParsesAndFormats) {
  EXPECT_EQ(ParseCpuList("0-1,4")->cpus, (std::vector<int>{0, 1, 4}));
  EXPECT_EQ(FormatCpuList(*ParseCpuList(" 3, 1-2 ,2")), "1-3");
  EXPECT_EQ(FormatCpuList(*ParseCpuList("0,2,4-7,9")), "0,2,4-7,9");
  EXPECT_TRUE(ParseCpuList("")->empty());
  EXPECT_EQ(ParseCpuList("3-1").status().message(),
            "\"3-1\" is not a CPU list (range 3-1 is reversed; use e.g. \"0-3,8\")");
  EXPECT_EQ(ParseCpuList("0-2048").status().message(),
            "\"0-2048\" is not a CPU list (CPU 2048 is above 1023; use e.g. \"0-3,8\")");
  EXPECT_FALSE(ParseCpuList("a").ok());
  EXPECT_FALSE(ParseCpuList("1-").ok());
  EXPECT_FALSE(ParseCpuList("1,,2").ok());
  EXPECT_FALSE(ParseCpuList("-1").ok());
  EXPECT_EQ(FormatCpuList(Intersection(*ParseCpuList("0-5"), *ParseCpuList("4-9"))), "4-5");
}

TEST(CpuListTest, SplitsInHalvesForTargetsAndAgents) {
  const auto halves = [](const char* text) {
    const auto [first, second] = SplitInHalves(*ParseCpuList(text));
    return FormatCpuList(first) + " | " + FormatCpuList(second);
  };
  EXPECT_EQ(halves("0-3"), "0-1 | 2-3");
  EXPECT_EQ(halves("0-2"), "0 | 1-2");
  EXPECT_EQ(halves("0,1"), "0 | 1");
  EXPECT_EQ(halves("2,5,7,9"), "2,5 | 7,9");
  EXPECT_EQ(halves("3"), "3 | 3");  // one CPU: shared
  EXPECT_EQ(halves(""), " | ");
}

TEST(TimeTest, ParsesAndFormatsRfc3339) {
  EXPECT_EQ(FormatTime(*ParseTime("2026-09-28T12:00:00Z")), "2026-09-28T12:00:00Z");
  EXPECT_EQ(FormatTime(*ParseTime("2026-09-28T12:00:00.250Z")), "2026-09-28T12:00:00.25Z");
  EXPECT_EQ(FormatTime(*ParseTime("2026-09-28T12:00:00.123456789Z")), "2026-09-28T12:00:00.123456789Z");
  EXPECT_EQ(FormatTime(*ParseTime("2026-09-28T12:00:00+02:00")), "2026-09-28T10:00:00Z");
  EXPECT_EQ(FormatTime(*ParseTime("2026-09-28t00:30:00-01:00")), "2026-09-28T01:30:00Z");
  EXPECT_EQ(FormatTime(*ParseTime("1970-01-01T00:00:00Z")), "1970-01-01T00:00:00Z");
  EXPECT_EQ(ParseTime("yesterday").status().message(),
            "\"yesterday\" is not an RFC 3339 time (e.g. \"2026-09-28T12:00:00Z\")");
  EXPECT_FALSE(ParseTime("2026-02-30T00:00:00Z").ok());
  EXPECT_FALSE(ParseTime("2026-09-28T12:00:00").ok());  // no zone
  EXPECT_FALSE(ParseTime("2026-09-28T24:00:00Z").ok());
  EXPECT_FALSE(ParseTime("2026-09-28T12:00:00.Z").ok());
}

// Kubernetes' two forms, as the kube client writes them: metav1.Time (whole
// seconds) and metav1.MicroTime (six digits), both cut, never rounded.
// Found by fuzz/watch_stream_fuzzer (a condition's lastTransitionTime):
// years past 2262 overflowed the nanosecond count (undefined behaviour,
// a time in the past in practice). They are refused by name now.
TEST(TimeTest, YearsATimeCannotHoldAreRefused) {
  for (const char* text :
       {"6962-01-01T00:00:00Z", "2262-12-31T23:59:59Z", "1677-01-01T00:00:00Z", "0001-01-01T00:00:00Z"}) {
    auto t = ParseTime(text);
    ASSERT_FALSE(t.ok()) << text;
    EXPECT_NE(t.status().message().find("outside the years 1678 to 2261"), std::string::npos) << t.status().message();
  }
  EXPECT_TRUE(ParseTime("2261-12-31T23:59:59Z").ok());
  EXPECT_TRUE(ParseTime("1678-01-01T00:00:00Z").ok());
}

TEST(TimeTest, FormatsKubernetesSecondsAndMicroseconds) {
  const Time t = *ParseTime("2026-07-01T10:00:00Z");
  EXPECT_EQ(FormatTimeSeconds(t), "2026-07-01T10:00:00Z");
  EXPECT_EQ(FormatMicroTime(t), "2026-07-01T10:00:00.000000Z");
  const Time m = *ParseTime("2026-07-01T10:00:00.123456789Z");
  EXPECT_EQ(FormatMicroTime(m), "2026-07-01T10:00:00.123456Z");
  EXPECT_EQ(FormatTimeSeconds(m), "2026-07-01T10:00:00Z");
  EXPECT_EQ(FormatTime(m), "2026-07-01T10:00:00.123456789Z");
  EXPECT_EQ(FormatTimeSeconds(*ParseTime("2026-07-01T12:00:00+02:00")), "2026-07-01T10:00:00Z");
  EXPECT_EQ(FormatMicroTime(*ParseTime("2026-07-01T12:00:00.5+02:00")), "2026-07-01T10:00:00.500000Z");
  // Before 1970, cut towards the past too.
  EXPECT_EQ(FormatTimeSeconds(Time(std::chrono::milliseconds(-1500))), "1969-12-31T23:59:58Z");
  EXPECT_EQ(FormatMicroTime(Time(std::chrono::nanoseconds(-1))), "1969-12-31T23:59:59.999999Z");
}

TEST(NamesTest, FollowsKubernetes) {
  EXPECT_EQ(CheckDnsLabel("cpp-httplib"), "");
  EXPECT_EQ(CheckDnsLabel("a"), "");
  EXPECT_NE(CheckDnsLabel("Drogon"), "");
  EXPECT_NE(CheckDnsLabel("-x"), "");
  EXPECT_NE(CheckDnsLabel("x-"), "");
  EXPECT_NE(CheckDnsLabel("a.b"), "");
  EXPECT_EQ(CheckDnsLabel(std::string(64, 'a')), "must be at most 63 characters");
  EXPECT_EQ(CheckDnsSubdomain("cpp-frameworks.v2"), "");
  EXPECT_NE(CheckDnsSubdomain("a..b"), "");
  EXPECT_NE(CheckDnsSubdomain("a_b"), "");
  EXPECT_EQ(CheckQualifiedName("fairbench.dev/role"), "");
  EXPECT_EQ(CheckQualifiedName("Team_Name"), "");
  EXPECT_NE(CheckQualifiedName("bad key"), "");
  EXPECT_NE(CheckQualifiedName("Bad_Prefix/x"), "");
  EXPECT_EQ(CheckLabelValue(""), "");
  EXPECT_EQ(CheckLabelValue("v1.2_x"), "");
  EXPECT_NE(CheckLabelValue("a b"), "");
  EXPECT_TRUE(IsHttpToken("GET"));
  EXPECT_TRUE(IsHttpToken("M-SEARCH"));
  EXPECT_FALSE(IsHttpToken("GE T"));
  EXPECT_FALSE(IsHttpToken(""));
  EXPECT_FALSE(IsHttpToken("a:b"));
  EXPECT_FALSE(IsHttpToken(std::string_view("a\0b", 3)));
  EXPECT_EQ(CheckEnvName("GOMAXPROCS"), "");
  EXPECT_NE(CheckEnvName("A=B"), "");
  EXPECT_NE(CheckEnvName(""), "");
}

TEST(FieldPathTest, JoinsAndSplits) {
  EXPECT_EQ(JoinField("", "spec"), "spec");
  EXPECT_EQ(JoinIndex(JoinField("spec", "targets"), 1), "spec.targets[1]");
  EXPECT_EQ(JoinKey("spec.targets[0].env", "GOMAXPROCS"), "spec.targets[0].env.GOMAXPROCS");
  EXPECT_EQ(JoinKey("x.nodeSelector", "fairbench.dev/role"), "x.nodeSelector[\"fairbench.dev/role\"]");
  EXPECT_EQ(ParentPath("spec.targets[1].name"), "spec.targets[1]");
  EXPECT_EQ(ParentPath("spec.targets[1]"), "spec.targets");
  EXPECT_EQ(ParentPath("spec"), "");
  EXPECT_EQ(ParentPath("x.nodeSelector[\"a.b/c]\"]"), "x.nodeSelector");
  EXPECT_EQ(ParentPath("x[\"a.b\"].c"), "x[\"a.b\"]");
  EXPECT_TRUE(IsWithin("spec.load.connections[0]", "spec.load"));
  EXPECT_TRUE(IsWithin("spec.load", "spec.load"));
  EXPECT_FALSE(IsWithin("spec.loader", "spec.load"));
  EXPECT_TRUE(IsWithin("anything", ""));
}

TEST(SuggestTest, FindsPlausibleTypos) {
  const std::vector<std::string_view> load = {"threads",   "connections", "duration", "warmup", "timeout",
                                              "keepAlive", "pipeline",    "rate",     "agents"};
  EXPECT_EQ(ClosestMatch("conections", load), "connections");
  EXPECT_EQ(ClosestMatch("connection", load), "connections");
  EXPECT_EQ(ClosestMatch("keepalive", load), "keepAlive");
  EXPECT_EQ(ClosestMatch("treads", load), "threads");
  EXPECT_EQ(ClosestMatch("duartion", load), "duration");  // a swapped pair is one edit
  EXPECT_EQ(ClosestMatch("colour", load), "");
  EXPECT_EQ(ClosestMatch("x", load), "");
}

TEST(DiagnosticsTest, FormatsAndSortsByField) {
  Diagnostics d;
  d.Add(Diagnostic{"spec.load.threads", "must be ≥ 1", {8, 14}, {3, 2, 0}});
  d.Add(Diagnostic{"spec.targets", "must not be empty", {}, {3, 0}});
  d.Add(Diagnostic{"", "the document is empty; expected a BenchmarkRun", {}, {}});
  d.SortByField();
  EXPECT_EQ(d.Format("run.yaml"),
            "run.yaml: the document is empty; expected a BenchmarkRun\n"
            "run.yaml: spec.targets: must not be empty\n"
            "run.yaml:8:14: spec.load.threads: must be ≥ 1");
  EXPECT_EQ(d.items()[1].ToString(""), "spec.targets: must not be empty");
  EXPECT_EQ(d.ToStatus("x").code(), Status::Code::kInvalidArgument);
  EXPECT_TRUE(Diagnostics().ToStatus("x").ok());
}

}  // namespace
}  // namespace fairbench::api
