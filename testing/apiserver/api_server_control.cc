// The parts of a cluster's control plane beside the API proper that the
// chart's objects need to come alive on the test kubelets:
//
// - TokenRequest (POST serviceaccounts/NAME/token): a token for the service
//   account, bound to a pod, that this server then authenticates as
//   system:serviceaccount:NS:NAME (groups system:serviceaccounts and
//   system:serviceaccounts:NS) until it expires or the account or the pod
//   is gone. The token is opaque here (a real server signs a JWT).
// - Pod Security admission on pod creation (pod_security.h): enforce →
//   403 `pods "p" is forbidden: violates PodSecurity "restricted:latest": …`;
//   warn → a Warning header `would violate PodSecurity …`, for pods and for
//   the pod templates of Deployments. The audit label is not written to the
//   audit log.
// - With ApiServerOptions::workload_controllers: a Deployment controller
//   (its pods created through the same admission as a client's, named
//   <deployment>-<template hash>-<suffix>, owned by the Deployment — there
//   is no ReplicaSet in between —, surplus pods deleted, status replicas,
//   readyReplicas, availableReplicas and the Available condition; a template
//   change does not roll the pods) and a scheduler (a pod without
//   spec.nodeName is bound to a Ready, schedulable node its nodeSelector,
//   required node affinity and tolerations allow, spreading pods of one
//   owner over nodes, then the least loaded; else PodScheduled=False,
//   Unschedulable, with a FailedScheduling Event).
#include <algorithm>
#include <functional>
#include <random>
#include <sstream>

#include "testing/apiserver/api_server.h"
#include "testing/apiserver/pod_security.h"
#include "testing/apiserver/request_util.h"
#include "testing/apiserver/time_text.h"
#include "testing/apiserver/yaml_json.h"
#include "controller/kube/json_read.h"

