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
//
// Deployments and their pods, and scheduling, are kube-controller-manager's
// and kube-scheduler's, on Kubernetes' own control plane (scripts/kube),
// where every test of them runs.
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

std::string RandomToken() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* digits = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string s = "fbsa.";
  for (int i = 0; i < 43; ++i) s.push_back(digits[rng() % 36]);
  return s;
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

}  // namespace fairbench::apiserver
