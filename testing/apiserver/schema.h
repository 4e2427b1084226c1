// Structural OpenAPI v3 schemas of CustomResourceDefinitions (KUBE-API.md §5):
// the structural check done when a CRD is written, and what the server does
// to every custom object it stores — prune unknown fields, apply defaults,
// validate (type, required, enum, minimum/maximum, exclusive bounds,
// multipleOf, pattern, min/maxLength, min/maxItems, uniqueItems,
// min/maxProperties, items, additionalProperties, allOf/anyOf/oneOf/not,
// nullable, x-kubernetes-int-or-string, x-kubernetes-preserve-unknown-fields,
// x-kubernetes-embedded-resource). CEL rules (x-kubernetes-validations) are
// accepted and ignored.
//
// A parsed Schema is immutable and safe to share between threads.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "testing/apiserver/api_status.h"

namespace fairbench::apiserver {

struct SchemaNode {
  std::string type;  // "" (only with int-or-string / preserve-unknown-fields), object, array, ...
  std::map<std::string, std::shared_ptr<SchemaNode>> properties;
  std::shared_ptr<SchemaNode> items;
  std::shared_ptr<SchemaNode> additional_properties;  // schema of map values
  bool additional_properties_allowed = false;         // additionalProperties: true
  bool preserve_unknown = false;
  bool int_or_string = false;
  bool embedded_resource = false;
  bool nullable = false;
  std::vector<std::string> required;
  std::optional<nlohmann::json> default_value;
  std::vector<nlohmann::json> enum_values;
  std::optional<double> minimum, maximum, multiple_of;
  bool exclusive_minimum = false, exclusive_maximum = false;
  std::optional<int64_t> min_length, max_length, min_items, max_items, min_properties, max_properties;
  bool unique_items = false;
  std::string pattern_text;
  std::optional<std::regex> pattern;
  std::vector<std::shared_ptr<SchemaNode>> all_of, any_of, one_of;
  std::shared_ptr<SchemaNode> not_;
};

class Schema {
 public:
  // Parses an openAPIV3Schema. Violations of the structural rules are
  // appended to `errors` with fields under `field` (the schema's path in the
  // CRD, e.g. "spec.versions[0].schema.openAPIV3Schema").
  static std::shared_ptr<const Schema> Parse(const nlohmann::json& open_api_v3, const std::string& field,
                                             std::vector<Cause>* errors);

  // Removes fields the schema does not declare (and nulls of non-nullable
  // fields) from a whole object; metadata keeps only ObjectMeta's fields.
  // The dotted paths of removed unknown fields go to `unknown`.
  void Prune(nlohmann::json& object, std::vector<std::string>* unknown) const;
  // Fills in `default`s, top-down, as on requests and reads from storage.
  void ApplyDefaults(nlohmann::json& object) const;
  // Validates a whole object (metadata, apiVersion and kind excepted).
  void Validate(const nlohmann::json& object, std::vector<Cause>* causes) const;

  const SchemaNode& root() const { return *root_; }

 private:
  std::shared_ptr<SchemaNode> root_;
};

}  // namespace fairbench::apiserver
