#include "testing/apiserver/schema.h"

#include <cmath>
#include <set>

namespace fairbench::apiserver {
namespace {

using nlohmann::json;

std::string Child(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}
std::string Index(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

// Keys of metav1.ObjectMeta: everything else under metadata is dropped.
const std::set<std::string>& ObjectMetaFields() {
  static const std::set<std::string> kFields = {
      "name",       "generateName",   "namespace",         "selfLink",          "uid",
      "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
      "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences", "finalizers",
      "managedFields"};
  return kFields;
}

std::optional<double> Number(const json& j, const char* key) {
  if (j.contains(key) && j[key].is_number()) return j[key].get<double>();
  return std::nullopt;
}
std::optional<int64_t> Integer(const json& j, const char* key) {
  if (j.contains(key) && j[key].is_number()) return j[key].get<int64_t>();
  return std::nullopt;
}

std::shared_ptr<SchemaNode> ParseNode(const json& j, const std::string& path, bool in_junctor,
                                      std::vector<Cause>* errors) {
  auto n = std::make_shared<SchemaNode>();
  if (!j.is_object()) {
    errors->push_back(FieldInvalid(path, j, "must be a schema object"));
    return n;
  }
  if (j.contains("type") && j["type"].is_string()) n->type = j["type"].get<std::string>();
  n->nullable = j.value("nullable", false);
  n->preserve_unknown = j.value("x-kubernetes-preserve-unknown-fields", false);
  n->int_or_string = j.value("x-kubernetes-int-or-string", false);
  n->embedded_resource = j.value("x-kubernetes-embedded-resource", false);
  if (j.contains("default")) n->default_value = j["default"];
  if (in_junctor) {
    for (const char* k : {"type", "default", "nullable"}) {
      if (j.contains(k)) errors->push_back(FieldForbidden(Child(path, k), "must be empty to be structural"));
    }
  }
  if (j.contains("properties") && j["properties"].is_object()) {
    for (const auto& [name, sub] : j["properties"].items()) {
      n->properties[name] = ParseNode(sub, path + ".properties[" + name + "]", in_junctor, errors);
    }
  }
  if (j.contains("items")) {
    if (j["items"].is_array()) {
      errors->push_back(FieldForbidden(Child(path, "items"), "items must be a schema object and not an array"));
    } else {
      n->items = ParseNode(j["items"], Child(path, "items"), in_junctor, errors);
    }
  }
  if (j.contains("additionalProperties")) {
    const json& ap = j["additionalProperties"];
    if (ap.is_boolean()) {
      n->additional_properties_allowed = ap.get<bool>();
    } else {
      n->additional_properties = ParseNode(ap, Child(path, "additionalProperties"), in_junctor, errors);
    }
    if (!n->properties.empty()) {
      errors->push_back(FieldForbidden(Child(path, "additionalProperties"),
                                       "additionalProperties and properties are mutual exclusive"));
    }
  }
  if (j.contains("required") && j["required"].is_array()) {
    for (const auto& r : j["required"]) {
      if (r.is_string()) n->required.push_back(r.get<std::string>());
    }
  }
  if (j.contains("enum") && j["enum"].is_array()) {
    for (const auto& e : j["enum"]) n->enum_values.push_back(e);
  }
  n->minimum = Number(j, "minimum");
  n->maximum = Number(j, "maximum");
  n->multiple_of = Number(j, "multipleOf");
  n->exclusive_minimum = j.value("exclusiveMinimum", false);
  n->exclusive_maximum = j.value("exclusiveMaximum", false);
  n->min_length = Integer(j, "minLength");
  n->max_length = Integer(j, "maxLength");
  n->min_items = Integer(j, "minItems");
  n->max_items = Integer(j, "maxItems");
  n->min_properties = Integer(j, "minProperties");
  n->max_properties = Integer(j, "maxProperties");
  n->unique_items = j.value("uniqueItems", false);
  if (j.contains("pattern") && j["pattern"].is_string()) {
    n->pattern_text = j["pattern"].get<std::string>();
    try {
      n->pattern.emplace(n->pattern_text, std::regex::ECMAScript);
    } catch (const std::regex_error&) {
      errors->push_back(FieldInvalid(Child(path, "pattern"), n->pattern_text, "must be a valid regular expression"));
    }
  }
  auto junctor = [&](const char* key, std::vector<std::shared_ptr<SchemaNode>>* out) {
    if (!j.contains(key) || !j[key].is_array()) return;
    size_t i = 0;
    for (const auto& sub : j[key]) {
      out->push_back(ParseNode(sub, Index(Child(path, key), i++), true, errors));
    }
  };
  junctor("allOf", &n->all_of);
  // The one place a type may stand inside a junctor: the int-or-string
  // pattern "x-kubernetes-int-or-string: true, anyOf: [{type: integer},
  // {type: string}]", which the real API server accepts as structural.
  const bool int_or_string_any_of = n->int_or_string && j.contains("anyOf") && j["anyOf"].is_array() &&
                                    j["anyOf"].size() == 2 && j["anyOf"][0] == json{{"type", "integer"}} &&
                                    j["anyOf"][1] == json{{"type", "string"}};
  if (int_or_string_any_of) {
    for (const char* t : {"integer", "string"}) {
      auto alternative = std::make_shared<SchemaNode>();
      alternative->type = t;
      n->any_of.push_back(alternative);
    }
  } else {
    junctor("anyOf", &n->any_of);
  }
  junctor("oneOf", &n->one_of);
  if (j.contains("not")) n->not_ = ParseNode(j["not"], Child(path, "not"), true, errors);

  if (!in_junctor) {
    if (n->type.empty() && !n->int_or_string && !n->preserve_unknown) {
      errors->push_back(FieldRequired(Child(path, "type"), "must not be empty for specified object fields"));
    }
    if (n->type == "array" && !n->items) {
      errors->push_back(FieldRequired(Child(path, "items"), "must be specified"));
    }
    static const std::set<std::string> kTypes = {"", "object", "array", "string", "integer", "number", "boolean"};
    if (!kTypes.count(n->type)) {
      errors->push_back(FieldNotSupported(Child(path, "type"), n->type,
                                          {"array", "boolean", "integer", "number", "object", "string"}));
    }
  }
  return n;
}

const char* JsonTypeName(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "integer";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "array";
  return "object";
}

bool TypeMatches(const SchemaNode& n, const json& v) {
  if (n.int_or_string) return v.is_string() || v.is_number_integer() || v.is_number_unsigned();
  if (n.type.empty()) return true;
  if (n.type == "object") return v.is_object();
  if (n.type == "array") return v.is_array();
  if (n.type == "string") return v.is_string();
  if (n.type == "boolean") return v.is_boolean();
  if (n.type == "number") return v.is_number();
  if (n.type == "integer") {
    if (v.is_number_integer() || v.is_number_unsigned()) return true;
    if (v.is_number_float()) {
      double d = v.get<double>();
      return std::floor(d) == d;
    }
  }
  return false;
}

std::string NumberText(double d) { return FieldValueText(json(d)); }

size_t CodePoints(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) {
    if ((c & 0xC0) != 0x80) ++n;
  }
  return n;
}

void ValidateNode(const json& v, const SchemaNode& n, const std::string& path, std::vector<Cause>* causes);

bool Passes(const json& v, const SchemaNode& n, const std::string& path) {
  std::vector<Cause> tmp;
  ValidateNode(v, n, path, &tmp);
  return tmp.empty();
}

void ValidateNode(const json& v, const SchemaNode& n, const std::string& path, std::vector<Cause>* causes) {
  if (v.is_null()) {
    if (n.nullable || (n.type.empty() && !n.int_or_string)) return;
    causes->push_back(FieldTypeInvalid(path, v, path + " in body must be of type " +
                                                    (n.int_or_string ? std::string("integer,string") : n.type) +
                                                    ": \"null\""));
    return;
  }
  if (!TypeMatches(n, v)) {
    causes->push_back(FieldTypeInvalid(path, v, path + " in body must be of type " +
                                                    (n.int_or_string ? std::string("integer,string") : n.type) +
                                                    ": \"" + JsonTypeName(v) + "\""));
    return;
  }
  if (!n.enum_values.empty()) {
    bool found = false;
    for (const auto& e : n.enum_values) {
      if (e == v) found = true;
    }
    if (!found) causes->push_back(FieldNotSupported(path, v, n.enum_values));
  }
  if (v.is_number()) {
    double d = v.get<double>();
    if (n.minimum) {
      if (n.exclusive_minimum ? !(d > *n.minimum) : !(d >= *n.minimum)) {
        causes->push_back(FieldInvalid(path, v, path + " in body should be greater than " +
                                                    (n.exclusive_minimum ? "" : "or equal to ") + NumberText(*n.minimum)));
      }
    }
    if (n.maximum) {
      if (n.exclusive_maximum ? !(d < *n.maximum) : !(d <= *n.maximum)) {
        causes->push_back(FieldInvalid(path, v, path + " in body should be less than " +
                                                    (n.exclusive_maximum ? "" : "or equal to ") + NumberText(*n.maximum)));
      }
    }
    if (n.multiple_of && *n.multiple_of != 0) {
      double q = d / *n.multiple_of;
      if (std::fabs(q - std::round(q)) > 1e-9) {
        causes->push_back(FieldInvalid(path, v, path + " in body should be a multiple of " + NumberText(*n.multiple_of)));
      }
    }
  }
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    size_t len = CodePoints(s);
    if (n.max_length && static_cast<int64_t>(len) > *n.max_length) causes->push_back(FieldTooLong(path, *n.max_length));
    if (n.min_length && static_cast<int64_t>(len) < *n.min_length) {
      causes->push_back(FieldInvalid(path, v, path + " in body should be at least " + std::to_string(*n.min_length) +
                                                  " chars long"));
    }
    if (n.pattern && !std::regex_search(s, *n.pattern)) {
      causes->push_back(FieldInvalid(path, v, path + " in body should match '" + n.pattern_text + "'"));
    }
  }
  if (v.is_array()) {
    auto size = static_cast<int64_t>(v.size());
    if (n.max_items && size > *n.max_items) causes->push_back(FieldTooMany(path, size, *n.max_items));
    if (n.min_items && size < *n.min_items) {
      causes->push_back(FieldInvalid(path, v, path + " in body should have at least " + std::to_string(*n.min_items) +
                                                  " items"));
    }
    if (n.unique_items) {
      for (size_t i = 0; i < v.size(); ++i) {
        for (size_t k = 0; k < i; ++k) {
          if (v[i] == v[k]) {
            causes->push_back(FieldDuplicate(Index(path, i), v[i]));
            break;
          }
        }
      }
    }
    if (n.items) {
      for (size_t i = 0; i < v.size(); ++i) ValidateNode(v[i], *n.items, Index(path, i), causes);
    }
  }
  if (v.is_object()) {
    for (const auto& r : n.required) {
      if (!v.contains(r)) causes->push_back(FieldRequired(Child(path, r)));
    }
    auto size = static_cast<int64_t>(v.size());
    if (n.max_properties && size > *n.max_properties) {
      causes->push_back(FieldTooMany(path, size, *n.max_properties));
    }
    if (n.min_properties && size < *n.min_properties) {
      causes->push_back(FieldInvalid(path, v, path + " in body should have at least " +
                                                  std::to_string(*n.min_properties) + " properties"));
    }
    for (const auto& [key, value] : v.items()) {
      auto it = n.properties.find(key);
      if (it != n.properties.end()) {
        ValidateNode(value, *it->second, Child(path, key), causes);
      } else if (n.additional_properties) {
        ValidateNode(value, *n.additional_properties, Child(path, key), causes);
      }
    }
  }
  for (const auto& sub : n.all_of) ValidateNode(v, *sub, path, causes);
  if (!n.any_of.empty()) {
    bool any = false;
    for (const auto& sub : n.any_of) any = any || Passes(v, *sub, path);
    if (!any) causes->push_back(FieldInvalid(path, v, path + " in body must validate at least one schema (anyOf)"));
  }
  if (!n.one_of.empty()) {
    int count = 0;
    for (const auto& sub : n.one_of) count += Passes(v, *sub, path) ? 1 : 0;
    if (count != 1) causes->push_back(FieldInvalid(path, v, path + " in body must validate one and only one schema (oneOf)"));
  }
  if (n.not_ && Passes(v, *n.not_, path)) {
    causes->push_back(FieldInvalid(path, v, path + " in body must not validate the schema (not)"));
  }
}

void PruneValue(json& v, const SchemaNode& n, const std::string& path, std::vector<std::string>* unknown) {
  if (v.is_object()) {
    bool declares = !n.properties.empty() || n.additional_properties || n.type == "object";
    if (!declares && (n.preserve_unknown || n.type.empty())) return;
    for (auto it = v.begin(); it != v.end();) {
      const std::string key = it.key();
      auto p = n.properties.find(key);
      if (p != n.properties.end()) {
        if (it.value().is_null() && !p->second->nullable) {
          it = v.erase(it);
          continue;
        }
        PruneValue(it.value(), *p->second, Child(path, key), unknown);
      } else if (n.additional_properties) {
        PruneValue(it.value(), *n.additional_properties, Child(path, key), unknown);
      } else if (n.additional_properties_allowed || n.preserve_unknown ||
                 (n.embedded_resource && (key == "apiVersion" || key == "kind" || key == "metadata"))) {
        // kept as sent
      } else {
        if (unknown) unknown->push_back(Child(path, key));
        it = v.erase(it);
        continue;
      }
      ++it;
    }
  } else if (v.is_array() && n.items) {
    for (size_t i = 0; i < v.size(); ++i) PruneValue(v[i], *n.items, Index(path, i), unknown);
  }
}

void DefaultValue(json& v, const SchemaNode& n) {
  if (v.is_object()) {
    for (const auto& [key, prop] : n.properties) {
      if (prop->default_value && (!v.contains(key) || (v[key].is_null() && !prop->nullable))) {
        v[key] = *prop->default_value;
      }
      if (v.contains(key)) DefaultValue(v[key], *prop);
    }
    if (n.additional_properties) {
      for (auto& [key, value] : v.items()) DefaultValue(value, *n.additional_properties);
    }
  } else if (v.is_array() && n.items) {
    for (auto& item : v) DefaultValue(item, *n.items);
  }
}

}  // namespace

