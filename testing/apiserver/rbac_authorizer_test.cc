// The RBAC authorizer on its own: each rule kind, with the objects of the
// examples in Kubernetes' "Using RBAC Authorization" documentation
// (kubernetes.io/docs/reference/access-authn-authz/rbac/). Each test says
// which change to rbac_authorizer.cc it would catch.
#include "testing/apiserver/rbac_authorizer.h"

#include <gtest/gtest.h>

#include "testing/apiserver/yaml_json.h"

namespace fairbench::apiserver {
namespace {

using nlohmann::json;

class Rbac : public ::testing::Test {
 protected:
  // Stores each YAML document (separated by "---") under its kind's key.
  void Apply(const std::string& yaml) {
    size_t at = 0;
    while (at < yaml.size()) {
      size_t end = yaml.find("\n---\n", at);
      if (end == std::string::npos) end = yaml.size();
      auto obj = YamlToJson(yaml.substr(at, end - at));
      ASSERT_TRUE(obj.ok()) << obj.status().ToString();
      const std::string kind = (*obj)["kind"].get<std::string>();
      std::string plural = kind == "Role"                 ? "roles"
                           : kind == "ClusterRole"        ? "clusterroles"
                           : kind == "RoleBinding"        ? "rolebindings"
                           : kind == "ClusterRoleBinding" ? "clusterrolebindings"
                                                          : "";
      ASSERT_FALSE(plural.empty()) << kind;
      store_.Create("rbac.authorization.k8s.io/" + plural, std::move(*obj));
      at = end + 5;
    }
  }
  Decision Check(const UserInfo& user, const std::string& method, const std::string& path,
                 std::multimap<std::string, std::string> query = {}) const {
    return RbacAuthorizer(store_).Authorize(user, ResolveRequestInfo(method, path, query));
  }
  bool Allowed(const UserInfo& user, const std::string& method, const std::string& path,
               std::multimap<std::string, std::string> query = {}) const {
    return Check(user, method, path, std::move(query)).allowed;
  }
  static UserInfo User(const std::string& name, std::vector<std::string> groups = {}) {
    return AuthenticatedUser(name, groups);
  }

