// Authorization around the RBAC authorizer: the 403 body in the real
// server's words (responsewriters.forbiddenMessage + apierrors.NewForbidden),
// system:masters, the modes, SelfSubjectAccessReview, and the ApiServer's
// wiring (authorized before routing, kubelet routes too, the default policy
// in RBAC mode, nothing changed in AlwaysAllow mode). Each test says which
// change it would catch.
#include "testing/apiserver/authorization.h"

#include <gtest/gtest.h>

#include "testing/apiserver/api_server.h"

namespace fairbench::apiserver {
namespace {

using nlohmann::json;

std::string Message(const std::string& method, const std::string& path, const std::string& user,
                    const std::string& reason = "") {
  return ForbiddenReply(ResolveRequestInfo(method, path, {}), user, reason).body["message"].get<std::string>();
}

// Catches: any drift from kube-apiserver's wording — the qualified
// resource and quoted name before "is forbidden", the subresource joined
// with "/", the API group always quoted (also ""), "in the namespace" vs
// "at the cluster scope", the path form for non-resource URLs.
TEST(Forbidden, MessagesInTheRealServersWords) {
  const std::string sa = "system:serviceaccount:default:fairbench-controller";
  EXPECT_EQ(Message("GET", "/api/v1/namespaces/default/pods/x", sa),
            "pods \"x\" is forbidden: User \"system:serviceaccount:default:fairbench-controller\" cannot get "
            "resource \"pods\" in API group \"\" in the namespace \"default\"");
  EXPECT_EQ(Message("GET", "/api/v1/pods", "jane"),
            "pods is forbidden: User \"jane\" cannot list resource \"pods\" in API group \"\" at the cluster scope");
  EXPECT_EQ(Message("GET", "/api/v1/namespaces/default/pods/x/log", "jane"),
            "pods \"x\" is forbidden: User \"jane\" cannot get resource \"pods/log\" in API group \"\" in the "
            "namespace \"default\"");
  EXPECT_EQ(Message("POST", "/apis/fairbench.dev/v1alpha1/namespaces/ns1/benchmarkruns/r1/status", "jane"),
            "benchmarkruns.fairbench.dev \"r1\" is forbidden: User \"jane\" cannot create resource "
            "\"benchmarkruns/status\" in API group \"fairbench.dev\" in the namespace \"ns1\"");
  EXPECT_EQ(Message("GET", "/api/v1/nodes/n1/proxy/stats/summary", "jane"),
            "nodes \"n1\" is forbidden: User \"jane\" cannot get resource \"nodes/proxy\" in API group \"\" at the "
            "cluster scope");
  EXPECT_EQ(Message("GET", "/apis/fairbench.dev/v1alpha1/namespaces/ns1/benchmarkruns", "jane",
                    "RBAC: role.rbac.authorization.k8s.io \"gone\" not found"),
            "benchmarkruns.fairbench.dev is forbidden: User \"jane\" cannot list resource \"benchmarkruns\" in API "
            "group \"fairbench.dev\" in the namespace \"ns1\": RBAC: role.rbac.authorization.k8s.io \"gone\" not "
            "found");
  EXPECT_EQ(Message("GET", "/metrics", "system:anonymous"),
            "forbidden: User \"system:anonymous\" cannot get path \"/metrics\"");
}

// Catches: the Status shape (reason, code, details naming the resource
// without its subresource as kind) differing from apierrors.NewForbidden.
TEST(Forbidden, StatusShapeAndDetails) {
  StatusReply r = ForbiddenReply(
      ResolveRequestInfo("PATCH", "/apis/fairbench.dev/v1alpha1/namespaces/ns1/benchmarkruns/r1/status", {}), "u", "");
  EXPECT_EQ(r.code, 403);
  EXPECT_EQ(r.body["kind"], "Status");
  EXPECT_EQ(r.body["apiVersion"], "v1");
  EXPECT_EQ(r.body["status"], "Failure");
  EXPECT_EQ(r.body["reason"], "Forbidden");
  EXPECT_EQ(r.body["code"], 403);
  EXPECT_EQ(r.body["details"], (json{{"name", "r1"}, {"group", "fairbench.dev"}, {"kind", "benchmarkruns"}}));
  // Empty fields are omitted, as Go's omitempty does.
  EXPECT_EQ(ForbiddenReply(ResolveRequestInfo("GET", "/api/v1/pods", {}), "u", "").body["details"],
            (json{{"kind", "pods"}}));
  EXPECT_EQ(ForbiddenReply(ResolveRequestInfo("GET", "/metrics", {}), "u", "").body["details"], json::object());
}

// Catches: system:masters not short-circuiting RBAC (the admin client
// certificate would need bindings), or AlwaysAllow refusing anything.
TEST(Authorize, SystemMastersAndTheModes) {
  ObjectStore empty(10);
  const RequestInfo req = ResolveRequestInfo("DELETE", "/api/v1/namespaces/default/pods", {});
  EXPECT_TRUE(Authorize(AuthorizationMode::kRbac, empty, AuthenticatedUser("admin", {"system:masters"}), req).allowed);
  EXPECT_FALSE(Authorize(AuthorizationMode::kRbac, empty, AuthenticatedUser("jane", {}), req).allowed);
  EXPECT_TRUE(Authorize(AuthorizationMode::kAlwaysAllow, empty, AuthenticatedUser("jane", {}), req).allowed);
  EXPECT_EQ(ParseAuthorizationMode("RBAC"), AuthorizationMode::kRbac);
  EXPECT_EQ(ParseAuthorizationMode("AlwaysAllow"), AuthorizationMode::kAlwaysAllow);
  EXPECT_FALSE(ParseAuthorizationMode("rbac").has_value());
}

// Catches: SelfSubjectAccessReview attributes mapped wrongly onto the
// request (namespace, group, subresource, name), the non-resource form
// ignored, or a spec with neither form accepted.
TEST(Authorize, SelfSubjectAccessReview) {
  ObjectStore store(10);
  store.Create("rbac.authorization.k8s.io/roles",
               json::parse(R"({"kind":"Role","metadata":{"name":"logs","namespace":"ns1"},
                 "rules":[{"apiGroups":[""],"resources":["pods/log"],"verbs":["get"],"resourceNames":["p1"]}]})"));
  store.Create("rbac.authorization.k8s.io/rolebindings",
               json::parse(R"({"kind":"RoleBinding","metadata":{"name":"logs","namespace":"ns1"},
                 "subjects":[{"kind":"User","name":"jane"}],
                 "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"logs"}})"));
  const UserInfo jane = AuthenticatedUser("jane", {});
  auto review = [&](const std::string& attributes) {
    auto r = ReviewSelfSubjectAccess(AuthorizationMode::kRbac, store, jane,
                                     json::parse(R"({"apiVersion":"authorization.k8s.io/v1",
                                       "kind":"SelfSubjectAccessReview","spec":)" + attributes + "}"));
    EXPECT_TRUE(r.ok());
    return r.ok() ? r.value()["status"] : json();
  };
  json yes = review(R"({"resourceAttributes":{"namespace":"ns1","verb":"get","resource":"pods","subresource":"log","name":"p1"}})");
  EXPECT_EQ(yes["allowed"], true);
  EXPECT_EQ(yes["reason"], "RBAC: allowed by RoleBinding \"logs/ns1\" of Role \"logs\" to User \"jane\"");
  EXPECT_EQ(review(R"({"resourceAttributes":{"namespace":"ns1","verb":"get","resource":"pods","subresource":"log"}})"),
            (json{{"allowed", false}}));
  EXPECT_EQ(review(R"({"resourceAttributes":{"namespace":"ns2","verb":"get","resource":"pods","subresource":"log","name":"p1"}})")["allowed"],
            false);
  EXPECT_EQ(review(R"({"resourceAttributes":{"namespace":"ns1","verb":"get","group":"x.io","resource":"pods","subresource":"log","name":"p1"}})")["allowed"],
            false);
  EXPECT_EQ(review(R"({"nonResourceAttributes":{"path":"/healthz","verb":"get"}})")["allowed"], false);

  auto bad = ReviewSelfSubjectAccess(AuthorizationMode::kRbac, store, jane, json::parse(R"({"spec":{}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.reply().code, 422);
}

ApiRequest Request(const std::string& method, const std::string& path, const std::string& user,
                   std::vector<std::string> groups = {}, const std::string& body = "") {
  ApiRequest r;
  r.method = method;
  r.path = path;
  r.user = user;
  r.groups = std::move(groups);
  r.body = body;
  r.content_type = body.empty() ? "" : "application/json";
  return r;
}

// Catches: authorization after routing (a refused user would learn what
// exists from 404s), the kubelet routes (pods/log, nodes/proxy) skipped,
// the default policy missing in RBAC mode (discovery and `kubectl auth
// can-i` refused to every user), or RBAC objects not read back from the
// store the server writes.
TEST(ApiServerRbac, AuthorizesEveryRequestFromTheStoredObjects) {
  ApiServerOptions o;
  o.authorization = AuthorizationMode::kRbac;
  ApiServer api(o);
  const std::string sa = "system:serviceaccount:default:fairbench-controller";
  ApiResponse r = api.Handle(Request("GET", "/api/v1/namespaces/default/pods/x", sa));
  EXPECT_EQ(r.code, 403);
  EXPECT_EQ(json::parse(r.body)["message"],
            "pods \"x\" is forbidden: User \"system:serviceaccount:default:fairbench-controller\" cannot get "
            "resource \"pods\" in API group \"\" in the namespace \"default\"");
  EXPECT_EQ(api.Handle(Request("GET", "/apis/nowhere.io/v1/widgets", sa)).code, 403);  // before routing: no 404
  EXPECT_EQ(api.Handle(Request("GET", "/api/v1/namespaces/default/pods/x/log", sa)).code, 403);
  EXPECT_EQ(api.Handle(Request("GET", "/api/v1/nodes/n1/proxy/stats/summary", sa)).code, 403);
  // The default policy: discovery for authenticated users, health for all.
  EXPECT_EQ(api.Handle(Request("GET", "/api", sa)).code, 200);
  EXPECT_EQ(api.Handle(Request("GET", "/apis/rbac.authorization.k8s.io/v1", sa)).code, 200);
  EXPECT_EQ(api.Handle(Request("GET", "/healthz", "")).code, 200);
  EXPECT_EQ(api.Handle(Request("GET", "/api", "")).code, 403);
  ApiResponse review = api.Handle(Request(
      "POST", kSelfSubjectAccessReviewPath, sa, {},
      R"({"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview",
          "spec":{"resourceAttributes":{"namespace":"default","verb":"get","resource":"pods"}}})"));
  ASSERT_EQ(review.code, 201) << review.body;
  EXPECT_EQ(json::parse(review.body)["status"]["allowed"], false);

  // An administrator (system:masters) grants the service account a Role.
  const std::vector<std::string> masters = {"system:masters"};
  ASSERT_EQ(api.Handle(Request("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", "admin", masters,
                               R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role",
                                   "metadata":{"name":"pod-reader","namespace":"default"},
                                   "rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get"]}]})"))
                .code,
            201);
  ASSERT_EQ(api.Handle(Request("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", "admin",
                               masters,
                               R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding",
                                   "metadata":{"name":"read-pods","namespace":"default"},
                                   "subjects":[{"kind":"ServiceAccount","name":"fairbench-controller","namespace":"default"}],
                                   "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"pod-reader"}})"))
                .code,
            201);
  EXPECT_EQ(api.Handle(Request("GET", "/api/v1/namespaces/default/pods/x", sa)).code, 404);  // allowed, absent
  EXPECT_EQ(api.Handle(Request("GET", "/api/v1/namespaces/default/pods", sa)).code, 403);
}

// Catches: AlwaysAllow mode changed by this feature (existing tests act
// without RBAC objects and must keep working), or the default policy
// created when RBAC is off.
TEST(ApiServerRbac, AlwaysAllowIsTheDefaultAndStoresNoPolicy) {
  ApiServer api;
  EXPECT_EQ(api.Handle(Request("GET", "/api/v1/namespaces/default/pods", "nobody")).code, 200);
  EXPECT_EQ(api.Handle(Request("GET", "/api/v1/namespaces/default/pods", "")).code, 200);
  ApiResponse roles = api.Handle(Request("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles", ""));
  ASSERT_EQ(roles.code, 200);
  EXPECT_TRUE(json::parse(roles.body)["items"].empty());
  ApiResponse review = api.Handle(Request(
      "POST", kSelfSubjectAccessReviewPath, "nobody", {},
      R"({"spec":{"resourceAttributes":{"namespace":"default","verb":"delete","resource":"nodes"}}})"));
  ASSERT_EQ(review.code, 201) << review.body;
  EXPECT_EQ(json::parse(review.body)["status"]["allowed"], true);
}

}  // namespace
}  // namespace fairbench::apiserver
