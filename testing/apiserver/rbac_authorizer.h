// The RBAC authorizer of the test API server: decides a request from the
// Roles, ClusterRoles, RoleBindings and ClusterRoleBindings
// (rbac.authorization.k8s.io/v1) the server stores, as kube-apiserver's RBAC
// authorizer does (plugin/pkg/auth/authorizer/rbac and
// pkg/registry/rbac/validation/rule.go):
//
//   - every ClusterRoleBinding whose subjects name the user, then, for a
//     request in a namespace, every RoleBinding of that namespace; a
//     RoleBinding to a ClusterRole grants its rules in that namespace only;
//   - subjects: User (by name), Group (by one of the user's groups),
//     ServiceAccount {name, namespace} (user system:serviceaccount:NS:NAME;
//     a RoleBinding's subject without namespace means the binding's own);
//   - a rule allows a resource request when verb, API group, resource (or
//     resource/subresource, `*`, `*/subresource`) and resourceNames all
//     match — resourceNames never match a request without a name (list,
//     watch, create, deletecollection) — and a non-resource request when verb
//     and nonResourceURLs (exact, `*`, or a `prefix*`) match;
//   - a ClusterRole with an aggregationRule has the rules of every other
//     ClusterRole whose labels match one of its clusterRoleSelectors. The
//     real server's aggregation controller writes them into the role's
//     `rules`; here they are resolved when a request is decided and the
//     stored object is left as written (a documented gap).
//
// A binding whose role does not exist contributes an error to the reason of
// a refusal (`RBAC: clusterrole.rbac.authorization.k8s.io "x" not found`),
// as in the real server.
//
// Stateless between calls; reads the store it is given, which the caller
// must guard (ApiServer holds its mutex).
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "testing/apiserver/object_store.h"
#include "testing/apiserver/request_info.h"

namespace fairbench::apiserver {

// Who asks, as the authenticators hand it on (user.Info).
struct UserInfo {
  std::string name;
  std::vector<std::string> groups;
  bool InGroup(const std::string& group) const;
};

// The user with the groups kube-apiserver's authenticators add: anonymous
// ("" name) is system:anonymous in system:unauthenticated; everyone else is
// in system:authenticated; a service account's user
// (system:serviceaccount:NS:NAME) is in system:serviceaccounts and
// system:serviceaccounts:NS too. Static tokens here stand in for the
// service-account tokens a real cluster issues, hence the service-account
// groups for such a name whatever authenticated it.
UserInfo AuthenticatedUser(const std::string& name, const std::vector<std::string>& groups);

// An rbac.authorization.k8s.io/v1 PolicyRule.
struct PolicyRule {
  std::vector<std::string> verbs;
  std::vector<std::string> api_groups;
  std::vector<std::string> resources;
  std::vector<std::string> resource_names;
  std::vector<std::string> non_resource_urls;
};
PolicyRule ParsePolicyRule(const nlohmann::json& rule);
bool RuleAllows(const RequestInfo& request, const PolicyRule& rule);

// A binding's subject.
struct Subject {
  std::string kind;  // User, Group, ServiceAccount
  std::string name;
  std::string ns;
};
// binding_ns: the RoleBinding's namespace, "" for a ClusterRoleBinding.
bool AppliesToUser(const UserInfo& user, const Subject& subject, const std::string& binding_ns);

struct Decision {
  bool allowed = false;
  // Allowed: "RBAC: allowed by ClusterRoleBinding ..." (what a
  // SubjectAccessReview reports). Refused: "" or "RBAC: <errors>".
  std::string reason;
};

// A metav1.LabelSelector ({matchLabels, matchExpressions}) against labels;
// an empty selector matches everything, an invalid one nothing.
bool LabelSelectorMatches(const nlohmann::json& selector, const nlohmann::json& labels);

class RbacAuthorizer {
 public:
  explicit RbacAuthorizer(const ObjectStore& store) : store_(store) {}
  Decision Authorize(const UserInfo& user, const RequestInfo& request) const;

 private:
  // The rules a binding's roleRef grants; a missing role sets *error.
  std::vector<PolicyRule> RoleRefRules(const nlohmann::json& role_ref, const std::string& binding_ns,
                                       std::string* error) const;
  std::vector<PolicyRule> ClusterRoleRules(const nlohmann::json& role, std::set<std::string>* visiting) const;

  const ObjectStore& store_;
};

}  // namespace fairbench::apiserver
