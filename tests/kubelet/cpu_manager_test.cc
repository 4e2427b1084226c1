// The test kubelet's CPU manager against the kubelet's static policy
// (pkg/kubelet/cm/cpumanager/policy_static.go): which containers get CPUs
// of their own, which CPUs (never a reserved one, lowest first), the
// shared pool, the error text the kubelet rejects a pod with, and the
// start-up checks of --reserved-cpus. The expected sets are worked out by
// hand from the node's CPUs and the pods' requests.
#include "testing/kubelet/cpu_manager.h"

#include <gtest/gtest.h>

namespace fairbench::kubelet {
namespace {

using nlohmann::json;

json Resources(const std::string& cpu, const std::string& memory) {
  return {{"requests", {{"cpu", cpu}, {"memory", memory}}}, {"limits", {{"cpu", cpu}, {"memory", memory}}}};
}

// A pod spec: containers name → resources (null: none).
json Spec(const std::vector<std::pair<std::string, json>>& containers,
          const std::vector<std::pair<std::string, json>>& init = {}) {
  json spec = {{"containers", json::array()}};
  for (const auto& [name, r] : containers) {
    json c = {{"name", name}};
    if (!r.is_null()) c["resources"] = r;
    spec["containers"].push_back(c);
  }
  for (const auto& [name, r] : init) {
    json c = {{"name", name}};
    if (!r.is_null()) c["resources"] = r;
    spec["initContainers"].push_back(c);
  }
  return spec;
}

std::unique_ptr<CpuManager> Static(const std::vector<int>& cpus, const std::vector<int>& reserved) {
  auto m = CpuManager::Create(CpuManagerPolicy::kStatic, cpus, reserved);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(*m) : nullptr;
}

// Catches: a list printed element by element ("0,1,2") where the kernel and
// Kubernetes write ranges, or a range that swallows a gap.
TEST(FormatCpuList, WritesRangesAsTheKernelDoes) {
  EXPECT_EQ(FormatCpuList({0, 1, 2, 5}), "0-2,5");
  EXPECT_EQ(FormatCpuList({3}), "3");
  EXPECT_EQ(FormatCpuList({7, 1, 2, 4}), "1-2,4,7");
  EXPECT_EQ(FormatCpuList({}), "");
}

// Catches: a reserved CPU given to a Guaranteed container, two pods given
// one CPU, CPUs not taken lowest-first, a Burstable or non-integer
// container given CPUs of its own, the shared pool losing the reserved CPU
// (the kubelet keeps it there), and allocatable counting the reserved CPUs.
TEST(CpuManager, StaticGivesGuaranteedIntegerContainersDisjointUnreservedCpus) {
  auto m = Static({0, 1, 2, 3, 4, 5, 6, 7}, {0});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->AllocatableMillis(), 7000);
  ASSERT_TRUE(m->AllocatePod("a", Spec({{"main", Resources("2", "1Gi")}})).ok());
  ASSERT_TRUE(m->AllocatePod("b", Spec({{"x", Resources("1", "64Mi")}, {"y", Resources("2000m", "64Mi")}})).ok());
  EXPECT_EQ(m->ContainerCpus("a", "main"), (std::vector<int>{1, 2}));
  EXPECT_EQ(m->ContainerCpus("b", "x"), (std::vector<int>{3}));
  EXPECT_EQ(m->ContainerCpus("b", "y"), (std::vector<int>{4, 5}));
  EXPECT_EQ(m->SharedPool(), (std::vector<int>{0, 6, 7}));
  // Guaranteed but not whole CPUs; Burstable; BestEffort: the shared pool.
  ASSERT_TRUE(m->AllocatePod("half", Spec({{"c", Resources("1500m", "64Mi")}})).ok());
  json burstable = Spec({{"c", {{"requests", {{"cpu", "1"}}}, {"limits", {{"cpu", "2"}}}}}});
  ASSERT_TRUE(m->AllocatePod("burst", burstable).ok());
  ASSERT_TRUE(m->AllocatePod("none", Spec({{"c", nullptr}})).ok());
  for (const char* uid : {"half", "burst", "none"}) EXPECT_EQ(m->ContainerCpus(uid, "c"), (std::vector<int>{0, 6, 7}));
  // Again for a pod already allocated: nothing more is taken.
  ASSERT_TRUE(m->AllocatePod("a", Spec({{"main", Resources("2", "1Gi")}})).ok());
  EXPECT_EQ(m->SharedPool(), (std::vector<int>{0, 6, 7}));
}

// Catches: the reserved CPU handed out when the others run out, a pod
// keeping part of its CPUs after being refused (all or none), the error
// not in the kubelet's words, CPUs of a pod over not given back, and the
// generation not moving when the shared pool does (workers would not re-pin).
TEST(CpuManager, RunningOutIsTheKubeletsErrorAndRemovalGivesCpusBack) {
  auto m = Static({0, 1, 2}, {0});
  ASSERT_TRUE(m);
  const uint64_t g0 = m->generation();
  ASSERT_TRUE(m->AllocatePod("a", Spec({{"main", Resources("1", "64Mi")}})).ok());
  EXPECT_NE(m->generation(), g0);
  Status s = m->AllocatePod("b", Spec({{"one", Resources("1", "64Mi")}, {"two", Resources("1", "64Mi")}}));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "not enough cpus available to satisfy request: requested=1, available=0");
  EXPECT_EQ(m->ContainerCpus("b", "one"), (std::vector<int>{0, 2})) << "a refused pod kept a CPU";
  EXPECT_EQ(m->SharedPool(), (std::vector<int>{0, 2}));
  Status big = m->AllocatePod("c", Spec({{"main", Resources("2", "64Mi")}}));
  EXPECT_EQ(big.message(), "not enough cpus available to satisfy request: requested=2, available=1");
  const uint64_t g1 = m->generation();
  m->RemovePod("a");
  EXPECT_NE(m->generation(), g1);
  EXPECT_EQ(m->SharedPool(), (std::vector<int>{0, 1, 2}));
  ASSERT_TRUE(m->AllocatePod("c", Spec({{"main", Resources("2", "64Mi")}})).ok());
  EXPECT_EQ(m->ContainerCpus("c", "main"), (std::vector<int>{1, 2}));
}

