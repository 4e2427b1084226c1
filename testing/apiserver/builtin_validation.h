// Validation of the built-in kinds an operator's install carries (apps/v1
// Deployment, core Service, ConfigMap and Secret, RBAC roles and bindings),
// in the field paths and wording of the real API server's validation
// (k8s.io/kubernetes pkg/apis/{apps,core,rbac}/validation), so that `kubectl
// apply --dry-run=server` of a Helm chart's objects fails here where it
// would fail in a cluster. Not every rule of the real server is here: the
// ones an install's author can get wrong (a selector that does not match
// its template, a rule without verbs, a binding to a missing kind of role,
// a port without a name, a key a ConfigMap cannot hold, an immutable field
// changed).
//
// Stateless.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "testing/apiserver/api_status.h"

namespace fairbench::apiserver {

// `group`/`plural` name the resource; `old` is the stored object on update
// (null on create). Causes in the order the real server reports them.
std::vector<Cause> ValidateBuiltin(const std::string& group, const std::string& plural, const nlohmann::json& obj,
                                   const nlohmann::json* old);

// RBAC object names are path segments, not DNS names ("system:controller:x").
bool IsRbacGroup(const std::string& group);
// The path-segment name rule (k8s.io/apimachinery path.IsValidPathSegmentName):
// the reasons a name is refused, empty when it is accepted.
std::vector<std::string> PathSegmentNameProblems(const std::string& name);

}  // namespace fairbench::apiserver
