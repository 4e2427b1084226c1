#include "testing/apiserver/resource_types.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "testing/apiserver/jsonpath.h"
#include "testing/apiserver/time_text.h"
#include "controller/kube/json_read.h"

namespace fairbench::apiserver {
namespace {

namespace jr = ::fairbench::kube::json_read;

using nlohmann::json;
using Clock = std::chrono::system_clock;

json Age(const json& obj, Clock::time_point now) {
  auto t = ParseTime(jr::String(obj.value("metadata", json::object()), "creationTimestamp"));
  if (!t) return "<unknown>";
  return HumanDuration(std::chrono::duration_cast<std::chrono::seconds>(now - *t));
}

PrinterColumn Col(std::string name, std::string type, std::string description,
                  std::function<json(const json&, Clock::time_point)> cell, int priority = 0) {
  PrinterColumn c;
  c.name = std::move(name);
  c.type = std::move(type);
  c.description = std::move(description);
  c.priority = priority;
  c.cell = std::move(cell);
  return c;
}

PrinterColumn AgeColumn() {
  return Col("Age", "string",
             "CreationTimestamp is a timestamp representing the server time when this object was created.", Age);
}

json PodStatusText(const json& pod) {
  const json& md = pod.value("metadata", json::object());
  if (md.contains("deletionTimestamp") && !md["deletionTimestamp"].is_null()) return "Terminating";
  const json& st = pod.value("status", json::object());
  std::string reason = jr::String(st, "reason");
  if (!reason.empty()) return reason;
  if (st.contains("containerStatuses") && st["containerStatuses"].is_array()) {
    for (const auto& cs : st["containerStatuses"]) {
      const json& state = cs.value("state", json::object());
      if (state.contains("waiting")) {
        std::string r = jr::String(state["waiting"], "reason");
        if (!r.empty()) return r;
      }
      if (state.contains("terminated")) {
        std::string r = jr::String(state["terminated"], "reason");
        if (!r.empty()) return r;
      }
    }
  }
  std::string phase = jr::String(st, "phase");
  return phase.empty() ? "Pending" : phase;
}

std::vector<PrinterColumn> PodColumns() {
  return {
      Col("Ready", "string", "The aggregate readiness state of this pod for accepting traffic.",
          [](const json& p, Clock::time_point) {
            size_t total = p.value("spec", json::object()).value("containers", json::array()).size();
            size_t ready = 0;
            for (const auto& cs : p.value("status", json::object()).value("containerStatuses", json::array())) {
              if (cs.value("ready", false)) ++ready;
            }
            return json(std::to_string(ready) + "/" + std::to_string(total));
          }),
      Col("Status", "string", "The aggregate status of the containers in this pod.",
          [](const json& p, Clock::time_point) { return PodStatusText(p); }),
      Col("Restarts", "string", "The number of times the containers in this pod have been restarted.",
          [](const json& p, Clock::time_point) {
            int64_t n = 0;
            for (const auto& cs : p.value("status", json::object()).value("containerStatuses", json::array())) {
              n += cs.value("restartCount", 0);
            }
            return json(std::to_string(n));
          }),
      AgeColumn(),
      Col("IP", "string", "IP address allocated to the pod.",
          [](const json& p, Clock::time_point) {
            std::string ip = jr::String(p.value("status", json::object()), "podIP");
            return json(ip.empty() ? "<none>" : ip);
          },
          1),
      Col("Node", "string", "Name of the Node this pod is scheduled on.",
          [](const json& p, Clock::time_point) {
            std::string n = jr::String(p.value("spec", json::object()), "nodeName");
            return json(n.empty() ? "<none>" : n);
          },
          1),
  };
}

std::vector<PrinterColumn> NodeColumns() {
  return {
      Col("Status", "string", "The status of the node",
          [](const json& n, Clock::time_point) {
            for (const auto& c : n.value("status", json::object()).value("conditions", json::array())) {
              if (jr::String(c, "type") == "Ready") return json(jr::String(c, "status") == "True" ? "Ready" : "NotReady");
            }
            return json("Unknown");
          }),
      Col("Roles", "string", "The roles of the node",
          [](const json&, Clock::time_point) { return json("<none>"); }),
      AgeColumn(),
      Col("Version", "string", "Kubelet Version reported by the node.",
          [](const json& n, Clock::time_point) {
            return json(jr::String(n.value("status", json::object()).value("nodeInfo", json::object()), "kubeletVersion"));
          }),
  };
}

std::vector<PrinterColumn> EventColumns() {
  return {
      Col("Last Seen", "string", "Time when last event occurred",
          [](const json& e, Clock::time_point now) {
            std::string t = jr::String(e, "lastTimestamp");
            if (t.empty()) t = jr::String(e, "eventTime");
            auto tp = ParseTime(t);
            return json(tp ? HumanDuration(std::chrono::duration_cast<std::chrono::seconds>(now - *tp)) : "<unknown>");
          }),
      Col("Type", "string", "Type of the event", [](const json& e, Clock::time_point) { return json(jr::String(e, "type")); }),
      Col("Reason", "string", "Reason of the event",
          [](const json& e, Clock::time_point) { return json(jr::String(e, "reason")); }),
      Col("Object", "string", "Involved object",
          [](const json& e, Clock::time_point) {
            const json& io = e.value("involvedObject", json::object());
            std::string kind = jr::String(io, "kind");
            std::transform(kind.begin(), kind.end(), kind.begin(), [](unsigned char c) { return std::tolower(c); });
            return json(kind + "/" + jr::String(io, "name"));
          }),
      Col("Message", "string", "Message of the event",
          [](const json& e, Clock::time_point) { return json(jr::String(e, "message")); }),
  };
}

std::vector<PrinterColumn> ServiceColumns() {
  return {
      Col("Type", "string", "The type of the service",
          [](const json& s, Clock::time_point) {
            std::string t = jr::String(s.value("spec", json::object()), "type");
            return json(t.empty() ? "ClusterIP" : t);
          }),
      Col("Cluster-IP", "string", "The cluster IP of the service",
          [](const json& s, Clock::time_point) {
            std::string ip = jr::String(s.value("spec", json::object()), "clusterIP");
            return json(ip.empty() ? "<none>" : ip);
          }),
      Col("External-IP", "string", "The external IP of the service",
          [](const json&, Clock::time_point) { return json("<none>"); }),
      Col("Port(s)", "string", "The ports of the service",
          [](const json& s, Clock::time_point) {
            std::string out;
            for (const auto& p : s.value("spec", json::object()).value("ports", json::array())) {
              if (!out.empty()) out += ",";
              out += std::to_string(p.value("port", 0)) + "/" + (jr::String(p, "protocol").empty() ? "TCP" : jr::String(p, "protocol"));
            }
            return json(out.empty() ? "<none>" : out);
          }),
      AgeColumn(),
  };
}

std::vector<PrinterColumn> DataColumns(bool with_type) {
  std::vector<PrinterColumn> cols;
  if (with_type) {
    cols.push_back(Col("Type", "string", "The type of the secret",
                       [](const json& s, Clock::time_point) { return json(jr::String(s, "type")); }));
  }
  cols.push_back(Col("Data", "string", "Number of keys",
                     [](const json& o, Clock::time_point) {
                       size_t n = o.value("data", json::object()).size() + o.value("binaryData", json::object()).size();
                       return json(std::to_string(n));
                     }));
  cols.push_back(AgeColumn());
  return cols;
}

ResourceInfo Builtin(std::string group, std::string version, std::string kind, std::string plural, bool namespaced,
                     bool status, std::vector<std::string> short_names, std::vector<PrinterColumn> columns,
                     std::vector<std::string> fields = {}, std::vector<std::string> categories = {}) {
  ResourceInfo r;
  r.group = std::move(group);
  r.version = std::move(version);
  r.kind = kind;
  r.list_kind = kind + "List";
  r.plural = std::move(plural);
  r.singular = kind;
  std::transform(r.singular.begin(), r.singular.end(), r.singular.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  r.namespaced = namespaced;
  r.status_subresource = status;
  r.short_names = std::move(short_names);
  r.columns = std::move(columns);
  r.field_selectors = std::move(fields);
  r.categories = std::move(categories);
  return r;
}

bool IsDns1123Label(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  for (char c : s) {
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-')) {
      return false;
    }
  }
  return s.front() != '-' && s.back() != '-';
}

}  // namespace

std::vector<std::string> ResourceInfo::AllowedFieldSelectors() const {
  std::vector<std::string> out = {"metadata.name"};
  if (namespaced) out.push_back("metadata.namespace");
  out.insert(out.end(), field_selectors.begin(), field_selectors.end());
  return out;
}

ResourceRegistry::ResourceRegistry() {
  auto add = [this](ResourceInfo r) { infos_.push_back(std::make_unique<ResourceInfo>(std::move(r))); };
  add(Builtin("", "v1", "Namespace", "namespaces", false, true, {"ns"},
              {Col("Status", "string", "The status of the namespace",
                   [](const json& n, Clock::time_point) { return json(jr::String(n.value("status", json::object()), "phase")); }),
               AgeColumn()},
              {"status.phase"}));
  add(Builtin("", "v1", "Pod", "pods", true, true, {"po"}, PodColumns(),
              {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
               "status.phase", "status.podIP", "status.nominatedNodeName"},
              {"all"}));
  add(Builtin("", "v1", "Service", "services", true, true, {"svc"}, ServiceColumns(), {}, {"all"}));
  add(Builtin("", "v1", "ConfigMap", "configmaps", true, false, {"cm"}, DataColumns(false)));
  add(Builtin("", "v1", "Secret", "secrets", true, false, {}, DataColumns(true), {"type"}));
  add(Builtin("", "v1", "ServiceAccount", "serviceaccounts", true, false, {"sa"}, {AgeColumn()}));
  add(Builtin("", "v1", "Event", "events", true, false, {"ev"}, EventColumns(),
              {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
               "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
               "reportingComponent", "source", "type"}));
  // events.k8s.io/v1 is stored apart from core/v1 events here (the real
  // server converts between the two over one storage).
  add(Builtin("events.k8s.io", "v1", "Event", "events", true, false, {}, {AgeColumn()},
              {"reason", "type", "regarding.kind", "regarding.name", "regarding.namespace", "reportingController"}));
  add(Builtin("", "v1", "Node", "nodes", false, true, {"no"}, NodeColumns(), {"spec.unschedulable"}));
  add(Builtin("coordination.k8s.io", "v1", "Lease", "leases", true, false, {},
              {Col("Holder", "string", "Holder of the lease",
                   [](const json& l, Clock::time_point) {
                     return json(jr::String(l.value("spec", json::object()), "holderIdentity"));
                   }),
               AgeColumn()}));
  // What a Helm chart of an operator installs, stored inert (no
  // Deployment controller here).
  add(Builtin("apps", "v1", "Deployment", "deployments", true, true, {"deploy"},
              {Col("Ready", "string", "Ready replicas",
                   [](const json& d, Clock::time_point) {
                     const json st = d.value("status", json::object());
                     return json(std::to_string(st.value("readyReplicas", 0)) + "/" +
                                 std::to_string(d.value("spec", json::object()).value("replicas", 1)));
                   }),
               AgeColumn()},
              {}, {"all"}));
  add(Builtin("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", false, false, {}, {AgeColumn()}));
  add(Builtin("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", false, false, {},
              {AgeColumn()}));
  add(Builtin("rbac.authorization.k8s.io", "v1", "Role", "roles", true, false, {}, {AgeColumn()}));
  add(Builtin("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", true, false, {}, {AgeColumn()}));
  add(Builtin("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", false, true,
              {"crd", "crds"},
              {Col("Created At", "date", "The time the CRD was created",
                   [](const json& c, Clock::time_point) {
                     return json(jr::String(c.value("metadata", json::object()), "creationTimestamp"));
                   })},
              {}, {"api-extensions"}));
}

const ResourceInfo* ResourceRegistry::Find(const std::string& group, const std::string& version,
                                           const std::string& plural) const {
  for (const auto& r : infos_) {
    if (r->served && r->group == group && r->version == version && r->plural == plural) return r.get();
  }
  return nullptr;
}

const ResourceInfo* ResourceRegistry::FindKind(const std::string& group, const std::string& version,
                                               const std::string& kind) const {
  for (const auto& r : infos_) {
    if (r->served && r->group == group && r->version == version && r->kind == kind) return r.get();
  }
  return nullptr;
}

std::vector<const ResourceInfo*> ResourceRegistry::All() const {
  std::vector<const ResourceInfo*> out;
  for (const auto& r : infos_) {
    if (r->served) out.push_back(r.get());
  }
  return out;
}

void ResourceRegistry::SetCustom(const std::string& crd_name, std::vector<ResourceInfo> versions) {
  RemoveCustom(crd_name);
  for (auto& v : versions) infos_.push_back(std::make_unique<ResourceInfo>(std::move(v)));
}

void ResourceRegistry::RemoveCustom(const std::string& crd_name) {
  infos_.erase(std::remove_if(infos_.begin(), infos_.end(),
                              [&](const auto& r) { return r->custom && r->crd_name == crd_name; }),
               infos_.end());
}

std::vector<Cause> ValidateAndDefaultCrd(json& crd) {
  std::vector<Cause> errs;
  if (!crd.contains("spec") || !crd["spec"].is_object()) {
    errs.push_back(FieldRequired("spec"));
    return errs;
  }
  json& spec = crd["spec"];
  std::string group = jr::String(spec, "group");
  if (group.empty()) {
    errs.push_back(FieldRequired("spec.group"));
  } else if (group.find('.') == std::string::npos) {
    errs.push_back(FieldInvalid("spec.group", group, "should be a domain with at least one dot"));
  }
  if (!spec.contains("names") || !spec["names"].is_object()) spec["names"] = json::object();
  json& names = spec["names"];
  std::string plural = jr::String(names, "plural");
  std::string kind = jr::String(names, "kind");
  if (plural.empty()) {
    errs.push_back(FieldRequired("spec.names.plural"));
  } else if (!IsDns1123Label(plural)) {
    errs.push_back(FieldInvalid("spec.names.plural", plural, "a lowercase RFC 1123 label must consist of lower case "
                                                             "alphanumeric characters or '-'"));
  }
  if (kind.empty()) errs.push_back(FieldRequired("spec.names.kind"));
  if (jr::String(names, "listKind").empty() && !kind.empty()) names["listKind"] = kind + "List";
  if (jr::String(names, "singular").empty() && !kind.empty()) {
    std::string s = kind;
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    names["singular"] = s;
  }
  std::string name = jr::String(crd.value("metadata", json::object()), "name");
  if (!plural.empty() && !group.empty() && name != plural + "." + group) {
    errs.push_back(FieldInvalid("metadata.name", name, "must be spec.names.plural+\".\"+spec.group"));
  }
  std::string scope = jr::String(spec, "scope");
  if (scope != "Namespaced" && scope != "Cluster") {
    errs.push_back(FieldNotSupported("spec.scope", scope, {"Cluster", "Namespaced"}));
  }
  if (!spec.contains("versions") || !spec["versions"].is_array() || spec["versions"].empty()) {
    errs.push_back(FieldRequired("spec.versions", "must have exactly one version marked as storage version"));
    return errs;
  }
  int storage = 0;
  std::set<std::string> seen;
  for (size_t i = 0; i < spec["versions"].size(); ++i) {
    json& v = spec["versions"][i];
    std::string path = "spec.versions[" + std::to_string(i) + "]";
    std::string vname = jr::String(v, "name");
    if (vname.empty()) errs.push_back(FieldRequired(path + ".name"));
    if (!seen.insert(vname).second) errs.push_back(FieldDuplicate(path + ".name", vname));
    if (v.value("storage", false)) ++storage;
    if (!v.contains("served")) errs.push_back(FieldRequired(path + ".served"));
    const json* schema = nullptr;
    if (v.contains("schema") && v["schema"].is_object() && v["schema"].contains("openAPIV3Schema")) {
      schema = &v["schema"]["openAPIV3Schema"];
    }
    if (!schema) {
      errs.push_back(FieldRequired(path + ".schema.openAPIV3Schema", "schemas are required"));
    } else {
      Schema::Parse(*schema, path + ".schema.openAPIV3Schema", &errs);
    }
    if (v.contains("additionalPrinterColumns") && v["additionalPrinterColumns"].is_array()) {
      for (size_t c = 0; c < v["additionalPrinterColumns"].size(); ++c) {
        const json& col = v["additionalPrinterColumns"][c];
        std::string cpath = path + ".additionalPrinterColumns[" + std::to_string(c) + "]";
        if (jr::String(col, "name").empty()) errs.push_back(FieldRequired(cpath + ".name"));
        std::string type = jr::String(col, "type");
        static const std::set<std::string> kTypes = {"integer", "number", "string", "boolean", "date"};
        if (!kTypes.count(type)) {
          errs.push_back(FieldNotSupported(cpath + ".type", type, {"boolean", "date", "integer", "number", "string"}));
        }
        std::string jp = jr::String(col, "jsonPath");
        if (jp.empty()) {
          errs.push_back(FieldRequired(cpath + ".jsonPath"));
        } else if (!EvalJsonPath(json::object(), jp).ok()) {
          errs.push_back(FieldInvalid(cpath + ".jsonPath", jp, "must be a simple json path"));
        }
      }
    }
  }
  if (storage != 1) {
    errs.push_back(FieldInvalid("spec.versions", spec["versions"].size(),
                                "must have exactly one version marked as storage version"));
  }
  if (!spec.contains("conversion")) spec["conversion"] = {{"strategy", "None"}};
  return errs;
}

std::vector<ResourceInfo> ResourcesFromCrd(const json& crd) {
  std::vector<ResourceInfo> out;
  const json& spec = crd["spec"];
  const json& names = spec["names"];
  for (const auto& v : spec["versions"]) {
    if (!v.value("served", false)) continue;
    ResourceInfo r;
    r.group = jr::String(spec, "group");
    r.version = jr::String(v, "name");
    r.kind = jr::String(names, "kind");
    r.list_kind = jr::String(names, "listKind");
    r.plural = jr::String(names, "plural");
    r.singular = jr::String(names, "singular");
    for (const auto& s : names.value("shortNames", json::array())) r.short_names.push_back(s.get<std::string>());
    for (const auto& s : names.value("categories", json::array())) r.categories.push_back(s.get<std::string>());
    r.namespaced = jr::String(spec, "scope") == "Namespaced";
    r.custom = true;
    r.crd_name = jr::String(crd["metadata"], "name");
    r.status_subresource = v.contains("subresources") && v["subresources"].is_object() &&
                           v["subresources"].contains("status");
    std::vector<Cause> ignored;
    r.schema = Schema::Parse(v["schema"]["openAPIV3Schema"], "", &ignored);
    for (const auto& c : v.value("additionalPrinterColumns", json::array())) {
      PrinterColumn col;
      col.name = jr::String(c, "name");
      col.type = jr::String(c, "type");
      col.format = jr::String(c, "format");
      col.description = jr::String(c, "description");
      col.priority = c.value("priority", 0);
      col.json_path = jr::String(c, "jsonPath");
      r.columns.push_back(std::move(col));
    }
    if (r.columns.empty()) {
      PrinterColumn age;
      age.name = "Age";
      age.type = "date";
      age.json_path = ".metadata.creationTimestamp";
      age.description = "CreationTimestamp is a timestamp representing the server time when this object was created.";
      r.columns.push_back(std::move(age));
    }
    for (const auto& f : v.value("selectableFields", json::array())) {
      std::string jp = jr::String(f, "jsonPath");
      if (!jp.empty() && jp[0] == '.') r.field_selectors.push_back(jp.substr(1));
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace fairbench::apiserver
