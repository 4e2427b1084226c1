#include "testing/apiserver/authorization.h"
#include "controller/kube/json_read.h"

#include <string_view>
#include <utility>
#include <vector>

namespace fairbench::apiserver {

using nlohmann::json;

namespace {

namespace jr = ::fairbench::kube::json_read;

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

// responsewriters.forbiddenMessage.
std::string ForbiddenMessage(const RequestInfo& r, const std::string& user) {
  if (!r.resource_request) return "User " + Quoted(user) + " cannot " + r.verb + " path " + Quoted(r.path);
  const std::string resource = r.subresource.empty() ? r.resource : r.resource + "/" + r.subresource;
  const std::string head = "User " + Quoted(user) + " cannot " + r.verb + " resource " + Quoted(resource) +
                           " in API group " + Quoted(r.api_group);
  if (!r.ns.empty()) return head + " in the namespace " + Quoted(r.ns);
  return head + " at the cluster scope";
}

}  // namespace

std::optional<AuthorizationMode> ParseAuthorizationMode(const std::string& text) {
  if (text == "AlwaysAllow") return AuthorizationMode::kAlwaysAllow;
  if (text == "RBAC") return AuthorizationMode::kRbac;
  return std::nullopt;
}

Decision Authorize(AuthorizationMode mode, const ObjectStore& store, const UserInfo& user,
                   const RequestInfo& request) {
  if (user.InGroup("system:masters")) return {true, ""};
  switch (mode) {
    case AuthorizationMode::kAlwaysAllow:
      return {true, ""};
    case AuthorizationMode::kRbac:
      return RbacAuthorizer(store).Authorize(user, request);
  }
  return {};
}

StatusReply ForbiddenReply(const RequestInfo& request, const std::string& user, const std::string& reason) {
  std::string err = ForbiddenMessage(request, user);
  if (!reason.empty()) err += ": " + reason;
  // apierrors.NewForbidden over the group and resource (no subresource).
  const std::string group = request.resource_request ? request.api_group : std::string();
  const std::string resource = request.resource_request ? request.resource : std::string();
  const std::string name = request.resource_request ? request.name : std::string();
  std::string message;
  if (group.empty() && resource.empty()) {
    message = "forbidden: " + err;
  } else {
    const std::string qualified = group.empty() ? resource : resource + "." + group;
    message = qualified + (name.empty() ? "" : " " + Quoted(name)) + " is forbidden: " + err;
  }
  json details = json::object();
  if (!name.empty()) details["name"] = name;
  if (!group.empty()) details["group"] = group;
  if (!resource.empty()) details["kind"] = resource;
  return MakeStatus(403, "Forbidden", message, std::move(details));
}

Outcome<json> ReviewSelfSubjectAccess(AuthorizationMode mode, const ObjectStore& store, const UserInfo& user,
                                      json review) {
  const ObjectName kind{"authorization.k8s.io", "selfsubjectaccessreviews", "SelfSubjectAccessReview", ""};
  json spec = review.contains("spec") && review["spec"].is_object() ? review["spec"] : json::object();
  const bool has_resource = spec.contains("resourceAttributes") && spec["resourceAttributes"].is_object();
  const bool has_non_resource = spec.contains("nonResourceAttributes") && spec["nonResourceAttributes"].is_object();
  if (has_resource && has_non_resource) {
    return Invalid(kind, {FieldInvalid("spec.nonResourceAttributes", spec["nonResourceAttributes"],
                                       "cannot be specified in combination with resourceAttributes")});
  }
  if (!has_resource && !has_non_resource) {
    return Invalid(kind, {FieldInvalid("spec.resourceAttributes", nullptr,
                                       "exactly one of nonResourceAttributes or resourceAttributes must be specified")});
  }
  RequestInfo info;
  if (has_resource) {
    const json& a = spec["resourceAttributes"];
    info.resource_request = true;
    info.verb = jr::String(a, "verb");
    info.api_group = jr::String(a, "group");
    info.api_version = jr::String(a, "version");
    info.resource = jr::String(a, "resource");
    info.subresource = jr::String(a, "subresource");
    info.name = jr::String(a, "name");
    info.ns = jr::String(a, "namespace");
  } else {
    const json& a = spec["nonResourceAttributes"];
    info.path = jr::String(a, "path");
    info.verb = jr::String(a, "verb");
  }
  const Decision d = Authorize(mode, store, user, info);
  review["apiVersion"] = "authorization.k8s.io/v1";
  review["kind"] = "SelfSubjectAccessReview";
  if (!review.contains("metadata") || !review["metadata"].is_object()) review["metadata"] = json::object();
  review["spec"] = spec;
  json status = {{"allowed", d.allowed}};
  if (!d.reason.empty()) status["reason"] = d.reason;
  review["status"] = status;
  return review;
}

}  // namespace fairbench::apiserver
