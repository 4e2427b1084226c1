// Pod Security admission as the PodSecurity admission plugin
// (k8s.io/pod-security-admission) decides it: a namespace's labels
// pod-security.kubernetes.io/{enforce,warn,audit}[-version] name a level
// (privileged, baseline, restricted); a pod created in it is checked
// against the Pod Security Standards of that level — the baseline checks,
// and for restricted the baseline checks it does not override plus its own
// — in the plugin's order (baseline IDs sorted, then restricted IDs
// sorted), each failing check adding "reason (detail)" to one message:
//
//   violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false
//   (container "c" must set securityContext.allowPrivilegeEscalation=false), ...
//
// Checks made: capabilities_baseline, hostNamespaces, hostPathVolumes,
// hostPorts, privileged, procMount, seccompProfile_baseline, sysctls;
// allowPrivilegeEscalation, capabilities_restricted, restrictedVolumes,
// runAsNonRoot, runAsUser, seccompProfile_restricted. Not made: AppArmor,
// SELinux options, Windows host processes, probe hosts, and the user
// namespace relaxations (hostUsers: false). Every version is checked as
// "latest".
//
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fairbench::apiserver {

enum class PodSecurityLevel { kPrivileged, kBaseline, kRestricted };

struct PodSecurityLevelVersion {
  PodSecurityLevel level = PodSecurityLevel::kPrivileged;
  std::string version = "latest";
  // "restricted:latest", as the plugin names it in its messages.
  std::string ToString() const;
};

struct PodSecurityPolicy {
  PodSecurityLevelVersion enforce;
  PodSecurityLevelVersion warn;
  PodSecurityLevelVersion audit;
};

// From a namespace's labels; a label with an unknown level counts as
// privileged (the plugin refuses such a label on the namespace itself).
PodSecurityPolicy PodSecurityPolicyFromLabels(const nlohmann::json& labels);

struct PodSecurityViolation {
  std::string reason;  // "allowPrivilegeEscalation != false"
  std::string detail;  // "container \"c\" must set ..." (may be empty)
};

// The failing checks of `level` for a pod spec, in the plugin's order.
std::vector<PodSecurityViolation> CheckPodSecurity(PodSecurityLevel level, const nlohmann::json& pod_spec);

// "reason (detail), reason (detail)".
std::string ForbiddenDetail(const std::vector<PodSecurityViolation>& violations);

}  // namespace fairbench::apiserver
