// RequestInfo: what a request asks of which resource, in the terms RBAC
// rules and audit events use (verb, API group, resource, subresource,
// namespace, name), resolved from the method, path and query alone as the
// real API server's RequestInfoFactory does (k8s.io/apiserver, endpoints/
// request/requestinfo.go):
//
//   GET    /api/v1/namespaces/ns/pods            → list pods in ns
//   GET    /api/v1/pods?watch=true               → watch pods (all namespaces)
//   GET    /api/v1/namespaces/ns/pods/p/log      → get pods/log p in ns
//   GET    /api/v1/nodes/n/proxy/stats/summary   → get nodes/proxy n
//   DELETE /api/v1/namespaces/ns/pods            → deletecollection pods in ns
//   PATCH  /apis/g/v1/namespaces/ns/rs/x/status  → patch rs/status x in ns
//   GET    /healthz                              → get, non-resource "/healthz"
//
// A collection GET whose fieldSelector is metadata.name=X names X, as the
// real server does (RBAC resourceNames then apply to it). Stateless.
#pragma once

#include <map>
#include <string>

namespace fairbench::apiserver {

struct RequestInfo {
  bool resource_request = false;  // false: a non-resource URL (/healthz, /api, /apis/g, /version, /openapi/…)
  std::string path;
  std::string verb;  // get list watch create update patch delete deletecollection; for non-resource URLs the lower-case method
  std::string api_prefix;  // "api" or "apis"
  std::string api_group;   // "" = core
  std::string api_version;
  std::string ns;  // "" = cluster-scoped or all namespaces
  std::string resource;
  std::string subresource;
  std::string name;
};

RequestInfo ResolveRequestInfo(const std::string& method, const std::string& path,
                               const std::multimap<std::string, std::string>& query);

}  // namespace fairbench::apiserver
