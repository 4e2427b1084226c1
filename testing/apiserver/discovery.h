// Discovery documents (/api, /apis, /api/v1, /apis/G, /apis/G/V), the
// OpenAPI v3 index and per-group-version documents, and /version — what
// kubectl reads before it touches a resource. The OpenAPI documents declare
// every resource's operations with `x-kubernetes-group-version-kind` and the
// `fieldValidation` parameter, which is how kubectl decides to leave schema
// validation to the server. Stateless functions of the registry.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "testing/apiserver/resource_types.h"

namespace fairbench::apiserver {

nlohmann::json ApiVersions(const std::string& server_address);
nlohmann::json ApiGroupList(const ResourceRegistry& registry);
std::optional<nlohmann::json> ApiGroup(const ResourceRegistry& registry, const std::string& group);
std::optional<nlohmann::json> ApiResourceList(const ResourceRegistry& registry, const std::string& group,
                                              const std::string& version);
nlohmann::json OpenApiV3Index(const ResourceRegistry& registry);
// gv_path: "api/v1" or "apis/G/V".
std::optional<nlohmann::json> OpenApiV3Document(const ResourceRegistry& registry, const std::string& gv_path);
nlohmann::json VersionInfo();

}  // namespace fairbench::apiserver