std::shared_ptr<const Schema> Schema::Parse(const json& open_api_v3, const std::string& field,
                                            std::vector<Cause>* errors) {
  auto s = std::shared_ptr<Schema>(new Schema());
  size_t before = errors->size();
  s->root_ = ParseNode(open_api_v3, field, false, errors);
  if (errors->size() == before && s->root_->type != "object") {
    errors->push_back(FieldInvalid(Child(field, "type"), s->root_->type, "must be object at the root"));
  }
  auto meta = s->root_->properties.find("metadata");
  if (meta != s->root_->properties.end()) {
    for (const auto& [name, sub] : meta->second->properties) {
      if (name != "name" && name != "generateName") {
        errors->push_back(FieldForbidden(field + ".properties[metadata]",
                                         "must not specify anything other than name and generateName, but "
                                         "metadata is implicitly specified"));
        break;
      }
    }
  }
  // A default must itself survive pruning and validation.
  std::vector<std::pair<const SchemaNode*, std::string>> stack = {{s->root_.get(), field}};
  while (!stack.empty()) {
    auto [node, path] = stack.back();
    stack.pop_back();
    if (node->default_value) {
      std::vector<Cause> bad;
      ValidateNode(*node->default_value, *node, Child(path, "default"), &bad);
      for (auto& c : bad) errors->push_back(std::move(c));
    }
    for (const auto& [name, sub] : node->properties) stack.emplace_back(sub.get(), path + ".properties[" + name + "]");
    if (node->items) stack.emplace_back(node->items.get(), Child(path, "items"));
    if (node->additional_properties) stack.emplace_back(node->additional_properties.get(), Child(path, "additionalProperties"));
  }
  return s;
}

