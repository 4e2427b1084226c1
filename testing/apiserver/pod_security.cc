#include "testing/apiserver/pod_security.h"
#include "controller/kube/json_read.h"

#include <algorithm>
#include <functional>
#include <set>

namespace fairbench::apiserver {

using json = nlohmann::json;

namespace {

namespace jr = ::fairbench::kube::json_read;

constexpr char kLabelPrefix[] = "pod-security.kubernetes.io/";

// `"a", "b"` (the plugin's joinQuote).
std::string JoinQuote(const std::vector<std::string>& items) {
  if (items.empty()) return "";
  std::string s = "\"";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? "\", \"" : "") + items[i];
  return s + "\"";
}

std::string JoinQuote(const std::set<std::string>& items) {
  return JoinQuote(std::vector<std::string>(items.begin(), items.end()));
}

std::string Join(const std::vector<std::string>& items, const std::string& sep) {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i) s += (i ? sep : "") + items[i];
  return s;
}

const char* Plural(const char* one, const char* many, size_t n) { return n == 1 ? one : many; }

// Init containers, then containers, then ephemeral containers (visitContainers).
void VisitContainers(const json& spec, const std::function<void(const json&)>& visit) {
  for (const char* list : {"initContainers", "containers", "ephemeralContainers"}) {
    if (!spec.contains(list) || !spec[list].is_array()) continue;
    for (const json& c : spec[list]) visit(c);
  }
}

// The container's securityContext, or an empty object (a reference: the
// checks keep pointers into it).
const json& SecurityContext(const json& c) {
  static const json empty = json::object();
  if (!c.is_object() || !c.contains("securityContext") || !c["securityContext"].is_object()) return empty;
  return c["securityContext"];
}

const json* Field(const json& o, const char* key) {
  if (!o.is_object() || !o.contains(key) || o[key].is_null()) return nullptr;
  return &o[key];
}

using Check = std::function<std::optional<PodSecurityViolation>(const json& spec)>;

// Baseline.

std::optional<PodSecurityViolation> CapabilitiesBaseline(const json& spec) {
  static const std::set<std::string> allowed = {"AUDIT_WRITE", "CHOWN",     "DAC_OVERRIDE", "FOWNER",  "FSETID",
                                                "KILL",        "MKNOD",     "NET_BIND_SERVICE", "SETFCAP", "SETGID",
                                                "SETPCAP",     "SETUID",    "SYS_CHROOT"};
  std::vector<std::string> bad;
  std::set<std::string> caps;
  VisitContainers(spec, [&](const json& c) {
    const json* cap = Field(SecurityContext(c), "capabilities");
    if (cap == nullptr) return;
    bool valid = true;
    for (const json& a : cap->value("add", json::array())) {
      if (a.is_string() && allowed.count(a.get<std::string>()) == 0) {
        valid = false;
        caps.insert(a.get<std::string>());
      }
    }
    if (!valid) bad.push_back(jr::String(c, "name"));
  });
  if (bad.empty()) return std::nullopt;
  return PodSecurityViolation{"non-default capabilities",
                              std::string(Plural("container", "containers", bad.size())) + " " + JoinQuote(bad) +
                                  " must not include " + JoinQuote(caps) + " in securityContext.capabilities.add"};
}

std::optional<PodSecurityViolation> HostNamespaces(const json& spec) {
  std::vector<std::string> host;
  if (spec.value("hostNetwork", false)) host.push_back("hostNetwork=true");
  if (spec.value("hostPID", false)) host.push_back("hostPID=true");
  if (spec.value("hostIPC", false)) host.push_back("hostIPC=true");
  if (host.empty()) return std::nullopt;
  return PodSecurityViolation{"host namespaces", Join(host, ", ")};
}

std::optional<PodSecurityViolation> HostPathVolumes(const json& spec) {
  std::vector<std::string> bad;
  for (const json& v : spec.value("volumes", json::array())) {
    if (Field(v, "hostPath") != nullptr) bad.push_back(jr::String(v, "name"));
  }
  if (bad.empty()) return std::nullopt;
  return PodSecurityViolation{"hostPath volumes",
                              std::string(Plural("volume", "volumes", bad.size())) + " " + JoinQuote(bad)};
}

