#include "testing/apiserver/rbac_bootstrap.h"

namespace fairbench::apiserver {

using nlohmann::json;

namespace {

json Metadata(const std::string& name) {
  return {{"name", name},
          {"labels", {{"kubernetes.io/bootstrapping", "rbac-defaults"}}},
          {"annotations", {{"rbac.authorization.kubernetes.io/autoupdate", "true"}}}};
}

json ClusterRole(const std::string& name, json rules) {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "ClusterRole"},
          {"metadata", Metadata(name)},
          {"rules", std::move(rules)}};
}

json Group(const std::string& name) {
  return {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Group"}, {"name", name}};
}

json ClusterRoleBinding(const std::string& name, json subjects) {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "ClusterRoleBinding"},
          {"metadata", Metadata(name)},
          {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", name}}},
          {"subjects", std::move(subjects)}};
}

}  // namespace

std::vector<std::pair<std::string, json>> BootstrapRbacPolicy() {
  const json public_info = {"/healthz", "/livez", "/readyz", "/version", "/version/"};
  std::vector<std::pair<std::string, json>> out;
  out.emplace_back("clusterroles",
                   ClusterRole("cluster-admin", json::array({{{"apiGroups", {"*"}}, {"resources", {"*"}}, {"verbs", {"*"}}},
                                                             {{"nonResourceURLs", {"*"}}, {"verbs", {"*"}}}})));
  out.emplace_back("clusterroles",
                   ClusterRole("system:discovery",
                               json::array({{{"nonResourceURLs",
                                              {"/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi",
                                               "/openapi/*", "/readyz", "/version", "/version/"}},
                                             {"verbs", {"get"}}}})));
  out.emplace_back(
      "clusterroles",
      ClusterRole("system:basic-user",
                  json::array({{{"apiGroups", {"authorization.k8s.io"}},
                                {"resources", {"selfsubjectaccessreviews", "selfsubjectrulesreviews"}},
                                {"verbs", {"create"}}},
                               {{"apiGroups", {"authentication.k8s.io"}},
                                {"resources", {"selfsubjectreviews"}},
                                {"verbs", {"create"}}}})));
  out.emplace_back("clusterroles", ClusterRole("system:public-info-viewer",
                                               json::array({{{"nonResourceURLs", public_info}, {"verbs", {"get"}}}})));
  out.emplace_back("clusterrolebindings", ClusterRoleBinding("cluster-admin", json::array({Group("system:masters")})));
  out.emplace_back("clusterrolebindings",
                   ClusterRoleBinding("system:discovery", json::array({Group("system:authenticated")})));
  out.emplace_back("clusterrolebindings",
                   ClusterRoleBinding("system:basic-user", json::array({Group("system:authenticated")})));
  out.emplace_back("clusterrolebindings",
                   ClusterRoleBinding("system:public-info-viewer",
                                      json::array({Group("system:authenticated"), Group("system:unauthenticated")})));
  return out;
}

}  // namespace fairbench::apiserver
