#include "testing/apiserver/table.h"

#include <cmath>

#include "testing/apiserver/jsonpath.h"
#include "testing/apiserver/time_text.h"

namespace fairbench::apiserver {
namespace {

using nlohmann::json;

// apiextensions-apiserver's cellForJSONValue: a value of the wrong type is nil.
json CustomCell(const PrinterColumn& col, const json& object, std::chrono::system_clock::time_point now) {
  auto found = EvalJsonPath(object, col.json_path);
  if (!found.ok() || found->empty()) return nullptr;
  const json& v = found->front();
  if (v.is_null()) return nullptr;
  if (col.type == "integer") {
    if (v.is_number_integer() || v.is_number_unsigned()) return v;
    if (v.is_number_float()) return static_cast<int64_t>(v.get<double>());
    return nullptr;
  }
  if (col.type == "number") return v.is_number() ? json(v.get<double>()) : json(nullptr);
  if (col.type == "boolean") return v.is_boolean() ? v : json(nullptr);
  if (col.type == "date") {
    if (!v.is_string()) return nullptr;
    auto t = ParseTime(v.get<std::string>());
    if (!t) return "<invalid>";
    return HumanDuration(std::chrono::duration_cast<std::chrono::seconds>(now - *t));
  }
  return v.is_string() ? v : json(v.dump());
}

}  // namespace

json BuildTable(const ResourceInfo& resource, const std::vector<json>& objects, json list_metadata,
                bool with_column_definitions, const std::string& include_object,
                std::chrono::system_clock::time_point now) {
  json table = {{"kind", "Table"}, {"apiVersion", "meta.k8s.io/v1"}, {"metadata", std::move(list_metadata)}};
  if (with_column_definitions) {
    json defs = json::array();
    defs.push_back({{"name", "Name"},
                    {"type", "string"},
                    {"format", "name"},
                    {"description", "Name must be unique within a namespace. Is required when creating resources, "
                                    "although some resources may allow a client to request the generation of an "
                                    "appropriate name automatically."},
                    {"priority", 0}});
    for (const auto& c : resource.columns) {
      defs.push_back({{"name", c.name},
                      {"type", c.type == "date" && !c.cell ? "date" : c.type},
                      {"format", c.format},
                      {"description", c.description},
                      {"priority", c.priority}});
    }
    table["columnDefinitions"] = std::move(defs);
  }
  json rows = json::array();
  for (const auto& obj : objects) {
    json cells = json::array();
    cells.push_back(obj["metadata"].value("name", ""));
    for (const auto& c : resource.columns) cells.push_back(c.cell ? c.cell(obj, now) : CustomCell(c, obj, now));
    json row = {{"cells", std::move(cells)}};
    if (include_object == "Object") {
      row["object"] = obj;
    } else if (include_object != "None") {
      row["object"] = {{"kind", "PartialObjectMetadata"},
                       {"apiVersion", "meta.k8s.io/v1"},
                       {"metadata", obj["metadata"]}};
    }
    rows.push_back(std::move(row));
  }
  table["rows"] = std::move(rows);
  return table;
}

}  // namespace fairbench::apiserver
