// The default RBAC policy kube-apiserver creates when RBAC is on
// (plugin/pkg/auth/authorizer/rbac/bootstrappolicy), reduced to what lets a
// cluster be used at all: cluster-admin bound to system:masters;
// system:discovery and system:basic-user for every authenticated user
// (discovery documents, /healthz, /version; creating SelfSubjectAccessReviews
// and SelfSubjectRulesReviews); system:public-info-viewer for everyone,
// anonymous too (/healthz, /livez, /readyz, /version). Each carries the
// label kubernetes.io/bootstrapping=rbac-defaults and the annotation
// rbac.authorization.kubernetes.io/autoupdate=true as the real objects do.
// Not included: the aggregated admin/edit/view roles and the system:
// roles of controllers, nodes and the scheduler. Stateless.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace fairbench::apiserver {

// (resource plural in rbac.authorization.k8s.io/v1, object) pairs, roles first.
std::vector<std::pair<std::string, nlohmann::json>> BootstrapRbacPolicy();

}  // namespace fairbench::apiserver
