// KUBE-API.md §7: core/v1 Events for custom objects.
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
    InstallCrd();
  }
  FakeClock clock_;
};

TEST_F(Events, RecordedInTheObjectsNamespaceAndNamedAfterIt) {
  auto run = client_->Create(resources::BenchmarkRuns(), "default", BenchmarkRun("cpp-frameworks"));
  ASSERT_TRUE(run.ok());
  EventRecorder recorder(*client_, clock_, {"fairbench-controller", "node-1", "controller-0", 16, std::chrono::minutes(10)});
  ASSERT_TRUE(recorder.Normal(*run, "TargetDeployed", "drogon is ready on node-1").ok());
  auto events = EventClient(*client_).List("default");
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 1u);
  const Event& e = events->front();
  EXPECT_TRUE(std::regex_match(e.metadata.name, std::regex(R"(cpp-frameworks\.[0-9a-f]+)"))) << e.metadata.name;
  EXPECT_EQ(e.involved_object.kind, "BenchmarkRun");
  EXPECT_EQ(e.involved_object.api_version, "fairbench.dev/v1alpha1");
  EXPECT_EQ(e.involved_object.uid, (*run)["metadata"]["uid"]);
  EXPECT_EQ(e.involved_object.namespace_, "default");
  EXPECT_EQ(e.type, "Normal");
  EXPECT_EQ(e.reason, "TargetDeployed");
  EXPECT_EQ(e.source_component, "fairbench-controller");
  EXPECT_EQ(e.count, 1);
  EXPECT_EQ(e.first_timestamp, e.last_timestamp);
}

TEST_F(Events, RepeatsAreCountedOnOneEvent) {
  auto run = client_->Create(resources::BenchmarkRuns(), "default", BenchmarkRun("r1"));
  ASSERT_TRUE(run.ok());
  EventRecorder recorder(*client_, clock_);
  ASSERT_TRUE(recorder.Warning(*run, "TargetCrashed", "exit code 137").ok());
  clock_.Advance(std::chrono::seconds(30));
  ASSERT_TRUE(recorder.Warning(*run, "TargetCrashed", "exit code 137").ok());
  ASSERT_TRUE(recorder.Warning(*run, "TargetCrashed", "exit code 1").ok());
  auto events = EventClient(*client_).List("default");
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 2u);
  int32_t total = 0;
  for (const auto& e : *events) {
    total += e.count;
    if (e.message == "exit code 137") {
      EXPECT_EQ(e.count, 2);
      EXPECT_EQ(*e.last_timestamp - *e.first_timestamp, std::chrono::seconds(30));
    }
  }
  EXPECT_EQ(total, 3);
  // After the window a repeat starts a new event.
  clock_.Advance(std::chrono::minutes(11));
  ASSERT_TRUE(recorder.Warning(*run, "TargetCrashed", "exit code 137").ok());
  EXPECT_EQ(EventClient(*client_).List("default")->size(), 3u);
}

TEST_F(Events, DistinctEventsInTheSameInstantGetDistinctNames) {
  auto run = client_->Create(resources::BenchmarkRuns(), "default", BenchmarkRun("r1"));
  ASSERT_TRUE(run.ok());
  EventRecorder recorder(*client_, clock_);
  ASSERT_TRUE(recorder.Normal(*run, "A", "one").ok());
  ASSERT_TRUE(recorder.Normal(*run, "B", "two").ok());
  EXPECT_EQ(EventClient(*client_).List("default")->size(), 2u);
}

TEST_F(Events, ClusterScopedObjectsReportToDefault) {
  Json node = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "node-1"}}}};
  auto created = client_->Create(resources::Nodes(), "", node);
  ASSERT_TRUE(created.ok());
  EventRecorder recorder(*client_, clock_);
  ASSERT_TRUE(recorder.Normal(*created, "Pinned", "cores 0-3").ok());
  EXPECT_EQ(EventClient(*client_).List("default")->size(), 1u);
  // The server checks that a namespaced involved object lives with its event.
  Event wrong;
  wrong.metadata.namespace_ = "default";
  wrong.metadata.name = "x.1";
  wrong.involved_object = {"v1", "Pod", "p", "kube-system", "u", ""};
  EXPECT_EQ(EventClient(*client_).Create(wrong).reason(), Reason::kInvalid);
}

}  // namespace
}  // namespace fairbench::kube