namespace fairbench::apiserver {

using json = nlohmann::json;

namespace {

namespace jr = ::fairbench::kube::json_read;

bool Terminating(const json& obj) { return obj["metadata"].contains("deletionTimestamp"); }

std::string RandomToken() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* digits = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string s = "fbsa.";
  for (int i = 0; i < 43; ++i) s.push_back(digits[rng() % 36]);
  return s;
}

bool PodReady(const json& pod) {
  for (const json& c : pod.value("status", json::object()).value("conditions", json::array())) {
    if (jr::String(c, "type") == "Ready") return jr::String(c, "status") == "True";
  }
  return false;
}

bool Owns(const json& obj, const std::string& uid) {
  for (const json& ref : obj["metadata"].value("ownerReferences", json::array())) {
    if (jr::String(ref, "uid") == uid) return true;
  }
  return false;
}

std::string OwnerUid(const json& obj) {
  for (const json& ref : obj["metadata"].value("ownerReferences", json::array())) {
    if (ref.value("controller", false)) return jr::String(ref, "uid");
  }
  return "";
}

// The pod-template-hash label: a stable short hash of the template.
std::string TemplateHash(const json& pod_template) {
  const std::string text = pod_template.dump();
  uint32_t h = 2166136261u;  // FNV-1a, as the controller's hash is (over a different encoding)
  for (unsigned char c : text) h = (h ^ c) * 16777619u;
  static const char* alphabet = "bcdfghjklmnpqrstvwxz2456789";  // rand.SafeEncodeString's
  std::string s;
  for (int i = 0; i < 10; ++i) {
    s.push_back(alphabet[h % 27]);
    h = h / 27 + (h % 7) * 1000003u;
  }
  return s;
}

// A node selector term's expression against a node's labels.
bool ExpressionMatches(const json& expr, const json& labels) {
  const std::string key = jr::String(expr, "key");
  const std::string op = jr::String(expr, "operator");
  const bool has = labels.contains(key) && labels[key].is_string();
  const std::string value = has ? labels[key].get<std::string>() : "";
  std::vector<std::string> values;
  for (const json& v : expr.value("values", json::array())) {
    if (v.is_string()) values.push_back(v.get<std::string>());
  }
  const bool in = std::find(values.begin(), values.end(), value) != values.end();
  if (op == "In") return has && in;
  if (op == "NotIn") return !has || !in;
  if (op == "Exists") return has;
  if (op == "DoesNotExist") return !has;
  if ((op == "Gt" || op == "Lt") && has && values.size() == 1) {
    try {
      const long long a = std::stoll(value), b = std::stoll(values[0]);
      return op == "Gt" ? a > b : a < b;
    } catch (const std::exception&) {
      return false;
    }
  }
  return false;
}

// Why `node` cannot take `pod` ("" = it can), in the scheduler's words.
std::string NodeMisfit(const json& pod_spec, const json& node) {
  const json labels = node["metadata"].value("labels", json::object());
  const json nspec = node.value("spec", json::object());
  if (nspec.value("unschedulable", false)) return "node(s) were unschedulable";
  bool ready = false;
  for (const json& c : node.value("status", json::object()).value("conditions", json::array())) {
    if (jr::String(c, "type") == "Ready") ready = jr::String(c, "status") == "True";
  }
  if (!ready) return "node(s) were not ready";
  for (const auto& [k, v] : pod_spec.value("nodeSelector", json::object()).items()) {
    if (!labels.contains(k) || labels[k] != v) return "node(s) didn't match Pod's node affinity/selector";
  }
  const json required = pod_spec.value("affinity", json::object())
                            .value("nodeAffinity", json::object())
                            .value("requiredDuringSchedulingIgnoredDuringExecution", json::object());
  if (required.contains("nodeSelectorTerms")) {
    bool any = false;
    for (const json& term : required["nodeSelectorTerms"]) {
      bool all = true;
      for (const json& e : term.value("matchExpressions", json::array())) all &= ExpressionMatches(e, labels);
      for (const json& f : term.value("matchFields", json::array())) {
        all &= ExpressionMatches(f, json{{"metadata.name", jr::String(node["metadata"], "name")}});
      }
      any |= all;
    }
    if (!any) return "node(s) didn't match Pod's node affinity/selector";
  }
  for (const json& taint : nspec.value("taints", json::array())) {
    const std::string effect = jr::String(taint, "effect");
    if (effect != "NoSchedule" && effect != "NoExecute") continue;
    bool tolerated = false;
    for (const json& t : pod_spec.value("tolerations", json::array())) {
      const std::string op = jr::String(t, "operator").empty() ? "Equal" : jr::String(t, "operator");
      if (!jr::String(t, "effect").empty() && jr::String(t, "effect") != effect) continue;
      if (jr::String(t, "key").empty() && op == "Exists") tolerated = true;
      if (jr::String(t, "key") != jr::String(taint, "key")) continue;
      if (op == "Exists" || jr::String(t, "value") == jr::String(taint, "value")) tolerated = true;
    }
    if (!tolerated) {
      return "node(s) had untolerated taint {" + jr::String(taint, "key") +
             (jr::String(taint, "value").empty() ? "" : ": " + jr::String(taint, "value")) + "}";
    }
  }
  return "";
}

}  // namespace

std::optional<std::pair<std::string, std::vector<std::string>>> ApiServer::AuthenticateIssuedToken(
    const std::string& token) {
  MutexLock lock(mu_);
  auto it = issued_tokens_.find(token);
  if (it == issued_tokens_.end()) return std::nullopt;
  const IssuedToken& t = it->second;
  if (std::chrono::system_clock::now() >= t.expires) return std::nullopt;
  const json* sa = store_.Get("/serviceaccounts", t.ns, t.service_account);
  if (sa == nullptr || jr::String((*sa)["metadata"], "uid") != t.service_account_uid) return std::nullopt;
  if (!t.pod.empty()) {
    const json* pod = store_.Get("/pods", t.ns, t.pod);
    if (pod == nullptr || jr::String((*pod)["metadata"], "uid") != t.pod_uid) return std::nullopt;
  }
  return std::make_pair("system:serviceaccount:" + t.ns + ":" + t.service_account,
                        std::vector<std::string>{"system:serviceaccounts", "system:serviceaccounts:" + t.ns});
}