  ObjectStore store_{100};
};

const char kPodReader[] = R"(apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  namespace: default
  name: pod-reader
rules:
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "watch", "list"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: read-pods
  namespace: default
subjects:
- kind: User
  name: jane
  apiGroup: rbac.authorization.k8s.io
roleRef:
  kind: Role
  name: pod-reader
  apiGroup: rbac.authorization.k8s.io
)";

// Catches: verbs not compared (any verb allowed once a rule names the
// resource), the API group ignored, RoleBindings consulted outside their
// namespace, or the user name not compared.
TEST_F(Rbac, RoleAndRoleBindingGrantTheirVerbsInTheirNamespaceOnly) {
  Apply(kPodReader);
  const UserInfo jane = User("jane");
  EXPECT_TRUE(Allowed(jane, "GET", "/api/v1/namespaces/default/pods/p"));
  EXPECT_TRUE(Allowed(jane, "GET", "/api/v1/namespaces/default/pods"));
  EXPECT_TRUE(Allowed(jane, "GET", "/api/v1/namespaces/default/pods", {{"watch", "true"}}));
  EXPECT_FALSE(Allowed(jane, "POST", "/api/v1/namespaces/default/pods"));
  EXPECT_FALSE(Allowed(jane, "DELETE", "/api/v1/namespaces/default/pods/p"));
  EXPECT_FALSE(Allowed(jane, "DELETE", "/api/v1/namespaces/default/pods"));  // deletecollection
  EXPECT_FALSE(Allowed(jane, "PATCH", "/api/v1/namespaces/default/pods/p"));
  EXPECT_FALSE(Allowed(jane, "GET", "/api/v1/namespaces/other/pods/p"));
  EXPECT_FALSE(Allowed(jane, "GET", "/api/v1/pods"));  // all namespaces = cluster scope
  EXPECT_FALSE(Allowed(jane, "GET", "/apis/example.com/v1/namespaces/default/pods/p"));  // another group's pods
  EXPECT_FALSE(Allowed(jane, "GET", "/api/v1/namespaces/default/configmaps/p"));
  EXPECT_FALSE(Allowed(User("bob"), "GET", "/api/v1/namespaces/default/pods/p"));
}

// Catches: the SSAR/authorizer reason losing the describer's wording (what
// `kubectl auth can-i` users and SubjectAccessReview callers read).
TEST_F(Rbac, AnAllowedRequestNamesTheBindingRoleAndSubject) {
  Apply(kPodReader);
  EXPECT_EQ(Check(User("jane"), "GET", "/api/v1/namespaces/default/pods/p").reason,
            "RBAC: allowed by RoleBinding \"read-pods/default\" of Role \"pod-reader\" to User \"jane\"");
}

// The docs' "RoleBinding referencing a ClusterRole": dave reads secrets in
// "development" only. Catches: a RoleBinding to a ClusterRole granting
// cluster-wide, or a RoleBinding's roleRef of kind ClusterRole looked up
// among Roles.
TEST_F(Rbac, RoleBindingToAClusterRoleIsLimitedToTheBindingsNamespace) {
  Apply(R"(apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: secret-reader
rules:
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get", "watch", "list"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: read-secrets
  namespace: development
subjects:
- kind: User
  name: dave
  apiGroup: rbac.authorization.k8s.io
roleRef:
  kind: ClusterRole
  name: secret-reader
  apiGroup: rbac.authorization.k8s.io
)");
  const UserInfo dave = User("dave");
  EXPECT_TRUE(Allowed(dave, "GET", "/api/v1/namespaces/development/secrets/s"));
  EXPECT_TRUE(Allowed(dave, "GET", "/api/v1/namespaces/development/secrets"));
  EXPECT_FALSE(Allowed(dave, "GET", "/api/v1/namespaces/default/secrets/s"));
  EXPECT_FALSE(Allowed(dave, "GET", "/api/v1/secrets"));
}

// The docs' ClusterRoleBinding to Group "manager". Catches: ClusterRoleBindings
// not consulted, or Group subjects compared with the user name.
TEST_F(Rbac, ClusterRoleBindingToAGroupGrantsInEveryNamespaceAndClusterWide) {
  Apply(R"(apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: secret-reader
rules:
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get", "watch", "list"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: read-secrets-global
subjects:
- kind: Group
  name: manager
  apiGroup: rbac.authorization.k8s.io
roleRef:
  kind: ClusterRole
  name: secret-reader
  apiGroup: rbac.authorization.k8s.io
)");
  const UserInfo alice = User("alice", {"manager"});
  EXPECT_TRUE(Allowed(alice, "GET", "/api/v1/namespaces/a/secrets/s"));
  EXPECT_TRUE(Allowed(alice, "GET", "/api/v1/namespaces/b/secrets"));
  EXPECT_TRUE(Allowed(alice, "GET", "/api/v1/secrets"));
  EXPECT_FALSE(Allowed(User("manager"), "GET", "/api/v1/secrets"));  // a user named like the group is not in it
}

// The docs' "pod-and-pod-logs-reader". Catches: the subresource dropped
// from the matched resource (pods granting pods/log), or "pods/log" not
// matched as one string.
TEST_F(Rbac, AVerbOnASubresourceNeedsTheSubresourceInTheRule) {
  Apply(R"(apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  namespace: default
  name: pod-and-pod-logs-reader
rules:
- apiGroups: [""]
  resources: ["pods", "pods/log"]
  verbs: ["get", "list"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  namespace: default
  name: pods-only
rules:
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: logs
  namespace: default
subjects:
- {kind: User, name: reader}
roleRef: {kind: Role, name: pod-and-pod-logs-reader, apiGroup: rbac.authorization.k8s.io}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: pods
  namespace: default
subjects:
- {kind: User, name: viewer}
roleRef: {kind: Role, name: pods-only, apiGroup: rbac.authorization.k8s.io}
)");
  EXPECT_TRUE(Allowed(User("reader"), "GET", "/api/v1/namespaces/default/pods/p/log"));
  EXPECT_TRUE(Allowed(User("viewer"), "GET", "/api/v1/namespaces/default/pods/p"));
  EXPECT_FALSE(Allowed(User("viewer"), "GET", "/api/v1/namespaces/default/pods/p/log"));
  EXPECT_FALSE(Allowed(User("viewer"), "GET", "/api/v1/namespaces/default/pods/p/status"));
}

// fairbench's own: the controller's status writes and the kubelet summary.
// Catches: a rule for "benchmarkruns" granting "benchmarkruns/status", the
// "*/status" form not matched (or matching other subresources), or
// nodes/proxy treated as a plain get on nodes.
TEST_F(Rbac, StatusAndProxySubresourcesAndTheirWildcard) {
  Apply(R"(apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: controller
rules:
- apiGroups: ["fairbench.dev"]
  resources: ["benchmarkruns"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["fairbench.dev"]
  resources: ["benchmarkruns/status"]
  verbs: ["patch"]
- apiGroups: [""]
  resources: ["nodes/proxy"]
  verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: status-writer
rules:
- apiGroups: ["*"]
  resources: ["*/status"]
  verbs: ["update"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: controller}
subjects: [{kind: User, name: c}]
roleRef: {kind: ClusterRole, name: controller, apiGroup: rbac.authorization.k8s.io}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: status-writer}
subjects: [{kind: User, name: s}]
roleRef: {kind: ClusterRole, name: status-writer, apiGroup: rbac.authorization.k8s.io}
)");
  const UserInfo c = User("c");
  EXPECT_TRUE(Allowed(c, "PATCH", "/apis/fairbench.dev/v1alpha1/namespaces/default/benchmarkruns/r/status"));
  EXPECT_FALSE(Allowed(c, "PUT", "/apis/fairbench.dev/v1alpha1/namespaces/default/benchmarkruns/r/status"));
  EXPECT_TRUE(Allowed(c, "PATCH", "/apis/fairbench.dev/v1alpha1/namespaces/default/benchmarkruns/r"));
  EXPECT_TRUE(Allowed(c, "GET", "/api/v1/nodes/n1/proxy/stats/summary", {{"only_cpu_and_memory", "true"}}));
  EXPECT_FALSE(Allowed(c, "GET", "/api/v1/nodes/n1"));

  const UserInfo s = User("s");
  EXPECT_TRUE(Allowed(s, "PUT", "/apis/apps/v1/namespaces/default/deployments/d/status"));
  EXPECT_TRUE(Allowed(s, "PUT", "/api/v1/namespaces/default/pods/p/status"));
  EXPECT_FALSE(Allowed(s, "PUT", "/api/v1/namespaces/default/pods/p"));
  EXPECT_FALSE(Allowed(s, "PUT", "/api/v1/namespaces/default/pods/p/log"));
}

// The docs' "configmap-updater" and its note that resourceNames cannot
// restrict list, watch, create or deletecollection. Catches: an empty
// request name treated as matching, or resourceNames ignored.
TEST_F(Rbac, ResourceNamesAllowTheNamedObjectButNeverListWatchOrCreate) {
  Apply(R"(apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  namespace: default
  name: configmap-updater
rules:
- apiGroups: [""]
  resources: ["configmaps"]
  resourceNames: ["my-configmap"]
  verbs: ["update", "get", "list", "watch", "create"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: cm, namespace: default}
subjects: [{kind: User, name: u}]
roleRef: {kind: Role, name: configmap-updater, apiGroup: rbac.authorization.k8s.io}
)");
  const UserInfo u = User("u");
  EXPECT_TRUE(Allowed(u, "GET", "/api/v1/namespaces/default/configmaps/my-configmap"));
  EXPECT_TRUE(Allowed(u, "PUT", "/api/v1/namespaces/default/configmaps/my-configmap"));
  EXPECT_FALSE(Allowed(u, "GET", "/api/v1/namespaces/default/configmaps/other"));
  EXPECT_FALSE(Allowed(u, "GET", "/api/v1/namespaces/default/configmaps"));
  EXPECT_FALSE(Allowed(u, "GET", "/api/v1/namespaces/default/configmaps", {{"watch", "true"}}));
  EXPECT_FALSE(Allowed(u, "POST", "/api/v1/namespaces/default/configmaps"));
  // A list or watch pinned to the name by fieldSelector names it (kubectl
  // get cm my-configmap -w), as in the real server.
  EXPECT_TRUE(Allowed(u, "GET", "/api/v1/namespaces/default/configmaps",
                      {{"watch", "true"}, {"fieldSelector", "metadata.name=my-configmap"}}));
  EXPECT_TRUE(Allowed(u, "GET", "/api/v1/namespaces/default/configmaps",
                      {{"fieldSelector", "metadata.name=my-configmap"}}));
}

// The docs' subject examples. Catches: a ServiceAccount subject compared
// with the bare name, its namespace not defaulted to the RoleBinding's,
// a ClusterRoleBinding's namespace-less ServiceAccount subject matching, or
// the service-account groups not added.
TEST_F(Rbac, ServiceAccountSubjectsAndTheirGroups) {
  Apply(R"(apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: br-reader}
rules:
- apiGroups: ["fairbench.dev"]
  resources: ["benchmarkruns"]
  verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: controller, namespace: default}
subjects:
- {kind: ServiceAccount, name: fairbench-controller, namespace: default}
roleRef: {kind: ClusterRole, name: br-reader, apiGroup: rbac.authorization.k8s.io}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: local-sa, namespace: team}
subjects:
- {kind: ServiceAccount, name: builder}
roleRef: {kind: ClusterRole, name: br-reader, apiGroup: rbac.authorization.k8s.io}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: all-qa, namespace: qa}
subjects:
- {kind: Group, name: "system:serviceaccounts:qa", apiGroup: rbac.authorization.k8s.io}
roleRef: {kind: ClusterRole, name: br-reader, apiGroup: rbac.authorization.k8s.io}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: no-namespace}
subjects:
- {kind: ServiceAccount, name: builder}
roleRef: {kind: ClusterRole, name: br-reader, apiGroup: rbac.authorization.k8s.io}
)");
  const std::string br = "/apis/fairbench.dev/v1alpha1/namespaces/";
  EXPECT_TRUE(Allowed(User("system:serviceaccount:default:fairbench-controller"), "GET", br + "default/benchmarkruns/r"));
  EXPECT_FALSE(Allowed(User("fairbench-controller"), "GET", br + "default/benchmarkruns/r"));
  EXPECT_FALSE(Allowed(User("system:serviceaccount:other:fairbench-controller"), "GET", br + "default/benchmarkruns/r"));
  EXPECT_TRUE(Allowed(User("system:serviceaccount:team:builder"), "GET", br + "team/benchmarkruns/r"));
  EXPECT_FALSE(Allowed(User("system:serviceaccount:team:builder"), "GET", br + "other/benchmarkruns/r"));
  EXPECT_FALSE(Allowed(User("system:serviceaccount:x:builder"), "GET", br + "x/benchmarkruns/r"));
  EXPECT_TRUE(Allowed(User("system:serviceaccount:qa:anyone"), "GET", br + "qa/benchmarkruns/r"));
  EXPECT_FALSE(Allowed(User("system:serviceaccount:dev:anyone"), "GET", br + "qa/benchmarkruns/r"));
  EXPECT_EQ(Check(User("system:serviceaccount:team:builder"), "GET", br + "team/benchmarkruns/r").reason,
            "RBAC: allowed by RoleBinding \"local-sa/team\" of ClusterRole \"br-reader\" to ServiceAccount "
            "\"builder/team\"");
}