std::optional<PodSecurityViolation> HostPorts(const json& spec) {
  std::vector<std::string> bad;
  std::set<std::string> ports;  // sorted as strings, as sets.String is
  VisitContainers(spec, [&](const json& c) {
    bool valid = true;
    for (const json& p : c.value("ports", json::array())) {
      const int hp = p.is_object() ? p.value("hostPort", 0) : 0;
      if (hp != 0) {
        valid = false;
        ports.insert(std::to_string(hp));
      }
    }
    if (!valid) bad.push_back(jr::String(c, "name"));
  });
  if (bad.empty()) return std::nullopt;
  return PodSecurityViolation{
      "hostPort", std::string(Plural("container", "containers", bad.size())) + " " + JoinQuote(bad) + " " +
                      Plural("uses", "use", bad.size()) + " " + Plural("hostPort", "hostPorts", ports.size()) + " " +
                      Join(std::vector<std::string>(ports.begin(), ports.end()), ", ")};
}

std::optional<PodSecurityViolation> Privileged(const json& spec) {
  std::vector<std::string> bad;
  VisitContainers(spec, [&](const json& c) {
    if (SecurityContext(c).value("privileged", false)) bad.push_back(jr::String(c, "name"));
  });
  if (bad.empty()) return std::nullopt;
  return PodSecurityViolation{"privileged", std::string(Plural("container", "containers", bad.size())) + " " +
                                                JoinQuote(bad) + " must not set securityContext.privileged=true"};
}

std::optional<PodSecurityViolation> ProcMount(const json& spec) {
  std::vector<std::string> bad;
  std::set<std::string> types;
  VisitContainers(spec, [&](const json& c) {
    const std::string pm = jr::String(SecurityContext(c), "procMount");
    if (!pm.empty() && pm != "Default") {
      bad.push_back(jr::String(c, "name"));
      types.insert(pm);
    }
  });
  if (bad.empty()) return std::nullopt;
  return PodSecurityViolation{"procMount", std::string(Plural("container", "containers", bad.size())) + " " +
                                               JoinQuote(bad) + " must not set securityContext.procMount to " +
                                               JoinQuote(types)};
}

bool ValidSeccomp(const std::string& type) { return type == "RuntimeDefault" || type == "Localhost"; }

// The seccomp check of either level; `restricted` also requires a profile.
std::optional<PodSecurityViolation> Seccomp(const json& spec, bool restricted) {
  std::vector<std::string> setters;
  std::set<std::string> values;
  bool pod_set = false;
  const json pod_sc = spec.value("securityContext", json::object());
  if (const json* p = Field(pod_sc, "seccompProfile")) {
    const std::string type = jr::String(*p, "type");
    if (!ValidSeccomp(type)) {
      setters.push_back("pod");
      values.insert(type);
    } else {
      pod_set = true;
    }
  }
  std::vector<std::string> explicit_bad;
  std::vector<std::string> implicit_bad;
  VisitContainers(spec, [&](const json& c) {
    if (const json* p = Field(SecurityContext(c), "seccompProfile")) {
      const std::string type = jr::String(*p, "type");
      if (!ValidSeccomp(type)) {
        explicit_bad.push_back(jr::String(c, "name"));
        values.insert(type);
      }
    } else if (!pod_set) {
      implicit_bad.push_back(jr::String(c, "name"));
    }
  });
  if (!explicit_bad.empty()) {
    setters.push_back(std::string(Plural("container", "containers", explicit_bad.size())) + " " +
                      JoinQuote(explicit_bad));
  }
  if (!setters.empty()) {
    return PodSecurityViolation{"seccompProfile", Join(setters, " and ") +
                                                      " must not set securityContext.seccompProfile.type to " +
                                                      JoinQuote(values)};
  }
  if (restricted && !implicit_bad.empty()) {
    return PodSecurityViolation{
        "seccompProfile", "pod or " + std::string(Plural("container", "containers", implicit_bad.size())) + " " +
                              JoinQuote(implicit_bad) +
                              " must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\""};
  }
  return std::nullopt;
}

std::optional<PodSecurityViolation> Sysctls(const json& spec) {
  static const std::set<std::string> safe = {
      "kernel.shm_rmid_forced",       "net.ipv4.ip_local_port_range",      "net.ipv4.tcp_syncookies",
      "net.ipv4.ping_group_range",    "net.ipv4.ip_unprivileged_port_start", "net.ipv4.ip_local_reserved_ports",
      "net.ipv4.tcp_keepalive_time",  "net.ipv4.tcp_fin_timeout",          "net.ipv4.tcp_keepalive_intvl",
      "net.ipv4.tcp_keepalive_probes", "net.ipv4.tcp_rmem",                "net.ipv4.tcp_wmem",
      "net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_notsent_lowat"};
  std::vector<std::string> bad;
  const json pod_sc = spec.value("securityContext", json::object());
  for (const json& s : pod_sc.is_object() ? pod_sc.value("sysctls", json::array()) : json::array()) {
    const std::string name = jr::String(s, "name");
    if (safe.count(name) == 0) bad.push_back(name);
  }
  if (bad.empty()) return std::nullopt;
  return PodSecurityViolation{"forbidden sysctls", Join(bad, ", ")};
}

