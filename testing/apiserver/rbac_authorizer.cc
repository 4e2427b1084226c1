// GCC 12 sees a null dereference in nlohmann::json::find()'s iterator once
// json_read::String is inlined into the rule matching here (the iterator is
// compared with end() first); the other compilers and files do not.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wnull-dereference"
#endif
#include "testing/apiserver/rbac_authorizer.h"

#include <algorithm>

#include "controller/kube/json_read.h"

namespace fairbench::apiserver {

using nlohmann::json;

namespace {

namespace jr = ::fairbench::kube::json_read;

const char kRoles[] = "rbac.authorization.k8s.io/roles";
const char kClusterRoles[] = "rbac.authorization.k8s.io/clusterroles";
const char kRoleBindings[] = "rbac.authorization.k8s.io/rolebindings";
const char kClusterRoleBindings[] = "rbac.authorization.k8s.io/clusterrolebindings";
const char kServiceAccountPrefix[] = "system:serviceaccount:";

std::vector<std::string> Strings(const json& j, const char* key) {
  std::vector<std::string> out;
  if (!j.is_object() || !j.contains(key) || !j[key].is_array()) return out;
  for (const json& v : j[key]) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

const json& Field(const json& j, const char* key) {
  static const json kNull;
  return j.is_object() && j.contains(key) ? j[key] : kNull;
}

bool Has(const std::vector<std::string>& set, const std::string& value) {
  return std::find(set.begin(), set.end(), value) != set.end();
}

bool VerbMatches(const PolicyRule& rule, const std::string& verb) {
  return Has(rule.verbs, "*") || Has(rule.verbs, verb);
}

bool ApiGroupMatches(const PolicyRule& rule, const std::string& group) {
  return Has(rule.api_groups, "*") || Has(rule.api_groups, group);
}

bool ResourceMatches(const PolicyRule& rule, const std::string& combined, const std::string& subresource) {
  for (const std::string& r : rule.resources) {
    if (r == "*" || r == combined) return true;
    // "*/status" matches the status subresource of every resource.
    if (!subresource.empty() && r.size() == subresource.size() + 2 && r.rfind("*/", 0) == 0 &&
        r.compare(2, std::string::npos, subresource) == 0) {
      return true;
    }
  }
  return false;
}

bool ResourceNameMatches(const PolicyRule& rule, const std::string& name) {
  // An empty request name matches no listed name: list, watch and create
  // are never limited by resourceNames.
  return rule.resource_names.empty() || Has(rule.resource_names, name);
}

bool NonResourceUrlMatches(const PolicyRule& rule, const std::string& path) {
  for (const std::string& u : rule.non_resource_urls) {
    if (u == "*" || u == path) return true;
    if (!u.empty() && u.back() == '*') {
      std::string prefix = u;
      while (!prefix.empty() && prefix.back() == '*') prefix.pop_back();
      if (path.rfind(prefix, 0) == 0) return true;
    }
  }
  return false;
}

Subject ParseSubject(const json& s) { return {jr::String(s, "kind"), jr::String(s, "name"), jr::String(s, "namespace")}; }

// As rbac's describeSubject: a service account is "name/namespace".
std::string DescribeSubject(const Subject& s, const std::string& binding_ns) {
  if (s.kind == "ServiceAccount") return s.kind + " \"" + s.name + "/" + (s.ns.empty() ? binding_ns : s.ns) + "\"";
  return s.kind + " \"" + s.name + "\"";
}

// The first subject of the binding that names the user, if any.
const json* SubjectFor(const UserInfo& user, const json& binding, const std::string& binding_ns) {
  const json& subjects = Field(binding, "subjects");
  if (!subjects.is_array()) return nullptr;
  for (const json& s : subjects) {
    if (AppliesToUser(user, ParseSubject(s), binding_ns)) return &s;
  }
  return nullptr;
}

// utilerrors.Aggregate's text: one message alone, several in brackets.
std::string AggregateText(const std::vector<std::string>& errors) {
  std::vector<std::string> unique;
  for (const auto& e : errors) {
    if (!Has(unique, e)) unique.push_back(e);
  }
  if (unique.size() == 1) return unique[0];
  std::string out = "[";
  for (size_t i = 0; i < unique.size(); ++i) out += (i ? ", " : "") + unique[i];
  return out + "]";
}

bool ExpressionMatches(const json& e, const json& labels) {
  const std::string key = jr::String(e, "key");
  const std::string op = jr::String(e, "operator");
  const std::vector<std::string> values = Strings(e, "values");
  const bool present = labels.is_object() && labels.contains(key) && labels[key].is_string();
  const std::string value = present ? labels[key].get<std::string>() : "";
  if (op == "In") return present && Has(values, value);
  if (op == "NotIn") return !present || !Has(values, value);
  if (op == "Exists") return present;
  if (op == "DoesNotExist") return !present;
  return false;
}

}  // namespace

bool UserInfo::InGroup(const std::string& group) const { return Has(groups, group); }

UserInfo AuthenticatedUser(const std::string& name, const std::vector<std::string>& groups) {
  UserInfo u;
  if (name.empty() || name == "system:anonymous") {
    u.name = "system:anonymous";
    u.groups = groups;
    if (!u.InGroup("system:unauthenticated")) u.groups.push_back("system:unauthenticated");
    return u;
  }
  u.name = name;
  u.groups = groups;
  if (name.rfind(kServiceAccountPrefix, 0) == 0) {
    const std::string rest = name.substr(sizeof kServiceAccountPrefix - 1);
    const size_t colon = rest.find(':');
    if (colon != std::string::npos && colon > 0 && colon + 1 < rest.size()) {
      for (const std::string& g : {std::string("system:serviceaccounts"),
                                  "system:serviceaccounts:" + rest.substr(0, colon)}) {
        if (!u.InGroup(g)) u.groups.push_back(g);
      }
    }
  }
  if (!u.InGroup("system:authenticated")) u.groups.push_back("system:authenticated");
  return u;
}

PolicyRule ParsePolicyRule(const json& rule) {
  PolicyRule r;
  r.verbs = Strings(rule, "verbs");
  r.api_groups = Strings(rule, "apiGroups");
  r.resources = Strings(rule, "resources");
  r.resource_names = Strings(rule, "resourceNames");
  r.non_resource_urls = Strings(rule, "nonResourceURLs");
  return r;
}

bool RuleAllows(const RequestInfo& request, const PolicyRule& rule) {
  if (request.resource_request) {
    const std::string combined =
        request.subresource.empty() ? request.resource : request.resource + "/" + request.subresource;
    return VerbMatches(rule, request.verb) && ApiGroupMatches(rule, request.api_group) &&
           ResourceMatches(rule, combined, request.subresource) && ResourceNameMatches(rule, request.name);
  }
  return VerbMatches(rule, request.verb) && NonResourceUrlMatches(rule, request.path);
}

bool AppliesToUser(const UserInfo& user, const Subject& subject, const std::string& binding_ns) {
  if (subject.kind == "User") return user.name == subject.name;
  if (subject.kind == "Group") return user.InGroup(subject.name);
  if (subject.kind == "ServiceAccount") {
    const std::string ns = subject.ns.empty() ? binding_ns : subject.ns;
    if (ns.empty()) return false;
    return user.name == kServiceAccountPrefix + ns + ":" + subject.name;
  }
  return false;
}

bool LabelSelectorMatches(const json& selector, const json& labels) {
  if (!selector.is_object()) return selector.is_null();
  const json& match = Field(selector, "matchLabels");
  if (match.is_object()) {
    for (const auto& [k, v] : match.items()) {
      if (!v.is_string() || !labels.is_object() || !labels.contains(k) || labels[k] != v) return false;
    }
  }
  const json& exprs = Field(selector, "matchExpressions");
  if (exprs.is_array()) {
    for (const json& e : exprs) {
      if (!ExpressionMatches(e, labels)) return false;
    }
  }
  return true;
}

std::vector<PolicyRule> RbacAuthorizer::ClusterRoleRules(const json& role, std::set<std::string>* visiting) const {
  std::vector<PolicyRule> out;
  const json& aggregation = Field(role, "aggregationRule");
  const json& selectors = Field(aggregation, "clusterRoleSelectors");
  if (!selectors.is_array()) {
    const json& rules = Field(role, "rules");
    if (rules.is_array()) {
      for (const json& r : rules) out.push_back(ParsePolicyRule(r));
    }
    return out;
  }
  const std::string self = jr::String(Field(role, "metadata"), "name");
  visiting->insert(self);
  for (const json* other : store_.List(kClusterRoles, "")) {
    const json& md = Field(*other, "metadata");
    const std::string name = jr::String(md, "name");
    if (visiting->count(name)) continue;
    const json& labels = Field(md, "labels");
    const bool selected = std::any_of(selectors.begin(), selectors.end(),
                                      [&](const json& s) { return LabelSelectorMatches(s, labels); });
    if (!selected) continue;
    for (PolicyRule& r : ClusterRoleRules(*other, visiting)) out.push_back(std::move(r));
  }
  visiting->erase(self);
  return out;
}

std::vector<PolicyRule> RbacAuthorizer::RoleRefRules(const json& role_ref, const std::string& binding_ns,
                                                     std::string* error) const {
  const std::string kind = jr::String(role_ref, "kind");
  const std::string name = jr::String(role_ref, "name");
  if (kind == "Role") {
    const json* role = store_.Get(kRoles, binding_ns, name);
    if (!role) {
      *error = "role.rbac.authorization.k8s.io \"" + name + "\" not found";
      return {};
    }
    std::vector<PolicyRule> out;
    const json& rules = Field(*role, "rules");
    if (rules.is_array()) {
      for (const json& r : rules) out.push_back(ParsePolicyRule(r));
    }
    return out;
  }
  if (kind == "ClusterRole") {
    const json* role = store_.Get(kClusterRoles, "", name);
    if (!role) {
      *error = "clusterrole.rbac.authorization.k8s.io \"" + name + "\" not found";
      return {};
    }
    std::set<std::string> visiting;
    return ClusterRoleRules(*role, &visiting);
  }
  *error = "unsupported role reference kind: \"" + kind + "\"";
  return {};
}

Decision RbacAuthorizer::Authorize(const UserInfo& user, const RequestInfo& request) const {
  std::vector<std::string> errors;
  auto visit = [&](const json& binding, const std::string& binding_ns) -> bool {
    const json* subject = SubjectFor(user, binding, binding_ns);
    if (!subject) return false;
    const json& ref = Field(binding, "roleRef");
    std::string error;
    const std::vector<PolicyRule> rules = RoleRefRules(ref, binding_ns, &error);
    if (!error.empty()) errors.push_back(error);
    return std::any_of(rules.begin(), rules.end(), [&](const PolicyRule& r) { return RuleAllows(request, r); });
  };
  auto allowed_by = [&](const char* binding_kind, const json& binding, const std::string& binding_ns) {
    const json& md = Field(binding, "metadata");
    const std::string name = jr::String(md, "name") + (binding_ns.empty() ? "" : "/" + binding_ns);
    const json& ref = Field(binding, "roleRef");
    return Decision{true, "RBAC: allowed by " + std::string(binding_kind) + " \"" + name + "\" of " + jr::String(ref, "kind") +
                              " \"" + jr::String(ref, "name") + "\" to " +
                              DescribeSubject(ParseSubject(*SubjectFor(user, binding, binding_ns)), binding_ns)};
  };
  for (const json* b : store_.List(kClusterRoleBindings, "")) {
    if (visit(*b, "")) return allowed_by("ClusterRoleBinding", *b, "");
  }
  if (!request.ns.empty()) {
    for (const json* b : store_.List(kRoleBindings, request.ns)) {
      if (visit(*b, request.ns)) return allowed_by("RoleBinding", *b, request.ns);
    }
  }
  Decision refused;
  if (!errors.empty()) refused.reason = "RBAC: " + AggregateText(errors);
  return refused;
}

}  // namespace fairbench::apiserver
