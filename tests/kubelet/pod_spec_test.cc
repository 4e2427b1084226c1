// The parts of a pod spec the test kubelet interprets, against what
// Kubernetes documents (expansion, command/args, QoS) and what the kubelet
// API does with tailLines/limitBytes.
#include "testing/kubelet/pod_spec.h"

#include <gtest/gtest.h>

#include "testing/kubelet/kubelet.h"
#include "testing/kubelet/kubelet_http.h"

namespace fairbench::kubelet {
namespace {

// Catches: $(VAR) left unexpanded, $$ not collapsed, unknown names dropped
// (Kubernetes keeps them verbatim), an unterminated "$(" eaten.
TEST(Expand, FollowsKubernetesRules) {
  std::vector<std::pair<std::string, std::string>> env = {{"A", "1"}, {"B", "x"}, {"A", "2"}};
  EXPECT_EQ(ExpandWith("$(A)-$(B)", env), "2-x");
  EXPECT_EQ(ExpandWith("$$(A)", env), "$(A)");
  EXPECT_EQ(ExpandWith("$(MISSING)", env), "$(MISSING)");
  EXPECT_EQ(ExpandWith("a$b$", env), "a$b$");
  EXPECT_EQ(ExpandWith("$(A", env), "$(A");
  EXPECT_EQ(ExpandWith("$$$(B)", env), "$x");
}

// Catches: args appended to the image's CMD instead of replacing it, or
// command keeping the image's CMD (Kubernetes: command drops it).
TEST(ComposeArgv, CommandReplacesEntrypointArgsReplaceCmd) {
  ImageEntry image{{"/bin/server"}, {"--default"}};
  EXPECT_EQ(ComposeArgv(image, Json::object()), (std::vector<std::string>{"/bin/server", "--default"}));
  EXPECT_EQ(ComposeArgv(image, Json{{"args", {"-p", "1"}}}), (std::vector<std::string>{"/bin/server", "-p", "1"}));
  EXPECT_EQ(ComposeArgv(image, Json{{"command", {"/bin/x"}}}), (std::vector<std::string>{"/bin/x"}));
  EXPECT_EQ(ComposeArgv(image, Json{{"command", {"/bin/x"}}, {"args", {"y"}}}),
            (std::vector<std::string>{"/bin/x", "y"}));
}

Json Container(const Json& requests, const Json& limits) {
  Json c = {{"name", "c"}, {"resources", Json::object()}};
  if (!requests.is_null()) c["resources"]["requests"] = requests;
  if (!limits.is_null()) c["resources"]["limits"] = limits;
  return c;
}

// Catches: QoS from one container only, requests not defaulted from limits,
// cpu "1" and "1000m" compared as text.
TEST(Qos, AsKubernetesComputesIt) {
  EXPECT_EQ(ComputeQos({{"containers", {Container(nullptr, nullptr)}}}), QosClass::kBestEffort);
  EXPECT_EQ(ComputeQos({{"containers", {Container(nullptr, {{"cpu", "1"}, {"memory", "1Gi"}})}}}),
            QosClass::kGuaranteed);
  EXPECT_EQ(ComputeQos({{"containers",
                         {Container({{"cpu", "1000m"}, {"memory", "1Gi"}}, {{"cpu", "1"}, {"memory", "1Gi"}})}}}),
            QosClass::kGuaranteed);
  EXPECT_EQ(ComputeQos({{"containers", {Container({{"cpu", "500m"}}, {{"cpu", "1"}, {"memory", "1Gi"}})}}}),
            QosClass::kBurstable);
  EXPECT_EQ(ComputeQos(
                {{"containers", {Container(nullptr, {{"cpu", "1"}, {"memory", "1Gi"}}), Container(nullptr, nullptr)}}}),
            QosClass::kBurstable);
  EXPECT_EQ(ComputeQos({{"containers", {Container({{"memory", "1Gi"}}, nullptr)}}}), QosClass::kBurstable);
}

// Catches: init containers summed with the containers (Kubernetes takes the max).
TEST(Requests, InitContainersTakeTheMax) {
  Json spec = {{"containers", {Container({{"cpu", "500m"}}, nullptr), Container({{"cpu", "250m"}}, nullptr)}},
               {"initContainers", {Container({{"cpu", "2"}}, nullptr)}}};
  EXPECT_EQ(ComputeRequests(spec).cpu_millis, 2000);
  EXPECT_EQ(ParseCpuMillis("0.5").value(), 500);
  EXPECT_FALSE(ParseCpuMillis("x").ok());
}

// Catches: a mount path replaced inside a longer name ("/database").
TEST(Mounts, WholePathPrefixOnly) {
  std::vector<std::pair<std::string, std::string>> m = {{"/data", "/tmp/v"}};
  EXPECT_EQ(SubstituteMounts("/data", m), "/tmp/v");
  EXPECT_EQ(SubstituteMounts("--out=/data/x.txt", m), "--out=/tmp/v/x.txt");
  EXPECT_EQ(SubstituteMounts("/database /x/data", m), "/database /x/data");
}

TEST(ImageMap, ListOrEntrypointAndCmd) {
  auto m = ParseImageMap("example.org/a:1: [/bin/a, -x]\nexample.org/b:2: {entrypoint: [/bin/b], cmd: [c]}\n");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->at("example.org/a:1").entrypoint, (std::vector<std::string>{"/bin/a", "-x"}));
  EXPECT_EQ(m->at("example.org/b:2").cmd, (std::vector<std::string>{"c"}));
  EXPECT_FALSE(ParseImageMap("x: 3\n").ok());
}

// Catches: tailLines counting a trailing newline as an extra line, or
// limitBytes applied before the tail.
TEST(SelectLog, TailThenLimit) {
  EXPECT_EQ(SelectLog("a\nb\nc\n", 2, std::nullopt), "b\nc\n");
  EXPECT_EQ(SelectLog("a\nb\nc", 1, std::nullopt), "c");
  EXPECT_EQ(SelectLog("a\nb\n", 5, std::nullopt), "a\nb\n");
  EXPECT_EQ(SelectLog("a\nb\n", 0, std::nullopt), "");
  EXPECT_EQ(SelectLog("a\nbcd\n", 1, 2), "bc");
}

TEST(Flags, CpusLabelsTaints) {
  EXPECT_EQ(ParseCpuList("0-2,5").value(), (std::vector<int>{0, 1, 2, 5}));
  EXPECT_FALSE(ParseCpuList("2-1").ok());
  auto t = ParseTaints("dedicated=bench:NoSchedule,gpu:NoExecute");
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ((*t)[0].value, "bench");
  EXPECT_EQ((*t)[1].key, "gpu");
  EXPECT_FALSE(ParseTaints("a=b:Sometimes").ok());
  EXPECT_EQ(ParseLabels("a=b,c=").value().at("c"), "");
}

}  // namespace
}  // namespace fairbench::kubelet
