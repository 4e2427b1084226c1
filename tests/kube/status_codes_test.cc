// The HTTP side of KUBE-API.md §1–§3 that a client library hides: status
// codes, query-parameter forms and content types, sent by fairbench's own
// transport (CurlTransport, as the cluster's administrator) to the real
// kube-apiserver, and its answers read by fairbench's ApiError; where the
// Client has the operation, the Client's request is checked beside the raw one.
#include <memory>

#include "controller/kube/curl_transport.h"
#include "tests/kube/kube_test_env.h"

namespace fairbench::kube {
namespace {

struct Reply {
  int code = 0;
  std::map<std::string, std::string> headers;
  std::string body;
  Json json() const { return Json::parse(body, nullptr, false); }
  ApiError error() const { return ApiError::FromResponse(code, body, headers); }
};

class StatusCodes : public testenv::KubeTest {
 protected:
  void SetUp() override {
    KubeTest::SetUp();
    if (HasFatalFailure()) return;
    InstallCrd();
    TlsOptions tls;
    auto ca = ReadSmallFile(cluster_->pki("ca.crt"));
    auto cert = ReadSmallFile(cluster_->pki("admin.crt"));
    auto key = ReadSmallFile(cluster_->pki("admin.key"));
    ASSERT_TRUE(ca.ok() && cert.ok() && key.ok());
    tls.ca_pem = *ca;
    tls.client_cert_pem = *cert;
    tls.client_key_pem = *key;
    // The user agent's product names the field manager of a write.
    transport_ = std::make_unique<CurlTransport>(cluster_->server(), tls, "status-codes-test/1.0");
    runs_ = "/apis/" + testenv::kTestGroup + "/v1alpha1/namespaces/" + ns() + "/benchmarkruns";
  }
  void TearDown() override {
    transport_.reset();
    KubeTest::TearDown();
  }
  Reply Call(const std::string& method, const std::string& path, const std::string& body = "",
             const std::string& content_type = "application/json",
             const std::vector<std::pair<std::string, std::string>>& query = {}) {
    HttpRequest r;
    r.method = method;
    r.path_and_query = path;
    for (size_t i = 0; i < query.size(); ++i) {
      r.path_and_query += (i == 0 ? "?" : "&") + query[i].first + "=" + QueryEscape(query[i].second);
    }
    r.headers.emplace_back("Accept", "application/json");
    if (!body.empty()) r.headers.emplace_back("Content-Type", content_type);
    r.body = body;
    r.timeout = std::chrono::seconds(10);
    auto resp = transport_->Do(r);
    EXPECT_TRUE(resp.ok()) << method << " " << path << ": " << resp.status().ToString();
    if (!resp.ok()) return {};
    return {resp->status, resp->headers, resp->body};
  }
  Json Run(const std::string& name) const { return testenv::BenchmarkRun(name, 4, ns()); }