ApiResponse ApiServer::TokenRequest(const Target& t, const ApiRequest& req) {
  if (req.method != "POST") {
    return Reply(MethodNotAllowed("the server does not allow this method on the requested resource"));
  }
  const json* sa = store_.Get("/serviceaccounts", t.ns, t.name);
  if (sa == nullptr) return Reply(NotFound({"", "serviceaccounts", "ServiceAccount", t.name}));
  auto body = ParseObjectBody(req.content_type, req.body, {"authentication.k8s.io", "v1", "TokenRequest", false});
  if (!body.ok()) return Reply(std::move(body.reply()));
  json spec = body.value().value("spec", json::object());
  if (!spec.is_object()) spec = json::object();
  // Typed clients write unset pointers (expirationSeconds, boundObjectRef)
  // as null.
  for (auto it = spec.begin(); it != spec.end();) it = it->is_null() ? spec.erase(it) : std::next(it);
  int64_t seconds = spec.value("expirationSeconds", int64_t{3600});
  if (seconds < 600) {
    return Reply(Invalid({"authentication.k8s.io", "token", "TokenRequest", t.name},
                         {FieldInvalid("spec.expirationSeconds", seconds, "may not specify a duration less than 10 minutes")}));
  }
  IssuedToken issued;
  issued.ns = t.ns;
  issued.service_account = t.name;
  issued.service_account_uid = jr::String((*sa)["metadata"], "uid");
  const json bound = spec.value("boundObjectRef", json::object());
  if (!bound.empty()) {
    if (jr::String(bound, "kind") != "Pod") {
      return Reply(BadRequest("cannot bind token to object of kind \"" + jr::String(bound, "kind") + "\" (only Pod here)"));
    }
    const json* pod = store_.Get("/pods", t.ns, jr::String(bound, "name"));
    if (pod == nullptr) return Reply(NotFound({"", "pods", "Pod", jr::String(bound, "name")}));
    const std::string uid = jr::String((*pod)["metadata"], "uid");
    if (!jr::String(bound, "uid").empty() && jr::String(bound, "uid") != uid) {
      return Reply(Conflict({"", "pods", "Pod", jr::String(bound, "name")},
                            "the UID in the bound object reference (" + jr::String(bound, "uid") +
                                ") does not match the UID in record. The object might have been deleted and then recreated"));
    }
    issued.pod = jr::String(bound, "name");
    issued.pod_uid = uid;
  }
  issued.expires = std::chrono::system_clock::now() + std::chrono::seconds(seconds);
  const std::string token = RandomToken();
  issued_tokens_[token] = issued;
  if (!spec.contains("audiences") || spec["audiences"].empty()) {
    spec["audiences"] = json::array({"https://kubernetes.default.svc.cluster.local"});
  }
  spec["expirationSeconds"] = seconds;
  json out = {{"kind", "TokenRequest"},
              {"apiVersion", "authentication.k8s.io/v1"},
              {"metadata", {{"name", t.name}, {"namespace", t.ns}, {"creationTimestamp", nullptr}}},
              {"spec", spec},
              {"status", {{"token", token}, {"expirationTimestamp", FormatTime(issued.expires)}}}};
  return Reply(201, out);
}

