// KUBE-API.md §3: writes, errors, optimistic concurrency, patches, against
// Kubernetes' own API server (the shared cluster), with the fault proxy's
// faults where a test needs them.
#include "api/time_text.h"
#include "controller/kube/typed_client.h"
#include "tests/kube/kube_test_env.h"

namespace fairbench::kube {
namespace {

using kubetest::FaultConfig;
using testenv::ConfigMapJson;
using testenv::Rv;

class Writes : public testenv::KubeTest {
 protected:
  void SetUp() override {
    KubeTest::SetUp();
    InstallCrd();
  }
  Json Run(const std::string& name, int threads = 4) { return testenv::BenchmarkRun(name, threads, ns()); }
  ResourceType runs_ = testenv::TestRuns();
};

// Catches: a create that does not return the server's object (uid,
// resourceVersion, generation, timestamps, managedFields), or generateName
// not passed through.
TEST_F(Writes, CreateSetsServerFieldsAndGenerateName) {
  auto created = client_->Create(runs_, ns(), Run("r1"));
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  const Json& md = (*created)["metadata"];
  EXPECT_FALSE(md.value("uid", "").empty());
  EXPECT_FALSE(Rv(*created).empty());
  EXPECT_EQ(md["generation"], 1);
  EXPECT_TRUE(api::ParseTime(md["creationTimestamp"].get<std::string>()).ok());
  EXPECT_TRUE(md.contains("managedFields"));

  Json gen = Run("");
  gen["metadata"].erase("name");
  gen["metadata"]["generateName"] = "run-";
  auto g = client_->Create(runs_, ns(), gen);
  ASSERT_TRUE(g.ok()) << g.error().ToString();
  std::string name = (*g)["metadata"]["name"];
  EXPECT_EQ(name.rfind("run-", 0), 0u);
  EXPECT_EQ(name.size(), 9u);
}

// Catches: create errors mapped to the wrong Reason (AlreadyExists,
// BadRequest, NotFound), or the server's message lost.
TEST_F(Writes, CreateErrors) {
  ASSERT_TRUE(client_->Create(runs_, ns(), Run("r1")).ok());
  auto again = client_->Create(runs_, ns(), Run("r1"));
  ASSERT_EQ(again.reason(), Reason::kAlreadyExists) << again.error().ToString();
  EXPECT_EQ(again.error().http_code, 409);
  EXPECT_EQ(again.error().message, "benchmarkruns.kubetest.fairbench.dev \"r1\" already exists");

  Json with_rv = Run("r2");
  with_rv["metadata"]["resourceVersion"] = "12";
  auto rv_set = client_->Create(runs_, ns(), with_rv);
  EXPECT_EQ(rv_set.reason(), Reason::kInternalError) << rv_set.error().ToString();
  EXPECT_EQ(rv_set.error().http_code, 500);
  EXPECT_EQ(rv_set.error().message, "resourceVersion should not be set on objects to be created");

  Json other_ns = testenv::BenchmarkRun("r3", 4, ns() + "-elsewhere");
  auto mismatch = client_->Create(runs_, ns(), other_ns);
  EXPECT_EQ(mismatch.reason(), Reason::kBadRequest) << mismatch.error().ToString();
  EXPECT_EQ(mismatch.error().message,
            "the namespace of the provided object does not match the namespace sent on the request");
  const std::string missing = ns() + "-missing";
  auto no_ns = client_->Create(runs_, missing, testenv::BenchmarkRun("r4", 4, missing));
  EXPECT_EQ(no_ns.reason(), Reason::kNotFound) << no_ns.error().ToString();
  EXPECT_EQ(no_ns.error().message, "namespaces \"" + missing + "\" not found");
}

// Catches: a PUT without the object's resourceVersion (it would overwrite
// blindly), a 409 mapped to anything but Conflict, or a conflict loop that
// does not converge.
TEST_F(Writes, GetAndUpdateErrors) {
  auto missing = client_->Get(runs_, ns(), "nope");
  ASSERT_EQ(missing.reason(), Reason::kNotFound);
  EXPECT_EQ(missing.error().message, "benchmarkruns.kubetest.fairbench.dev \"nope\" not found");

  EXPECT_EQ(client_->Update(runs_, Run("nope")).reason(), Reason::kNotFound);  // never created by PUT
  auto r = client_->Create(runs_, ns(), Run("r1"));
  ASSERT_TRUE(r.ok());
  Json no_rv = *r;
  no_rv["metadata"].erase("resourceVersion");
  auto unconditional = client_->Update(runs_, no_rv);
  EXPECT_EQ(unconditional.reason(), Reason::kInvalid) << unconditional.error().ToString();

  Json first = *r;
  first["spec"]["load"]["threads"] = 8;
  ASSERT_TRUE(client_->Update(runs_, first).ok());
  Json stale = *r;
  stale["spec"]["load"]["threads"] = 16;
  auto conflict = client_->Update(runs_, stale);
  ASSERT_EQ(conflict.reason(), Reason::kConflict);
  EXPECT_EQ(conflict.error().message,
            "Operation cannot be fulfilled on benchmarkruns.kubetest.fairbench.dev \"r1\": the object has been "
            "modified; please apply your changes to the latest version and try again");

  // The conflict loop: re-read, re-apply the change, retry.
  ApiResult<Json> done = conflict.error();
  for (int attempt = 0; attempt < 3 && !done.ok(); ++attempt) {
    auto latest = client_->Get(runs_, ns(), "r1");
    ASSERT_TRUE(latest.ok());
    (*latest)["spec"]["load"]["threads"] = 16;
    done = client_->Update(runs_, *latest);
  }
  ASSERT_TRUE(done.ok());
  EXPECT_EQ((*done)["spec"]["load"]["threads"], 16);
}

// Catches: a client that changes the object it sends (a field added,
// reordered into a different value) so that a no-op write becomes a write.
TEST_F(Writes, NoOpWriteKeepsRvAndEmitsNoEvent) {
  auto r = client_->Create(runs_, ns(), Run("r1"));
  ASSERT_TRUE(r.ok());
  auto same = client_->Update(runs_, *r);
  ASSERT_TRUE(same.ok()) << same.error().ToString();
  EXPECT_EQ(Rv(*same), Rv(*r));
  auto patched = client_->Patch(runs_, ns(), "r1", PatchType::kMerge, R"({"spec":{"load":{"threads":4}}})");
  ASSERT_TRUE(patched.ok());
  EXPECT_EQ(Rv(*patched), Rv(*r));
  // No event since the create: a watch from its RV stays quiet until its timeout.
  WatchOptions wo;
  wo.resource_version = Rv(*r);
  wo.allow_bookmarks = false;
  wo.timeout_seconds = std::chrono::seconds(1);
  std::vector<WatchEvent> events;
  auto end = client_->Watch(runs_, ns(), wo, [&](WatchEvent&& e) { events.push_back(std::move(e)); });
  ASSERT_TRUE(end.ok()) << end.error().ToString();
  EXPECT_TRUE(events.empty()) << events.size() << " events, the first " << events[0].object.dump();
}

// Catches: merge patches sent with the wrong content type (a strategic or
// JSON patch would read them differently), or null not sent for a removal.
TEST_F(Writes, MergePatchSemantics) {
  Json r = Run("r1");
  r["metadata"]["labels"] = {{"a", "1"}, {"b", "2"}};
  r["spec"]["targets"].push_back({{"name", "crow"}, {"port", 8081}});
  ASSERT_TRUE(client_->Create(runs_, ns(), r).ok());
  auto p =
      client_->Patch(runs_, ns(), "r1", PatchType::kMerge,
                     R"({"metadata":{"labels":{"a":null,"c":"3"}},"spec":{"targets":[{"name":"hical","port":9000}]}})");
  ASSERT_TRUE(p.ok()) << p.error().ToString();
  EXPECT_FALSE((*p)["metadata"]["labels"].contains("a"));
  EXPECT_EQ((*p)["metadata"]["labels"]["c"], "3");
  EXPECT_EQ((*p)["spec"]["targets"].size(), 1u);  // arrays are replaced whole
  EXPECT_EQ(client_->Patch(runs_, ns(), "absent", PatchType::kMerge, "{}").reason(), Reason::kNotFound);
  // A PATCH carrying a stale RV is a precondition.
  EXPECT_EQ(client_->Patch(runs_, ns(), "r1", PatchType::kMerge, R"({"metadata":{"resourceVersion":"1"}})").reason(),
            Reason::kConflict);
  // Custom resources take no strategic merge patch.
  auto strategic = client_->Patch(runs_, ns(), "r1", PatchType::kStrategicMerge, "{}");
  EXPECT_EQ(strategic.reason(), Reason::kUnsupportedMediaType) << strategic.error().ToString();
}

// Catches: JSON patches sent with the wrong content type, or their errors
// mapped to the wrong Reason.
TEST_F(Writes, JsonPatchSemantics) {
  ASSERT_TRUE(client_->Create(runs_, ns(), Run("r1")).ok());
  auto ok = client_->Patch(runs_, ns(), "r1", PatchType::kJson,
                           R"([{"op":"test","path":"/spec/load/threads","value":4},
                               {"op":"replace","path":"/spec/load/threads","value":6},
                               {"op":"add","path":"/spec/targets/-","value":{"name":"crow","port":1}}])");
  ASSERT_TRUE(ok.ok()) << ok.error().ToString();
  EXPECT_EQ((*ok)["spec"]["load"]["threads"], 6);
  EXPECT_EQ((*ok)["spec"]["targets"].size(), 2u);
  auto not_a_list = client_->Patch(runs_, ns(), "r1", PatchType::kJson, R"({"op":"add"})");
  EXPECT_EQ(not_a_list.reason(), Reason::kBadRequest) << not_a_list.error().ToString();
  EXPECT_EQ(not_a_list.error().message,
            "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp");
  // An operation without "op" cannot be applied: 422, like a failed test.
  auto no_op = client_->Patch(runs_, ns(), "r1", PatchType::kJson, R"([{"path":"/x"}])");
  EXPECT_EQ(no_op.reason(), Reason::kInvalid) << no_op.error().ToString();
  auto failed_test =
      client_->Patch(runs_, ns(), "r1", PatchType::kJson, R"([{"op":"test","path":"/spec/load/threads","value":99}])");
  EXPECT_EQ(failed_test.reason(), Reason::kInvalid) << failed_test.error().ToString();
  auto nothing_to_remove =
      client_->Patch(runs_, ns(), "r1", PatchType::kJson, R"([{"op":"remove","path":"/spec/nothing"}])");
  EXPECT_EQ(nothing_to_remove.reason(), Reason::kInvalid) << nothing_to_remove.error().ToString();
}

// Catches: apply sent without fieldManager or force, with the wrong
// content type, or a conflict's causes not decoded.
TEST_F(Writes, ServerSideApply) {
  PatchOptions controller{"fairbench-controller", true, "", false, {}};
  auto created = client_->Apply(runs_, Run("r1", 4), controller);
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  EXPECT_EQ((*created)["metadata"]["managedFields"][0]["manager"], "fairbench-controller");
  auto again = client_->Apply(runs_, Run("r1", 4), controller);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(Rv(*again), Rv(*created));  // idempotent

  // Another manager changes a field the controller owns: a conflict unless forced.
  PatchOptions person{"person", false, "", false, {}};
  auto conflict = client_->Apply(runs_, Run("r1", 8), person);
  ASSERT_EQ(conflict.reason(), Reason::kConflict) << conflict.error().ToString();
  ASSERT_FALSE(conflict.error().causes.empty());
  EXPECT_EQ(conflict.error().causes[0].reason, "FieldManagerConflict");
  EXPECT_EQ(conflict.error().causes[0].field, ".spec.load.threads");
  EXPECT_EQ(conflict.error().message,
            "Apply failed with 1 conflict: conflict with \"fairbench-controller\": .spec.load.threads");
  person.force = true;
  auto forced = client_->Apply(runs_, Run("r1", 8), person);
  ASSERT_TRUE(forced.ok());
  EXPECT_EQ((*forced)["spec"]["load"]["threads"], 8);

  // The field manager is required.
  auto anonymous = client_->Patch(runs_, ns(), "r1", PatchType::kApply, Run("r1").dump());
  EXPECT_EQ(anonymous.reason(), Reason::kInvalid) << anonymous.error().ToString();
}

// Catches: a delete's Success Status taken for an object, or validation
// causes (field, reason) not decoded.
TEST_F(Writes, DeleteAnswersAndInvalidCauses) {
  ASSERT_TRUE(client_->Create(runs_, ns(), Run("r1")).ok());
  auto gone = client_->Delete(runs_, ns(), "r1");
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ((*gone)["kind"], "Status") << gone->dump();
  EXPECT_EQ((*gone)["status"], "Success");
  EXPECT_EQ((*gone)["details"]["name"], "r1");
  EXPECT_EQ(client_->Delete(runs_, ns(), "r1").reason(), Reason::kNotFound);

  auto invalid = client_->Create(runs_, ns(), Run("bad", 0));
  ASSERT_EQ(invalid.reason(), Reason::kInvalid);
  EXPECT_EQ(invalid.error().http_code, 422);
  ASSERT_EQ(invalid.error().causes.size(), 1u);
  EXPECT_EQ(invalid.error().causes[0].field, "spec.load.threads");
  EXPECT_EQ(invalid.error().causes[0].reason, "FieldValueInvalid");
  EXPECT_EQ(invalid.error().message,
            "BenchmarkRun.kubetest.fairbench.dev \"bad\" is invalid: spec.load.threads: Invalid value: 0: "
            "spec.load.threads in body should be greater than or equal to 1");
}

// Rewritten for the real server: the denial comes from RBAC (a
// ServiceAccount whose Role lets it read ConfigMaps, not create them), the
// 401 from the API server's authenticators (a token nobody issued).
// Catches: 403 or 401 mapped to the wrong Reason, or the server's message
// lost.
TEST_F(Writes, ForbiddenAndUnauthorized) {
  ResourceType service_accounts{"", "v1", "ServiceAccount", "serviceaccounts", Scope::kNamespaced};
  ResourceType roles{"rbac.authorization.k8s.io", "v1", "Role", "roles", Scope::kNamespaced};
  ResourceType bindings{"rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", Scope::kNamespaced};
  ASSERT_TRUE(client_
                  ->Create(service_accounts, ns(),
                           {{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", "reader"}}}})
                  .ok());
  ASSERT_TRUE(
      client_
          ->Create(
              roles, ns(),
              {{"apiVersion", "rbac.authorization.k8s.io/v1"},
               {"kind", "Role"},
               {"metadata", {{"name", "read-configmaps"}}},
               {"rules", {{{"apiGroups", {""}}, {"resources", {"configmaps"}}, {"verbs", {"get", "list", "watch"}}}}}})
          .ok());
  ASSERT_TRUE(
      client_
          ->Create(
              bindings, ns(),
              {{"apiVersion", "rbac.authorization.k8s.io/v1"},
               {"kind", "RoleBinding"},
               {"metadata", {{"name", "reader"}}},
               {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", "read-configmaps"}}},
               {"subjects", {{{"kind", "ServiceAccount"}, {"name", "reader"}, {"namespace", ns()}}}}})
          .ok());
  auto token = client_->CreateSubresource(
      service_accounts, ns(), "reader", "token",
      {{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "TokenRequest"}, {"spec", {{"expirationSeconds", 600}}}});
  ASSERT_TRUE(token.ok()) << token.error().ToString();
  auto as = [&](const std::string& bearer) {
    RestConfig cfg;
    cfg.server = url();
    cfg.timeout = std::chrono::milliseconds(5000);
    cfg.credentials = std::make_shared<StaticToken>(bearer);
    auto c = Client::Create(cfg, testenv::FastRetries());
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return std::move(*c);
  };
  auto reader = as((*token)["status"]["token"].get<std::string>());
  // RBAC is cached a moment in the API server: the binding takes effect soon.
  ASSERT_TRUE(testenv::Eventually([&] { return reader->List(resources::ConfigMaps(), ns()).ok(); }));
  auto denied = reader->Create(resources::ConfigMaps(), ns(), ConfigMapJson("c", {{"k", "v"}}));
  ASSERT_EQ(denied.reason(), Reason::kForbidden) << denied.error().ToString();
  EXPECT_EQ(denied.error().message, "configmaps is forbidden: User \"system:serviceaccount:" + ns() +
                                        ":reader\" cannot create resource \"configmaps\" in API group \"\" in the "
                                        "namespace \"" +
                                        ns() + "\"");
  auto stranger = as("not-a-token-anyone-issued");
  auto unauthorized = stranger->Get(runs_, ns(), "x");
  EXPECT_EQ(unauthorized.reason(), Reason::kUnauthorized) << unauthorized.error().ToString();
  EXPECT_EQ(unauthorized.error().http_code, 401);
}

// Catches: retries that ignore Retry-After, retry without bound, or resend
// a POST after a 500 (it may have taken effect).
TEST_F(Writes, RetriesHonourRetryAfterAndStayBounded) {
  FakeClock clock(FakeClock::Mode::kOnSleep);  // sleeps are recorded, not waited
  auto c = testenv::ClientFor(url(), testenv::FastRetries(&clock));
  FaultConfig throttle;
  throttle.throttle_rate = 1.0;
  throttle.retry_after_seconds = 1;
  throttle.methods = {"GET"};
  faults().Configure(throttle);
  auto r = c->Get(runs_, ns(), "x");
  ASSERT_EQ(r.reason(), Reason::kTooManyRequests);
  ASSERT_TRUE(r.error().retry_after.has_value());
  // Five attempts, four waits of Retry-After (1 s) each.
  EXPECT_EQ(clock.slept(), std::chrono::seconds(4));
  EXPECT_EQ(faults().injected(), 5u);

  // Server errors on reads are retried until they pass (bounded).
  FaultConfig flaky;
  flaky.server_error_rate = 0.3;
  flaky.seed = 3;
  faults().Configure(flaky);
  int ok = 0;
  for (int i = 0; i < 20; ++i) ok += c->List(runs_, ns()).ok() ? 1 : 0;
  EXPECT_GE(ok, 19);

  // A create that failed with 500 is not resent: it may have happened.
  // 503 means it was not processed, so that one is resent.
  FaultConfig always;
  always.server_error_rate = 1.0;
  always.server_error_codes = {500};
  always.methods = {"POST"};
  faults().Configure(always);
  auto post = c->Create(resources::ConfigMaps(), ns(), ConfigMapJson("c", {{"k", "v"}}));
  EXPECT_EQ(post.reason(), Reason::kInternalError);
  EXPECT_EQ(faults().injected(), 1u);
  always.server_error_codes = {503};
  faults().Configure(always);
  post = c->Create(resources::ConfigMaps(), ns(), ConfigMapJson("c", {{"k", "v"}}));
  EXPECT_EQ(post.reason(), Reason::kServiceUnavailable);
  EXPECT_EQ(faults().injected(), 5u);
  faults().Clear();
}

// Catches: a call without a timeout (a stalled server would hang the
// controller), or a per-call timeout that is ignored.
TEST_F(Writes, EveryCallHasATimeout) {
  FaultConfig slow;
  slow.latency = std::chrono::milliseconds(400);
  faults().Configure(slow);
  ClientOptions once = testenv::FastRetries();
  once.max_attempts = 2;
  auto c = testenv::ClientFor(url(), once, std::chrono::milliseconds(100));
  auto start = std::chrono::steady_clock::now();
  auto r = c->Get(runs_, ns(), "x");
  EXPECT_EQ(r.reason(), Reason::kTimeout);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1500));
  GetOptions patient;
  patient.timeout = std::chrono::milliseconds(3000);
  EXPECT_EQ(c->Get(runs_, ns(), "x", patient).reason(), Reason::kNotFound);
  faults().Clear();
}

// Catches: typed objects that lose fields on the way to the server or back.
TEST_F(Writes, TypedClientsRoundTrip) {
  auto leases = LeaseClient(*client_);
  Lease l;
  l.metadata.name = "typed";
  l.metadata.namespace_ = ns();
  l.spec.holder_identity = "me";
  l.spec.lease_duration_seconds = 15;
  auto created = leases.Create(l);
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  EXPECT_EQ(created->spec.holder_identity, "me");
  EXPECT_EQ(created->spec.lease_duration_seconds, 15);
  auto list = leases.List(ns());
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 1u);
  auto cms = ConfigMapClient(*client_);
  ConfigMap cm;
  cm.metadata.name = "report";
  cm.metadata.namespace_ = ns();
  cm.data["report.md"] = "# results";
  auto stored = cms.Create(cm);
  ASSERT_TRUE(stored.ok()) << stored.error().ToString();
  EXPECT_EQ(stored->data.at("report.md"), "# results");
  EXPECT_TRUE(cms.Delete(ns(), "report").ok());
}

}  // namespace
}  // namespace fairbench::kube
