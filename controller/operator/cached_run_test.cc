// CachedRun: the reconciler's one reading of a cached BenchmarkRun. The
// reconcile's steps (tested against a control plane in reconciler_test)
// decide on these fields alone, so each is checked here against the JSON
// the API server stores.
#include "controller/operator/cached_run.h"

#include <gtest/gtest.h>

#include "api/well_known.h"

namespace fairbench::controller {
namespace {

using kube::Json;

Json Object() {
  return Json::parse(R"({
    "apiVersion": "fairbench.dev/v1alpha1",
    "kind": "BenchmarkRun",
    "metadata": {"name": "hello", "namespace": "bench", "uid": "u-1", "generation": 3,
                 "creationTimestamp": "2026-01-02T03:04:05Z"},
    "spec": {
      "targets": [{"name": "nginx", "image": "example.org/nginx:1", "port": 8080}],
      "scenarios": [{"name": "hello", "request": {"path": "/"}}]
    }
  })");
}

// Catches: the view reading the finalizer, the cancel annotation, the phase
// or the stored id from another place than the API server writes them, or
// not giving the steps the model's reading of the whole object.
TEST(CachedRunTest, ReadsWhatTheStepsDecideOn) {
  Json o = Object();
  o["metadata"]["finalizers"] = Json::array({"other.example/keep", api::kFinalizer});
  o["metadata"]["annotations"] = {{api::annotation::kCancel, "true"}};
  o["status"] = {{"phase", "Running"}, {"stored", {{"id", 42}, {"store", "results"}}}};
  const Result<CachedRun> view = CachedRun::Parse(o);
  ASSERT_TRUE(view.ok()) << view.status().message();
  EXPECT_EQ(view->meta.Key(), "bench/hello");
  EXPECT_EQ(view->meta.generation, 3);
  EXPECT_TRUE(view->has_finalizer);
  EXPECT_TRUE(view->cancel_requested);
  EXPECT_EQ(view->phase, api::RunPhase::kRunning);
  EXPECT_TRUE(view->stored);
  ASSERT_TRUE(view->run.ok()) << view->run.status().message();
  EXPECT_EQ(view->run->spec.targets.at(0).name, "nginx");
  EXPECT_EQ(view->run->status.phase, api::RunPhase::kRunning);
  // The finalizer's updates start from the object as cached.
  EXPECT_EQ(view->object, o);
}

// Catches: a new run (no status, no finalizer) read as queued or stored,
// `cancel: "false"` read as a cancel, or a stored id of 0 (the store
// refused it: status.stored.error says why) read as stored, so that the
// run would never be offered to the result store again.
TEST(CachedRunTest, ANewRunHasNoPhaseNoFinalizerAndNothingStored) {
  Json o = Object();
  o["metadata"]["annotations"] = {{api::annotation::kCancel, "false"}};
  Result<CachedRun> view = CachedRun::Parse(o);
  ASSERT_TRUE(view.ok()) << view.status().message();
  EXPECT_FALSE(view->has_finalizer);
  EXPECT_FALSE(view->cancel_requested);
  EXPECT_EQ(view->phase, std::nullopt);
  EXPECT_FALSE(view->stored);

  o["status"] = {{"phase", "Succeeded"}, {"stored", {{"id", 0}, {"error", "store unreachable"}}}};
  view = CachedRun::Parse(o);
  ASSERT_TRUE(view.ok()) << view.status().message();
  EXPECT_EQ(view->phase, api::RunPhase::kSucceeded);
  EXPECT_FALSE(view->stored);
}

// Catches: a spec the model refuses making the whole view fail, so that
// the run could not be deleted or marked Failed (InvalidSpec) naming its
// field; and an object without readable metadata read as a run.
TEST(CachedRunTest, ARefusedSpecStillHasItsMetadataAndPhase) {
  Json o = Object();
  o["metadata"]["deletionTimestamp"] = "2026-01-02T03:05:00Z";
  o["spec"]["load"] = {{"threads", "four"}};
  o["status"] = {{"phase", "Queued"}};
  const Result<CachedRun> view = CachedRun::Parse(o);
  ASSERT_TRUE(view.ok()) << view.status().message();
  EXPECT_TRUE(view->meta.deletion_timestamp.has_value());
  EXPECT_EQ(view->phase, api::RunPhase::kQueued);
  ASSERT_FALSE(view->run.ok());
  EXPECT_NE(view->run.status().message().find("spec.load.threads"), std::string::npos) << view->run.status().message();

  o["metadata"]["generation"] = "three";
  EXPECT_FALSE(CachedRun::Parse(o).ok());
}

}  // namespace
}  // namespace fairbench::controller