std::optional<StatusReply> ApiServer::PodSecurityLocked(const Target& t, const json& obj,
                                                        std::vector<std::string>* warnings) {
  const json* ns = store_.Get("/namespaces", "", t.ns);
  if (ns == nullptr) return std::nullopt;
  const PodSecurityPolicy policy = PodSecurityPolicyFromLabels((*ns)["metadata"].value("labels", json::object()));
  const bool pod = t.resource->group.empty() && t.resource->plural == "pods";
  const json spec = pod ? obj.value("spec", json::object())
                        : obj.value("spec", json::object()).value("template", json::object()).value("spec", json::object());
  if (pod) {
    auto violations = CheckPodSecurity(policy.enforce.level, spec);
    if (!violations.empty()) {
      const std::string name = jr::String(obj["metadata"], "name");
      return MakeStatus(403, "Forbidden",
                        "pods \"" + name + "\" is forbidden: violates PodSecurity \"" + policy.enforce.ToString() +
                            "\": " + ForbiddenDetail(violations),
                        {{"name", name}, {"kind", "pods"}});
    }
  }
  auto warned = CheckPodSecurity(policy.warn.level, spec);
  if (!warned.empty()) {
    warnings->push_back("would violate PodSecurity \"" + policy.warn.ToString() + "\": " + ForbiddenDetail(warned));
  }
  return std::nullopt;
}

void ApiServer::RecordEventLocked(const json& object, bool warning, const std::string& reason,
                                  const std::string& message, const std::string& component) {
  const ResourceInfo* events = registry_.Find("", "v1", "events");
  if (events == nullptr) return;
  const json& md = object["metadata"];
  const std::string ns = jr::String(md, "namespace").empty() ? "default" : jr::String(md, "namespace");
  const std::string now = NowText();
  std::ostringstream name;
  name << jr::String(md, "name") << "." << std::hex
       << std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  json e = {{"apiVersion", "v1"},
            {"kind", "Event"},
            {"metadata", {{"name", name.str()}, {"namespace", ns}, {"uid", NewUid()}, {"creationTimestamp", now}}},
            {"involvedObject",
             {{"apiVersion", jr::String(object, "apiVersion")},
              {"kind", jr::String(object, "kind")},
              {"name", jr::String(md, "name")},
              {"namespace", ns},
              {"uid", jr::String(md, "uid")},
              {"resourceVersion", jr::String(md, "resourceVersion")}}},
            {"reason", reason},
            {"message", message},
            {"type", warning ? "Warning" : "Normal"},
            {"source", {{"component", component}}},
            {"firstTimestamp", now},
            {"lastTimestamp", now},
            {"count", 1},
            {"reportingComponent", component},
            {"reportingInstance", ""}};
  const json& stored = store_.Create(events->StorageKey(), std::move(e));
  AfterStoredChange(*events, stored, false);
}

