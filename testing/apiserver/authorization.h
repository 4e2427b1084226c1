// Authorization of the test API server, between authentication and the
// handlers as in kube-apiserver: members of system:masters are always
// allowed (the privileged-group authorizer the real server puts first), then
// the configured mode decides — AlwaysAllow (the default: tests that act as
// an administrator create no RBAC objects), or RBAC (rbac_authorizer.h).
// A refusal is the real server's 403 (responsewriters.Forbidden):
//
//   pods "x" is forbidden: User "u" cannot get resource "pods" in API group "" in the namespace "default"
//   pods is forbidden: User "u" cannot list resource "pods" in API group "" at the cluster scope
//   forbidden: User "u" cannot get path "/metrics"
//
// with reason Forbidden and details {name, group, kind: the resource}. Also
// SelfSubjectAccessReview (authorization.k8s.io/v1), which `kubectl auth
// can-i` creates, answered from the same decision.
//
// Stateless; the store is the caller's to guard.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "testing/apiserver/api_status.h"
#include "testing/apiserver/object_store.h"
#include "testing/apiserver/rbac_authorizer.h"
#include "testing/apiserver/request_info.h"

namespace fairbench::apiserver {

enum class AuthorizationMode { kAlwaysAllow, kRbac };

// kube-apiserver's --authorization-mode names: "AlwaysAllow", "RBAC".
std::optional<AuthorizationMode> ParseAuthorizationMode(const std::string& text);

Decision Authorize(AuthorizationMode mode, const ObjectStore& store, const UserInfo& user,
                   const RequestInfo& request);

// The 403 for a refused request; `reason` is the authorizer's (appended
// after ": " when not empty).
StatusReply ForbiddenReply(const RequestInfo& request, const std::string& user, const std::string& reason);

// The path a SelfSubjectAccessReview is created at.
inline constexpr char kSelfSubjectAccessReviewPath[] = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";

// The created review (spec as sent, status {allowed, reason}) or 422 when
// the spec has not exactly one of resourceAttributes and
// nonResourceAttributes.
Outcome<nlohmann::json> ReviewSelfSubjectAccess(AuthorizationMode mode, const ObjectStore& store,
                                                const UserInfo& user, nlohmann::json review);

}  // namespace fairbench::apiserver
