// KUBE-API.md §3: writes, errors, optimistic concurrency, patches.
#include "common/api/time_text.h"
#include "controller/kube/typed_client.h"
#include "tests/kube/kube_test_env.h"

namespace fairbench::kube {
namespace {

using testenv::BenchmarkRun;
using testenv::ConfigMapJson;
using testenv::Rv;

class Writes : public testenv::KubeTest {
 protected:
  void SetUp() override {
    KubeTest::SetUp();
    InstallCrd();
  }
  ResourceType runs_ = resources::BenchmarkRuns();
};

TEST_F(Writes, CreateSetsServerFieldsAndGenerateName) {
  auto created = client_->Create(runs_, "default", BenchmarkRun("r1"));
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  const Json& md = (*created)["metadata"];
  EXPECT_FALSE(md.value("uid", "").empty());
  EXPECT_FALSE(Rv(*created).empty());
  EXPECT_EQ(md["generation"], 1);
  EXPECT_TRUE(api::ParseTime(md["creationTimestamp"].get<std::string>()).ok());
  EXPECT_TRUE(md.contains("managedFields"));

  Json gen = BenchmarkRun("");
  gen["metadata"].erase("name");
  gen["metadata"]["generateName"] = "run-";
  auto g = client_->Create(runs_, "default", gen);
  ASSERT_TRUE(g.ok());
  std::string name = (*g)["metadata"]["name"];
  EXPECT_EQ(name.rfind("run-", 0), 0u);
  EXPECT_EQ(name.size(), 9u);
}

TEST_F(Writes, CreateErrors) {
  ASSERT_TRUE(client_->Create(runs_, "default", BenchmarkRun("r1")).ok());
  auto again = client_->Create(runs_, "default", BenchmarkRun("r1"));
  ASSERT_EQ(again.reason(), Reason::kAlreadyExists);
  EXPECT_EQ(again.error().http_code, 409);
  EXPECT_EQ(again.error().message, "benchmarkruns.fairbench.dev \"r1\" already exists");

  Json with_rv = BenchmarkRun("r2");
  with_rv["metadata"]["resourceVersion"] = "12";
  EXPECT_EQ(client_->Create(runs_, "default", with_rv).reason(), Reason::kInternalError);

  Json other_ns = BenchmarkRun("r3", 4, "elsewhere");
  EXPECT_EQ(client_->Create(runs_, "default", other_ns).reason(), Reason::kBadRequest);
  EXPECT_EQ(client_->Create(runs_, "missing-ns", BenchmarkRun("r4", 4, "missing-ns")).reason(), Reason::kNotFound);
}

TEST_F(Writes, GetAndUpdateErrors) {
  auto missing = client_->Get(runs_, "default", "nope");
  ASSERT_EQ(missing.reason(), Reason::kNotFound);
  EXPECT_EQ(missing.error().message, "benchmarkruns.fairbench.dev \"nope\" not found");

  EXPECT_EQ(client_->Update(runs_, BenchmarkRun("nope")).reason(), Reason::kNotFound);  // never created by PUT
  auto r = client_->Create(runs_, "default", BenchmarkRun("r1"));
  ASSERT_TRUE(r.ok());
  Json no_rv = *r;
  no_rv["metadata"].erase("resourceVersion");
  EXPECT_EQ(client_->Update(runs_, no_rv).reason(), Reason::kInvalid);

  Json first = *r;
  first["spec"]["load"]["threads"] = 8;
  ASSERT_TRUE(client_->Update(runs_, first).ok());
  Json stale = *r;
  stale["spec"]["load"]["threads"] = 16;
  auto conflict = client_->Update(runs_, stale);
  ASSERT_EQ(conflict.reason(), Reason::kConflict);
  EXPECT_NE(conflict.error().message.find("the object has been modified; please apply your changes to the latest "
                                          "version and try again"),
            std::string::npos);

  // The conflict loop: re-read, re-apply the change, retry.
  ApiResult<Json> done = conflict.error();
  for (int attempt = 0; attempt < 3 && !done.ok(); ++attempt) {
    auto latest = client_->Get(runs_, "default", "r1");
    ASSERT_TRUE(latest.ok());
    (*latest)["spec"]["load"]["threads"] = 16;
    done = client_->Update(runs_, *latest);
  }
  ASSERT_TRUE(done.ok());
  EXPECT_EQ((*done)["spec"]["load"]["threads"], 16);
}

TEST_F(Writes, NoOpWriteKeepsRvAndEmitsNoEvent) {
  auto r = client_->Create(runs_, "default", BenchmarkRun("r1"));
  ASSERT_TRUE(r.ok());
  uint64_t before = api().current_resource_version();
  auto same = client_->Update(runs_, *r);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(Rv(*same), Rv(*r));
  auto patched = client_->Patch(runs_, "default", "r1", PatchType::kMerge, R"({"spec":{"load":{"threads":4}}})");
  ASSERT_TRUE(patched.ok());
  EXPECT_EQ(Rv(*patched), Rv(*r));
  EXPECT_EQ(api().current_resource_version(), before);
}

TEST_F(Writes, MergePatchSemantics) {
  Json r = BenchmarkRun("r1");
  r["metadata"]["labels"] = {{"a", "1"}, {"b", "2"}};
  r["spec"]["targets"].push_back({{"name", "crow"}, {"port", 8081}});
  ASSERT_TRUE(client_->Create(runs_, "default", r).ok());
  auto p = client_->Patch(runs_, "default", "r1", PatchType::kMerge,
                          R"({"metadata":{"labels":{"a":null,"c":"3"}},"spec":{"targets":[{"name":"hical","port":9000}]}})");
  ASSERT_TRUE(p.ok()) << p.error().ToString();
  EXPECT_FALSE((*p)["metadata"]["labels"].contains("a"));
  EXPECT_EQ((*p)["metadata"]["labels"]["c"], "3");
  EXPECT_EQ((*p)["spec"]["targets"].size(), 1u);  // arrays are replaced whole
  EXPECT_EQ(client_->Patch(runs_, "default", "absent", PatchType::kMerge, "{}").reason(), Reason::kNotFound);
  // A PATCH carrying a stale RV is a precondition.
  EXPECT_EQ(client_->Patch(runs_, "default", "r1", PatchType::kMerge, R"({"metadata":{"resourceVersion":"1"}})").reason(),
            Reason::kConflict);
  EXPECT_EQ(client_->Patch(runs_, "default", "r1", PatchType::kStrategicMerge, "{}").reason(),
            Reason::kUnsupportedMediaType);
}

TEST_F(Writes, JsonPatchSemantics) {
  ASSERT_TRUE(client_->Create(runs_, "default", BenchmarkRun("r1")).ok());
  auto ok = client_->Patch(runs_, "default", "r1", PatchType::kJson,
                           R"([{"op":"test","path":"/spec/load/threads","value":4},
                               {"op":"replace","path":"/spec/load/threads","value":6},
                               {"op":"add","path":"/spec/targets/-","value":{"name":"crow","port":1}}])");
  ASSERT_TRUE(ok.ok()) << ok.error().ToString();
  EXPECT_EQ((*ok)["spec"]["load"]["threads"], 6);
  EXPECT_EQ((*ok)["spec"]["targets"].size(), 2u);
  EXPECT_EQ(client_->Patch(runs_, "default", "r1", PatchType::kJson, R"({"op":"add"})").reason(), Reason::kBadRequest);
  EXPECT_EQ(client_->Patch(runs_, "default", "r1", PatchType::kJson, R"([{"path":"/x"}])").reason(),
            Reason::kBadRequest);
  EXPECT_EQ(client_->Patch(runs_, "default", "r1", PatchType::kJson,
                           R"([{"op":"test","path":"/spec/load/threads","value":99}])")
                .reason(),
            Reason::kInvalid);
  EXPECT_EQ(client_->Patch(runs_, "default", "r1", PatchType::kJson, R"([{"op":"remove","path":"/spec/nothing"}])")
                .reason(),
            Reason::kInvalid);
}

TEST_F(Writes, ServerSideApply) {
  PatchOptions controller{"fairbench-controller", true, "", false, {}};
  auto created = client_->Apply(runs_, BenchmarkRun("r1", 4), controller);
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  EXPECT_EQ((*created)["metadata"]["managedFields"][0]["manager"], "fairbench-controller");
  auto again = client_->Apply(runs_, BenchmarkRun("r1", 4), controller);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(Rv(*again), Rv(*created));  // idempotent

  // Another manager changes a field the controller owns: a conflict unless forced.
  PatchOptions person{"person", false, "", false, {}};
  auto conflict = client_->Apply(runs_, BenchmarkRun("r1", 8), person);
  ASSERT_EQ(conflict.reason(), Reason::kConflict);
  ASSERT_FALSE(conflict.error().causes.empty());
  EXPECT_EQ(conflict.error().causes[0].reason, "FieldManagerConflict");
  EXPECT_EQ(conflict.error().causes[0].field, ".spec.load.threads");
  person.force = true;
  auto forced = client_->Apply(runs_, BenchmarkRun("r1", 8), person);
  ASSERT_TRUE(forced.ok());
  EXPECT_EQ((*forced)["spec"]["load"]["threads"], 8);

  // The field manager is required.
  EXPECT_EQ(client_->Patch(runs_, "default", "r1", PatchType::kApply, BenchmarkRun("r1").dump()).reason(),
            Reason::kInvalid);
}

TEST_F(Writes, DeleteAnswersAndInvalidCauses) {
  ASSERT_TRUE(client_->Create(runs_, "default", BenchmarkRun("r1")).ok());
  auto gone = client_->Delete(runs_, "default", "r1");
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ((*gone)["kind"], "Status");
  EXPECT_EQ((*gone)["status"], "Success");
  EXPECT_EQ((*gone)["details"]["name"], "r1");
  EXPECT_EQ(client_->Delete(runs_, "default", "r1").reason(), Reason::kNotFound);

  auto invalid = client_->Create(runs_, "default", BenchmarkRun("bad", 0));
  ASSERT_EQ(invalid.reason(), Reason::kInvalid);
  EXPECT_EQ(invalid.error().http_code, 422);
  ASSERT_EQ(invalid.error().causes.size(), 1u);
  EXPECT_EQ(invalid.error().causes[0].field, "spec.load.threads");
  EXPECT_EQ(invalid.error().causes[0].reason, "FieldValueInvalid");
  EXPECT_EQ(invalid.error().message,
            "BenchmarkRun.fairbench.dev \"bad\" is invalid: spec.load.threads: Invalid value: 0: spec.load.threads in "
            "body should be greater than or equal to 1");
}

TEST_F(Writes, ForbiddenAndUnauthorized) {
  api().SetDenyRules({{"", "create", "configmaps"}});
  auto denied = client_->Create(resources::ConfigMaps(), "default", ConfigMapJson("c", {{"k", "v"}}));
  ASSERT_EQ(denied.reason(), Reason::kForbidden);
  EXPECT_NE(denied.error().message.find("cannot create resource \"configmaps\""), std::string::npos);
  server_->SetTokens({{"only-this", "someone"}});
  EXPECT_EQ(client_->Get(runs_, "default", "x").reason(), Reason::kUnauthorized);
}

TEST_F(Writes, RetriesHonourRetryAfterAndStayBounded) {
  FakeClock clock(true);  // sleeps are recorded, not waited
  auto c = testenv::ClientFor(server_->url(), testenv::FastRetries(&clock));
  apiserver::FaultConfig throttle;
  throttle.throttle_rate = 1.0;
  throttle.retry_after_seconds = 1;
  throttle.methods = {"GET"};
  api().faults().Configure(throttle);
  auto r = c->Get(runs_, "default", "x");
  ASSERT_EQ(r.reason(), Reason::kTooManyRequests);
  ASSERT_TRUE(r.error().retry_after.has_value());
  // Five attempts, four waits of Retry-After (1 s) each.
  EXPECT_EQ(clock.slept(), std::chrono::seconds(4));
  EXPECT_EQ(api().faults().injected(), 5u);

  // Server errors on reads are retried until they pass (bounded).
  apiserver::FaultConfig flaky;
  flaky.server_error_rate = 0.3;
  flaky.seed = 3;
  api().faults().Configure(flaky);
  int ok = 0;
  for (int i = 0; i < 20; ++i) ok += c->List(runs_, "default").ok() ? 1 : 0;
  EXPECT_GE(ok, 19);

  // A create that failed with 500 is not resent: it may have happened.
  // 503 means it was not processed, so that one is resent.
  apiserver::FaultConfig always;
  always.server_error_rate = 1.0;
  always.server_error_codes = {500};
  always.methods = {"POST"};
  api().faults().Configure(always);
  auto post = c->Create(resources::ConfigMaps(), "default", ConfigMapJson("c", {{"k", "v"}}));
  EXPECT_EQ(post.reason(), Reason::kInternalError);
  EXPECT_EQ(api().faults().injected(), 1u);
  always.server_error_codes = {503};
  api().faults().Configure(always);
  post = c->Create(resources::ConfigMaps(), "default", ConfigMapJson("c", {{"k", "v"}}));
  EXPECT_EQ(post.reason(), Reason::kServiceUnavailable);
  EXPECT_EQ(api().faults().injected(), 5u);
  api().faults().Clear();
}

TEST_F(Writes, EveryCallHasATimeout) {
  apiserver::FaultConfig slow;
  slow.latency = std::chrono::milliseconds(400);
  api().faults().Configure(slow);
  ClientOptions once = testenv::FastRetries();
  once.max_attempts = 2;
  auto c = testenv::ClientFor(server_->url(), once, std::chrono::milliseconds(100));
  auto start = std::chrono::steady_clock::now();
  auto r = c->Get(runs_, "default", "x");
  EXPECT_EQ(r.reason(), Reason::kTimeout);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1500));
  GetOptions patient;
  patient.timeout = std::chrono::milliseconds(3000);
  EXPECT_EQ(c->Get(runs_, "default", "x", patient).reason(), Reason::kNotFound);
  api().faults().Clear();
}

TEST_F(Writes, TypedClientsRoundTrip) {
  auto leases = LeaseClient(*client_);
  Lease l;
  l.metadata.name = "typed";
  l.metadata.namespace_ = "default";
  l.spec.holder_identity = "me";
  l.spec.lease_duration_seconds = 15;
  auto created = leases.Create(l);
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  EXPECT_EQ(created->spec.holder_identity, "me");
  auto list = leases.List("default");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 1u);
  auto cms = ConfigMapClient(*client_);
  ConfigMap cm;
  cm.metadata.name = "report";
  cm.metadata.namespace_ = "default";
  cm.data["report.md"] = "# results";
  auto stored = cms.Create(cm);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->data.at("report.md"), "# results");
  EXPECT_TRUE(cms.Delete("default", "report").ok());
}

}  // namespace
}  // namespace fairbench::kube