void ApiServer::ReconcileDeploymentsLocked() {
  const ResourceInfo* deployments = registry_.Find("apps", "v1", "deployments");
  const ResourceInfo* pods = registry_.Find("", "v1", "pods");
  if (deployments == nullptr || pods == nullptr) return;
  std::vector<json> all_deployments;
  std::vector<json> all_pods;
  store_.ForEach([&](const std::string& key, const json& o) {
    if (key == deployments->StorageKey()) all_deployments.push_back(o);
    if (key == pods->StorageKey()) all_pods.push_back(o);
  });
  const auto now = std::chrono::steady_clock::now();
  for (const json& d : all_deployments) {
    if (Terminating(d)) continue;
    const json& md = d["metadata"];
    const std::string uid = jr::String(md, "uid");
    const std::string ns = jr::String(md, "namespace");
    const json spec = d.value("spec", json::object());
    const int64_t replicas = spec.value("replicas", int64_t{1});
    const json pod_template = spec.value("template", json::object());
    std::vector<json> active;
    for (const json& p : all_pods) {
      if (jr::String(p["metadata"], "namespace") != ns || !Owns(p, uid) || Terminating(p)) continue;
      const std::string phase = jr::String(p.value("status", json::object()), "phase");
      if (phase == "Succeeded" || phase == "Failed") continue;
      active.push_back(p);
    }
    if (static_cast<int64_t>(active.size()) < replicas && now >= deployment_retry_[uid]) {
      const std::string hash = TemplateHash(pod_template);
      for (int64_t i = static_cast<int64_t>(active.size()); i < replicas; ++i) {
        json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}};
        json pmd = pod_template.value("metadata", json::object());
        pmd["labels"]["pod-template-hash"] = hash;
        pmd["generateName"] = jr::String(md, "name") + "-" + hash + "-";
        pmd["namespace"] = ns;
        pmd["ownerReferences"] = json::array({{{"apiVersion", "apps/v1"},
                                               {"kind", "Deployment"},
                                               {"name", jr::String(md, "name")},
                                               {"uid", uid},
                                               {"controller", true},
                                               {"blockOwnerDeletion", true}}});
        pod["metadata"] = pmd;
        pod["spec"] = pod_template.value("spec", json::object());
        ApiRequest internal;
        internal.method = "POST";
        internal.user = "system:serviceaccount:kube-system:replicaset-controller";
        internal.groups = {"system:serviceaccounts", "system:serviceaccounts:kube-system"};
        Target pt{pods, ns, "", ""};
        ApiResponse created = StoreCreate(pt, std::move(pod), internal, "kube-controller-manager", "Update");
        if (created.code != 201) {
          const json status = json::parse(created.body, nullptr, false);
          const std::string why = status.is_discarded() ? created.body : jr::String(status, "message");
          RecordEventLocked(d, true, "FailedCreate", "Error creating: " + why, "replicaset-controller");
          deployment_retry_[uid] = now + std::chrono::seconds(5);
          break;
        }
        const json made = json::parse(created.body, nullptr, false);
        RecordEventLocked(d, false, "SuccessfulCreate",
                          "Created pod: " + (made.is_discarded() ? std::string() : jr::String(made["metadata"], "name")),
                          "replicaset-controller");
        active.push_back(made);
      }
    } else if (static_cast<int64_t>(active.size()) > replicas) {
      std::sort(active.begin(), active.end(), [](const json& a, const json& b) {
        return jr::String(a["metadata"], "creationTimestamp") > jr::String(b["metadata"], "creationTimestamp");
      });
      for (size_t i = 0; i < active.size() - static_cast<size_t>(std::max<int64_t>(replicas, 0)); ++i) {
        (void)DeleteObject(*pods, ns, jr::String(active[i]["metadata"], "name"), json::object());
      }
      active.resize(static_cast<size_t>(std::max<int64_t>(replicas, 0)));
    }
    int64_t ready = 0;
    for (const json& p : active) ready += PodReady(p) ? 1 : 0;
    json status = {{"observedGeneration", md.value("generation", int64_t{1})},
                   {"replicas", static_cast<int64_t>(active.size())},
                   {"updatedReplicas", static_cast<int64_t>(active.size())},
                   {"readyReplicas", ready},
                   {"availableReplicas", ready}};
    if (static_cast<int64_t>(active.size()) > ready) status["unavailableReplicas"] = static_cast<int64_t>(active.size()) - ready;
    const bool available = ready >= std::min<int64_t>(replicas, 1);
    json old_status = d.value("status", json::object());
    std::string since = NowText();
    for (const json& c : old_status.value("conditions", json::array())) {
      if (jr::String(c, "type") == "Available" && jr::String(c, "status") == (available ? "True" : "False")) {
        since = jr::String(c, "lastTransitionTime");
      }
    }
    status["conditions"] = json::array(
        {{{"type", "Available"},
          {"status", available ? "True" : "False"},
          {"reason", available ? "MinimumReplicasAvailable" : "MinimumReplicasUnavailable"},
          {"message", available ? "Deployment has minimum availability." : "Deployment does not have minimum availability."},
          {"lastUpdateTime", since},
          {"lastTransitionTime", since}}});
    if (status != old_status) {
      json next = d;
      next["status"] = status;
      CommitUpdate(*deployments, std::move(next));
    }
  }
  // Forget what no Deployment needs any more.
  for (auto it = deployment_retry_.begin(); it != deployment_retry_.end();) {
    bool live = false;
    for (const json& d : all_deployments) live |= jr::String(d["metadata"], "uid") == it->first;
    it = live ? std::next(it) : deployment_retry_.erase(it);
  }
}

