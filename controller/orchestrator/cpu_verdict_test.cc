#include "controller/orchestrator/cpu_verdict.h"

#include <gtest/gtest.h>

namespace fairbench::controller {
namespace {

using api::ConditionStatus;

CpuView View(std::string cpus, std::string online = "0-3", std::string boot = "machine-a") {
  CpuView v;
  v.cpus = std::move(cpus);
  v.online = std::move(online);
  v.boot_id = std::move(boot);
  return v;
}

TargetCpuFacts Kubelet(std::string policy, std::optional<CpuView> view, int64_t millicores = 2000) {
  TargetCpuFacts f;
  f.kubelet = true;
  f.node = "bench-1";
  f.cpu_manager_policy = std::move(policy);
  f.view = std::move(view);
  f.asked = api::CpuQuantity{millicores};
  return f;
}

// Catches: exclusivity claimed without the static policy, or denied with it
// when every fact agrees (whole CPUs, as many as asked, agents elsewhere).
TEST(CpuVerdictTest, TheStaticPolicyWithWholeCpusIsExclusive) {
  const auto t = JudgeCpus("drogon", Kubelet("static", View("2-3")),
                           {{"a0", "bench-2", View("0-3", "0-3", "machine-b")}}, std::nullopt);
  EXPECT_EQ(t.exclusive, ConditionStatus::kTrue) << t.message;
  EXPECT_EQ(t.disjoint_from_agents, ConditionStatus::kTrue);
  EXPECT_EQ(t.as_many_as_asked, ConditionStatus::kTrue);
  EXPECT_EQ(t.cpus, "2-3");
  EXPECT_EQ(t.node_cpus, "0-3");
  ASSERT_EQ(t.agents.size(), 1u);
  EXPECT_FALSE(t.agents[0].same_machine);
  EXPECT_NE(t.message.find("static CPU manager policy"), std::string::npos) << t.message;
}

// Catches: the kubelet's default policy passing as exclusive: the pod may
// run on every CPU of its node, and the message must name the policy.
TEST(CpuVerdictTest, TheNonePolicyIsShared) {
  const auto t = JudgeCpus("drogon", Kubelet("none", View("0-3")), {}, std::nullopt);
  EXPECT_EQ(t.exclusive, ConditionStatus::kFalse);
  EXPECT_EQ(t.as_many_as_asked, ConditionStatus::kFalse);
  EXPECT_NE(t.message.find("every CPU of its machine (0-3)"), std::string::npos) << t.message;
  EXPECT_NE(t.message.find("CPU manager policy none"), std::string::npos) << t.message;
  const std::string failed = CpusNotExclusiveMessage(t);
  EXPECT_NE(failed.find("the likely cause: node bench-1's kubelet CPU manager policy is none"), std::string::npos)
      << failed;
  EXPECT_NE(failed.find("cpuManagerPolicy: static"), std::string::npos) << failed;
}

// Catches: agents compared with the target across machines (different boot
// ids), or agents on the target's kernel not compared at all.
TEST(CpuVerdictTest, AnAgentOnTheSameMachineMustNotShareACpu) {
  const std::vector<AgentCpuView> agents = {{"a0", "bench-2", View("0-1", "0-3", "machine-b")},
                                            {"a1", "bench-3", View("1-2")}};
  const auto t = JudgeCpus("drogon", Kubelet("static", View("2-3")), agents, std::nullopt);
  EXPECT_EQ(t.disjoint_from_agents, ConditionStatus::kFalse);
  EXPECT_EQ(t.exclusive, ConditionStatus::kFalse);
  EXPECT_NE(t.message.find("agent a1 may run on CPUs 2 too"), std::string::npos) << t.message;
  EXPECT_FALSE(t.agents[0].same_machine);
  EXPECT_TRUE(t.agents[1].same_machine);

  const auto apart =
      JudgeCpus("drogon", Kubelet("static", View("2-3")), {{"a1", "bench-3", View("0-1")}}, std::nullopt);
  EXPECT_EQ(apart.disjoint_from_agents, ConditionStatus::kTrue);
  EXPECT_EQ(apart.exclusive, ConditionStatus::kTrue);
}

// Catches: the controller's own CPUs left out of the comparison.
TEST(CpuVerdictTest, TheControllerOnTheTargetsCpusIsSharing) {
  const auto t = JudgeCpus("drogon", Kubelet("static", View("2-3")), {}, View("0-3"));
  EXPECT_EQ(t.exclusive, ConditionStatus::kFalse);
  EXPECT_NE(t.message.find("the controller may run on CPUs 2-3 too"), std::string::npos) << t.message;
}

// Catches: a fractional request (a share of the shared pool) or more CPUs
// than asked judged as CPUs of its own.
TEST(CpuVerdictTest, FractionalOrMoreThanAskedIsNotExclusive) {
  const auto fractional = JudgeCpus("drogon", Kubelet("static", View("0-1"), 1500), {}, std::nullopt);
  EXPECT_EQ(fractional.as_many_as_asked, ConditionStatus::kFalse);
  EXPECT_EQ(fractional.exclusive, ConditionStatus::kFalse);
  const auto more = JudgeCpus("drogon", Kubelet("static", View("1-3"), 2000), {}, std::nullopt);
  EXPECT_EQ(more.as_many_as_asked, ConditionStatus::kFalse);
  EXPECT_EQ(more.exclusive, ConditionStatus::kFalse);
  EXPECT_NE(more.message.find("it may run on 3 CPUs (1-3), asked for 2"), std::string::npos) << more.message;
}

// Catches: exclusivity claimed where only fairbench's pinning keeps its own
// processes off (local and Docker), or where nothing was read.
TEST(CpuVerdictTest, PinningAloneOrNothingReadIsUnknown) {
  TargetCpuFacts local;
  local.view = View("0-1");
  local.asked = api::CpuQuantity{2000};
  const auto pinned = JudgeCpus("drogon", local, {{"a0", "", View("2-3")}}, View("2-3"));
  EXPECT_EQ(pinned.exclusive, ConditionStatus::kUnknown);
  EXPECT_EQ(pinned.disjoint_from_agents, ConditionStatus::kTrue);
  EXPECT_EQ(pinned.as_many_as_asked, ConditionStatus::kTrue);
  EXPECT_NE(pinned.message.find("nothing keeps other processes of this machine off them"), std::string::npos)
      << pinned.message;

  TargetCpuFacts unread = Kubelet("static", std::nullopt);
  unread.not_read = "no line";
  const auto none = JudgeCpus("drogon", unread, {}, std::nullopt);
  EXPECT_EQ(none.exclusive, ConditionStatus::kUnknown);
  EXPECT_EQ(none.disjoint_from_agents, ConditionStatus::kUnknown);
  EXPECT_EQ(none.message, "its CPUs were not read: no line");

  TargetCpuFacts policy_unknown = Kubelet("", View("2-3"));
  policy_unknown.policy_not_read = "403";
  const auto unknown = JudgeCpus("drogon", policy_unknown, {}, std::nullopt);
  EXPECT_EQ(unknown.exclusive, ConditionStatus::kUnknown);
  EXPECT_NE(unknown.message.find("CPU manager policy was not read (403)"), std::string::npos) << unknown.message;
}

}  // namespace
}  // namespace fairbench::controller
