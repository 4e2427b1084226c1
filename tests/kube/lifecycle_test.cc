// KUBE-API.md §4 and §9 (pod deletion): generation, status subresource,
// finalizers, ownerReferences and garbage collection, graceful pod deletion.
#include "common/api/time_text.h"
#include "tests/kube/kube_test_env.h"

namespace fairbench::kube {
namespace {

using testenv::BenchmarkRun;
using testenv::ConfigMapJson;
using testenv::Eventually;
using testenv::Rv;

class Lifecycle : public testenv::KubeTest {
 protected:
  void SetUp() override {
    KubeTest::SetUp();
    InstallCrd();
  }
  Json Merge(const std::string& name, const Json& patch, std::string_view sub = {}) {
    auto r = client_->Patch(runs_, "default", name, PatchType::kMerge, patch.dump(), {}, sub);
    EXPECT_TRUE(r.ok()) << r.error().ToString();
    return r.ok() ? *r : Json();
  }
  ResourceType runs_ = resources::BenchmarkRuns();
};

TEST_F(Lifecycle, GenerationCountsSpecChangesOnly) {
  auto r = client_->Create(runs_, "default", BenchmarkRun("r1"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["metadata"]["generation"], 1);
  EXPECT_EQ(Merge("r1", {{"metadata", {{"labels", {{"a", "b"}}}, {"annotations", {{"c", "d"}}}}}})["metadata"]["generation"], 1);
  EXPECT_EQ(Merge("r1", {{"metadata", {{"finalizers", {"fairbench.dev/cleanup"}}}}})["metadata"]["generation"], 1);
  EXPECT_EQ(Merge("r1", {{"status", {{"phase", "Running"}}}}, "status")["metadata"]["generation"], 1);
  EXPECT_EQ(Merge("r1", {{"spec", {{"load", {{"threads", 9}}}}}})["metadata"]["generation"], 2);
  auto deleting = client_->Delete(runs_, "default", "r1");
  ASSERT_TRUE(deleting.ok());
  EXPECT_EQ((*deleting)["metadata"]["generation"], 3);  // deletionTimestamp counts
}

TEST_F(Lifecycle, StatusSubresource) {
  Json with_status = BenchmarkRun("r1");
  with_status["status"] = {{"phase", "Succeeded"}};
  auto created = client_->Create(runs_, "default", with_status);
  ASSERT_TRUE(created.ok());
  EXPECT_FALSE(created->contains("status"));  // POST drops status

  auto st = client_->UpdateStatus(runs_, [&] {
    Json o = *created;
    o["status"] = {{"phase", "Running"}, {"observedGeneration", 1}};
    o["spec"]["load"]["threads"] = 99;  // ignored on /status
    return o;
  }());
  ASSERT_TRUE(st.ok()) << st.error().ToString();
  EXPECT_EQ((*st)["status"]["phase"], "Running");
  EXPECT_EQ((*st)["spec"]["load"]["threads"], 4);
  EXPECT_EQ((*st)["metadata"]["generation"], 1);
  EXPECT_NE(Rv(*st), Rv(*created));

  // The RV precondition applies to /status too.
  Json stale = *created;
  stale["status"] = {{"phase", "Failed"}};
  EXPECT_EQ(client_->UpdateStatus(runs_, stale).reason(), Reason::kConflict);

  // A write of the main resource keeps the stored status.
  Json main = *st;
  main["status"] = {{"phase", "Cancelled"}};
  main["spec"]["load"]["threads"] = 5;
  auto updated = client_->Update(runs_, main);
  ASSERT_TRUE(updated.ok());
  EXPECT_EQ((*updated)["status"]["phase"], "Running");
  EXPECT_EQ((*updated)["spec"]["load"]["threads"], 5);

  auto whole = client_->GetStatus(runs_, "default", "r1");
  ASSERT_TRUE(whole.ok());
  EXPECT_TRUE(whole->contains("spec"));  // GET /status returns the whole object

  // Invalid status values are rejected like any other field.
  Json bad = *updated;
  bad["status"] = {{"phase", "Sideways"}};
  EXPECT_EQ(client_->UpdateStatus(runs_, bad).reason(), Reason::kInvalid);
}

TEST_F(Lifecycle, StatusIsNotFoundWhenTheSubresourceIsOff) {
  Json crd = testenv::LoadYaml("benchmarkrun-crd.yaml");
  crd["metadata"]["name"] = "widgets.example.com";
  crd["spec"]["group"] = "example.com";
  crd["spec"]["names"] = {{"plural", "widgets"}, {"singular", "widget"}, {"kind", "Widget"}, {"listKind", "WidgetList"}};
  crd["spec"]["versions"][0].erase("subresources");
  ASSERT_TRUE(client_->Create(resources::CustomResourceDefinitions(), "", crd).ok());
  ResourceType widgets{"example.com", "v1alpha1", "Widget", "widgets", Scope::kNamespaced};
  Json w = BenchmarkRun("w1");
  w["apiVersion"] = "example.com/v1alpha1";
  w["kind"] = "Widget";
  w["status"] = {{"phase", "Queued"}};
  auto created = client_->Create(widgets, "default", w);
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  EXPECT_EQ((*created)["status"]["phase"], "Queued");  // kept: no subresource
  EXPECT_EQ(client_->GetStatus(widgets, "default", "w1").reason(), Reason::kNotFound);
  Json changed = *created;
  changed["status"]["phase"] = "Running";
  auto updated = client_->Update(widgets, changed);
  ASSERT_TRUE(updated.ok());
  EXPECT_EQ((*updated)["metadata"]["generation"], 2);  // status is content here
}

TEST_F(Lifecycle, Finalizers) {
  Json r = BenchmarkRun("r1");
  r["metadata"]["finalizers"] = {"fairbench.dev/cleanup", "fairbench.dev/report"};
  ASSERT_TRUE(client_->Create(runs_, "default", r).ok());
  auto deleting = client_->Delete(runs_, "default", "r1");
  ASSERT_TRUE(deleting.ok());
  EXPECT_EQ((*deleting)["kind"], "BenchmarkRun");
  EXPECT_TRUE((*deleting)["metadata"].contains("deletionTimestamp"));
  auto again = client_->Delete(runs_, "default", "r1");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(Rv(*again), Rv(*deleting));

  auto added = client_->Patch(runs_, "default", "r1", PatchType::kMerge,
                              R"({"metadata":{"finalizers":["fairbench.dev/cleanup","fairbench.dev/report","x.dev/new"]}})");
  ASSERT_EQ(added.reason(), Reason::kInvalid);
  EXPECT_NE(added.error().message.find("no new finalizers can be added"), std::string::npos);
  auto cleared = Merge("r1", {{"metadata", {{"deletionTimestamp", nullptr}}}});
  EXPECT_TRUE(cleared["metadata"].contains("deletionTimestamp"));  // cannot be cleared

  Merge("r1", {{"metadata", {{"finalizers", {"fairbench.dev/report"}}}}});
  ASSERT_TRUE(client_->Get(runs_, "default", "r1").ok());
  auto last = client_->Patch(runs_, "default", "r1", PatchType::kMerge, R"({"metadata":{"finalizers":null}})");
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(client_->Get(runs_, "default", "r1").reason(), Reason::kNotFound);
}

TEST_F(Lifecycle, OwnerReferencesAreValidated) {
  auto owner = client_->Create(runs_, "default", BenchmarkRun("owner"));
  ASSERT_TRUE(owner.ok());
  Json cm = ConfigMapJson("dep", {{"k", "v"}});
  cm["metadata"]["ownerReferences"] = {{{"apiVersion", "fairbench.dev/v1alpha1"}, {"kind", "BenchmarkRun"}, {"name", "owner"}}};
  EXPECT_EQ(client_->Create(resources::ConfigMaps(), "default", cm).reason(), Reason::kInvalid);
  Json ref = {{"apiVersion", "fairbench.dev/v1alpha1"},
              {"kind", "BenchmarkRun"},
              {"name", "owner"},
              {"uid", (*owner)["metadata"]["uid"]},
              {"controller", true}};
  cm["metadata"]["ownerReferences"] = {ref, ref};
  EXPECT_EQ(client_->Create(resources::ConfigMaps(), "default", cm).reason(), Reason::kInvalid);
}

class GarbageCollection : public Lifecycle {
 protected:
  // An owner with two dependents (one blocking owner deletion).
  Json MakeFamily() {
    auto owner = client_->Create(runs_, "default", BenchmarkRun("owner"));
    EXPECT_TRUE(owner.ok());
    for (const char* name : {"report", "config"}) {
      Json cm = ConfigMapJson(name, {{"k", "v"}});
      Json ref = {{"apiVersion", "fairbench.dev/v1alpha1"},
                  {"kind", "BenchmarkRun"},
                  {"name", "owner"},
                  {"uid", (*owner)["metadata"]["uid"]},
                  {"controller", true},
                  {"blockOwnerDeletion", std::string(name) == "report"}};
      cm["metadata"]["ownerReferences"] = {ref};
      if (std::string(name) == "report") cm["metadata"]["finalizers"] = {"fairbench.dev/upload"};
      EXPECT_TRUE(client_->Create(resources::ConfigMaps(), "default", cm).ok());
    }
    return *owner;
  }
  bool Exists(const ResourceType& r, const char* name) { return client_->Get(r, "default", name).ok(); }
};

TEST_F(GarbageCollection, BackgroundDeletesDependentsAfterTheOwner) {
  MakeFamily();
  DeleteOptions o;
  o.propagation = PropagationPolicy::kBackground;
  ASSERT_TRUE(client_->Delete(runs_, "default", "owner", o).ok());
  EXPECT_FALSE(Exists(runs_, "owner"));
  ASSERT_TRUE(Eventually([&] { return !Exists(resources::ConfigMaps(), "config"); }));
  // A dependent with a finalizer is terminating until it is released.
  auto report = client_->Get(resources::ConfigMaps(), "default", "report");
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE((*report)["metadata"].contains("deletionTimestamp"));
  ASSERT_TRUE(client_->Patch(resources::ConfigMaps(), "default", "report", PatchType::kMerge,
                             R"({"metadata":{"finalizers":null}})").ok());
  EXPECT_FALSE(Exists(resources::ConfigMaps(), "report"));
}

TEST_F(GarbageCollection, ForegroundWaitsForBlockingDependents) {
  MakeFamily();
  DeleteOptions o;
  o.propagation = PropagationPolicy::kForeground;
  auto deleting = client_->Delete(runs_, "default", "owner", o);
  ASSERT_TRUE(deleting.ok());
  EXPECT_EQ((*deleting)["metadata"]["finalizers"][0], "foregroundDeletion");
  ASSERT_TRUE(Eventually([&] { return !Exists(resources::ConfigMaps(), "config"); }));
  api().CollectGarbage();
  EXPECT_TRUE(Exists(runs_, "owner"));  // "report" (blockOwnerDeletion) still terminating
  ASSERT_TRUE(client_->Patch(resources::ConfigMaps(), "default", "report", PatchType::kMerge,
                             R"({"metadata":{"finalizers":null}})").ok());
  ASSERT_TRUE(Eventually([&] { return !Exists(runs_, "owner"); }));
}

TEST_F(GarbageCollection, OrphanKeepsDependentsWithoutTheReference) {
  MakeFamily();
  DeleteOptions o;
  o.propagation = PropagationPolicy::kOrphan;
  ASSERT_TRUE(client_->Delete(runs_, "default", "owner", o).ok());
  ASSERT_TRUE(Eventually([&] { return !Exists(runs_, "owner"); }));
  auto config = client_->Get(resources::ConfigMaps(), "default", "config");
  ASSERT_TRUE(config.ok());
  EXPECT_FALSE((*config)["metadata"].contains("ownerReferences"));
}

TEST_F(Lifecycle, GracefulPodDeletionEndsThroughTheKubeletHook) {
  auto pods = resources::Pods();
  Json pod = {{"metadata", {{"name", "target"}}},
              {"spec",
               {{"nodeName", "node-1"},
                {"terminationGracePeriodSeconds", 20},
                {"containers",
                 {{{"name", "server"},
                   {"image", "drogon"},
                   {"resources", {{"limits", {{"cpu", "4"}, {"memory", "1Gi"}}}}}}}}}}};
  auto created = client_->Create(pods, "default", pod);
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  EXPECT_EQ((*created)["status"]["phase"], "Pending");
  EXPECT_EQ((*created)["status"]["qosClass"], "Guaranteed");
  auto deleting = client_->Delete(pods, "default", "target");
  ASSERT_TRUE(deleting.ok());
  EXPECT_EQ((*deleting)["metadata"]["deletionGracePeriodSeconds"], 20);
  auto ts = api::ParseTime((*deleting)["metadata"]["deletionTimestamp"].get<std::string>());
  ASSERT_TRUE(ts.ok());
  EXPECT_GT(*ts, std::chrono::system_clock::now() + std::chrono::seconds(15));
  EXPECT_TRUE(client_->Get(pods, "default", "target").ok());
  ASSERT_TRUE(api().FinishPodTermination("default", "target").ok());
  EXPECT_EQ(client_->Get(pods, "default", "target").reason(), Reason::kNotFound);

  // gracePeriodSeconds=0 removes it at once; an unscheduled pod goes at once too.
  ASSERT_TRUE(client_->Create(pods, "default", pod).ok());
  DeleteOptions now;
  now.grace_period_seconds = 0;
  ASSERT_TRUE(client_->Delete(pods, "default", "target", now).ok());
  EXPECT_EQ(client_->Get(pods, "default", "target").reason(), Reason::kNotFound);
  pod["spec"].erase("nodeName");
  ASSERT_TRUE(client_->Create(pods, "default", pod).ok());
  ASSERT_TRUE(client_->Delete(pods, "default", "target").ok());
  EXPECT_EQ(client_->Get(pods, "default", "target").reason(), Reason::kNotFound);
}

TEST_F(Lifecycle, DeletePreconditions) {
  auto r = client_->Create(runs_, "default", BenchmarkRun("r1"));
  ASSERT_TRUE(r.ok());
  DeleteOptions wrong_uid;
  wrong_uid.precondition_uid = "not-it";
  EXPECT_EQ(client_->Delete(runs_, "default", "r1", wrong_uid).reason(), Reason::kConflict);
  DeleteOptions stale;
  stale.precondition_resource_version = "1";
  EXPECT_EQ(client_->Delete(runs_, "default", "r1", stale).reason(), Reason::kConflict);
  DeleteOptions right;
  right.precondition_uid = (*r)["metadata"]["uid"];
  right.precondition_resource_version = Rv(*r);
  EXPECT_TRUE(client_->Delete(runs_, "default", "r1", right).ok());
}

}  // namespace
}  // namespace fairbench::kube