void ApiServer::SchedulePodsLocked() {
  const ResourceInfo* pods = registry_.Find("", "v1", "pods");
  const ResourceInfo* nodes = registry_.Find("", "v1", "nodes");
  if (pods == nullptr || nodes == nullptr) return;
  std::vector<json> all_pods;
  std::vector<json> all_nodes;
  store_.ForEach([&](const std::string& key, const json& o) {
    if (key == pods->StorageKey()) all_pods.push_back(o);
    if (key == nodes->StorageKey()) all_nodes.push_back(o);
  });
  std::sort(all_nodes.begin(), all_nodes.end(),
            [](const json& a, const json& b) { return jr::String(a["metadata"], "name") < jr::String(b["metadata"], "name"); });
  for (json& pod : all_pods) {
    json& spec = pod["spec"];
    if (!jr::String(spec, "nodeName").empty() || Terminating(pod)) continue;
    if (!jr::String(spec, "schedulerName").empty() && jr::String(spec, "schedulerName") != "default-scheduler") continue;
    const std::string owner = OwnerUid(pod);
    std::string best;
    std::tuple<int, int, std::string> best_score;
    std::map<std::string, int> reasons;
    for (const json& node : all_nodes) {
      const std::string nname = jr::String(node["metadata"], "name");
      const std::string misfit = NodeMisfit(spec, node);
      if (!misfit.empty()) {
        reasons[misfit]++;
        continue;
      }
      int same_owner = 0, load = 0;
      for (const json& p : all_pods) {
        if (jr::String(p["spec"], "nodeName") != nname) continue;
        const std::string phase = jr::String(p.value("status", json::object()), "phase");
        if (phase == "Succeeded" || phase == "Failed") continue;
        load++;
        if (!owner.empty() && OwnerUid(p) == owner) same_owner++;
      }
      auto score = std::make_tuple(same_owner, load, nname);
      if (best.empty() || score < best_score) {
        best = nname;
        best_score = score;
      }
    }
    const std::string key = jr::String(pod["metadata"], "namespace") + "/" + jr::String(pod["metadata"], "name");
    json next = pod;
    json& conditions = next["status"]["conditions"];
    if (!conditions.is_array()) conditions = json::array();
    conditions.erase(std::remove_if(conditions.begin(), conditions.end(),
                                    [](const json& c) { return jr::String(c, "type") == "PodScheduled"; }),
                     conditions.end());
    if (!best.empty()) {
      next["spec"]["nodeName"] = best;
      conditions.push_back({{"type", "PodScheduled"}, {"status", "True"}, {"lastProbeTime", nullptr},
                            {"lastTransitionTime", NowText()}});
      const Committed c = CommitUpdate(*pods, std::move(next));
      RecordEventLocked(c.object, false, "Scheduled",
                        "Successfully assigned " + key + " to " + best, "default-scheduler");
      unschedulable_reported_.erase(key);
      // Later pods of this pass see this one where it went.
      for (json& p : all_pods) {
        if (jr::String(p["metadata"], "uid") == jr::String(pod["metadata"], "uid")) p["spec"]["nodeName"] = best;
      }
      continue;
    }
    if (unschedulable_reported_.count(key) != 0) continue;
    std::string message = std::to_string(all_nodes.size()) + " nodes are available";
    message = "0/" + std::to_string(all_nodes.size()) + " nodes are available";
    std::string parts;
    for (const auto& [why, n] : reasons) parts += (parts.empty() ? ": " : ", ") + std::to_string(n) + " " + why;
    message += parts + ".";
    conditions.push_back({{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"},
                          {"message", message}, {"lastProbeTime", nullptr}, {"lastTransitionTime", NowText()}});
    const Committed c = CommitUpdate(*pods, std::move(next));
    RecordEventLocked(c.object, true, "FailedScheduling", message, "default-scheduler");
    unschedulable_reported_.insert(key);
  }
}

}  // namespace fairbench::apiserver
