// KUBE-API.md §7: core/v1 Events for custom objects, recorded by the
// EventRecorder into the real kube-apiserver (each test in its own
// namespace; the tests' BenchmarkRun CRD).
#include <regex>

#include "controller/kube/event_recorder.h"
#include "controller/kube/typed_client.h"
#include "tests/kube/kube_test_env.h"

namespace fairbench::kube {
namespace {

using testenv::BenchmarkRun;

class Events : public testenv::KubeTest {
 protected:
  void SetUp() override {
    KubeTest::SetUp();
    if (HasFatalFailure()) return;
    InstallCrd();
  }
  ApiResult<Json> CreateRun(const std::string& name) {
    return client_->Create(testenv::TestRuns(), ns(), BenchmarkRun(name, 4, ns()));
  }
  FakeClock clock_;
};

// Catches: an event put anywhere but the object's namespace, a name that
// does not start with the object's, an involvedObject that does not point
// back at the object (kind, apiVersion, uid), or counts/timestamps that do
// not survive the real server's Event validation and storage.
TEST_F(Events, RecordedInTheObjectsNamespaceAndNamedAfterIt) {
  auto run = CreateRun("cpp-frameworks");
  ASSERT_TRUE(run.ok()) << run.error().ToString();
  EventRecorder recorder(*client_, clock_,
                         {"fairbench-controller", "node-1", "controller-0", 16, std::chrono::minutes(10)});
  auto recorded = recorder.Normal(*run, "TargetDeployed", "drogon is ready on node-1");
  ASSERT_TRUE(recorded.ok()) << recorded.error().ToString();
  auto events = EventClient(*client_).List(ns());
  ASSERT_TRUE(events.ok()) << events.error().ToString();
  ASSERT_EQ(events->size(), 1u);
  const Event& e = events->front();
  EXPECT_TRUE(std::regex_match(e.metadata.name, std::regex(R"(cpp-frameworks\.[0-9a-f]+)"))) << e.metadata.name;
  EXPECT_EQ(e.metadata.namespace_, ns());
  EXPECT_EQ(e.involved_object.kind, "BenchmarkRun");
  EXPECT_EQ(e.involved_object.api_version, testenv::kTestGroup + "/v1alpha1");
  EXPECT_EQ(e.involved_object.uid, (*run)["metadata"]["uid"]);
  EXPECT_EQ(e.involved_object.namespace_, ns());
  EXPECT_EQ(e.type, "Normal");
  EXPECT_EQ(e.reason, "TargetDeployed");
  EXPECT_EQ(e.message, "drogon is ready on node-1");
  EXPECT_EQ(e.source_component, "fairbench-controller");
  EXPECT_EQ(e.source_host, "node-1");
  EXPECT_EQ(e.reporting_instance, "controller-0");
  EXPECT_EQ(e.count, 1);
  ASSERT_TRUE(e.first_timestamp.has_value());
  EXPECT_EQ(e.first_timestamp, e.last_timestamp);
}

// Catches: a repeat recorded as a new Event instead of a merge patch of
// count and lastTimestamp on the first, a different message counted as a
// repeat, or a repeat after the aggregation window patched onto the old one.
TEST_F(Events, RepeatsAreCountedOnOneEvent) {
  auto run = CreateRun("r1");
  ASSERT_TRUE(run.ok()) << run.error().ToString();
  EventRecorder recorder(*client_, clock_);
  ASSERT_TRUE(recorder.Warning(*run, "TargetCrashed", "exit code 137").ok());
  clock_.Advance(std::chrono::seconds(30));
  ASSERT_TRUE(recorder.Warning(*run, "TargetCrashed", "exit code 137").ok());
  ASSERT_TRUE(recorder.Warning(*run, "TargetCrashed", "exit code 1").ok());
  auto events = EventClient(*client_).List(ns());
  ASSERT_TRUE(events.ok()) << events.error().ToString();
  ASSERT_EQ(events->size(), 2u);
  int32_t total = 0;
  for (const auto& e : *events) {
    total += e.count;
    if (e.message == "exit code 137") {
      EXPECT_EQ(e.count, 2);
      ASSERT_TRUE(e.first_timestamp && e.last_timestamp);
      EXPECT_EQ(*e.last_timestamp - *e.first_timestamp, std::chrono::seconds(30));
    }
  }
  EXPECT_EQ(total, 3);
  // After the window a repeat starts a new event.
  clock_.Advance(std::chrono::minutes(11));
  ASSERT_TRUE(recorder.Warning(*run, "TargetCrashed", "exit code 137").ok());
  EXPECT_EQ(EventClient(*client_).List(ns())->size(), 3u);
}

// Catches: two events of one instant given the same name (the second
// create meets the real server's 409 AlreadyExists) and one of them lost.
TEST_F(Events, DistinctEventsInTheSameInstantGetDistinctNames) {
  auto run = CreateRun("r1");
  ASSERT_TRUE(run.ok()) << run.error().ToString();
  EventRecorder recorder(*client_, clock_);
  ASSERT_TRUE(recorder.Normal(*run, "A", "one").ok());
  auto second = recorder.Normal(*run, "B", "two");
  ASSERT_TRUE(second.ok()) << second.error().ToString();
  auto events = EventClient(*client_).List(ns());
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 2u);
  EXPECT_NE((*events)[0].metadata.name, (*events)[1].metadata.name);
}

// Catches: an event about a cluster-scoped object (here the test's own
// Namespace) put anywhere but "default", or a recorder that does not
// report the server's refusal of an event whose namespaced involved object
// lives elsewhere.
TEST_F(Events, ClusterScopedObjectsReportToDefault) {
  auto namespace_object = client_->Get(resources::Namespaces(), "", ns());
  ASSERT_TRUE(namespace_object.ok()) << namespace_object.error().ToString();
  EventRecorder recorder(*client_, clock_);
  auto recorded = recorder.Normal(*namespace_object, "Pinned", "cores 0-3");
  ASSERT_TRUE(recorded.ok()) << recorded.error().ToString();
  // "default" is shared with every other test: only this namespace's event counts.
  ListOptions about_it;
  about_it.field_selector = "involvedObject.kind=Namespace,involvedObject.name=" + ns();
  auto events = client_->List(resources::Events(), "default", about_it);
  ASSERT_TRUE(events.ok()) << events.error().ToString();
  ASSERT_EQ(events->items.size(), 1u);
  EXPECT_EQ(events->items[0]["reason"], "Pinned");
  EXPECT_EQ(events->items[0]["involvedObject"]["uid"], (*namespace_object)["metadata"]["uid"]);
  EXPECT_FALSE(events->items[0]["involvedObject"].contains("namespace"));
  for (const auto& e : events->items) {
    EXPECT_TRUE(client_->Delete(resources::Events(), "default", e["metadata"]["name"].get<std::string>()).ok());
  }
  EXPECT_EQ(EventClient(*client_).List(ns())->size(), 0u);

  // kube-apiserver checks that a namespaced involved object lives with its event.
  Event wrong;
  wrong.metadata.namespace_ = ns();
  wrong.metadata.name = "x.1";
  wrong.involved_object = {"v1", "Pod", "p", "kube-system", "u", ""};
  auto refused = EventClient(*client_).Create(wrong);
  ASSERT_EQ(refused.reason(), Reason::kInvalid) << (refused.ok() ? "created" : refused.error().ToString());
  ASSERT_EQ(refused.error().causes.size(), 1u);
  EXPECT_EQ(refused.error().causes[0].field, "involvedObject.namespace");
  EXPECT_EQ(refused.error().message,
            "Event \"x.1\" is invalid: involvedObject.namespace: Invalid value: \"kube-system\": does not match "
            "event.namespace");
}

}  // namespace
}  // namespace fairbench::kube
