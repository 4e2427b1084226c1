// metadata.managedFields and the ownership rules of server-side apply
// (KUBE-API.md §3), simplified: arrays are atomic, a field is a leaf path.
//
// - An Update (PUT, merge/JSON patch) gives its manager the leaves it
//   changed and takes them from every other manager.
// - An Apply merges the configuration into the live object, removes leaves
//   the same manager applied before but no longer sends (when nobody else
//   owns them), and conflicts (409, cause FieldManagerConflict) when it
//   would change a leaf another manager owns — unless forced, which takes
//   ownership.
//
// Stateless functions over JSON values; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "testing/apiserver/api_status.h"

namespace fairbench::apiserver {

using FieldPath = std::vector<std::string>;
using FieldSet = std::set<FieldPath>;

struct ManagerEntry {
  std::string manager;
  std::string operation;  // "Apply" or "Update"
  std::string api_version;
  std::string time;
  std::string subresource;
  FieldSet fields;
};

// The managed leaves of an object (spec, status, data, labels, annotations,
// finalizers, ownerReferences; never identity metadata).
FieldSet LeafFields(const nlohmann::json& object);
std::vector<ManagerEntry> ReadManagedFields(const nlohmann::json& object);
void WriteManagedFields(nlohmann::json& object, const std::vector<ManagerEntry>& entries);

// Ownership after a non-apply write from `old_object` to `new_object`.
void RecordUpdate(std::vector<ManagerEntry>& entries, const nlohmann::json& old_object,
                  const nlohmann::json& new_object, const ManagerEntry& who);

struct ApplyConflict {
  std::string manager;
  std::string field;  // ".spec.replicas"
};

// Applies `config` (an object in apply form) to `live` for `who`; returns
// the conflicts instead when not forced. `entries` is updated on success.
std::vector<ApplyConflict> ApplyConfig(nlohmann::json& live, const nlohmann::json& config, const ManagerEntry& who,
                                       bool force, std::vector<ManagerEntry>& entries);

std::string FieldPathText(const FieldPath& p);

}  // namespace fairbench::apiserver