  std::unique_ptr<CurlTransport> transport_;
  std::string runs_;
};

// Catches: an ApiError that reads the real server's 415 or 422 bodies
// wrongly (reason, causes), a Client patch sent with a content type a
// custom resource refuses (strategic merge: 415, what a caller must not
// use on a BenchmarkRun), or an apply without the field manager query.
TEST_F(StatusCodes, CreateIs201ApplyCreatingIs201UpdatesAre200) {
  auto created = Call("POST", runs_, Run("r1").dump());
  ASSERT_EQ(created.code, 201) << created.body;
  EXPECT_EQ(created.json()["metadata"]["managedFields"][0]["manager"], "status-codes-test");
  auto applied =
      Call("PATCH", runs_ + "/r2", Run("r2").dump(), "application/apply-patch+yaml", {{"fieldManager", "m"}});
  EXPECT_EQ(applied.code, 201) << applied.body;
  auto reapplied = Call("PATCH", runs_ + "/r2",
                        "apiVersion: " + testenv::kTestGroup +
                            "/v1alpha1\nkind: BenchmarkRun\nmetadata:\n  name: r2\n"
                            "spec:\n  targets:\n  - {name: drogon, port: 8080}\n  load: {threads: 6}\n",
                        "application/apply-patch+yaml; charset=utf-8", {{"fieldManager", "m"}});
  EXPECT_EQ(reapplied.code, 200) << reapplied.body;
  EXPECT_EQ(reapplied.json()["spec"]["load"]["threads"], 6);
  // The Client's apply: the same manager, an update of what it owns.
  PatchOptions as_m;
  as_m.field_manager = "m";
  Json again = Run("r2");
  again["spec"]["load"]["threads"] = 7;
  auto client_applied = client_->Apply(testenv::TestRuns(), again, as_m);
  ASSERT_TRUE(client_applied.ok()) << client_applied.error().ToString();
  EXPECT_EQ((*client_applied)["spec"]["load"]["threads"], 7);

  auto merge = Call("PATCH", runs_ + "/r1", R"({"spec":{"repetitions":2}})", "application/merge-patch+json");
  EXPECT_EQ(merge.code, 200) << merge.body;
  auto forced = Call("PATCH", runs_ + "/r1", "{}", "application/merge-patch+json", {{"force", "true"}});
  ASSERT_EQ(forced.code, 422) << forced.body;
  EXPECT_EQ(forced.error().reason, Reason::kInvalid);
  ASSERT_EQ(forced.error().causes.size(), 1u);
  EXPECT_EQ(forced.error().causes[0].field, "force");
  EXPECT_EQ(forced.error().message,
            "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch");

  auto plain_patch = Call("PATCH", runs_ + "/r1", "{}", "text/plain");
  EXPECT_EQ(plain_patch.code, 415);
  EXPECT_EQ(plain_patch.error().reason, Reason::kUnsupportedMediaType);
  // A custom resource has no strategic merge patch.
  EXPECT_EQ(plain_patch.error().message,
            "the body of the request was in an unknown format - accepted media types include: "
            "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml");
  auto strategic = client_->Patch(testenv::TestRuns(), ns(), "r1", PatchType::kStrategicMerge, "{}");
  EXPECT_EQ(strategic.reason(), Reason::kUnsupportedMediaType) << (strategic.ok() ? "patched" : "");
  auto plain_post = Call("POST", runs_, "{}", "text/plain");
  EXPECT_EQ(plain_post.code, 415);
  EXPECT_EQ(plain_post.error().reason, Reason::kUnsupportedMediaType);
  EXPECT_EQ(plain_post.error().message,
            "the body of the request was in an unknown format - accepted media types include: "
            "application/json, application/yaml, application/vnd.kubernetes.protobuf");
  // (kube-apiserver lists protobuf for custom resources too, but a protobuf
  // body for one makes its handler panic and the connection end without an
  // answer: not something to send to the cluster every test shares.)
}

// Catches: an ApiError that reads the real 400/404/405 answers (a Status, or
// the plain-text "404 page not found" of a path nothing serves) as
// anything but BadRequest, NotFound and MethodNotAllowed.
TEST_F(StatusCodes, PutRules) {
  ASSERT_EQ(Call("POST", runs_, Run("r1").dump()).code, 201);
  Json other = Run("r2");
  other["metadata"]["resourceVersion"] = "1";
  auto mismatch = Call("PUT", runs_ + "/r1", other.dump());
  EXPECT_EQ(mismatch.code, 400);
  EXPECT_EQ(mismatch.error().reason, Reason::kBadRequest);
  EXPECT_EQ(mismatch.json()["message"], "the name of the object (r2) does not match the name on the URL (r1)");
  // POST to an object's path: a built-in resource has no such route...
  const std::string config_maps = "/api/v1/namespaces/" + ns() + "/configmaps";
  auto post_object = Call("POST", config_maps + "/c1", testenv::ConfigMapJson("c1", {{"k", "v"}}).dump());
  EXPECT_EQ(post_object.code, 405);
  EXPECT_EQ(post_object.error().reason, Reason::kMethodNotAllowed);
  EXPECT_EQ(post_object.error().message, "the server does not allow this method on the requested resource");
  // ...while a custom resource's handler takes it for a create of the
  // body's object, whatever name the path has.
  auto post_run = Call("POST", runs_ + "/elsewhere", Run("r3").dump());
  EXPECT_EQ(post_run.code, 201) << post_run.body;
  EXPECT_EQ(post_run.json()["metadata"]["name"], "r3");

  auto scale = Call("GET", runs_ + "/r1/scale");  // the CRD has no scale subresource
  EXPECT_EQ(scale.code, 404);
  EXPECT_EQ(scale.error().reason, Reason::kNotFound);
  // Namespaced: a name needs a namespace in the path.
  auto unscoped = Call("GET", "/apis/" + testenv::kTestGroup + "/v1alpha1/benchmarkruns/r1");
  EXPECT_EQ(unscoped.code, 404);
  EXPECT_EQ(unscoped.body, "404 page not found\n");
  EXPECT_EQ(unscoped.error().reason, Reason::kNotFound);
}

// Catches: a Client that encodes propagationPolicy (DeleteOptions body)
// in a form kube-apiserver does not read, or an ApiError that misreads the
// 422 of a policy it does not know.
TEST_F(StatusCodes, WatchAcceptsOneAndDeleteTakesQueryOrBody) {
  ASSERT_EQ(Call("POST", runs_, Run("watched").dump()).code, 201);
  HttpRequest watch;
  watch.method = "GET";
  watch.path_and_query = runs_ + "?watch=1&timeoutSeconds=1";
  watch.timeout = std::chrono::seconds(10);
  std::string streamed;
  auto w = transport_->Stream(watch,
                              [&](std::string_view chunk) {
                                streamed.append(chunk);
                                return true;
                              },
                              {});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->status, 200);
  // watch=1 is a watch: events, one a line (not a list), until timeoutSeconds.
  Json first = Json::parse(streamed.substr(0, streamed.find('\n')), nullptr, false);
  EXPECT_EQ(first.value("type", ""), "ADDED") << streamed;
  EXPECT_EQ(first["object"]["metadata"]["name"], "watched");