// Catches: an init container's CPUs not reused by the app containers of its
// pod (the kubelet's cpusToReuse), so that a pod fits only with twice its CPUs.
TEST(CpuManager, AppContainersReuseTheirInitContainersCpus) {
  auto m = Static({0, 1, 2}, {0});
  ASSERT_TRUE(m);
  ASSERT_TRUE(m->AllocatePod("p", Spec({{"app", Resources("2", "64Mi")}}, {{"init", Resources("2", "64Mi")}})).ok());
  EXPECT_EQ(m->ContainerCpus("p", "init"), (std::vector<int>{1, 2}));
  EXPECT_EQ(m->ContainerCpus("p", "app"), (std::vector<int>{1, 2}));
  EXPECT_EQ(m->SharedPool(), (std::vector<int>{0}));
}

// Catches: the none policy pinning anything to fewer than the node's CPUs
// or refusing a pod, whatever it asks for.
TEST(CpuManager, NoneRunsEveryContainerOnTheNodesCpus) {
  auto m = CpuManager::Create(CpuManagerPolicy::kNone, {2, 3}, {});
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE((*m)->AllocatePod("a", Spec({{"main", Resources("2", "64Mi")}})).ok());
  ASSERT_TRUE((*m)->AllocatePod("b", Spec({{"main", Resources("8", "64Mi")}})).ok());
  EXPECT_EQ((*m)->ContainerCpus("a", "main"), (std::vector<int>{2, 3}));
  EXPECT_EQ((*m)->AllocatableMillis(), 2000);
}

// Catches: a reserved CPU outside the node's CPUs accepted (it would be
// neither allocatable nor in the pool), static without any reservation
// (the kubelet refuses to start), or reserved CPUs under none.
TEST(CpuManager, StartUpChecksOfReservedCpus) {
  auto outside = CpuManager::Create(CpuManagerPolicy::kStatic, {0, 1}, {1, 2});
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.status().message().find("not a subset of --cpus 0-1"), std::string::npos)
      << outside.status().message();
  auto none_reserved = CpuManager::Create(CpuManagerPolicy::kStatic, {0, 1}, {});
  ASSERT_FALSE(none_reserved.ok());
  EXPECT_NE(none_reserved.status().message().find("greater than zero"), std::string::npos);
  EXPECT_FALSE(CpuManager::Create(CpuManagerPolicy::kStatic, {0, 1}, {0, 1}).ok());
  EXPECT_FALSE(CpuManager::Create(CpuManagerPolicy::kNone, {0, 1}, {0}).ok());
}

}  // namespace
}  // namespace fairbench::kubelet
