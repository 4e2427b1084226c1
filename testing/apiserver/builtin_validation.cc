#include "testing/apiserver/builtin_validation.h"

#include <regex>
#include <set>

#include "common/base64.h"
#include "testing/apiserver/selectors.h"
#include "controller/kube/json_read.h"

namespace fairbench::apiserver {
namespace {

namespace jr = ::fairbench::kube::json_read;

using nlohmann::json;

const char kRbacGroup[] = "rbac.authorization.k8s.io";

std::string Index(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

// IANA service names: what a port's name (and a named target port) must be.
bool IsIanaSvcName(const std::string& s) {
  static const std::regex letters("[a-z0-9]([a-z0-9-]*[a-z0-9])*");
  static const std::regex has_letter(".*[a-z].*");
  return !s.empty() && s.size() <= 15 && std::regex_match(s, letters) && std::regex_match(s, has_letter) &&
         s.find("--") == std::string::npos;
}
const char kIanaDetail[] =
    "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-), must contain at least one letter (a-z), "
    "must not contain consecutive hyphens, and be no more than 15 characters";

bool IsDns1035Label(const std::string& s) {
  static const std::regex re("[a-z]([-a-z0-9]*[a-z0-9])?");
  return s.size() <= 63 && std::regex_match(s, re);
}

bool IsDns1123Label(const std::string& s) {
  static const std::regex re("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  return s.size() <= 63 && std::regex_match(s, re);
}

void ValidatePortNumber(const json& port, const std::string& field, std::vector<Cause>& errs) {
  if (!port.is_number_integer() || port.get<int64_t>() < 1 || port.get<int64_t>() > 65535) {
    errs.push_back(FieldInvalid(field, port, "must be between 1 and 65535, inclusive"));
  }
}

// An int-or-string port (a target port, a probe's port).
void ValidatePortRef(const json& port, const std::string& field, std::vector<Cause>& errs) {
  if (port.is_string()) {
    if (!IsIanaSvcName(port.get<std::string>())) errs.push_back(FieldInvalid(field, port, kIanaDetail));
  } else {
    ValidatePortNumber(port, field, errs);
  }
}

// A probe's handler, as validateHandler: exactly one of exec, httpGet,
// tcpSocket, grpc (a second one is Forbidden at its own path, none is
// Required at the probe's); their ports checked (grpc's a number).
void ValidateProbeHandler(const json& probe, const std::string& path, std::vector<Cause>& errs) {
  int handlers = 0;
  for (const char* kind : {"exec", "httpGet", "tcpSocket", "grpc"}) {
    if (!probe.contains(kind) || probe[kind].is_null()) continue;
    const std::string field = path + "." + kind;
    if (handlers++ > 0) {
      errs.push_back(FieldForbidden(field, "may not specify more than 1 handler type"));
      continue;
    }
    const json& action = jr::Object(probe, kind);
    if (std::string(kind) == "httpGet" || std::string(kind) == "tcpSocket") {
      ValidatePortRef(action.value("port", json()), field + ".port", errs);
    } else if (std::string(kind) == "grpc") {
      ValidatePortNumber(action.value("port", json()), field + ".port", errs);
    }
  }
  if (handlers == 0) errs.push_back(FieldRequired(path, "must specify a handler type"));
}

// The pod template's containers, as ValidatePodTemplateSpec checks them.
void ValidateContainers(const json& spec, const std::string& path, std::vector<Cause>& errs) {
  const json& containers = jr::Array(spec, "containers");
  if (containers.empty()) errs.push_back(FieldRequired(path + ".containers"));
  std::set<std::string> names;
  for (const char* list : {"initContainers", "containers"}) {
    const json& cs = jr::Array(spec, list);
    for (size_t i = 0; i < cs.size(); ++i) {
      const std::string p = Index(path + "." + list, i);
      const std::string name = jr::String(cs[i], "name");
      if (name.empty()) {
        errs.push_back(FieldRequired(p + ".name"));
      } else if (!names.insert(name).second) {
        errs.push_back(FieldDuplicate(p + ".name", name));
      }
      if (jr::String(cs[i], "image").empty()) errs.push_back(FieldRequired(p + ".image"));
      std::set<std::string> port_names;
      const json& ports = jr::Array(cs[i], "ports");
      for (size_t j = 0; j < ports.size(); ++j) {
        const std::string pp = Index(p + ".ports", j);
        const std::string port_name = jr::String(ports[j], "name");
        if (!port_name.empty()) {
          if (!IsIanaSvcName(port_name)) errs.push_back(FieldInvalid(pp + ".name", port_name, kIanaDetail));
          if (!port_names.insert(port_name).second) errs.push_back(FieldDuplicate(pp + ".name", port_name));
        }
        ValidatePortNumber(ports[j].value("containerPort", json()), pp + ".containerPort", errs);
      }
      for (const char* probe : {"livenessProbe", "readinessProbe", "startupProbe"}) {
        if (cs[i].contains(probe)) ValidateProbeHandler(jr::Object(cs[i], probe), p + "." + probe, errs);
      }
    }
  }
  const std::string restart = jr::String(spec, "restartPolicy");
  if (!restart.empty() && restart != "Always") {
    errs.push_back(FieldNotSupported(path + ".restartPolicy", restart, {"Always"}));
  }
}

// metav1.LabelSelector → the selector text the parser takes.
std::string SelectorText(const json& selector) {
  std::string text;
  auto add = [&text](const std::string& term) { text += (text.empty() ? "" : ",") + term; };
  for (const auto& [k, v] : jr::Object(selector, "matchLabels").items()) add(k + "=" + (v.is_string() ? v.get<std::string>() : ""));
  for (const json& e : jr::Array(selector, "matchExpressions")) {
    const std::string key = jr::String(e, "key"), op = jr::String(e, "operator");
    std::string values;
    for (const json& v : jr::Array(e, "values")) values += (values.empty() ? "" : ",") + (v.is_string() ? v.get<std::string>() : "");
    if (op == "In") add(key + " in (" + values + ")");
    if (op == "NotIn") add(key + " notin (" + values + ")");
    if (op == "Exists") add(key);
    if (op == "DoesNotExist") add("!" + key);
  }
  return text;
}

// A percentage or a count (maxSurge, maxUnavailable): its value against a
// notional 100 replicas, or -1 when it is malformed.
int64_t IntOrPercent(const json& v, const std::string& field, std::vector<Cause>& errs) {
  if (v.is_number_integer()) {
    if (v.get<int64_t>() < 0) errs.push_back(FieldInvalid(field, v, "must be greater than or equal to 0"));
    return v.get<int64_t>();
  }
  static const std::regex percent("[0-9]+%");
  if (v.is_string() && std::regex_match(v.get<std::string>(), percent)) {
    const int64_t p = std::stoll(v.get<std::string>());
    if (p > 100) errs.push_back(FieldInvalid(field, v, "must not be greater than 100%"));
    return p;
  }
  errs.push_back(FieldInvalid(field, v, "a valid percent string must be a numeric string followed by an ending '%' "
                                        "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"));
  return -1;
}

std::vector<Cause> ValidateDeployment(const json& obj, const json* old) {
  std::vector<Cause> errs;
  const json& spec = jr::Object(obj, "spec");
  if (spec.contains("replicas") && (!spec["replicas"].is_number_integer() || spec["replicas"].get<int64_t>() < 0)) {
    errs.push_back(FieldInvalid("spec.replicas", spec["replicas"], "must be greater than or equal to 0"));
  }
  const json& selector = jr::Object(spec, "selector");
  const json& template_labels = jr::Object(jr::Object(jr::Object(spec, "template"), "metadata"), "labels");
  if (!spec.contains("selector")) {
    errs.push_back(FieldRequired("spec.selector"));
  } else if (jr::Object(selector, "matchLabels").empty() && jr::Array(selector, "matchExpressions").empty()) {
    errs.push_back(FieldInvalid("spec.selector", selector, "empty selector is invalid for deployment"));
  } else {
    auto parsed = LabelSelector::Parse(SelectorText(selector));
    if (!parsed.ok()) {
      errs.push_back(FieldInvalid("spec.selector", selector, parsed.status().message()));
    } else if (!parsed->Matches(template_labels)) {
      errs.push_back(FieldInvalid("spec.template.metadata.labels", template_labels,
                                  "`selector` does not match template `labels`"));
    }
  }
  ValidateContainers(jr::Object(jr::Object(spec, "template"), "spec"), "spec.template.spec", errs);
  const json& strategy = jr::Object(spec, "strategy");
  const std::string type = jr::String(strategy, "type");
  if (!type.empty() && type != "Recreate" && type != "RollingUpdate") {
    errs.push_back(FieldNotSupported("spec.strategy.type", type, {"Recreate", "RollingUpdate"}));
  }
  if (type == "Recreate" && strategy.contains("rollingUpdate")) {
    errs.push_back(FieldForbidden("spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'"));
  }
  if (type != "Recreate" && strategy.contains("rollingUpdate")) {
    const json& ru = jr::Object(strategy, "rollingUpdate");
    const int64_t surge = ru.contains("maxSurge") ? IntOrPercent(ru["maxSurge"], "spec.strategy.rollingUpdate.maxSurge", errs) : 25;
    const int64_t unavailable =
        ru.contains("maxUnavailable") ? IntOrPercent(ru["maxUnavailable"], "spec.strategy.rollingUpdate.maxUnavailable", errs) : 25;
    if (surge == 0 && unavailable == 0) {
      errs.push_back(FieldInvalid("spec.strategy.rollingUpdate.maxUnavailable", ru.value("maxUnavailable", json(0)),
                                  "may not be 0 when `maxSurge` is 0"));
    }
  }
  if (old != nullptr && jr::Object(jr::Object(*old, "spec"), "selector") != selector) {
    errs.push_back(FieldInvalid("spec.selector", selector, "field is immutable"));
  }
  return errs;
}

std::vector<Cause> ValidateService(const json& obj) {
  std::vector<Cause> errs;
  const std::string name = jr::String(jr::Object(obj, "metadata"), "name");
  if (!name.empty() && !IsDns1035Label(name)) {
    errs.push_back(FieldInvalid("metadata.name", name,
                                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
                                "with an alphabetic character, and end with an alphanumeric character (e.g. "
                                "'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"));
  }
  const json& spec = jr::Object(obj, "spec");
  const std::string type = jr::String(spec, "type");
  if (!type.empty() && type != "ClusterIP" && type != "NodePort" && type != "LoadBalancer" && type != "ExternalName") {
    errs.push_back(FieldNotSupported("spec.type", type, {"ClusterIP", "ExternalName", "LoadBalancer", "NodePort"}));
  }
  const json& ports = jr::Array(spec, "ports");
  if (ports.empty() && type != "ExternalName" && jr::String(spec, "clusterIP") != "None") {
    errs.push_back(FieldRequired("spec.ports"));
  }
  std::set<std::string> names;
  for (size_t i = 0; i < ports.size(); ++i) {
    const std::string p = Index("spec.ports", i);
    const std::string port_name = jr::String(ports[i], "name");
    if (ports.size() > 1 && port_name.empty()) errs.push_back(FieldRequired(p + ".name"));
    if (!port_name.empty()) {
      if (!IsDns1123Label(port_name)) {
        errs.push_back(FieldInvalid(p + ".name", port_name,
                                    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
                                    "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
                                    "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"));
      }
      if (!names.insert(port_name).second) errs.push_back(FieldDuplicate(p + ".name", port_name));
    }
    ValidatePortNumber(ports[i].value("port", json()), p + ".port", errs);
    const std::string protocol = jr::String(ports[i], "protocol");
    if (!protocol.empty() && protocol != "TCP" && protocol != "UDP" && protocol != "SCTP") {
      errs.push_back(FieldNotSupported(p + ".protocol", protocol, {"SCTP", "TCP", "UDP"}));
    }
    if (ports[i].contains("targetPort")) ValidatePortRef(ports[i]["targetPort"], p + ".targetPort", errs);
  }
  return errs;
}

// ConfigMap and Secret keys, and their total size (1 MiB).
std::vector<Cause> ValidateDataKeys(const json& obj, bool secret) {
  std::vector<Cause> errs;
  static const std::regex key_re("[-._a-zA-Z0-9]+");
  size_t total = 0;
  for (const char* field : {"data", "binaryData"}) {
    if (secret && std::string(field) == "binaryData") continue;
    for (const auto& [k, v] : jr::Object(obj, field).items()) {
      const std::string f = std::string(field) + "[" + k + "]";
      if (k.size() > 253 || !std::regex_match(k, key_re)) {
        errs.push_back(FieldInvalid(f, k,
                                    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' "
                                    "(e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
                                    "'[-._a-zA-Z0-9]+')"));
      }
      if (!v.is_string()) continue;
      if (secret || std::string(field) == "binaryData") {
        auto decoded = Base64Decode(v.get<std::string>());
        total += decoded.ok() ? decoded->size() : 0;
      } else {
        total += v.get<std::string>().size();
      }
    }
  }
  if (total > 1024 * 1024) errs.push_back(FieldTooLong(secret ? "data" : "[]", 1024 * 1024));
  return errs;
}

std::vector<Cause> ValidateRules(const json& obj, bool namespaced) {
  std::vector<Cause> errs;
  const json& rules = jr::Array(obj, "rules");
  for (size_t i = 0; i < rules.size(); ++i) {
    const std::string p = Index("rules", i);
    const json& rule = rules[i];
    if (jr::Array(rule, "verbs").empty()) errs.push_back(FieldRequired(p + ".verbs", "verbs must contain at least one value"));
    if (!jr::Array(rule, "nonResourceURLs").empty()) {
      if (namespaced) {
        errs.push_back(FieldInvalid(p + ".nonResourceURLs", rule["nonResourceURLs"],
                                    "namespaced rules cannot apply to non-resource URLs"));
      }
      if (!jr::Array(rule, "apiGroups").empty() || !jr::Array(rule, "resources").empty() || !jr::Array(rule, "resourceNames").empty()) {
        errs.push_back(FieldInvalid(p + ".nonResourceURLs", rule["nonResourceURLs"],
                                    "rules cannot apply to both regular resources and non-resource URLs"));
      }
      continue;
    }
    if (jr::Array(rule, "apiGroups").empty()) {
      errs.push_back(FieldRequired(p + ".apiGroups", "resource rules must supply at least one api group"));
    }
    if (jr::Array(rule, "resources").empty()) {
      errs.push_back(FieldRequired(p + ".resources", "resource rules must supply at least one resource"));
    }
  }
  return errs;
}

std::vector<Cause> ValidateBinding(const json& obj, const json* old, bool cluster) {
  std::vector<Cause> errs;
  const json& ref = jr::Object(obj, "roleRef");
  if (jr::String(ref, "apiGroup") != kRbacGroup) errs.push_back(FieldNotSupported("roleRef.apiGroup", jr::String(ref, "apiGroup"), {kRbacGroup}));
  const std::string kind = jr::String(ref, "kind");
  if (cluster && kind != "ClusterRole") {
    errs.push_back(FieldNotSupported("roleRef.kind", kind, {"ClusterRole"}));
  } else if (!cluster && kind != "Role" && kind != "ClusterRole") {
    errs.push_back(FieldNotSupported("roleRef.kind", kind, {"Role", "ClusterRole"}));
  }
  const std::string name = jr::String(ref, "name");
  if (name.empty()) {
    errs.push_back(FieldRequired("roleRef.name"));
  } else {
    for (const auto& problem : PathSegmentNameProblems(name)) errs.push_back(FieldInvalid("roleRef.name", name, problem));
  }
  const json& subjects = jr::Array(obj, "subjects");
  for (size_t i = 0; i < subjects.size(); ++i) {
    const std::string p = Index("subjects", i);
    const json& s = subjects[i];
    if (jr::String(s, "name").empty()) errs.push_back(FieldRequired(p + ".name"));
    const std::string skind = jr::String(s, "kind");
    if (skind == "ServiceAccount") {
      if (!jr::String(s, "apiGroup").empty()) errs.push_back(FieldNotSupported(p + ".apiGroup", jr::String(s, "apiGroup"), {""}));
      if (cluster && jr::String(s, "namespace").empty()) errs.push_back(FieldRequired(p + ".namespace"));
    } else if (skind == "User" || skind == "Group") {
      if (jr::String(s, "apiGroup") != kRbacGroup) errs.push_back(FieldNotSupported(p + ".apiGroup", jr::String(s, "apiGroup"), {kRbacGroup}));
    } else {
      errs.push_back(FieldNotSupported(p + ".kind", skind, {"ServiceAccount", "User", "Group"}));
    }
  }
  if (old != nullptr && jr::Object(*old, "roleRef") != ref) errs.push_back(FieldInvalid("roleRef", ref, "cannot change roleRef"));
  return errs;
}

}  // namespace

bool IsRbacGroup(const std::string& group) { return group == kRbacGroup; }

std::vector<std::string> PathSegmentNameProblems(const std::string& name) {
  std::vector<std::string> out;
  if (name == "." || name == "..") out.push_back("may not be '" + name + "'");
  for (const char* bad : {"/", "%"}) {
    if (name.find(bad) != std::string::npos) out.push_back(std::string("may not contain '") + bad + "'");
  }
  return out;
}

std::vector<Cause> ValidateBuiltin(const std::string& group, const std::string& plural, const json& obj, const json* old) {
  if (group == "apps" && plural == "deployments") return ValidateDeployment(obj, old);
  if (group.empty() && plural == "services") return ValidateService(obj);
  if (group.empty() && plural == "configmaps") return ValidateDataKeys(obj, false);
  if (group.empty() && plural == "secrets") {
    std::vector<Cause> errs = ValidateDataKeys(obj, true);
    if (old != nullptr && jr::String(obj, "type") != jr::String(*old, "type")) {
      errs.push_back(FieldInvalid("type", jr::String(obj, "type"), "field is immutable"));
    }
    return errs;
  }
  if (group == kRbacGroup && (plural == "roles" || plural == "clusterroles")) return ValidateRules(obj, plural == "roles");
  if (group == kRbacGroup && (plural == "rolebindings" || plural == "clusterrolebindings")) {
    return ValidateBinding(obj, old, plural == "clusterrolebindings");
  }
  return {};
}

}  // namespace fairbench::apiserver
