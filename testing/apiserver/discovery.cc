#include "testing/apiserver/discovery.h"

#include <algorithm>
#include <functional>
#include <map>
#include <sstream>
#include <vector>

namespace fairbench::apiserver {
namespace {

using nlohmann::json;

std::string GroupVersionPath(const ResourceInfo& r) {
  return r.group.empty() ? "api/" + r.version : "apis/" + r.group + "/" + r.version;
}

// Groups in first-registration order, each with its versions in order.
std::vector<std::pair<std::string, std::vector<std::string>>> Groups(const ResourceRegistry& registry) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const ResourceInfo* r : registry.All()) {
    if (r->group.empty()) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& g) { return g.first == r->group; });
    if (it == out.end()) {
      out.push_back({r->group, {}});
      it = out.end() - 1;
    }
    if (std::find(it->second.begin(), it->second.end(), r->version) == it->second.end()) {
      it->second.push_back(r->version);
    }
  }
  return out;
}

json GroupJson(const std::string& name, const std::vector<std::string>& versions) {
  json vs = json::array();
  for (const auto& v : versions) vs.push_back({{"groupVersion", name + "/" + v}, {"version", v}});
  return {{"name", name},
          {"versions", vs},
          {"preferredVersion", {{"groupVersion", name + "/" + versions.front()}, {"version", versions.front()}}}};
}

json Param(const char* name, const char* in = "query") {
  json p = {{"name", name}, {"in", in}, {"schema", {{"type", "string"}}}};
  if (std::string(in) == "path") p["required"] = true;
  return p;
}

json Operation(const ResourceInfo& r, const char* action, std::vector<const char*> params) {
  json op = {{"operationId", std::string(action) + r.kind},
             {"x-kubernetes-action", action},
             {"x-kubernetes-group-version-kind", {{"group", r.group}, {"version", r.version}, {"kind", r.kind}}},
             {"responses", {{"200", {{"description", "OK"}}}}}};
  json ps = json::array();
  for (const char* p : params) ps.push_back(Param(p));
  op["parameters"] = ps;
  return op;
}

std::string SchemaName(const ResourceInfo& r) {
  // Reverse-domain, like "dev.fairbench.v1alpha1.BenchmarkRun".
  std::vector<std::string> parts;
  std::stringstream ss(r.group.empty() ? std::string("io.k8s.api.core") : r.group);
  std::string part;
  while (std::getline(ss, part, '.')) parts.insert(parts.begin(), part);
  std::string out;
  for (const auto& p : parts) out += p + ".";
  return out + r.version + "." + r.kind;
}

}  // namespace