// Restricted.

std::optional<PodSecurityViolation> AllowPrivilegeEscalation(const json& spec) {
  std::vector<std::string> bad;
  VisitContainers(spec, [&](const json& c) {
    const json* a = Field(SecurityContext(c), "allowPrivilegeEscalation");
    if (a == nullptr || !a->is_boolean() || a->get<bool>()) bad.push_back(jr::String(c, "name"));
  });
  if (bad.empty()) return std::nullopt;
  return PodSecurityViolation{"allowPrivilegeEscalation != false",
                              std::string(Plural("container", "containers", bad.size())) + " " + JoinQuote(bad) +
                                  " must set securityContext.allowPrivilegeEscalation=false"};
}

std::optional<PodSecurityViolation> CapabilitiesRestricted(const json& spec) {
  std::vector<std::string> missing_drop;
  std::vector<std::string> adding;
  std::set<std::string> forbidden;
  VisitContainers(spec, [&](const json& c) {
    const json* cap = Field(SecurityContext(c), "capabilities");
    if (cap == nullptr) {
      missing_drop.push_back(jr::String(c, "name"));
      return;
    }
    bool dropped_all = false;
    for (const json& d : cap->value("drop", json::array())) dropped_all |= d.is_string() && d.get<std::string>() == "ALL";
    if (!dropped_all) missing_drop.push_back(jr::String(c, "name"));
    bool bad_add = false;
    for (const json& a : cap->value("add", json::array())) {
      if (a.is_string() && a.get<std::string>() != "NET_BIND_SERVICE") {
        bad_add = true;
        forbidden.insert(a.get<std::string>());
      }
    }
    if (bad_add) adding.push_back(jr::String(c, "name"));
  });
  std::vector<std::string> details;
  if (!missing_drop.empty()) {
    details.push_back(std::string(Plural("container", "containers", missing_drop.size())) + " " +
                      JoinQuote(missing_drop) + " must set securityContext.capabilities.drop=[\"ALL\"]");
  }
  if (!adding.empty()) {
    details.push_back(std::string(Plural("container", "containers", adding.size())) + " " + JoinQuote(adding) +
                      " must not include " + JoinQuote(forbidden) + " in securityContext.capabilities.add");
  }
  if (details.empty()) return std::nullopt;
  return PodSecurityViolation{"unrestricted capabilities", Join(details, "; ")};
}

std::optional<PodSecurityViolation> RestrictedVolumes(const json& spec) {
  static const std::set<std::string> allowed = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                                                "image",     "persistentVolumeClaim", "projected", "secret"};
  static const std::vector<std::string> known = {
      "hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs", "iscsi", "glusterfs", "rbd",
      "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile", "vsphereVolume", "quobyte", "azureDisk",
      "photonPersistentDisk", "portworxVolume", "scaleIO", "storageos"};
  std::vector<std::string> bad;
  std::set<std::string> types;
  for (const json& v : spec.value("volumes", json::array())) {
    bool ok = false;
    for (const std::string& a : allowed) ok |= Field(v, a.c_str()) != nullptr;
    if (ok) continue;
    bad.push_back(jr::String(v, "name"));
    std::string type = "unknown";
    for (const std::string& k : known) {
      if (Field(v, k.c_str()) != nullptr) {
        type = k;
        break;
      }
    }
    types.insert(type);
  }
  if (bad.empty()) return std::nullopt;
  return PodSecurityViolation{
      "restricted volume types",
      std::string(Plural("volume", "volumes", bad.size())) + " " + JoinQuote(bad) + " " +
          Plural("uses", "use", bad.size()) + " " +
          Plural("restricted volume type", "restricted volume types", types.size()) + " " + JoinQuote(types)};
}

