// The resources the test API server serves: a fixed set of built-in types
// and whatever CustomResourceDefinitions add (KUBE-API.md §1, §5), with what
// discovery, routing, validation and Table output need to know about each.
//
// ResourceRegistry is not thread-safe; ApiServer guards it with its mutex.
// ResourceInfo values are copied out and are plain data.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "testing/apiserver/api_status.h"
#include "testing/apiserver/schema.h"

namespace fairbench::apiserver {

// One Table column. Built-in types compute cells in code; custom resources
// use a JSONPath and a type (integer, number, string, boolean, date).
struct PrinterColumn {
  std::string name;
  std::string type;
  std::string format;
  std::string description;
  int priority = 0;
  std::string json_path;
  std::function<nlohmann::json(const nlohmann::json& object, std::chrono::system_clock::time_point now)> cell;
};

struct ResourceInfo {
  std::string group;  // "" = core
  std::string version;
  std::string kind;
  std::string list_kind;
  std::string plural;
  std::string singular;
  std::vector<std::string> short_names;
  std::vector<std::string> categories;
  bool namespaced = true;
  bool status_subresource = false;
  bool custom = false;         // served from a CRD
  bool served = true;          // CRD version served (and Established)
  std::string crd_name;        // custom only
  std::shared_ptr<const Schema> schema;  // custom only
  std::vector<PrinterColumn> columns;    // after the implicit Name column
  std::vector<std::string> field_selectors;  // besides metadata.name / metadata.namespace

  std::string ApiVersion() const { return group.empty() ? version : group + "/" + version; }
  // Objects of all versions of one resource share storage.
  std::string StorageKey() const { return group + "/" + plural; }
  ObjectName Name(const std::string& name) const { return {group, plural, kind, name}; }
  std::vector<std::string> AllowedFieldSelectors() const;
};

class ResourceRegistry {
 public:
  ResourceRegistry();  // registers the built-in types

  const ResourceInfo* Find(const std::string& group, const std::string& version, const std::string& plural) const;
  const ResourceInfo* FindKind(const std::string& group, const std::string& version, const std::string& kind) const;
  // All served resources, built-ins first, in registration order.
  std::vector<const ResourceInfo*> All() const;

  // Replaces everything served for a CRD (name = plural.group).
  void SetCustom(const std::string& crd_name, std::vector<ResourceInfo> versions);
  void RemoveCustom(const std::string& crd_name);

 private:
  std::vector<std::unique_ptr<ResourceInfo>> infos_;
};

// Validates a CRD (apiextensions.k8s.io/v1) and fills in its defaults in place.
std::vector<Cause> ValidateAndDefaultCrd(nlohmann::json& crd);
// The served versions of a valid CRD.
std::vector<ResourceInfo> ResourcesFromCrd(const nlohmann::json& crd);

}  // namespace fairbench::apiserver