  ASSERT_EQ(Call("POST", runs_, Run("owner").dump()).code, 201);
  auto by_query = Call("DELETE", runs_ + "/owner", "", "", {{"propagationPolicy", "Orphan"}});
  EXPECT_EQ(by_query.code, 200);
  EXPECT_EQ(by_query.json()["metadata"]["finalizers"][0], "orphan");
  ASSERT_EQ(Call("POST", runs_, Run("other").dump()).code, 201);
  auto by_body = Call("DELETE", runs_ + "/other",
                      R"({"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Foreground"})");
  EXPECT_EQ(by_body.code, 200);
  EXPECT_EQ(by_body.json()["metadata"]["finalizers"][0], "foregroundDeletion");
  // The Client's DeleteOptions body, as the server reads it.
  ASSERT_TRUE(client_->Create(testenv::TestRuns(), ns(), Run("third")).ok());
  DeleteOptions orphan;
  orphan.propagation = PropagationPolicy::kOrphan;
  auto deleted = client_->Delete(testenv::TestRuns(), ns(), "third", orphan);
  ASSERT_TRUE(deleted.ok()) << deleted.error().ToString();
  EXPECT_EQ((*deleted)["metadata"]["finalizers"], Json::array({"orphan"})) << deleted->dump();

  auto bad = Call("DELETE", runs_ + "/x", "", "", {{"propagationPolicy", "Sometimes"}});
  EXPECT_EQ(bad.code, 422);
  EXPECT_EQ(bad.error().reason, Reason::kInvalid);
  ASSERT_EQ(bad.error().causes.size(), 1u);
  EXPECT_EQ(bad.error().causes[0].field, "propagationPolicy");
  EXPECT_EQ(bad.error().message,
            "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Sometimes\": "
            "supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"");
}

// Catches: a DeleteCollection whose selector is not sent (everything in the
// namespace deleted) or whose answer (the deleted objects) is misread.
TEST_F(StatusCodes, ClientDeleteCollectionBySelector) {
  auto cms = resources::ConfigMaps();
  for (const char* n : {"a", "b", "c"}) {
    ASSERT_TRUE(client_
                    ->Create(cms, ns(),
                             testenv::ConfigMapJson(n, {{"k", "v"}}, {{"keep", n == std::string("c") ? "yes" : "no"}}))
                    .ok());
  }
  ListOptions sel;
  sel.label_selector = "keep=no";
  auto deleted = client_->DeleteCollection(cms, ns(), sel);
  ASSERT_TRUE(deleted.ok()) << deleted.error().ToString();
  EXPECT_EQ(deleted->items.size(), 2u);
  ListOptions mine;
  mine.label_selector = "keep";  // not the namespace's kube-root-ca.crt
  auto left = client_->List(cms, ns(), mine);
  ASSERT_TRUE(left.ok()) << left.error().ToString();
  ASSERT_EQ(left->items.size(), 1u);
  EXPECT_EQ(left->items[0]["metadata"]["name"], "c");
}

}  // namespace
}  // namespace fairbench::kube
