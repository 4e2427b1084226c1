// Pod Security admission's checks, against the controls of Kubernetes'
// Pod Security Standards page (concepts/security/pod-security-standards:
// Baseline — host namespaces, privileged containers, capabilities, hostPath
// volumes, host ports, /proc mount type, seccomp, sysctls; Restricted —
// volume types, privilege escalation, running as non-root, non-root user,
// seccomp, capabilities) and the PodSecurity plugin's own wording and order.
#include "testing/apiserver/pod_security.h"

#include <gtest/gtest.h>

namespace fairbench::apiserver {
namespace {

using json = nlohmann::json;

std::string Detail(PodSecurityLevel level, const json& spec) { return ForbiddenDetail(CheckPodSecurity(level, spec)); }

json Restricted() {
  return json::parse(R"({
    "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
    "containers": [{"name": "c", "image": "i", "securityContext": {
      "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}],
    "volumes": [{"name": "v", "emptyDir": {}}, {"name": "s", "secret": {"secretName": "x"}},
                {"name": "p", "projected": {"sources": []}}]})");
}

// A pod with no security context at all: the message every restricted
// namespace gives it, in the plugin's order. Catches: a check left out, the
// order changed, a detail reworded, a container missed.
TEST(PodSecurityTest, APlainPodInARestrictedNamespace) {
  const json spec = json::parse(R"({"containers": [{"name": "app", "image": "nginx"}]})");
  EXPECT_EQ(Detail(PodSecurityLevel::kRestricted, spec),
            "allowPrivilegeEscalation != false (container \"app\" must set "
            "securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container \"app\" must set "
            "securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true (pod or container \"app\" must set "
            "securityContext.runAsNonRoot=true), seccompProfile (pod or container \"app\" must set "
            "securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")");
  // Baseline asks none of this.
  EXPECT_EQ(Detail(PodSecurityLevel::kBaseline, spec), "");
  EXPECT_EQ(Detail(PodSecurityLevel::kPrivileged, json::parse(R"({"hostNetwork": true})")), "");
}

// Catches: a compliant pod refused (volume kinds, the pod-level fields
// counting for every container, init containers included).
TEST(PodSecurityTest, ACompliantPodPasses) {
  json spec = Restricted();
  spec["initContainers"] = json::array({{{"name", "init"},
                                         {"securityContext",
                                          {{"allowPrivilegeEscalation", false},
                                           {"capabilities", {{"drop", {"ALL"}}, {"add", {"NET_BIND_SERVICE"}}}}}}}});
  EXPECT_EQ(Detail(PodSecurityLevel::kRestricted, spec), "");
  EXPECT_EQ(Detail(PodSecurityLevel::kBaseline, spec), "");
}

// Each Baseline control of the standard. Catches: a control not checked, its
// allowed values wrong (the default capability list, the safe sysctls).
TEST(PodSecurityTest, BaselineControls) {
  auto with = [](const json& patch) {
    json s = json::parse(R"({"containers": [{"name": "c", "image": "i"}]})");
    s.merge_patch(patch);
    return s;
  };
  EXPECT_EQ(Detail(PodSecurityLevel::kBaseline, with({{"hostNetwork", true}, {"hostPID", true}})),
            "host namespaces (hostNetwork=true, hostPID=true)");
  json privileged = with(json::object());
  privileged["containers"][0]["securityContext"] = {{"privileged", true}, {"capabilities", {{"add", {"SYS_ADMIN", "CHOWN"}}}}};
  EXPECT_EQ(Detail(PodSecurityLevel::kBaseline, privileged),
            "non-default capabilities (container \"c\" must not include \"SYS_ADMIN\" in "
            "securityContext.capabilities.add), privileged (container \"c\" must not set "
            "securityContext.privileged=true)");
  json ports = with(json::object());
  ports["containers"][0]["ports"] = {{{"containerPort", 80}, {"hostPort", 8080}}, {{"containerPort", 90}, {"hostPort", 443}}};
  EXPECT_EQ(Detail(PodSecurityLevel::kBaseline, ports), "hostPort (container \"c\" uses hostPorts 443, 8080)");
  EXPECT_EQ(Detail(PodSecurityLevel::kBaseline, with({{"volumes", {{{"name", "h"}, {"hostPath", {{"path", "/"}}}}}}})),
            "hostPath volumes (volume \"h\")");
  json proc = with(json::object());
  proc["containers"][0]["securityContext"] = {{"procMount", "Unmasked"}};
  EXPECT_EQ(Detail(PodSecurityLevel::kBaseline, proc),
            "procMount (container \"c\" must not set securityContext.procMount to \"Unmasked\")");
  EXPECT_EQ(Detail(PodSecurityLevel::kBaseline, with({{"securityContext", {{"seccompProfile", {{"type", "Unconfined"}}}}}})),
            "seccompProfile (pod must not set securityContext.seccompProfile.type to \"Unconfined\")");
  EXPECT_EQ(Detail(PodSecurityLevel::kBaseline,
                   with({{"securityContext",
                          {{"sysctls", {{{"name", "net.ipv4.tcp_syncookies"}, {"value", "1"}},
                                        {{"name", "kernel.msgmax"}, {"value", "1"}}}}}}})),
            "forbidden sysctls (kernel.msgmax)");
}

// Restricted's own controls, and the baseline checks it overrides.
// Catches: hostPath reported twice (restrictedVolumes replaces
// hostPathVolumes), NET_BIND_SERVICE refused, runAsUser 0 let through, an
// explicit false treated as unset.
TEST(PodSecurityTest, RestrictedControls) {
  json volumes = Restricted();
  volumes["volumes"].push_back({{"name", "h"}, {"hostPath", {{"path", "/"}}}});
  volumes["volumes"].push_back({{"name", "n"}, {"nfs", {{"server", "x"}, {"path", "/"}}}});
  EXPECT_EQ(Detail(PodSecurityLevel::kRestricted, volumes),
            "restricted volume types (volumes \"h\", \"n\" use restricted volume types \"hostPath\", \"nfs\")");
  json caps = Restricted();
  caps["containers"][0]["securityContext"]["capabilities"]["add"] = {"NET_BIND_SERVICE", "NET_RAW"};
  EXPECT_EQ(Detail(PodSecurityLevel::kRestricted, caps),
            "unrestricted capabilities (container \"c\" must not include \"NET_RAW\" in "
            "securityContext.capabilities.add)");
  json root = Restricted();
  root["securityContext"]["runAsUser"] = 0;
  root["containers"][0]["securityContext"]["runAsNonRoot"] = false;
  EXPECT_EQ(Detail(PodSecurityLevel::kRestricted, root),
            "runAsNonRoot != true (container \"c\" must not set securityContext.runAsNonRoot=false), runAsUser=0 (pod "
            "must not set runAsUser=0)");
  json escalation = Restricted();
  escalation["containers"][0]["securityContext"]["allowPrivilegeEscalation"] = true;
  escalation["containers"].push_back(escalation["containers"][0]);
  escalation["containers"][1]["name"] = "d";
  EXPECT_EQ(Detail(PodSecurityLevel::kRestricted, escalation),
            "allowPrivilegeEscalation != false (containers \"c\", \"d\" must set "
            "securityContext.allowPrivilegeEscalation=false)");
}

// Catches: the version label ignored in the message, a level read from the
// wrong label, an unknown level taken as restricted.
TEST(PodSecurityTest, PolicyFromNamespaceLabels) {
  const PodSecurityPolicy p = PodSecurityPolicyFromLabels(
      json{{"pod-security.kubernetes.io/enforce", "baseline"},
           {"pod-security.kubernetes.io/enforce-version", "v1.29"},
           {"pod-security.kubernetes.io/warn", "restricted"},
           {"pod-security.kubernetes.io/audit", "strict"}});
  EXPECT_EQ(p.enforce.ToString(), "baseline:v1.29");
  EXPECT_EQ(p.warn.ToString(), "restricted:latest");
  EXPECT_EQ(p.audit.level, PodSecurityLevel::kPrivileged);
  EXPECT_EQ(PodSecurityPolicyFromLabels(json::object()).enforce.level, PodSecurityLevel::kPrivileged);
}

}  // namespace
}  // namespace fairbench::apiserver
