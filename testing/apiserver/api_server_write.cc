// ApiServer: create, update, patch (merge, JSON, apply), delete, finalizers,
// graceful pod deletion, CRD registration and garbage collection.
#include <algorithm>
#include <cctype>
#include <regex>

#include "common/base64.h"
#include "testing/apiserver/api_server.h"
#include "testing/apiserver/builtin_validation.h"
#include "testing/apiserver/managed_fields.h"
#include "testing/apiserver/request_util.h"
#include "testing/apiserver/time_text.h"
#include "testing/apiserver/yaml_json.h"
#include "controller/kube/json_read.h"

namespace fairbench::apiserver {

using nlohmann::json;

namespace {

namespace jr = ::fairbench::kube::json_read;

const char kCrdGroup[] = "apiextensions.k8s.io";

bool IsCrd(const ResourceInfo& r) { return r.group == kCrdGroup && r.plural == "customresourcedefinitions"; }
bool IsCore(const ResourceInfo& r, const char* plural) { return r.group.empty() && r.plural == plural; }

json& Meta(json& obj) {
  if (!obj.contains("metadata") || !obj["metadata"].is_object()) obj["metadata"] = json::object();
  return obj["metadata"];
}

bool Terminating(const json& obj) {
  return obj.contains("metadata") && obj["metadata"].contains("deletionTimestamp") &&
         !obj["metadata"]["deletionTimestamp"].is_null();
}

std::vector<std::string> Finalizers(const json& obj) {
  std::vector<std::string> out;
  if (!obj.contains("metadata")) return out;
  for (const auto& f : obj["metadata"].value("finalizers", json::array())) {
    if (f.is_string()) out.push_back(f.get<std::string>());
  }
  return out;
}

void SetFinalizers(json& obj, const std::vector<std::string>& f) {
  if (f.empty()) {
    Meta(obj).erase("finalizers");
  } else {
    Meta(obj)["finalizers"] = f;
  }
}

int64_t GracePeriod(const json& obj) {
  const json& md = obj["metadata"];
  return md.contains("deletionGracePeriodSeconds") && md["deletionGracePeriodSeconds"].is_number()
             ? md["deletionGracePeriodSeconds"].get<int64_t>()
             : 0;
}

const std::regex& SubdomainRe() {
  static const std::regex re(R"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)");
  return re;
}
const std::regex& LabelRe() {
  static const std::regex re(R"([a-z0-9]([-a-z0-9]*[a-z0-9])?)");
  return re;
}
const std::regex& LabelValueRe() {
  static const std::regex re(R"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])");
  return re;
}

bool ValidQualifiedName(const std::string& key) {
  std::string name = key;
  size_t slash = key.find('/');
  if (slash != std::string::npos) {
    std::string prefix = key.substr(0, slash);
    name = key.substr(slash + 1);
    if (prefix.empty() || prefix.size() > 253 || !std::regex_match(prefix, SubdomainRe())) return false;
  }
  return !name.empty() && name.size() <= 63 && std::regex_match(name, LabelValueRe());
}

std::vector<Cause> ValidateMetadata(const ResourceInfo& r, const json& obj, const json* old) {
  std::vector<Cause> errs;
  const json& md = obj["metadata"];
  std::string name = jr::String(md, "name");
  if (name.empty()) {
    errs.push_back(FieldRequired("metadata.name", "name or generateName is required"));
  } else if (IsCore(r, "namespaces")) {
    if (name.size() > 63 || !std::regex_match(name, LabelRe())) {
      errs.push_back(FieldInvalid("metadata.name", name,
                                  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
                                  "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
                                  "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"));
    }
  } else if (IsRbacGroup(r.group)) {
    for (const auto& problem : PathSegmentNameProblems(name)) errs.push_back(FieldInvalid("metadata.name", name, problem));
  } else if (name.size() > 253 || !std::regex_match(name, SubdomainRe())) {
    errs.push_back(FieldInvalid(
        "metadata.name", name,
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
        "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"));
  }
  for (const char* m : {"labels", "annotations"}) {
    if (md.contains(m) && !md[m].is_null() && !md[m].is_object()) {
      errs.push_back(FieldInvalid(std::string("metadata.") + m, md[m], "must be a map of strings"));
      continue;
    }
    const json entries = md.value(m, json::object());
    for (const auto& [k, v] : entries.items()) {
      if (!ValidQualifiedName(k)) {
        errs.push_back(FieldInvalid(std::string("metadata.") + m, k,
                                    "name part must consist of alphanumeric characters, '-', '_' or '.', and must "
                                    "start and end with an alphanumeric character"));
      }
      if (!v.is_string()) {
        errs.push_back(FieldInvalid(std::string("metadata.") + m + "." + k, v, "must be a string"));
      } else if (std::string(m) == "labels" && !v.get<std::string>().empty() &&
                 (v.get<std::string>().size() > 63 || !std::regex_match(v.get<std::string>(), LabelValueRe()))) {
        errs.push_back(FieldInvalid("metadata.labels", v,
                                    "a valid label must be an empty string or consist of alphanumeric characters, "
                                    "'-', '_' or '.', and must start and end with an alphanumeric character"));
      }
    }
  }
  int controllers = 0;
  for (const auto& ref : md.value("ownerReferences", json::array())) {
    if (jr::String(ref, "apiVersion").empty()) {
      errs.push_back(FieldInvalid("metadata.ownerReferences.apiVersion", "", "version must not be empty"));
    }
    if (jr::String(ref, "kind").empty()) errs.push_back(FieldInvalid("metadata.ownerReferences.kind", "", "kind must not be empty"));
    if (jr::String(ref, "name").empty()) errs.push_back(FieldInvalid("metadata.ownerReferences.name", "", "name must not be empty"));
    if (jr::String(ref, "uid").empty()) errs.push_back(FieldInvalid("metadata.ownerReferences.uid", "", "uid must not be empty"));
    if (ref.value("controller", false)) ++controllers;
  }
  if (controllers > 1) {
    errs.push_back(FieldInvalid("metadata.ownerReferences", md["ownerReferences"],
                                "Only one reference can have Controller set to true"));
  }
  for (const auto& f : Finalizers(obj)) {
    if (!ValidQualifiedName(f)) {
      errs.push_back(FieldInvalid("metadata.finalizers", f, "name part must consist of alphanumeric characters"));
    }
  }
  if (old && Terminating(*old)) {
    auto before = Finalizers(*old);
    std::vector<std::string> added;
    for (const auto& f : Finalizers(obj)) {
      if (std::find(before.begin(), before.end(), f) == before.end()) added.push_back(f);
    }
    if (!added.empty()) {
      std::string list;
      for (const auto& a : added) list += (list.empty() ? "" : ", ") + json(a).dump();
      errs.push_back(FieldForbidden("metadata.finalizers", "no new finalizers can be added if the object is being "
                                                           "deleted, found new finalizers []string{" + list + "}"));
    }
  }
  return errs;
}

bool ContentChanged(const ResourceInfo& r, json a, json b) {
  a.erase("metadata");
  b.erase("metadata");
  if (r.status_subresource) {
    a.erase("status");
    b.erase("status");
  }
  return a != b;
}

bool SameObject(json a, json b) {
  for (json* o : {&a, &b}) {
    (*o)["metadata"].erase("managedFields");
    (*o)["metadata"].erase("resourceVersion");
  }
  return a == b;
}

std::string QosClass(const json& pod) {
  bool any = false, guaranteed = true;
  for (const auto& c : pod.value("spec", json::object()).value("containers", json::array())) {
    const json& res = c.value("resources", json::object());
    json limits = res.value("limits", json::object());
    json requests = res.value("requests", json::object());
    if (!limits.empty() || !requests.empty()) any = true;
    for (const char* k : {"cpu", "memory"}) {
      if (!limits.contains(k)) {
        guaranteed = false;
        continue;
      }
      // Requests default to limits.
      if (requests.contains(k) && requests[k] != limits[k]) guaranteed = false;
    }
  }
  if (!any) return "BestEffort";
  return guaranteed ? "Guaranteed" : "Burstable";
}

json MaskedPodSpec(json spec) {
  for (const char* list : {"containers", "initContainers"}) {
    if (spec.contains(list) && spec[list].is_array()) {
      for (auto& c : spec[list]) c.erase("image");
    }
  }
  for (const char* k : {"activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds"}) spec.erase(k);
  return spec;
}

ExpectedKind Expected(const ResourceInfo& r) { return {r.group, r.version, r.kind, r.custom}; }

StatusReply ApplyConflicts(const ResourceInfo& r, const std::string& name, const std::vector<ApplyConflict>& cs) {
  std::string msg = "Apply failed with " + std::to_string(cs.size()) + " conflict" + (cs.size() == 1 ? "" : "s") + ": ";
  json causes = json::array();
  for (size_t i = 0; i < cs.size(); ++i) {
    std::string m = "conflict with \"" + cs[i].manager + "\" using " + r.ApiVersion();
    msg += (i ? "\n" : "") + m + ": " + cs[i].field;
    causes.push_back({{"reason", "FieldManagerConflict"}, {"message", m}, {"field", cs[i].field}});
  }
  json details = {{"name", name}, {"kind", r.plural}, {"causes", causes}};
  if (!r.group.empty()) details["group"] = r.group;
  return MakeStatus(409, "Conflict", msg, details);
}

void AddWarnings(ApiResponse& resp, const std::vector<std::string>& warnings) {
  for (const auto& w : warnings) resp.headers.emplace_back("Warning", "299 - " + json(w).dump());
}

}  // namespace

const ResourceInfo* ApiServer::ByStorageKey(const std::string& key) const {
  for (const ResourceInfo* r : registry_.All()) {
    if (r->StorageKey() == key) return r;
  }
  return nullptr;
}

Outcome<json> ApiServer::Admit(const Target& t, json obj, const json* old, const ApiRequest& req,
                               std::vector<std::string>* warnings) {
  const ResourceInfo& r = *t.resource;
  std::string kind = jr::String(obj, "kind");
  std::string api_version = jr::String(obj, "apiVersion");
  if (r.custom && (kind.empty() || api_version.empty())) {
    return BadRequest(std::string("Object '") + (kind.empty() ? "Kind" : "apiVersion") + "' is missing in '" +
                      obj.dump() + "'");
  }
  if (!kind.empty() && kind != r.kind) {
    return BadRequest("the kind in the data (" + kind + ") does not match the expected kind (" + r.kind + ")");
  }
  if (!api_version.empty() && api_version != r.ApiVersion()) {
    return BadRequest("the API version in the data (" + api_version + ") does not match the expected API version (" +
                      r.ApiVersion() + ")");
  }
  obj["apiVersion"] = r.ApiVersion();
  obj["kind"] = r.kind;
  if (IsCore(r, "secrets") && obj.contains("stringData")) {
    // stringData is write-only: each value lands in data (base64),
    // replacing a data key of the same name, as the real server does.
    if (obj["stringData"].is_object()) {
      for (auto& [key, value] : obj["stringData"].items()) {
        if (value.is_string()) obj["data"][key] = Base64Encode(value.get<std::string>());
      }
    }
    obj.erase("stringData");
  }
  json& md = Meta(obj);
  if (r.namespaced) {
    std::string ns = jr::String(md, "namespace");
    if (!ns.empty() && ns != t.ns) {
      return BadRequest("the namespace of the provided object does not match the namespace sent on the request");
    }
    md["namespace"] = t.ns;
  } else {
    md.erase("namespace");
  }
  std::vector<Cause> causes;
  if (r.custom && r.schema) {
    std::vector<std::string> unknown;
    r.schema->Prune(obj, &unknown);
    std::string mode = QueryValue(req.query, "fieldValidation");
    if (mode == "Strict" && !unknown.empty()) {
      std::string list;
      for (const auto& u : unknown) list += (list.empty() ? "" : ", ") + std::string("unknown field \"") + u + "\"";
      return BadRequest(r.kind + " in version \"" + r.version + "\" cannot be handled as a " + r.kind +
                        ": strict decoding error: " + list);
    }
    if (mode != "Ignore") {
      for (const auto& u : unknown) warnings->push_back("unknown field \"" + u + "\"");
    }
    r.schema->ApplyDefaults(obj);
    r.schema->Validate(obj, &causes);
  }
  auto meta_errs = ValidateMetadata(r, obj, old);
  causes.insert(causes.begin(), meta_errs.begin(), meta_errs.end());
  if (!causes.empty()) return Invalid(r.Name(jr::String(md, "name")), causes);
  return obj;
}

void ApiServer::PrepareForCreate(const ResourceInfo& r, json& obj) {
  const std::string now = NowText();
  if (IsCore(r, "pods")) {
    json& spec = obj["spec"];
    if (!spec.contains("terminationGracePeriodSeconds")) spec["terminationGracePeriodSeconds"] = 30;
    if (!spec.contains("restartPolicy")) spec["restartPolicy"] = "Always";
    if (!spec.contains("schedulerName")) spec["schedulerName"] = "default-scheduler";
    obj["status"] = {{"phase", "Pending"}, {"qosClass", QosClass(obj)}};
  } else if (IsCore(r, "namespaces")) {
    obj["spec"] = {{"finalizers", {"kubernetes"}}};
    obj["status"] = {{"phase", "Active"}};
    Meta(obj)["labels"]["kubernetes.io/metadata.name"] = jr::String(obj["metadata"], "name");
  } else if (IsCore(r, "services")) {
    json& spec = obj["spec"];
    if (jr::String(spec, "type").empty()) spec["type"] = "ClusterIP";
    if (jr::String(spec, "type") != "ExternalName" && jr::String(spec, "clusterIP").empty()) {
      uint64_t n = next_cluster_ip_++;
      std::string ip = "10.96." + std::to_string((n >> 8) & 255) + "." + std::to_string(n & 255);
      spec["clusterIP"] = ip;
      spec["clusterIPs"] = {ip};
    }
    if (spec.contains("ports") && spec["ports"].is_array()) {
      for (auto& p : spec["ports"]) {
        if (jr::String(p, "protocol").empty()) p["protocol"] = "TCP";
        if (!p.contains("targetPort") && p.contains("port")) p["targetPort"] = p["port"];
      }
    }
    obj["status"] = {{"loadBalancer", json::object()}};
  } else if (IsCrd(r)) {
    bool established = options_.crd_establish_delay.count() == 0;
    std::string storage;
    for (const auto& v : obj["spec"]["versions"]) {
      if (v.value("storage", false)) storage = jr::String(v, "name");
    }
    obj["status"] = {
        {"conditions",
         {{{"type", "NamesAccepted"}, {"status", "True"}, {"reason", "NoConflicts"}, {"message", "no conflicts found"},
           {"lastTransitionTime", now}},
          {{"type", "Established"},
           {"status", established ? "True" : "False"},
           {"reason", established ? "InitialNamesAccepted" : "Installing"},
           {"message", established ? "the initial names have been accepted" : "the initial names have been accepted"},
           {"lastTransitionTime", now}}}},
        {"acceptedNames", obj["spec"]["names"]},
        {"storedVersions", {storage}}};
    if (!established) {
      pending_crds_[jr::String(obj["metadata"], "name")] = std::chrono::steady_clock::now() + options_.crd_establish_delay;
    }
  }
}

std::vector<Cause> ApiServer::ValidateType(const ResourceInfo& r, json& obj, const json* old) {
  std::vector<Cause> errs = ValidateBuiltin(r.group, r.plural, obj, old);
  if (!errs.empty()) return errs;
  if (IsCrd(r)) return ValidateAndDefaultCrd(obj);
  if (IsCore(r, "pods")) {
    const json& spec = obj.value("spec", json::object());
    const json& containers = spec.value("containers", json::array());
    if (!containers.is_array() || containers.empty()) errs.push_back(FieldRequired("spec.containers"));
    for (size_t i = 0; i < containers.size(); ++i) {
      std::string p = "spec.containers[" + std::to_string(i) + "]";
      if (jr::String(containers[i], "name").empty()) errs.push_back(FieldRequired(p + ".name"));
      if (jr::String(containers[i], "image").empty()) errs.push_back(FieldRequired(p + ".image"));
    }
    if (old && MaskedPodSpec(spec) != MaskedPodSpec(old->value("spec", json::object()))) {
      errs.push_back(FieldForbidden(
          "spec", "pod updates may not change fields other than `spec.containers[*].image`,"
                  "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions "
                  "to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was "
                  "previously negative)"));
    }
  } else if (IsCore(r, "events")) {
    std::string ns = jr::String(obj.value("involvedObject", json::object()), "namespace");
    if (!ns.empty() && ns != jr::String(obj["metadata"], "namespace")) {
      errs.push_back(FieldInvalid("involvedObject.namespace", ns, "does not match event.namespace"));
    }
  } else if (r.group == "events.k8s.io" && r.plural == "events") {
    for (const char* k : {"eventTime", "reportingController", "reportingInstance", "action", "reason"}) {
      if (jr::String(obj, k).empty()) errs.push_back(FieldRequired(k));
    }
    std::string type = jr::String(obj, "type");
    if (type != "Normal" && type != "Warning") errs.push_back(FieldNotSupported("type", type, {"Normal", "Warning"}));
    if (!obj.contains("regarding") || !obj["regarding"].is_object()) errs.push_back(FieldRequired("regarding"));
    if (jr::String(obj, "note").size() > 1024) errs.push_back(FieldTooLong("note", 1024));
  } else if (r.group == "coordination.k8s.io" && r.plural == "leases") {
    const json& spec = obj.value("spec", json::object());
    if (spec.contains("leaseDurationSeconds") &&
        (!spec["leaseDurationSeconds"].is_number_integer() || spec["leaseDurationSeconds"].get<int64_t>() <= 0)) {
      errs.push_back(FieldInvalid("spec.leaseDurationSeconds", spec["leaseDurationSeconds"], "must be greater than 0"));
    }
  } else if (IsCore(r, "services") && old) {
    std::string before = jr::String(old->value("spec", json::object()), "clusterIP");
    json& spec = obj["spec"];
    if (jr::String(spec, "clusterIP").empty() && !before.empty()) {
      spec["clusterIP"] = before;
      spec["clusterIPs"] = old->at("spec").value("clusterIPs", json::array({before}));
    } else if (jr::String(spec, "clusterIP") != before) {
      errs.push_back(FieldInvalid("spec.clusterIPs[0]", jr::String(spec, "clusterIP"), "may not change once set"));
    }
  }
  return errs;
}

void ApiServer::AfterStoredChange(const ResourceInfo& r, const json& obj, bool deleted) {
  gc_due_ = true;
  wake_.notify_all();
  if (!IsCrd(r)) return;
  const std::string name = jr::String(obj["metadata"], "name");
  if (deleted) {
    std::string key = jr::String(obj["spec"], "group") + "/" + jr::String(obj["spec"]["names"], "plural");
    std::vector<json> doomed;
    for (const json* o : store_.List(key, "")) doomed.push_back(*o);
    for (auto& o : doomed) {
      std::string ns = jr::String(o["metadata"], "namespace"), n = jr::String(o["metadata"], "name");
      store_.Remove(key, ns, n, std::move(o));
    }
    store_.EndWatches(key, WatchChannel::End::kClean);
    registry_.RemoveCustom(name);
    pending_crds_.erase(name);
    return;
  }
  auto infos = ResourcesFromCrd(obj);
  bool established = false;
  for (const auto& c : obj.value("status", json::object()).value("conditions", json::array())) {
    if (jr::String(c, "type") == "Established" && jr::String(c, "status") == "True") established = true;
  }
  for (auto& i : infos) i.served = established;
  registry_.SetCustom(name, std::move(infos));
}

ApiServer::Committed ApiServer::CommitUpdate(const ResourceInfo& r, json obj) {
  const json& md = obj["metadata"];
  std::string ns = jr::String(md, "namespace"), name = jr::String(md, "name");
  if (Terminating(obj) && Finalizers(obj).empty() && GracePeriod(obj) == 0 && !IsCore(r, "namespaces")) {
    json last = store_.Remove(r.StorageKey(), ns, name, std::move(obj));
    AfterStoredChange(r, last, true);
    return {last, true};
  }
  const json& stored = store_.Update(r.StorageKey(), std::move(obj));
  AfterStoredChange(r, stored, false);
  return {stored, false};
}

ApiResponse ApiServer::Create(const Target& t, const ApiRequest& req) {
  auto body = ParseObjectBody(req.content_type, req.body, Expected(*t.resource));
  if (!body.ok()) return Reply(std::move(body.reply()));
  json obj = std::move(body.value());
  json& md = Meta(obj);
  if (!jr::String(md, "resourceVersion").empty()) {
    return Reply(InternalError("resourceVersion should not be set on objects to be created"));
  }
  return StoreCreate(t, std::move(obj), req, Manager(req), "Update");
}

ApiResponse ApiServer::StoreCreate(const Target& target, json obj, const ApiRequest& req, const std::string& manager,
                                   const std::string& operation) {
  const ResourceInfo& r = *target.resource;
  json& md = Meta(obj);
  Target t = target;
  t.name = jr::String(md, "name");
  if (t.name.empty() && !jr::String(md, "generateName").empty()) {
    for (int i = 0; i < 16; ++i) {
      t.name = jr::String(md, "generateName") + RandomSuffix();
      if (!store_.Get(r.StorageKey(), t.ns, t.name)) break;
    }
    md["name"] = t.name;
  }
  if (r.custom && r.status_subresource) obj.erase("status");
  std::vector<std::string> warnings;
  auto admitted = Admit(t, std::move(obj), nullptr, req, &warnings);
  if (!admitted.ok()) return Reply(std::move(admitted.reply()));
  obj = std::move(admitted.value());
  auto causes = ValidateType(r, obj, nullptr);
  if (!causes.empty()) return Reply(Invalid(r.Name(t.name), causes));
  if (r.namespaced) {
    const json* ns = store_.Get("/namespaces", "", t.ns);
    if (!ns) return Reply(NotFound({"", "namespaces", "Namespace", t.ns}));
    if (Terminating(*ns)) {
      return Reply(MakeStatus(403, "Forbidden",
                              r.Name(t.name).Qualified() + " \"" + t.name +
                                  "\" is forbidden: unable to create new content in namespace " + t.ns +
                                  " because it is being terminated",
                              {{"name", t.name}, {"kind", r.plural},
                               {"causes", json::array({{{"reason", "NamespaceTerminating"},
                                                        {"message", "namespace " + t.ns + " is being terminated"},
                                                        {"field", "metadata.namespace"}}})}}));
    }
  }
  if (store_.Get(r.StorageKey(), t.ns, t.name)) return Reply(AlreadyExists(r.Name(t.name)));
  if (IsCore(r, "pods") || (r.group == "apps" && r.plural == "deployments")) {
    if (auto refused = PodSecurityLocked(t, obj, &warnings)) return Reply(std::move(*refused));
  }
  json& m = obj["metadata"];
  m["uid"] = NewUid();
  m["creationTimestamp"] = NowText();
  m["generation"] = 1;
  for (const char* k : {"deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion", "selfLink"}) m.erase(k);
  if (operation != "Apply") {
    m.erase("managedFields");
    std::vector<ManagerEntry> entries;
    RecordUpdate(entries, nullptr, obj, {manager, operation, r.ApiVersion(), NowText(), "", {}});
    WriteManagedFields(obj, entries);
  }
  PrepareForCreate(r, obj);
  ApiResponse resp;
  if (QueryValue(req.query, "dryRun") == "All") {
    resp = Reply(201, Render(r, obj, false));
  } else {
    const json& stored = store_.Create(r.StorageKey(), std::move(obj));
    AfterStoredChange(r, stored, false);
    resp = Reply(201, Render(r, stored, false));
  }
  AddWarnings(resp, warnings);
  return resp;
}

// The status subresource's rules for a write (KUBE-API.md §4): a write to
// /status changes only status; a write to the object keeps the stored status.
void ApiServer::KeepStatusRules(const Target& t, const ResourceInfo& r, const json& old, json& obj) {
  if (t.subresource == "status") {
    json next = old;
    if (obj.contains("status")) {
      next["status"] = obj["status"];
    } else {
      next.erase("status");
    }
    obj = std::move(next);
  } else if (r.status_subresource) {
    if (old.contains("status")) {
      obj["status"] = old["status"];
    } else {
      obj.erase("status");
    }
  }
}

ApiResponse ApiServer::Update(const Target& t, const ApiRequest& req) {
  const ResourceInfo& r = *t.resource;
  auto body = ParseObjectBody(req.content_type, req.body, Expected(r));
  if (!body.ok()) return Reply(std::move(body.reply()));
  json obj = std::move(body.value());
  json& md = Meta(obj);
  std::string name = jr::String(md, "name");
  if (!name.empty() && name != t.name) {
    return Reply(BadRequest("the name of the object (" + name + ") does not match the name on the URL (" + t.name + ")"));
  }
  const json* cur = store_.Get(r.StorageKey(), t.ns, t.name);
  if (!cur) return Reply(NotFound(r.Name(t.name)));
  std::string rv = jr::String(md, "resourceVersion");
  if (rv.empty() && r.custom) {
    return Reply(Invalid(r.Name(t.name), {{"FieldValueInvalid", "Invalid value: 0x0: must be specified for an update",
                                           "metadata.resourceVersion"}}));
  }
  if (!rv.empty() && rv != jr::String((*cur)["metadata"], "resourceVersion")) return Reply(ConflictModified(r.Name(t.name)));
  json old = *cur;
  KeepStatusRules(t, r, old, obj);
  return StoreUpdate(t, std::move(obj), old, req, Manager(req), false);
}

ApiResponse ApiServer::StoreUpdate(const Target& t, json obj, const json& old, const ApiRequest& req,
                                   const std::string& manager, bool managed_fields_done) {
  const ResourceInfo& r = *t.resource;
  json& md = Meta(obj);
  const json& old_md = old["metadata"];
  for (const char* k : {"uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"}) {
    if (old_md.contains(k)) {
      md[k] = old_md[k];
    } else {
      md.erase(k);
    }
  }
  md["name"] = t.name;
  md["resourceVersion"] = old_md["resourceVersion"];
  if (!managed_fields_done) {
    if (old_md.contains("managedFields")) {
      md["managedFields"] = old_md["managedFields"];
    } else {
      md.erase("managedFields");
    }
  }
  std::vector<std::string> warnings;
  auto admitted = Admit(t, std::move(obj), &old, req, &warnings);
  if (!admitted.ok()) return Reply(std::move(admitted.reply()));
  obj = std::move(admitted.value());
  auto causes = ValidateType(r, obj, &old);
  if (!causes.empty()) return Reply(Invalid(r.Name(t.name), causes));
  if (!managed_fields_done) {
    auto entries = ReadManagedFields(old);
    RecordUpdate(entries, old, obj, {manager, "Update", r.ApiVersion(), NowText(), t.subresource, {}});
    WriteManagedFields(obj, entries);
  }
  ApiResponse resp;
  if (SameObject(obj, old)) {
    // Nothing changed: no new RV, no event.
    resp = Reply(200, Render(r, old, false));
  } else {
    if (ContentChanged(r, obj, old)) obj["metadata"]["generation"] = old_md.value("generation", 1) + 1;
    if (QueryValue(req.query, "dryRun") == "All") {
      resp = Reply(200, Render(r, obj, false));
    } else {
      Committed c = CommitUpdate(r, std::move(obj));
      resp = Reply(200, Render(r, c.object, false));
    }
  }
  AddWarnings(resp, warnings);
  return resp;
}

ApiResponse ApiServer::Patch(const Target& t, const ApiRequest& req) {
  const ResourceInfo& r = *t.resource;
  const std::string media = MediaType(req.content_type);
  const json* cur = store_.Get(r.StorageKey(), t.ns, t.name);
  if (media == "application/apply-patch+yaml") return Apply(t, req, cur);
  if (!QueryValue(req.query, "force").empty()) {
    return Reply(Invalid({"meta.k8s.io", "patchoptions", "PatchOptions", ""},
                         {FieldForbidden("force", "may not be specified for non-apply patch")}));
  }
  const bool merge = media == "application/merge-patch+json";
  const bool strategic = media == "application/strategic-merge-patch+json";
  const bool json_patch = media == "application/json-patch+json";
  if (!merge && !strategic && !json_patch) return Reply(UnsupportedMediaType(media));
  if (strategic && r.custom) return Reply(UnsupportedMediaType(media));
  if (!cur) return Reply(NotFound(r.Name(t.name)));
  auto patch = json::parse(req.body, nullptr, false);
  if (patch.is_discarded()) return Reply(BadRequest("error decoding patch: invalid JSON"));
  json patched = *cur;
  if (json_patch) {
    if (!patch.is_array()) return Reply(BadRequest("json: cannot unmarshal object into Go value of type jsonpatch.Patch"));
    try {
      patched = cur->patch(patch);
    } catch (const json::parse_error& e) {
      return Reply(BadRequest(std::string("the JSON patch is malformed: ") + e.what()));
    } catch (const json::exception& e) {
      return Reply(MakeStatus(422, "Invalid", std::string("the JSON patch cannot be applied: ") + e.what()));
    }
  } else {
    if (!patch.is_object()) return Reply(BadRequest("error decoding patch: the patch must be a JSON object"));
    // Strategic merge on built-in types is served as a JSON merge patch: the
    // list merge keys of built-in types are not modelled here.
    patched.merge_patch(patch);
  }
  if (!patched.is_object() || !patched.contains("metadata") || !patched["metadata"].is_object()) {
    return Reply(MakeStatus(422, "Invalid", "the patch removed the object's metadata"));
  }
  std::string rv = jr::String(patched["metadata"], "resourceVersion");
  if (!rv.empty() && rv != jr::String((*cur)["metadata"], "resourceVersion")) return Reply(ConflictModified(r.Name(t.name)));
  std::string name = jr::String(patched["metadata"], "name");
  if (name != t.name) {
    return Reply(Invalid(r.Name(t.name), {FieldInvalid("metadata.name", name, "field is immutable")}));
  }
  const json& old = *cur;
  KeepStatusRules(t, r, old, patched);
  json old_copy = old;
  return StoreUpdate(t, std::move(patched), old_copy, req, Manager(req), false);
}

ApiResponse ApiServer::Apply(const Target& t, const ApiRequest& req, const json* cur) {
  const ResourceInfo& r = *t.resource;
  const std::string manager = QueryValue(req.query, "fieldManager");
  if (manager.empty()) {
    return Reply(Invalid({"meta.k8s.io", "patchoptions", "PatchOptions", ""},
                         {FieldRequired("fieldManager", "is required for apply patch")}));
  }
  auto parsed = YamlToJson(req.body);
  if (!parsed.ok() || !parsed->is_object()) {
    return Reply(BadRequest("error decoding YAML: " + (parsed.ok() ? std::string("not an object") : parsed.status().message())));
  }
  json config = std::move(*parsed);
  if (jr::String(config, "apiVersion") != r.ApiVersion() || jr::String(config, "kind") != r.kind) {
    return Reply(BadRequest("the apply configuration must have apiVersion " + r.ApiVersion() + " and kind " + r.kind));
  }
  json& cmd = Meta(config);
  if (!jr::String(cmd, "name").empty() && jr::String(cmd, "name") != t.name) {
    return Reply(BadRequest("the name of the object (" + jr::String(cmd, "name") + ") does not match the name on the URL (" +
                            t.name + ")"));
  }
  if (t.subresource == "status") {
    json only = {{"apiVersion", config["apiVersion"]}, {"kind", config["kind"]}, {"metadata", json::object()}};
    if (config.contains("status")) only["status"] = config["status"];
    config = std::move(only);
  } else if (r.status_subresource) {
    config.erase("status");
  }
  const bool force = QueryBool(req.query, "force");
  ManagerEntry who{manager, "Apply", r.ApiVersion(), NowText(), t.subresource, {}};
  if (!cur) {
    if (!t.subresource.empty()) return Reply(NotFound(r.Name(t.name)));
    json live = {{"apiVersion", r.ApiVersion()}, {"kind", r.kind}, {"metadata", {{"name", t.name}}}};
    if (r.namespaced) live["metadata"]["namespace"] = t.ns;
    std::vector<ManagerEntry> entries;
    ApplyConfig(live, config, who, true, entries);
    WriteManagedFields(live, entries);
    return StoreCreate(t, std::move(live), req, manager, "Apply");
  }
  std::string rv = jr::String(cmd, "resourceVersion");
  if (!rv.empty() && rv != jr::String((*cur)["metadata"], "resourceVersion")) return Reply(ConflictModified(r.Name(t.name)));
  json old = *cur;
  json live = old;
  auto entries = ReadManagedFields(old);
  auto conflicts = ApplyConfig(live, config, who, force, entries);
  if (!conflicts.empty()) return Reply(ApplyConflicts(r, t.name, conflicts));
  WriteManagedFields(live, entries);
  return StoreUpdate(t, std::move(live), old, req, manager, true);
}

ApiResponse ApiServer::Delete(const Target& t, const ApiRequest& req) {
  const ResourceInfo& r = *t.resource;
  auto body = ParseDeleteOptions(req.content_type, req.body);
  if (!body.ok()) return Reply(std::move(body.reply()));
  json options = std::move(body.value());
  if (!QueryValue(req.query, "propagationPolicy").empty()) {
    options["propagationPolicy"] = QueryValue(req.query, "propagationPolicy");
  }
  uint64_t grace = 0;
  if (ParseUint(QueryValue(req.query, "gracePeriodSeconds"), &grace)) options["gracePeriodSeconds"] = grace;
  if (QueryValue(req.query, "dryRun") == "All") options["dryRun"] = {"All"};
  std::string policy = jr::String(options, "propagationPolicy");
  if (!policy.empty() && policy != "Background" && policy != "Foreground" && policy != "Orphan") {
    return Reply(Invalid({"meta.k8s.io", "deleteoptions", "DeleteOptions", ""},
                         {FieldNotSupported("propagationPolicy", policy, {"Background", "Foreground", "Orphan"})}));
  }
  auto result = DeleteObject(r, t.ns, t.name, options);
  if (!result.ok()) return Reply(std::move(result.reply()));
  const Committed& c = result.value();
  if (c.removed && r.custom) {
    json details = {{"name", t.name}, {"kind", r.plural}, {"uid", jr::String(c.object["metadata"], "uid")}};
    if (!r.group.empty()) details["group"] = r.group;
    return Reply(200, {{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object()},
                       {"status", "Success"}, {"details", details}});
  }
  return Reply(200, Render(r, c.object, false));
}

ApiResponse ApiServer::DeleteCollection(const Target& t, const ApiRequest& req) {
  const ResourceInfo& r = *t.resource;
  auto labels = LabelSelector::Parse(QueryValue(req.query, "labelSelector"));
  if (!labels.ok()) return Reply(BadRequest(labels.status().message()));
  auto fields = FieldSelector::Parse(QueryValue(req.query, "fieldSelector"), r.AllowedFieldSelectors());
  if (!fields.ok()) return Reply(BadRequest(fields.status().message()));
  auto body = ParseDeleteOptions(req.content_type, req.body);
  if (!body.ok()) return Reply(std::move(body.reply()));
  json options = std::move(body.value());
  if (!QueryValue(req.query, "propagationPolicy").empty()) {
    options["propagationPolicy"] = QueryValue(req.query, "propagationPolicy");
  }
  std::vector<std::pair<std::string, std::string>> names;
  for (const json* o : store_.List(r.StorageKey(), t.ns)) {
    if (labels->Matches((*o)["metadata"].value("labels", json::object())) && fields->Matches(*o)) {
      names.emplace_back(jr::String((*o)["metadata"], "namespace"), jr::String((*o)["metadata"], "name"));
    }
  }
  json list = {{"kind", r.list_kind}, {"apiVersion", r.ApiVersion()},
               {"metadata", json::object()}, {"items", json::array()}};
  for (const auto& [ns, name] : names) {
    auto result = DeleteObject(r, ns, name, options);
    if (result.ok()) list["items"].push_back(Render(r, result.value().object, true));
  }
  list["metadata"]["resourceVersion"] = std::to_string(store_.current_rv());
  return Reply(200, list);
}

Outcome<ApiServer::Committed> ApiServer::DeleteObject(const ResourceInfo& r, const std::string& ns,
                                                      const std::string& name, const json& options) {
  const json* cur = store_.Get(r.StorageKey(), ns, name);
  if (!cur) return NotFound(r.Name(name));
  json obj = *cur;
  json& md = obj["metadata"];
  const json& pre = options.value("preconditions", json::object());
  if (!jr::String(pre, "uid").empty() && jr::String(pre, "uid") != jr::String(md, "uid")) {
    return Conflict(r.Name(name), "Precondition failed: UID in precondition: " + jr::String(pre, "uid") +
                                      ", UID in object meta: " + jr::String(md, "uid"));
  }
  if (!jr::String(pre, "resourceVersion").empty() && jr::String(pre, "resourceVersion") != jr::String(md, "resourceVersion")) {
    return Conflict(r.Name(name), "Precondition failed: ResourceVersion in precondition: " +
                                      jr::String(pre, "resourceVersion") + ", ResourceVersion in object meta: " +
                                      jr::String(md, "resourceVersion"));
  }
  const bool dry = options.contains("dryRun");
  std::optional<int64_t> grace;
  if (options.contains("gracePeriodSeconds") && options["gracePeriodSeconds"].is_number_integer()) {
    grace = options["gracePeriodSeconds"].get<int64_t>();
  }
  const bool pod = IsCore(r, "pods");
  if (Terminating(obj)) {
    // Already being deleted: a repeated DELETE answers with the object; for
    // a pod, gracePeriodSeconds=0 forces the end of its grace period.
    if (pod && grace && *grace == 0 && !dry) {
      md["deletionGracePeriodSeconds"] = 0;
      return CommitUpdate(r, std::move(obj));
    }
    return Committed{obj, false};
  }
  std::string policy = jr::String(options, "propagationPolicy");
  if (policy.empty() && options.value("orphanDependents", false)) policy = "Orphan";
  auto fins = Finalizers(obj);
  auto add = [&](const char* f) {
    if (std::find(fins.begin(), fins.end(), f) == fins.end()) fins.push_back(f);
  };
  if (policy == "Foreground") add("foregroundDeletion");
  if (policy == "Orphan") add("orphan");
  int64_t pod_grace = 0;
  if (pod && !jr::String(obj.value("spec", json::object()), "nodeName").empty()) {
    pod_grace = grace ? *grace : obj["spec"].value("terminationGracePeriodSeconds", int64_t{30});
  }
  if (IsCore(r, "namespaces")) {
    if (name == "default" || name == "kube-system" || name == "kube-public") {
      return MakeStatus(403, "Forbidden", "namespaces \"" + name + "\" is forbidden: this namespace may not be deleted",
                        {{"name", name}, {"kind", "namespaces"}});
    }
    // The namespace controller (our GC pass) empties it, then removes it.
    md["deletionTimestamp"] = NowText();
    md["deletionGracePeriodSeconds"] = 0;
    obj["status"]["phase"] = "Terminating";
    if (dry) return Committed{obj, false};
    const json& stored = store_.Update(r.StorageKey(), std::move(obj));
    AfterStoredChange(r, stored, false);
    return Committed{stored, false};
  }
  if (!fins.empty() || pod_grace > 0) {
    md["deletionTimestamp"] = FormatTime(std::chrono::system_clock::now() + std::chrono::seconds(pod_grace));
    md["deletionGracePeriodSeconds"] = pod_grace;
    md["generation"] = md.value("generation", 1) + 1;
    SetFinalizers(obj, fins);
    if (dry) return Committed{obj, false};
    const json& stored = store_.Update(r.StorageKey(), std::move(obj));
    AfterStoredChange(r, stored, false);
    return Committed{stored, false};
  }
  if (dry) return Committed{obj, true};
  json last = store_.Remove(r.StorageKey(), ns, name, std::move(obj));
  AfterStoredChange(r, last, true);
  return Committed{last, true};
}

Status ApiServer::FinishPodTermination(const std::string& ns, const std::string& name) {
  MutexLock lock(mu_);
  const ResourceInfo* pods = registry_.Find("", "v1", "pods");
  const json* cur = store_.Get(pods->StorageKey(), ns, name);
  if (!cur) return Status::NotFound("pods \"" + name + "\" not found");
  if (!Terminating(*cur)) return Status::FailedPrecondition("pod " + ns + "/" + name + " is not terminating");
  json obj = *cur;
  obj["metadata"]["deletionGracePeriodSeconds"] = 0;
  CommitUpdate(*pods, std::move(obj));
  return Status::Ok();
}

void ApiServer::FinishDuePodsLocked() {
  const ResourceInfo* pods = registry_.Find("", "v1", "pods");
  auto now = std::chrono::system_clock::now();
  std::vector<json> due;
  for (const json* p : store_.List(pods->StorageKey(), "")) {
    if (!Terminating(*p) || GracePeriod(*p) == 0) continue;
    auto at = ParseTime(jr::String((*p)["metadata"], "deletionTimestamp"));
    if (at && *at <= now) due.push_back(*p);
  }
  for (auto& p : due) {
    p["metadata"]["deletionGracePeriodSeconds"] = 0;
    CommitUpdate(*pods, std::move(p));
  }
}

void ApiServer::EstablishDueCrdsLocked() {
  auto now = std::chrono::steady_clock::now();
  const ResourceInfo* crds = registry_.Find(kCrdGroup, "v1", "customresourcedefinitions");
  for (auto it = pending_crds_.begin(); it != pending_crds_.end();) {
    if (it->second > now) {
      ++it;
      continue;
    }
    const json* cur = store_.Get(crds->StorageKey(), "", it->first);
    std::string name = it->first;
    it = pending_crds_.erase(it);
    if (!cur) continue;
    json obj = *cur;
    for (auto& c : obj["status"]["conditions"]) {
      if (jr::String(c, "type") == "Established") {
        c["status"] = "True";
        c["reason"] = "InitialNamesAccepted";
        c["lastTransitionTime"] = NowText();
      }
    }
    CommitUpdate(*crds, std::move(obj));
  }
}

void ApiServer::GarbageCollectLocked() {
  struct Item {
    std::string key;
    json obj;
  };
  auto uid_of = [](const json& o) { return jr::String(o["metadata"], "uid"); };
  auto delete_item = [this](const Item& it, const char* policy) REQUIRES(mu_) {
    const ResourceInfo* r = ByStorageKey(it.key);
    if (!r) return;
    json options = {{"propagationPolicy", policy}};
    (void)DeleteObject(*r, jr::String(it.obj["metadata"], "namespace"), jr::String(it.obj["metadata"], "name"), options);
  };
  auto update_item = [this](const Item& it, json next) REQUIRES(mu_) {
    const ResourceInfo* r = ByStorageKey(it.key);
    if (!r || SameObject(next, it.obj)) return;
    CommitUpdate(*r, std::move(next));
  };
  // Each pass acts on a snapshot; repeat while something changed, bounded.
  for (int round = 0; round < 32; ++round) {
    uint64_t before = store_.current_rv();
    std::vector<Item> all;
    std::map<std::string, size_t> by_uid;
    store_.ForEach([&](const std::string& key, const json& o) {
      by_uid[uid_of(o)] = all.size();
      all.push_back({key, o});
    });
    auto dependents_of = [&](const std::string& uid) {
      std::vector<const Item*> out;
      for (const auto& it : all) {
        for (const auto& ref : it.obj["metadata"].value("ownerReferences", json::array())) {
          if (jr::String(ref, "uid") == uid) out.push_back(&it);
        }
      }
      return out;
    };
    for (const auto& it : all) {
      const json& md = it.obj["metadata"];
      if (it.key == "/namespaces" && Terminating(it.obj)) {
        std::string ns = jr::String(md, "name");
        bool empty = true;
        for (const auto& other : all) {
          if (other.key != "/namespaces" && jr::String(other.obj["metadata"], "namespace") == ns) {
            empty = false;
            if (!Terminating(other.obj)) delete_item(other, "Background");
          }
        }
        if (empty) store_.Remove("/namespaces", "", ns, it.obj);
        continue;
      }
      if (!Terminating(it.obj)) continue;
      auto fins = Finalizers(it.obj);
      const std::string uid = uid_of(it.obj);
      if (std::find(fins.begin(), fins.end(), "orphan") != fins.end()) {
        for (const Item* dep : dependents_of(uid)) {
          json next = dep->obj;
          json refs = json::array();
          for (const auto& ref : next["metadata"]["ownerReferences"]) {
            if (jr::String(ref, "uid") != uid) refs.push_back(ref);
          }
          if (refs.empty()) {
            next["metadata"].erase("ownerReferences");
          } else {
            next["metadata"]["ownerReferences"] = refs;
          }
          update_item(*dep, std::move(next));
        }
        fins.erase(std::find(fins.begin(), fins.end(), "orphan"));
        json next = it.obj;
        SetFinalizers(next, fins);
        update_item(it, std::move(next));
        continue;
      }
      if (std::find(fins.begin(), fins.end(), "foregroundDeletion") != fins.end()) {
        bool blocked = false;
        for (const Item* dep : dependents_of(uid)) {
          for (const auto& ref : dep->obj["metadata"]["ownerReferences"]) {
            if (jr::String(ref, "uid") == uid && ref.value("blockOwnerDeletion", false)) blocked = true;
          }
          if (!Terminating(dep->obj)) {
            delete_item(*dep, dependents_of(uid_of(dep->obj)).empty() ? "Background" : "Foreground");
          }
        }
        if (!blocked) {
          fins.erase(std::find(fins.begin(), fins.end(), "foregroundDeletion"));
          json next = it.obj;
          SetFinalizers(next, fins);
          update_item(it, std::move(next));
        }
      }
    }
    // Owners' finalizers first: decide about dangling references only on a
    // snapshot taken after them (an orphaned dependent has lost its ref).
    if (store_.current_rv() != before) continue;
    // Dependents whose owners are gone: delete them, or drop dangling refs.
    for (const auto& it : all) {
      const json& refs = it.obj["metadata"].value("ownerReferences", json::array());
      if (refs.empty()) continue;
      const json* now = store_.Get(it.key, jr::String(it.obj["metadata"], "namespace"), jr::String(it.obj["metadata"], "name"));
      if (!now) continue;
      json alive = json::array();
      for (const auto& ref : refs) {
        auto o = by_uid.find(jr::String(ref, "uid"));
        bool exists = false;
        if (o != by_uid.end()) {
          const Item& owner = all[o->second];
          std::string owner_ns = jr::String(owner.obj["metadata"], "namespace");
          exists = (owner_ns.empty() || owner_ns == jr::String(it.obj["metadata"], "namespace")) &&
                   store_.Get(owner.key, owner_ns, jr::String(owner.obj["metadata"], "name")) != nullptr;
        }
        if (exists) alive.push_back(ref);
      }
      if (alive.size() == refs.size()) continue;
      if (alive.empty()) {
        if (!Terminating(*now)) delete_item({it.key, *now}, "Background");
      } else {
        json next = *now;
        next["metadata"]["ownerReferences"] = alive;
        update_item({it.key, *now}, std::move(next));
      }
    }
    if (store_.current_rv() == before) break;
  }
}

}  // namespace fairbench::apiserver