std::optional<PodSecurityViolation> RunAsNonRoot(const json& spec) {
  std::vector<std::string> setters;
  bool pod_non_root = false;
  const json pod_sc = spec.value("securityContext", json::object());
  if (const json* r = Field(pod_sc, "runAsNonRoot")) {
    if (r->is_boolean() && !r->get<bool>()) {
      setters.push_back("pod");
    } else {
      pod_non_root = true;
    }
  }
  std::vector<std::string> explicit_bad;
  std::vector<std::string> implicit_bad;
  VisitContainers(spec, [&](const json& c) {
    if (const json* r = Field(SecurityContext(c), "runAsNonRoot")) {
      if (r->is_boolean() && !r->get<bool>()) explicit_bad.push_back(jr::String(c, "name"));
    } else if (!pod_non_root) {
      implicit_bad.push_back(jr::String(c, "name"));
    }
  });
  if (!explicit_bad.empty()) {
    setters.push_back(std::string(Plural("container", "containers", explicit_bad.size())) + " " +
                      JoinQuote(explicit_bad));
  }
  if (!setters.empty()) {
    return PodSecurityViolation{"runAsNonRoot != true",
                                Join(setters, " and ") + " must not set securityContext.runAsNonRoot=false"};
  }
  if (!implicit_bad.empty()) {
    return PodSecurityViolation{"runAsNonRoot != true",
                                "pod or " + std::string(Plural("container", "containers", implicit_bad.size())) +
                                    " " + JoinQuote(implicit_bad) + " must set securityContext.runAsNonRoot=true"};
  }
  return std::nullopt;
}

std::optional<PodSecurityViolation> RunAsUser(const json& spec) {
  std::vector<std::string> setters;
  const json pod_sc = spec.value("securityContext", json::object());
  if (const json* u = Field(pod_sc, "runAsUser"); u != nullptr && u->is_number_integer() && u->get<int64_t>() == 0) {
    setters.push_back("pod");
  }
  std::vector<std::string> bad;
  VisitContainers(spec, [&](const json& c) {
    const json* u = Field(SecurityContext(c), "runAsUser");
    if (u != nullptr && u->is_number_integer() && u->get<int64_t>() == 0) bad.push_back(jr::String(c, "name"));
  });
  if (!bad.empty()) setters.push_back(std::string(Plural("container", "containers", bad.size())) + " " + JoinQuote(bad));
  if (setters.empty()) return std::nullopt;
  return PodSecurityViolation{"runAsUser=0", Join(setters, " and ") + " must not set runAsUser=0"};
}

}  // namespace

std::string PodSecurityLevelVersion::ToString() const {
  const char* name = level == PodSecurityLevel::kRestricted ? "restricted"
                     : level == PodSecurityLevel::kBaseline ? "baseline"
                                                            : "privileged";
  return std::string(name) + ":" + version;
}

PodSecurityPolicy PodSecurityPolicyFromLabels(const json& labels) {
  PodSecurityPolicy p;
  auto read = [&](const std::string& mode, PodSecurityLevelVersion* out) {
    const std::string level = jr::String(labels, (kLabelPrefix + mode).c_str());
    if (level == "restricted") out->level = PodSecurityLevel::kRestricted;
    if (level == "baseline") out->level = PodSecurityLevel::kBaseline;
    const std::string version = jr::String(labels, (kLabelPrefix + mode + "-version").c_str());
    if (!version.empty()) out->version = version;
  };
  read("enforce", &p.enforce);
  read("warn", &p.warn);
  read("audit", &p.audit);
  return p;
}

std::vector<PodSecurityViolation> CheckPodSecurity(PodSecurityLevel level, const json& pod_spec) {
  if (level == PodSecurityLevel::kPrivileged || !pod_spec.is_object()) return {};
  const bool restricted = level == PodSecurityLevel::kRestricted;
  // The plugin's order: baseline check IDs sorted (those restricted
  // overrides left out at that level), then restricted check IDs sorted.
  std::vector<Check> checks = {CapabilitiesBaseline, HostNamespaces, HostPathVolumes, HostPorts, Privileged,
                               ProcMount,
                               [](const json& s) { return Seccomp(s, false); },
                               Sysctls};
  if (restricted) {
    // procMount is procMount_restricted at this level (after capabilities_restricted).
    checks = {HostNamespaces, HostPorts, Privileged, Sysctls,
              AllowPrivilegeEscalation, CapabilitiesRestricted, ProcMount, RestrictedVolumes, RunAsNonRoot, RunAsUser,
              [](const json& s) { return Seccomp(s, true); }};
  }
  std::vector<PodSecurityViolation> out;
  for (const Check& c : checks) {
    if (auto v = c(pod_spec)) out.push_back(std::move(*v));
  }
  return out;
}

std::string ForbiddenDetail(const std::vector<PodSecurityViolation>& violations) {
  std::string s;
  for (size_t i = 0; i < violations.size(); ++i) {
    if (i) s += ", ";
    s += violations[i].reason;
    if (!violations[i].detail.empty()) s += " (" + violations[i].detail + ")";
  }
  return s;
}

}  // namespace fairbench::apiserver
