#include "controller/kube/objects.h"

#include <gtest/gtest.h>

namespace fairbench::kube {
namespace {

TEST(ObjectMeta, RoundTrip) {
  Json j = {{"name", "run-1"},
            {"namespace", "bench"},
            {"uid", "u-1"},
            {"resourceVersion", "42"},
            {"generation", 3},
            {"creationTimestamp", "2026-07-01T10:00:00Z"},
            {"labels", {{"app", "fairbench"}}},
            {"finalizers", {"fairbench.dev/cleanup"}},
            {"ownerReferences",
             {{{"apiVersion", "fairbench.dev/v1alpha1"},
               {"kind", "BenchmarkRun"},
               {"name", "r"},
               {"uid", "u-0"},
               {"controller", true},
               {"blockOwnerDeletion", true}}}}};
  auto m = ObjectMeta::FromJson(j);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->Key(), "bench/run-1");
  EXPECT_EQ(m->generation, 3);
  ASSERT_EQ(m->owner_references.size(), 1u);
  EXPECT_TRUE(m->owner_references[0].controller);
  EXPECT_EQ(m->ToJson(), j);
}

TEST(ObjectMeta, WrongTypesAreClearErrors) {
  auto m = ObjectMeta::FromJson({{"name", 5}});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), "metadata.name: must be a string");
  EXPECT_FALSE(ObjectMeta::FromJson({{"labels", {{"a", 1}}}}).ok());
}

TEST(Lease, MicroTimesAndDefaults) {
  Json j = {{"apiVersion", "coordination.k8s.io/v1"},
            {"kind", "Lease"},
            {"metadata", {{"name", "l"}, {"namespace", "ns"}}},
            {"spec",
             {{"holderIdentity", "a"},
              {"leaseDurationSeconds", 15},
              {"acquireTime", "2026-07-01T10:00:00.000001Z"},
              {"renewTime", "2026-07-01T10:00:02.500000Z"},
              {"leaseTransitions", 2}}}};
  auto l = Lease::FromJson(j);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->spec.holder_identity, "a");
  EXPECT_EQ(*l->spec.lease_duration_seconds, 15);
  EXPECT_EQ(l->ToJson(), j);
}

TEST(Pod, StatusIsTyped) {
  Json j = {{"metadata", {{"name", "p"}, {"namespace", "ns"}}},
            {"spec", {{"nodeName", "n1"}, {"containers", {{{"name", "c"}, {"image", "i"}}}}}},
            {"status",
             {{"phase", "Failed"},
              {"qosClass", "Guaranteed"},
              {"conditions", {{{"type", "Ready"}, {"status", "False"}, {"reason", "PodFailed"}}}},
              {"containerStatuses",
               {{{"name", "c"},
                 {"ready", false},
                 {"restartCount", 1},
                 {"state", {{"terminated", {{"reason", "OOMKilled"}, {"exitCode", 137}}}}}}}}}}};
  auto p = Pod::FromJson(j);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->NodeName(), "n1");
  EXPECT_EQ(p->status.qos_class, "Guaranteed");
  ASSERT_EQ(p->status.container_statuses.size(), 1u);
  EXPECT_EQ(p->status.container_statuses[0].state, "terminated");
  EXPECT_EQ(p->status.container_statuses[0].state_reason, "OOMKilled");
  EXPECT_EQ(p->status.container_statuses[0].exit_code, 137);
  ASSERT_NE(p->status.FindCondition("Ready"), nullptr);
  EXPECT_FALSE(p->ToJson().contains("status"));
}

TEST(Event, InvolvedObjectFromAnyObject) {
  Json run = {{"apiVersion", "fairbench.dev/v1alpha1"},
              {"kind", "BenchmarkRun"},
              {"metadata", {{"name", "r"}, {"namespace", "ns"}, {"uid", "u"}, {"resourceVersion", "9"}}}};
  auto ref = ObjectReference::Of(run);
  EXPECT_EQ(ref.kind, "BenchmarkRun");
  EXPECT_EQ(ref.resource_version, "9");
  EXPECT_EQ(ObjectKey(run), "ns/r");
  auto owner = ControllerReference(run);
  EXPECT_TRUE(owner.controller);
  EXPECT_EQ(owner.uid, "u");
}

// Found by fuzz/watch_stream_fuzzer: the readers of watched objects used
// Json::value(), which throws when a field holds another type ("name": [],
// "metadata": "x") — an exception out of the informer's watch.
TEST(Objects, FieldsOfTheWrongTypeReadAsAbsentNotAsExceptions) {
  const Json odd = Json::parse(R"({"apiVersion": 1, "kind": ["Pod"], "metadata": {"name": [], "namespace": 7,
      "uid": {}, "resourceVersion": false}, "spec": {"nodeName": 3, "unschedulable": "yes", "clusterIP": []}})");
  EXPECT_EQ(ObjectKey(odd), "");
  const ObjectReference ref = ObjectReference::Of(odd);
  EXPECT_EQ(ref.kind, "");
  EXPECT_EQ(ref.name, "");
  const OwnerReference owner = ControllerReference(odd);
  EXPECT_EQ(owner.api_version, "");
  const Json not_meta = Json::parse(R"({"metadata": "x", "spec": "y"})");
  EXPECT_EQ(ObjectKey(not_meta), "");
  EXPECT_EQ(ObjectReference::Of(not_meta).name, "");
  EXPECT_EQ(ControllerReference(Json::array()).name, "");
  Pod pod;
  pod.spec = odd["spec"];
  EXPECT_EQ(pod.NodeName(), "");
  Node node;
  node.spec = odd["spec"];
  EXPECT_FALSE(node.Unschedulable());
  Service svc;
  svc.spec = odd["spec"];
  EXPECT_EQ(svc.ClusterIP(), "");
}

}  // namespace
}  // namespace fairbench::kube