// Catches: the implied groups missing (system:authenticated,
// system:unauthenticated, the service-account ones) or the anonymous user
// not named system:anonymous.
TEST_F(Rbac, TheGroupsEveryUserIsIn) {
  EXPECT_EQ(User("jane").groups, (std::vector<std::string>{"system:authenticated"}));
  EXPECT_EQ(User("jane", {"dev"}).groups, (std::vector<std::string>{"dev", "system:authenticated"}));
  EXPECT_EQ(User("system:serviceaccount:ns1:sa").groups,
            (std::vector<std::string>{"system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"}));
  const UserInfo anonymous = User("");
  EXPECT_EQ(anonymous.name, "system:anonymous");
  EXPECT_EQ(anonymous.groups, (std::vector<std::string>{"system:unauthenticated"}));

  Apply(R"(apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: ns-viewer}
rules:
- {apiGroups: [""], resources: ["namespaces"], verbs: ["list"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: everyone}
subjects:
- {kind: Group, name: "system:authenticated", apiGroup: rbac.authorization.k8s.io}
roleRef: {kind: ClusterRole, name: ns-viewer, apiGroup: rbac.authorization.k8s.io}
)");
  EXPECT_TRUE(Allowed(User("jane"), "GET", "/api/v1/namespaces"));
  EXPECT_TRUE(Allowed(User("system:serviceaccount:ns1:sa"), "GET", "/api/v1/namespaces"));
  EXPECT_FALSE(Allowed(anonymous, "GET", "/api/v1/namespaces"));
}

// The docs' nonResourceURLs example ("/healthz", "/healthz/*", a suffix
// glob). Catches: non-resource requests matched against resource rules, the
// trailing "*" taken literally or as a match anywhere, or the verb (the
// lower-case method) not compared.
TEST_F(Rbac, NonResourceUrlsExactAndPrefix) {
  Apply(R"(apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: health}
rules:
- nonResourceURLs: ["/healthz", "/healthz/*"]
  verbs: ["get", "post"]
- nonResourceURLs: ["/apis/*"]
  verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: all-resources}
rules:
- {apiGroups: ["*"], resources: ["*"], verbs: ["*"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: health}
subjects: [{kind: User, name: u}]
roleRef: {kind: ClusterRole, name: health, apiGroup: rbac.authorization.k8s.io}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: r}
subjects: [{kind: User, name: r}]
roleRef: {kind: ClusterRole, name: all-resources, apiGroup: rbac.authorization.k8s.io}
)");
  const UserInfo u = User("u");
  EXPECT_TRUE(Allowed(u, "GET", "/healthz"));
  EXPECT_TRUE(Allowed(u, "POST", "/healthz"));
  EXPECT_TRUE(Allowed(u, "GET", "/healthz/etcd"));
  EXPECT_FALSE(Allowed(u, "PUT", "/healthz"));
  EXPECT_FALSE(Allowed(u, "GET", "/healthzz"));
  EXPECT_FALSE(Allowed(u, "GET", "/livez"));
  EXPECT_TRUE(Allowed(u, "GET", "/apis/fairbench.dev"));  // discovery: not a resource request
  EXPECT_FALSE(Allowed(u, "GET", "/apis"));
  // Resource rules never cover non-resource URLs, whatever their wildcards.
  EXPECT_FALSE(Allowed(User("r"), "GET", "/healthz"));
  EXPECT_TRUE(Allowed(User("r"), "DELETE", "/apis/fairbench.dev/v1alpha1/namespaces/x/benchmarkruns"));
}

