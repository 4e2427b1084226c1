#include "testing/apiserver/builtin_validation.h"

#include <gtest/gtest.h>

namespace fairbench::apiserver {
namespace {

using nlohmann::json;

// "field: reason" of each cause, for compact expectations.
std::vector<std::string> Fields(const std::vector<Cause>& causes) {
  std::vector<std::string> out;
  for (const auto& c : causes) out.push_back(c.field + ": " + c.reason);
  return out;
}

json Deployment() {
  return json::parse(R"({
    "metadata": {"name": "ctl"},
    "spec": {
      "replicas": 2,
      "selector": {"matchLabels": {"app": "ctl"}},
      "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "100%"}},
      "template": {
        "metadata": {"labels": {"app": "ctl", "extra": "x"}},
        "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"name": "metrics", "containerPort": 8080}],
                                 "readinessProbe": {"httpGet": {"path": "/readyz", "port": "metrics"}}}]}}}})");
}

// Catches: a chart's Deployment accepted here that a cluster refuses.
TEST(BuiltinValidation, Deployments) {
  EXPECT_TRUE(ValidateBuiltin("apps", "deployments", Deployment(), nullptr).empty());
  json d = Deployment();
  d["spec"]["template"]["metadata"]["labels"] = {{"app", "other"}};
  EXPECT_EQ(Fields(ValidateBuiltin("apps", "deployments", d, nullptr)),
            std::vector<std::string>{"spec.template.metadata.labels: FieldValueInvalid"});
  d = Deployment();
  d["spec"].erase("selector");
  EXPECT_EQ(Fields(ValidateBuiltin("apps", "deployments", d, nullptr)),
            std::vector<std::string>{"spec.selector: FieldValueRequired"});
  d = Deployment();
  d["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] = 0;
  EXPECT_EQ(Fields(ValidateBuiltin("apps", "deployments", d, nullptr)),
            std::vector<std::string>{"spec.strategy.rollingUpdate.maxUnavailable: FieldValueInvalid"});
  d = Deployment();
  d["spec"]["template"]["spec"]["containers"][0]["ports"][0]["name"] = "much-too-long-a-port-name";
  d["spec"]["template"]["spec"]["containers"][0].erase("image");
  EXPECT_EQ(Fields(ValidateBuiltin("apps", "deployments", d, nullptr)),
            (std::vector<std::string>{"spec.template.spec.containers[0].image: FieldValueRequired",
                                      "spec.template.spec.containers[0].ports[0].name: FieldValueInvalid"}));
  // The selector cannot change.
  const json old = Deployment();
  d = Deployment();
  d["spec"]["selector"]["matchLabels"]["extra"] = "x";
  EXPECT_EQ(Fields(ValidateBuiltin("apps", "deployments", d, &old)),
            std::vector<std::string>{"spec.selector: FieldValueInvalid"});
}

// A probe has exactly one handler, grpc among them (Kubernetes 1.27+):
// catches a grpc probe refused, or a probe with two handlers (or none)
// accepted where a cluster answers "may not specify more than 1 handler
// type" at the second one's path.
TEST(BuiltinValidation, ProbeHandlers) {
  json d = Deployment();
  json& c = d["spec"]["template"]["spec"]["containers"][0];
  c["readinessProbe"] = {{"grpc", {{"port", 9090}}}};
  c["livenessProbe"] = {{"grpc", {{"port", 9090}, {"service", "fairbench.echo.v1.Echo"}}}, {"periodSeconds", 5}};
  EXPECT_TRUE(ValidateBuiltin("apps", "deployments", d, nullptr).empty());
  c["readinessProbe"]["tcpSocket"] = {{"port", 9090}};
  c["livenessProbe"]["grpc"]["port"] = 0;
  c["startupProbe"] = {{"periodSeconds", 1}};
  const auto causes = ValidateBuiltin("apps", "deployments", d, nullptr);
  EXPECT_EQ(Fields(causes),
            (std::vector<std::string>{"spec.template.spec.containers[0].livenessProbe.grpc.port: FieldValueInvalid",
                                      "spec.template.spec.containers[0].readinessProbe.grpc: FieldValueForbidden",
                                      "spec.template.spec.containers[0].startupProbe: FieldValueRequired"}));
  ASSERT_EQ(causes.size(), 3u);
  EXPECT_NE(causes[1].message.find("may not specify more than 1 handler type"), std::string::npos) << causes[1].message;
  EXPECT_NE(causes[2].message.find("must specify a handler type"), std::string::npos) << causes[2].message;
}

TEST(BuiltinValidation, RolesAndBindings) {
  const json role = json::parse(R"({"rules": [
      {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
      {"apiGroups": [""], "resources": ["pods"]},
      {"resources": ["pods"], "verbs": ["get"]},
      {"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]})");
  EXPECT_EQ(Fields(ValidateBuiltin("rbac.authorization.k8s.io", "roles", role, nullptr)),
            (std::vector<std::string>{"rules[1].verbs: FieldValueRequired", "rules[2].apiGroups: FieldValueRequired",
                                      "rules[3].nonResourceURLs: FieldValueInvalid"}));
  EXPECT_EQ(Fields(ValidateBuiltin("rbac.authorization.k8s.io", "clusterroles", role, nullptr)),
            (std::vector<std::string>{"rules[1].verbs: FieldValueRequired", "rules[2].apiGroups: FieldValueRequired"}));

  const json binding = json::parse(R"({
      "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
      "subjects": [{"kind": "ServiceAccount", "name": "sa"}]})");
  EXPECT_TRUE(ValidateBuiltin("rbac.authorization.k8s.io", "rolebindings", binding, nullptr).empty());
  // A ClusterRoleBinding binds ClusterRoles, and names a service account's namespace.
  EXPECT_EQ(Fields(ValidateBuiltin("rbac.authorization.k8s.io", "clusterrolebindings", binding, nullptr)),
            (std::vector<std::string>{"roleRef.kind: FieldValueNotSupported", "subjects[0].namespace: FieldValueRequired"}));
  json changed = binding;
  changed["roleRef"]["name"] = "other";
  EXPECT_EQ(Fields(ValidateBuiltin("rbac.authorization.k8s.io", "rolebindings", changed, &binding)),
            std::vector<std::string>{"roleRef: FieldValueInvalid"});
}

TEST(BuiltinValidation, ServicesConfigMapsSecrets) {
  const json svc = json::parse(R"({"metadata": {"name": "ctl"}, "spec": {"ports": [
      {"name": "grpc", "port": 9090, "targetPort": "grpc"}, {"port": 8080, "targetPort": 70000}]}})");
  EXPECT_EQ(Fields(ValidateBuiltin("", "services", svc, nullptr)),
            (std::vector<std::string>{"spec.ports[1].name: FieldValueRequired", "spec.ports[1].targetPort: FieldValueInvalid"}));
  EXPECT_EQ(Fields(ValidateBuiltin("", "services", {{"metadata", {{"name", "1ctl"}}}, {"spec", {{"ports", {{{"port", 1}}}}}}},
                                   nullptr)),
            std::vector<std::string>{"metadata.name: FieldValueInvalid"});
  EXPECT_EQ(Fields(ValidateBuiltin("", "configmaps", {{"data", {{"ok.json", "{}"}, {"not ok", "x"}}}}, nullptr)),
            std::vector<std::string>{"data[not ok]: FieldValueInvalid"});
  EXPECT_EQ(Fields(ValidateBuiltin("", "configmaps", {{"data", {{"big", std::string(1024 * 1024 + 1, 'x')}}}}, nullptr)),
            std::vector<std::string>{"[]: FieldValueTooLong"});
  const json secret = {{"type", "Opaque"}, {"data", {{"token", "dG9rZW4="}}}};
  const json retyped = {{"type", "kubernetes.io/tls"}, {"data", {{"token", "dG9rZW4="}}}};
  EXPECT_TRUE(ValidateBuiltin("", "secrets", secret, nullptr).empty());
  EXPECT_EQ(Fields(ValidateBuiltin("", "secrets", retyped, &secret)), std::vector<std::string>{"type: FieldValueInvalid"});
}

}  // namespace
}  // namespace fairbench::apiserver