void Schema::Prune(json& object, std::vector<std::string>* unknown) const {
  if (!object.is_object()) return;
  for (auto it = object.begin(); it != object.end();) {
    const std::string key = it.key();
    if (key == "apiVersion" || key == "kind") {
      ++it;
      continue;
    }
    if (key == "metadata") {
      if (it.value().is_object()) {
        for (auto m = it.value().begin(); m != it.value().end();) {
          if (!ObjectMetaFields().count(m.key())) {
            if (unknown) unknown->push_back("metadata." + m.key());
            m = it.value().erase(m);
          } else {
            ++m;
          }
        }
      }
      ++it;
      continue;
    }
    auto p = root_->properties.find(key);
    if (p == root_->properties.end()) {
      if (root_->preserve_unknown) {
        ++it;
        continue;
      }
      if (unknown) unknown->push_back(key);
      it = object.erase(it);
      continue;
    }
    if (it.value().is_null() && !p->second->nullable) {
      it = object.erase(it);
      continue;
    }
    PruneValue(it.value(), *p->second, key, unknown);
    ++it;
  }
}

void Schema::ApplyDefaults(json& object) const {
  if (!object.is_object()) return;
  for (const auto& [key, prop] : root_->properties) {
    if (key == "metadata" || key == "apiVersion" || key == "kind") continue;
    if (prop->default_value && !object.contains(key)) object[key] = *prop->default_value;
    if (object.contains(key)) DefaultValue(object[key], *prop);
  }
}

void Schema::Validate(const json& object, std::vector<Cause>* causes) const {
  for (const auto& r : root_->required) {
    if (r != "metadata" && r != "apiVersion" && r != "kind" && !object.contains(r)) causes->push_back(FieldRequired(r));
  }
  for (const auto& [key, prop] : root_->properties) {
    if (key == "metadata" || key == "apiVersion" || key == "kind") continue;
    if (object.contains(key)) ValidateNode(object[key], *prop, key, causes);
  }
}

}  // namespace fairbench::apiserver