// The docs' "Caution" about wildcards: apiGroups ["example.com"],
// resources ["*"], verbs ["*"]. Catches: "*" compared literally in verbs,
// resources or groups, or a group wildcard leaking into other groups.
TEST_F(Rbac, WildcardsInVerbsResourcesAndGroups) {
  Apply(R"(apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: example.com-superuser}
rules:
- apiGroups: ["example.com"]
  resources: ["*"]
  verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: super}
subjects: [{kind: User, name: u}]
roleRef: {kind: ClusterRole, name: example.com-superuser, apiGroup: rbac.authorization.k8s.io}
)");
  const UserInfo u = User("u");
  EXPECT_TRUE(Allowed(u, "DELETE", "/apis/example.com/v1/namespaces/n/widgets"));
  EXPECT_TRUE(Allowed(u, "PATCH", "/apis/example.com/v1/namespaces/n/widgets/w/status"));
  EXPECT_TRUE(Allowed(u, "GET", "/apis/example.com/v1/gadgets", {{"watch", "1"}}));
  EXPECT_FALSE(Allowed(u, "GET", "/api/v1/namespaces/n/pods"));
  EXPECT_FALSE(Allowed(u, "GET", "/apis/example.org/v1/widgets"));
}

// The docs' aggregated "monitoring" ClusterRole. Catches: aggregationRule
// ignored, a selector matching roles without the label, or the aggregated
// role's own (controller-managed) rules used instead.
TEST_F(Rbac, AggregatedClusterRolesCarryTheRulesOfTheRolesTheySelect) {
  Apply(R"(apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: monitoring
aggregationRule:
  clusterRoleSelectors:
  - matchLabels:
      rbac.example.com/aggregate-to-monitoring: "true"
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: monitoring-endpointslices
  labels:
    rbac.example.com/aggregate-to-monitoring: "true"
rules:
- apiGroups: [""]
  resources: ["services", "endpointslices", "pods"]
  verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: unrelated
  labels:
    rbac.example.com/aggregate-to-monitoring: "false"
rules:
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: monitoring}
subjects: [{kind: Group, name: monitors}]
roleRef: {kind: ClusterRole, name: monitoring, apiGroup: rbac.authorization.k8s.io}
)");
  const UserInfo m = User("m", {"monitors"});
  EXPECT_TRUE(Allowed(m, "GET", "/api/v1/namespaces/x/pods"));
  EXPECT_TRUE(Allowed(m, "GET", "/api/v1/services"));
  EXPECT_FALSE(Allowed(m, "GET", "/api/v1/namespaces/x/secrets/s"));

  // Match expressions, as the chart-style "aggregate-to-view" selectors use.
  EXPECT_TRUE(LabelSelectorMatches(json::parse(R"({"matchExpressions":[{"key":"a","operator":"In","values":["x"]}]})"),
                                   json{{"a", "x"}}));
  EXPECT_FALSE(LabelSelectorMatches(
      json::parse(R"({"matchExpressions":[{"key":"a","operator":"NotIn","values":["x"]}]})"), json{{"a", "x"}}));
  EXPECT_TRUE(LabelSelectorMatches(json::parse(R"({"matchExpressions":[{"key":"a","operator":"DoesNotExist"}]})"),
                                   json::object()));
  EXPECT_FALSE(LabelSelectorMatches(json::parse(R"({"matchExpressions":[{"key":"a","operator":"Bogus"}]})"),
                                    json{{"a", "x"}}));
}

// Catches: a binding to a missing role silently ignored (the real server
// names it in the refusal) or counted as granting.
TEST_F(Rbac, ABindingToAMissingRoleIsNamedInTheReason) {
  Apply(R"(apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: dangling, namespace: default}
subjects: [{kind: User, name: u}]
roleRef: {kind: Role, name: gone, apiGroup: rbac.authorization.k8s.io}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: dangling}
subjects: [{kind: User, name: u}]
roleRef: {kind: ClusterRole, name: gone-too, apiGroup: rbac.authorization.k8s.io}
)");
  const Decision d = Check(User("u"), "GET", "/api/v1/namespaces/default/pods/p");
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.reason,
            "RBAC: [clusterrole.rbac.authorization.k8s.io \"gone-too\" not found, role.rbac.authorization.k8s.io "
            "\"gone\" not found]");
  EXPECT_EQ(Check(User("u"), "GET", "/api/v1/pods").reason,
            "RBAC: clusterrole.rbac.authorization.k8s.io \"gone-too\" not found");
  EXPECT_EQ(Check(User("other"), "GET", "/api/v1/pods").reason, "");
}

}  // namespace
}  // namespace fairbench::apiserver
