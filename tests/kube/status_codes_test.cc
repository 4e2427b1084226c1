// The HTTP side of KUBE-API.md §1–§3 that a client library hides: status
// codes, query-parameter forms and content types, checked on the server's
// request handling directly.
#include "tests/kube/kube_test_env.h"

namespace fairbench::kube {
namespace {

using apiserver::ApiRequest;
using apiserver::ApiResponse;

class StatusCodes : public testenv::KubeTest {
 protected:
  void SetUp() override {
    KubeTest::SetUp();
    InstallCrd();
  }
  ApiResponse Call(const std::string& method, const std::string& path, const std::string& body = "",
                   const std::string& content_type = "application/json",
                   std::multimap<std::string, std::string> query = {}) {
    ApiRequest r;
    r.method = method;
    r.path = path;
    r.body = body;
    r.content_type = content_type;
    r.query = std::move(query);
    r.accept = "application/json";
    r.user_agent = "status-codes-test/1.0";
    return api().Handle(r);
  }
  Json Body(const ApiResponse& r) { return Json::parse(r.body); }
  const std::string runs_ = "/apis/fairbench.dev/v1alpha1/namespaces/default/benchmarkruns";
};

TEST_F(StatusCodes, CreateIs201ApplyCreatingIs201UpdatesAre200) {
  auto created = Call("POST", runs_, testenv::BenchmarkRun("r1").dump());
  EXPECT_EQ(created.code, 201);
  EXPECT_EQ(Body(created)["metadata"]["managedFields"][0]["manager"], "status-codes-test");
  auto applied = Call("PATCH", runs_ + "/r2", testenv::BenchmarkRun("r2").dump(), "application/apply-patch+yaml",
                      {{"fieldManager", "m"}});
  EXPECT_EQ(applied.code, 201);
  auto reapplied = Call("PATCH", runs_ + "/r2",
                        "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata:\n  name: r2\nspec:\n"
                        "  targets:\n  - {name: drogon, port: 8080}\n  load: {threads: 6}\n",
                        "application/apply-patch+yaml; charset=utf-8", {{"fieldManager", "m"}});
  EXPECT_EQ(reapplied.code, 200);
  EXPECT_EQ(Body(reapplied)["spec"]["load"]["threads"], 6);
  auto merge = Call("PATCH", runs_ + "/r1", R"({"spec":{"repetitions":2}})", "application/merge-patch+json");
  EXPECT_EQ(merge.code, 200);
  auto forced = Call("PATCH", runs_ + "/r1", "{}", "application/merge-patch+json", {{"force", "true"}});
  EXPECT_EQ(forced.code, 422);
  EXPECT_EQ(Call("PATCH", runs_ + "/r1", "{}", "text/plain").code, 415);
  EXPECT_EQ(Call("POST", runs_, "{}", "text/plain").code, 415);
  // kube-apiserver lists protobuf for custom resources too: the body fails
  // in the decoder (400), it is not refused by media type.
  EXPECT_EQ(Call("POST", runs_, "\x08k8s\x00", "application/vnd.kubernetes.protobuf").code, 400);
}

TEST_F(StatusCodes, PutRules) {
  ASSERT_EQ(Call("POST", runs_, testenv::BenchmarkRun("r1").dump()).code, 201);
  Json other = testenv::BenchmarkRun("r2");
  other["metadata"]["resourceVersion"] = "1";
  auto mismatch = Call("PUT", runs_ + "/r1", other.dump());
  EXPECT_EQ(mismatch.code, 400);
  EXPECT_EQ(Body(mismatch)["message"], "the name of the object (r2) does not match the name on the URL (r1)");
  EXPECT_EQ(Call("POST", runs_ + "/r1", "{}").code, 405);
  EXPECT_EQ(Call("GET", "/apis/fairbench.dev/v1alpha1/namespaces/default/benchmarkruns/r1/scale").code, 404);
  EXPECT_EQ(Call("GET", "/apis/fairbench.dev/v1alpha1/benchmarkruns/r1").code, 404);  // namespaced: needs a namespace
}

TEST_F(StatusCodes, WatchAcceptsOneAndDeleteTakesQueryOrBody) {
  auto w = Call("GET", runs_, "", "", {{"watch", "1"}, {"timeoutSeconds", "1"}});
  ASSERT_TRUE(w.watch);
  w.watch->Cancel();

  Json r = testenv::BenchmarkRun("owner");
  ASSERT_EQ(Call("POST", runs_, r.dump()).code, 201);
  auto by_query = Call("DELETE", runs_ + "/owner", "", "", {{"propagationPolicy", "Orphan"}});
  EXPECT_EQ(by_query.code, 200);
  EXPECT_EQ(Body(by_query)["metadata"]["finalizers"][0], "orphan");
  ASSERT_EQ(Call("POST", runs_, testenv::BenchmarkRun("other").dump()).code, 201);
  auto by_body = Call("DELETE", runs_ + "/other", R"({"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Foreground"})");
  EXPECT_EQ(Body(by_body)["metadata"]["finalizers"][0], "foregroundDeletion");
  EXPECT_EQ(Call("DELETE", runs_ + "/x", "", "", {{"propagationPolicy", "Sometimes"}}).code, 422);
}

TEST_F(StatusCodes, ClientDeleteCollectionBySelector) {
  auto cms = resources::ConfigMaps();
  for (const char* n : {"a", "b", "c"}) {
    ASSERT_TRUE(client_->Create(cms, "default", testenv::ConfigMapJson(n, {{"k", "v"}}, {{"keep", n == std::string("c") ? "yes" : "no"}})).ok());
  }
  ListOptions sel;
  sel.label_selector = "keep=no";
  auto deleted = client_->DeleteCollection(cms, "default", sel);
  ASSERT_TRUE(deleted.ok()) << deleted.error().ToString();
  EXPECT_EQ(deleted->items.size(), 2u);
  auto left = client_->List(cms, "default");
  ASSERT_EQ(left->items.size(), 1u);
  EXPECT_EQ(left->items[0]["metadata"]["name"], "c");
}

TEST_F(StatusCodes, EventsK8sIoRequiresItsFields) {
  ResourceType events{"events.k8s.io", "v1", "Event", "events", Scope::kNamespaced};
  Json e = {{"apiVersion", "events.k8s.io/v1"},
            {"kind", "Event"},
            {"metadata", {{"name", "e1"}}},
            {"note", std::string(1100, 'x')},
            {"type", "Odd"}};
  auto bad = client_->Create(events, "default", e);
  ASSERT_EQ(bad.reason(), Reason::kInvalid);
  std::set<std::string> fields;
  for (const auto& c : bad.error().causes) fields.insert(c.field);
  for (const char* f : {"eventTime", "reportingController", "reportingInstance", "action", "reason", "type",
                        "regarding", "note"}) {
    EXPECT_TRUE(fields.count(f)) << f;
  }
  e = {{"apiVersion", "events.k8s.io/v1"},
       {"kind", "Event"},
       {"metadata", {{"name", "e1"}}},
       {"eventTime", "2026-07-01T10:00:00.000000Z"},
       {"reportingController", "fairbench.dev/controller"},
       {"reportingInstance", "controller-0"},
       {"action", "Deploy"},
       {"reason", "TargetDeployed"},
       {"type", "Normal"},
       {"regarding", {{"kind", "BenchmarkRun"}, {"name", "r"}, {"namespace", "default"}}},
       {"note", "ok"}};
  EXPECT_TRUE(client_->Create(events, "default", e).ok());
}

}  // namespace
}  // namespace fairbench::kube