json ApiVersions(const std::string& server_address) {
  return {{"kind", "APIVersions"},
          {"versions", {"v1"}},
          {"serverAddressByClientCIDRs", {{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", server_address}}}}};
}

json ApiGroupList(const ResourceRegistry& registry) {
  json groups = json::array();
  for (const auto& [name, versions] : Groups(registry)) groups.push_back(GroupJson(name, versions));
  return {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", groups}};
}

std::optional<json> ApiGroup(const ResourceRegistry& registry, const std::string& group) {
  for (const auto& [name, versions] : Groups(registry)) {
    if (name == group) {
      json g = GroupJson(name, versions);
      g["kind"] = "APIGroup";
      g["apiVersion"] = "v1";
      return g;
    }
  }
  return std::nullopt;
}

std::optional<json> ApiResourceList(const ResourceRegistry& registry, const std::string& group,
                                    const std::string& version) {
  json resources = json::array();
  bool any = false;
  for (const ResourceInfo* r : registry.All()) {
    if (r->group != group || r->version != version) continue;
    any = true;
    json res = {{"name", r->plural},
                {"singularName", r->singular},
                {"namespaced", r->namespaced},
                {"kind", r->kind},
                {"verbs", {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}}};
    if (!r->short_names.empty()) res["shortNames"] = r->short_names;
    if (!r->categories.empty()) res["categories"] = r->categories;
    resources.push_back(std::move(res));
    if (r->group.empty() && r->plural == "pods") {
      resources.push_back({{"name", "pods/log"}, {"singularName", ""}, {"namespaced", true}, {"kind", "Pod"},
                           {"verbs", {"get"}}});
    }
    if (r->group.empty() && r->plural == "nodes") {
      resources.push_back({{"name", "nodes/proxy"}, {"singularName", ""}, {"namespaced", false},
                           {"kind", "NodeProxyOptions"}, {"verbs", {"create", "delete", "get", "patch", "update"}}});
    }
    if (r->status_subresource) {
      resources.push_back({{"name", r->plural + "/status"},
                           {"singularName", ""},
                           {"namespaced", r->namespaced},
                           {"kind", r->kind},
                           {"verbs", {"get", "patch", "update"}}});
    }
  }
  if (!any) return std::nullopt;
  return json{{"kind", "APIResourceList"},
              {"apiVersion", "v1"},
              {"groupVersion", group.empty() ? version : group + "/" + version},
              {"resources", resources}};
}

json OpenApiV3Index(const ResourceRegistry& registry) {
  json paths = json::object();
  std::map<std::string, bool> seen;
  for (const ResourceInfo* r : registry.All()) {
    std::string gv = GroupVersionPath(*r);
    if (seen[gv]) continue;
    seen[gv] = true;
    auto doc = OpenApiV3Document(registry, gv);
    size_t hash = std::hash<std::string>{}(doc ? doc->dump() : "");
    std::stringstream h;
    h << std::hex << std::uppercase << hash;
    paths[gv] = {{"serverRelativeURL", "/openapi/v3/" + gv + "?hash=" + h.str()}};
  }
  return {{"paths", paths}};
}

std::optional<json> OpenApiV3Document(const ResourceRegistry& registry, const std::string& gv_path) {
  json paths = json::object();
  json schemas = json::object();
  bool any = false;
  for (const ResourceInfo* r : registry.All()) {
    if (GroupVersionPath(*r) != gv_path) continue;
    any = true;
    std::string base = "/" + gv_path + "/" + (r->namespaced ? "namespaces/{namespace}/" : "") + r->plural;
    std::vector<const char*> write = {"dryRun", "fieldManager", "fieldValidation", "pretty"};
    std::vector<const char*> patch = {"dryRun", "fieldManager", "fieldValidation", "force", "pretty"};
    paths[base] = {{"get", Operation(*r, "list", {"labelSelector", "fieldSelector", "limit", "continue",
                                                  "resourceVersion", "resourceVersionMatch", "watch",
                                                  "allowWatchBookmarks", "timeoutSeconds"})},
                   {"post", Operation(*r, "post", write)},
                   {"delete", Operation(*r, "deletecollection", {"propagationPolicy", "gracePeriodSeconds"})}};
    paths[base + "/{name}"] = {{"get", Operation(*r, "get", {"pretty"})},
                               {"put", Operation(*r, "put", write)},
                               {"patch", Operation(*r, "patch", patch)},
                               {"delete", Operation(*r, "delete", {"propagationPolicy", "gracePeriodSeconds", "dryRun"})}};
    if (r->status_subresource) {
      paths[base + "/{name}/status"] = {{"get", Operation(*r, "get", {"pretty"})},
                                        {"put", Operation(*r, "put", write)},
                                        {"patch", Operation(*r, "patch", patch)}};
    }
    json schema = json{{"type", "object"}};
    if (r->custom) {
      // The published schema is informative (kubectl explain); the server
      // validates with its own copy.
      schema["x-kubernetes-preserve-unknown-fields"] = true;
    }
    schema["x-kubernetes-group-version-kind"] = json::array({{{"group", r->group}, {"version", r->version}, {"kind", r->kind}}});
    schemas[SchemaName(*r)] = schema;
  }
  if (!any) return std::nullopt;
  return json{{"openapi", "3.0.0"},
              {"info", {{"title", "Kubernetes"}, {"version", "v1.32.0"}}},
              {"paths", paths},
              {"components", {{"schemas", schemas}}}};
}

json VersionInfo() {
  return {{"major", "1"},
          {"minor", "32"},
          {"gitVersion", "v1.32.0-fairbench-test"},
          {"gitCommit", "0000000000000000000000000000000000000000"},
          {"gitTreeState", "clean"},
          {"buildDate", "2026-01-01T00:00:00Z"},
          {"goVersion", "go1.23"},
          {"compiler", "gc"},
          {"platform", "linux/amd64"}};
}

}  // namespace fairbench::apiserver
