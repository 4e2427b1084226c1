// KUBE-API.md §4 and §9 (pod deletion): generation, status subresource,
// finalizers, ownerReferences and garbage collection, graceful pod deletion,
// as Kubernetes' own control plane does them (the shared cluster: its
// kube-apiserver, and kube-controller-manager's garbage collector).
#include "api/time_text.h"
#include "tests/kube/kube_test_env.h"

namespace fairbench::kube {
namespace {

using testenv::BenchmarkRun;
using testenv::ConfigMapJson;
using testenv::Eventually;
using testenv::Rv;

// Removes every finalizer from the objects of `r` in `ns`, so that the
// test's namespace can go once the test is over (a finalizer nobody
// releases would keep it terminating for good).
void ReleaseFinalizers(Client& client, const ResourceType& r, const std::string& ns) {
  auto list = client.List(r, ns);
  if (!list.ok()) return;
  for (const auto& o : list->items) {
    if (o["metadata"].value("finalizers", Json::array()).empty()) continue;
    (void)client.Patch(r, ns, o["metadata"]["name"].get<std::string>(), PatchType::kMerge,
                       R"({"metadata":{"finalizers":null}})");
  }
}

class Lifecycle : public testenv::KubeTest {
 protected:
  void SetUp() override {
    KubeTest::SetUp();
    InstallCrd();
  }
  void TearDown() override {
    if (client_) {
      ReleaseFinalizers(*client_, runs_, ns());
      ReleaseFinalizers(*client_, resources::ConfigMaps(), ns());
    }
    KubeTest::TearDown();
  }
  Json Run(const std::string& name, int threads = 4) { return BenchmarkRun(name, threads, ns()); }
  Json Merge(const std::string& name, const Json& patch, std::string_view sub = {}) {
    auto r = client_->Patch(runs_, ns(), name, PatchType::kMerge, patch.dump(), {}, sub);
    EXPECT_TRUE(r.ok()) << r.error().ToString();
    return r.ok() ? *r : Json();
  }
  ResourceType runs_ = testenv::TestRuns();
};

// Catches: a client that sends a status write to the main resource (or a
// spec write to /status), which the server would count as a spec change.
TEST_F(Lifecycle, GenerationCountsSpecChangesOnly) {
  auto r = client_->Create(runs_, ns(), Run("r1"));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ((*r)["metadata"]["generation"], 1);
  EXPECT_EQ(
      Merge("r1", {{"metadata", {{"labels", {{"a", "b"}}}, {"annotations", {{"c", "d"}}}}}})["metadata"]["generation"],
      1);
  EXPECT_EQ(Merge("r1", {{"metadata", {{"finalizers", {"fairbench.dev/cleanup"}}}}})["metadata"]["generation"], 1);
  EXPECT_EQ(Merge("r1", {{"status", {{"phase", "Running"}}}}, "status")["metadata"]["generation"], 1);
  EXPECT_EQ(Merge("r1", {{"spec", {{"load", {{"threads", 9}}}}}})["metadata"]["generation"], 2);
  auto deleting = client_->Delete(runs_, ns(), "r1");
  ASSERT_TRUE(deleting.ok()) << deleting.error().ToString();
  EXPECT_EQ((*deleting)["metadata"]["generation"], 3);  // deletionTimestamp counts
}

// Catches: UpdateStatus/GetStatus addressing the main resource instead of
// /status, or an update that drops the RV precondition.
TEST_F(Lifecycle, StatusSubresource) {
  Json with_status = Run("r1");
  with_status["status"] = {{"phase", "Succeeded"}};
  auto created = client_->Create(runs_, ns(), with_status);
  ASSERT_TRUE(created.ok()) << created.error().ToString();
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
  ASSERT_TRUE(updated.ok()) << updated.error().ToString();
  EXPECT_EQ((*updated)["status"]["phase"], "Running");
  EXPECT_EQ((*updated)["spec"]["load"]["threads"], 5);

  auto whole = client_->GetStatus(runs_, ns(), "r1");
  ASSERT_TRUE(whole.ok()) << whole.error().ToString();
  EXPECT_TRUE(whole->contains("spec"));  // GET /status returns the whole object

  // Invalid status values are rejected like any other field.
  Json bad = *updated;
  bad["status"] = {{"phase", "Sideways"}};
  EXPECT_EQ(client_->UpdateStatus(runs_, bad).reason(), Reason::kInvalid);
}

// Catches: GetStatus that falls back to the main resource when /status is
// not served (it must report NotFound, as the server does).
TEST_F(Lifecycle, StatusIsNotFoundWhenTheSubresourceIsOff) {
  // A second test CRD without the status subresource. Like the tests' main
  // CRD it stays in the shared cluster: a CRD created and deleted again
  // and again would keep kube-controller-manager's garbage collector
  // re-syncing its informers.
  const std::string name = "nostatusruns." + testenv::kTestGroup;
  Json crd = testenv::LoadYaml("benchmarkrun-crd.yaml");
  crd["metadata"]["name"] = name;
  crd["spec"]["names"] = {{"plural", "nostatusruns"},
                          {"singular", "nostatusrun"},
                          {"kind", "NoStatusRun"},
                          {"listKind", "NoStatusRunList"}};
  crd["spec"]["versions"][0].erase("subresources");
  crd["spec"]["versions"][0].erase("additionalPrinterColumns");
  auto crds = resources::CustomResourceDefinitions();
  auto installed = client_->Create(crds, "", crd);
  ASSERT_TRUE(installed.ok() || installed.reason() == Reason::kAlreadyExists) << installed.error().ToString();
  ResourceType no_status{testenv::kTestGroup, "v1alpha1", "NoStatusRun", "nostatusruns", Scope::kNamespaced};
  Json w = Run("w1");
  w["kind"] = "NoStatusRun";
  w["status"] = {{"phase", "Queued"}};
  ApiResult<Json> created = ApiError{};
  // The new resource is served a moment after the CRD is established.
  ASSERT_TRUE(
      Eventually([&] { return (created = client_->Create(no_status, ns(), w)).ok(); }, std::chrono::seconds(30)))
      << created.error().ToString();
  EXPECT_EQ((*created)["status"]["phase"], "Queued");  // kept: no subresource
  auto status = client_->GetStatus(no_status, ns(), "w1");
  EXPECT_EQ(status.reason(), Reason::kNotFound) << (status.ok() ? status->dump() : status.error().ToString());
  Json changed = *created;
  changed["status"]["phase"] = "Running";
  auto updated = client_->Update(no_status, changed);
  ASSERT_TRUE(updated.ok()) << updated.error().ToString();
  EXPECT_EQ((*updated)["status"]["phase"], "Running");
  EXPECT_EQ((*updated)["metadata"]["generation"], 2);  // status is content here
}

// Catches: Delete that reports an object held by finalizers as gone (it is
// returned, with deletionTimestamp), or a client that cannot remove the
// last finalizer with a merge patch of null.
TEST_F(Lifecycle, Finalizers) {
  Json r = Run("r1");
  r["metadata"]["finalizers"] = {"fairbench.dev/cleanup", "fairbench.dev/report"};
  ASSERT_TRUE(client_->Create(runs_, ns(), r).ok());
  auto deleting = client_->Delete(runs_, ns(), "r1");
  ASSERT_TRUE(deleting.ok()) << deleting.error().ToString();
  EXPECT_EQ((*deleting)["kind"], "BenchmarkRun");
  EXPECT_TRUE((*deleting)["metadata"].contains("deletionTimestamp"));
  auto again = client_->Delete(runs_, ns(), "r1");
  ASSERT_TRUE(again.ok()) << again.error().ToString();
  EXPECT_EQ((*again)["kind"], "BenchmarkRun");
  EXPECT_EQ(Rv(*again), Rv(*deleting));

  auto added =
      client_->Patch(runs_, ns(), "r1", PatchType::kMerge,
                     R"({"metadata":{"finalizers":["fairbench.dev/cleanup","fairbench.dev/report","x.dev/new"]}})");
  ASSERT_EQ(added.reason(), Reason::kInvalid) << added.error().ToString();
  EXPECT_NE(added.error().message.find("no new finalizers can be added if the object is being deleted"),
            std::string::npos)
      << added.error().message;
  auto cleared = Merge("r1", {{"metadata", {{"deletionTimestamp", nullptr}}}});
  EXPECT_TRUE(cleared["metadata"].contains("deletionTimestamp"));  // cannot be cleared

  Merge("r1", {{"metadata", {{"finalizers", {"fairbench.dev/report"}}}}});
  ASSERT_TRUE(client_->Get(runs_, ns(), "r1").ok());
  auto last = client_->Patch(runs_, ns(), "r1", PatchType::kMerge, R"({"metadata":{"finalizers":null}})");
  ASSERT_TRUE(last.ok()) << last.error().ToString();
  EXPECT_EQ(client_->Get(runs_, ns(), "r1").reason(), Reason::kNotFound);
}

// Catches: an ownerReference error answered as anything but 422 Invalid
// (the controller would retry a request that can never succeed).
TEST_F(Lifecycle, OwnerReferencesAreValidated) {
  auto owner = client_->Create(runs_, ns(), Run("owner"));
  ASSERT_TRUE(owner.ok()) << owner.error().ToString();
  auto second = client_->Create(runs_, ns(), Run("second"));
  ASSERT_TRUE(second.ok()) << second.error().ToString();
  Json cm = ConfigMapJson("dep", {{"k", "v"}});
  cm["metadata"]["ownerReferences"] = {
      {{"apiVersion", testenv::kTestGroup + "/v1alpha1"}, {"kind", "BenchmarkRun"}, {"name", "owner"}}};
  auto no_uid = client_->Create(resources::ConfigMaps(), ns(), cm);
  ASSERT_EQ(no_uid.reason(), Reason::kInvalid);
  EXPECT_EQ(no_uid.error().message,
            "ConfigMap \"dep\" is invalid: metadata.ownerReferences[0].uid: Required value: must not be empty");
  auto ref = [&](const Json& o) {
    return Json{{"apiVersion", testenv::kTestGroup + "/v1alpha1"},
                {"kind", "BenchmarkRun"},
                {"name", o["metadata"]["name"]},
                {"uid", o["metadata"]["uid"]},
                {"controller", true}};
  };
  // (The same reference twice is no error: the real server drops the
  // duplicate, with a warning.)
  cm["metadata"]["ownerReferences"] = {ref(*owner), ref(*second)};
  auto two_controllers = client_->Create(resources::ConfigMaps(), ns(), cm);
  ASSERT_EQ(two_controllers.reason(), Reason::kInvalid);
  EXPECT_NE(two_controllers.error().message.find("Only one reference can have Controller set to true"),
            std::string::npos)
      << two_controllers.error().message;
}

// The garbage collector of kube-controller-manager: usually it acts within
// a second, but it may need a while to watch a newly installed CRD (its
// discovery resyncs every 30 s) or to retry an object it failed on.
constexpr auto kGcTimeout = std::chrono::seconds(60);

class GarbageCollection : public Lifecycle {
 protected:
  // An owner with two dependents (one blocking owner deletion).
  Json MakeFamily() {
    auto owner = client_->Create(runs_, ns(), Run("owner"));
    EXPECT_TRUE(owner.ok()) << owner.error().ToString();
    for (const char* name : {"report", "config"}) {
      Json cm = ConfigMapJson(name, {{"k", "v"}});
      Json ref = {{"apiVersion", testenv::kTestGroup + "/v1alpha1"},
                  {"kind", "BenchmarkRun"},
                  {"name", "owner"},
                  {"uid", (*owner)["metadata"]["uid"]},
                  {"controller", true},
                  {"blockOwnerDeletion", std::string(name) == "report"}};
      cm["metadata"]["ownerReferences"] = {ref};
      if (std::string(name) == "report") cm["metadata"]["finalizers"] = {"fairbench.dev/upload"};
      auto created = client_->Create(resources::ConfigMaps(), ns(), cm);
      EXPECT_TRUE(created.ok()) << created.error().ToString();
    }
    // The garbage collector learns of objects through its informers, and
    // acts on an owner's deletion for the dependents it knows of then. A
    // barrier: a ConfigMap created after the family whose owner does not
    // exist, which the collector deletes once it has seen it, and so (one
    // informer, in order) the family's ConfigMaps before it.
    Json probe = ConfigMapJson("gc-barrier", {{"k", "v"}});
    probe["metadata"]["ownerReferences"] = {{{"apiVersion", testenv::kTestGroup + "/v1alpha1"},
                                             {"kind", "BenchmarkRun"},
                                             {"name", "never-created"},
                                             {"uid", GhostUid()}}};
    EXPECT_TRUE(client_->Create(resources::ConfigMaps(), ns(), probe).ok());
    EXPECT_TRUE(Eventually([&] { return !Exists(resources::ConfigMaps(), "gc-barrier"); }, kGcTimeout));
    return *owner;
  }
  bool Exists(const ResourceType& r, const char* name) { return client_->Get(r, ns(), name).ok(); }
  // A uid no object has, one for each test.
  std::string GhostUid() {
    char tail[13];
    std::snprintf(tail, sizeof tail, "%012llx",
                  static_cast<unsigned long long>(std::hash<std::string>{}(ns()) & 0xffffffffffffULL));
    return std::string("00000000-0000-0000-0000-") + tail;
  }
  bool Terminating(const ResourceType& r, const char* name) {
    auto o = client_->Get(r, ns(), name);
    return o.ok() && (*o)["metadata"].contains("deletionTimestamp");
  }
};

// Catches: a Background delete sent as Orphan (the dependents would stay)
// or with a misspelt propagationPolicy (the server refuses the delete).
TEST_F(GarbageCollection, BackgroundDeletesDependentsAfterTheOwner) {
  MakeFamily();
  DeleteOptions o;
  o.propagation = PropagationPolicy::kBackground;
  ASSERT_TRUE(client_->Delete(runs_, ns(), "owner", o).ok());
  EXPECT_FALSE(Exists(runs_, "owner"));
  ASSERT_TRUE(Eventually([&] { return !Exists(resources::ConfigMaps(), "config"); }, kGcTimeout));
  // A dependent with a finalizer is terminating until it is released.
  ASSERT_TRUE(Eventually([&] { return Terminating(resources::ConfigMaps(), "report"); }, kGcTimeout));
  ASSERT_TRUE(
      client_->Patch(resources::ConfigMaps(), ns(), "report", PatchType::kMerge, R"({"metadata":{"finalizers":null}})")
          .ok());
  EXPECT_FALSE(Exists(resources::ConfigMaps(), "report"));
}

// Catches: Foreground sent as Background (the owner would go at once,
// without its foregroundDeletion finalizer).
TEST_F(GarbageCollection, ForegroundWaitsForBlockingDependents) {
  MakeFamily();
  DeleteOptions o;
  o.propagation = PropagationPolicy::kForeground;
  auto deleting = client_->Delete(runs_, ns(), "owner", o);
  ASSERT_TRUE(deleting.ok()) << deleting.error().ToString();
  EXPECT_EQ((*deleting)["metadata"]["finalizers"][0], "foregroundDeletion");
  ASSERT_TRUE(Eventually([&] { return !Exists(resources::ConfigMaps(), "config"); }, kGcTimeout));
  // "report" (blockOwnerDeletion) is terminating, held by its finalizer:
  // the owner waits for it.
  ASSERT_TRUE(Eventually([&] { return Terminating(resources::ConfigMaps(), "report"); }, kGcTimeout));
  EXPECT_TRUE(Terminating(runs_, "owner"));
  ASSERT_TRUE(
      client_->Patch(resources::ConfigMaps(), ns(), "report", PatchType::kMerge, R"({"metadata":{"finalizers":null}})")
          .ok());
  ASSERT_TRUE(Eventually([&] { return !Exists(runs_, "owner"); }, kGcTimeout));
}

// Catches: Orphan sent as the default policy (the dependents would be
// deleted with their owner).
TEST_F(GarbageCollection, OrphanKeepsDependentsWithoutTheReference) {
  MakeFamily();
  DeleteOptions o;
  o.propagation = PropagationPolicy::kOrphan;
  auto deleting = client_->Delete(runs_, ns(), "owner", o);
  ASSERT_TRUE(deleting.ok()) << deleting.error().ToString();
  ASSERT_TRUE(Eventually([&] { return !Exists(runs_, "owner"); }, kGcTimeout));
  for (const char* name : {"config", "report"}) {
    auto dependent = client_->Get(resources::ConfigMaps(), ns(), name);
    ASSERT_TRUE(dependent.ok()) << name << ": " << dependent.error().ToString();
    EXPECT_FALSE((*dependent)["metadata"].contains("ownerReferences")) << name;
    EXPECT_FALSE((*dependent)["metadata"].contains("deletionTimestamp")) << name;
  }
}

// Rewritten for the real server: no kubelet runs, so a pod bound to a node
// stays terminating for its grace period; what ends it here is a deletion
// with gracePeriodSeconds=0 (what a kubelet's final delete or
// `kubectl delete --force --grace-period=0` sends).
// Catches: gracePeriodSeconds=0 left out of DeleteOptions (the pod would
// stay terminating), or a grace period the client changes.
TEST_F(Lifecycle, GracefulPodDeletionEndsWithAZeroGraceDelete) {
  auto pods = resources::Pods();
  Json pod = {{"metadata", {{"name", "target"}}},
              {"spec",
               {{"nodeName", "fairbench-no-kubelet"},
                {"terminationGracePeriodSeconds", 20},
                {"containers",
                 {{{"name", "server"},
                   {"image", "drogon"},
                   {"resources", {{"limits", {{"cpu", "4"}, {"memory", "1Gi"}}}}}}}}}}};
  auto created = client_->Create(pods, ns(), pod);
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  EXPECT_EQ((*created)["status"]["phase"], "Pending");
  EXPECT_EQ((*created)["status"]["qosClass"], "Guaranteed");
  auto deleting = client_->Delete(pods, ns(), "target");
  ASSERT_TRUE(deleting.ok()) << deleting.error().ToString();
  EXPECT_EQ((*deleting)["metadata"]["deletionGracePeriodSeconds"], 20);
  auto ts = api::ParseTime((*deleting)["metadata"]["deletionTimestamp"].get<std::string>());
  ASSERT_TRUE(ts.ok());
  EXPECT_GT(*ts, std::chrono::system_clock::now() + std::chrono::seconds(15));
  EXPECT_TRUE(client_->Get(pods, ns(), "target").ok());
  // A shorter grace period shortens it.
  DeleteOptions sooner;
  sooner.grace_period_seconds = 10;
  auto shortened = client_->Delete(pods, ns(), "target", sooner);
  ASSERT_TRUE(shortened.ok()) << shortened.error().ToString();
  EXPECT_EQ((*shortened)["metadata"]["deletionGracePeriodSeconds"], 10);
  // gracePeriodSeconds=0 removes it at once.
  DeleteOptions now;
  now.grace_period_seconds = 0;
  ASSERT_TRUE(client_->Delete(pods, ns(), "target", now).ok());
  EXPECT_EQ(client_->Get(pods, ns(), "target").reason(), Reason::kNotFound);

  // An unscheduled pod goes at once, whatever its grace period (a scheduler
  // of its own that does not run keeps it from being bound to another
  // test's node).
  pod["spec"].erase("nodeName");
  pod["spec"]["schedulerName"] = "fairbench-no-scheduler";
  ASSERT_TRUE(client_->Create(pods, ns(), pod).ok());
  ASSERT_TRUE(client_->Delete(pods, ns(), "target").ok());
  EXPECT_EQ(client_->Get(pods, ns(), "target").reason(), Reason::kNotFound);
}

// Catches: delete preconditions (uid, resourceVersion) left out of the
// DeleteOptions body: the stale deletes would succeed.
TEST_F(Lifecycle, DeletePreconditions) {
  auto r = client_->Create(runs_, ns(), Run("r1"));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  DeleteOptions wrong_uid;
  wrong_uid.precondition_uid = "not-it";
  auto by_uid = client_->Delete(runs_, ns(), "r1", wrong_uid);
  EXPECT_EQ(by_uid.reason(), Reason::kConflict);
  EXPECT_EQ(by_uid.error().message,
            "Operation cannot be fulfilled on BenchmarkRun." + testenv::kTestGroup +
                " \"r1\": the UID in the precondition (not-it) does not match the UID in record (" +
                (*r)["metadata"]["uid"].get<std::string>() +
                "). The object might have been deleted and then recreated");
  DeleteOptions stale;
  stale.precondition_resource_version = "1";
  auto by_rv = client_->Delete(runs_, ns(), "r1", stale);
  EXPECT_EQ(by_rv.reason(), Reason::kConflict);
  EXPECT_EQ(by_rv.error().message,
            "Operation cannot be fulfilled on BenchmarkRun." + testenv::kTestGroup +
                " \"r1\": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record (" +
                Rv(*r) + "). The object might have been modified");
  DeleteOptions right;
  right.precondition_uid = (*r)["metadata"]["uid"];
  right.precondition_resource_version = Rv(*r);
  EXPECT_TRUE(client_->Delete(runs_, ns(), "r1", right).ok());
}

}  // namespace
}  // namespace fairbench::kube
