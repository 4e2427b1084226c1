#include "api/openapi.h"

#include <string>
#include <type_traits>
#include <vector>

#include "api/encoder.h"
#include "api/json_text.h"
#include "api/schema.h"
#include "api/validate.h"

namespace fairbench::api {
namespace {

using Json = nlohmann::ordered_json;

Json IntOrString() {
  return Json{{"anyOf", Json::array({Json{{"type", "integer"}}, Json{{"type", "string"}}})},
              {"x-kubernetes-int-or-string", true}};
}

// Walks default-constructed objects: their members hold the defaults.
class SchemaBuilder {
 public:
  template <typename T>
  void Field(std::string_view name, const T& member, unsigned flags = 0) {
    Json node = Of<T>(flags);
    if (defaults_) AddDefault(node, member, flags);
    Json& object = *objects_.back();
    object["properties"][std::string(name)] = std::move(node);
    if ((flags & schema::kRequired) != 0) object["required"].push_back(std::string(name));
  }

  template <typename T>
  Json Of(unsigned flags) {
    if constexpr (std::is_same_v<T, ObjectMeta>) {
      return Json{{"type", "object"}};  // the API server owns metadata's schema
    } else if constexpr (schema::Described<T>) {
      // Defaults belong to the spec; the status is the controller's to write.
      const bool saved = defaults_;
      if constexpr (std::is_same_v<T, BenchmarkRunSpec>) defaults_ = true;
      if constexpr (std::is_same_v<T, BenchmarkRunStatus>) defaults_ = false;
      Json out{{"type", "object"}, {"properties", Json::object()}};
      const T defaults{};
      objects_.push_back(&out);
      schema::Describe(*this, defaults);
      objects_.pop_back();
      defaults_ = saved;
      return out;
    } else if constexpr (schema::kIsOptional<T>) {
      return Of<typename T::value_type>(flags);
    } else if constexpr (schema::kIsVector<T>) {
      return Json{{"type", "array"}, {"items", Of<typename T::value_type>(flags)}};
    } else if constexpr (std::is_same_v<T, StringMap>) {
      return Json{{"type", "object"}, {"additionalProperties", Json{{"type", "string"}}}};
    } else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, Duration> || std::is_same_v<T, CpuList> ||
                         std::is_same_v<T, Progress>) {
      return Json{{"type", "string"}};
    } else if constexpr (std::is_same_v<T, Time>) {
      return Json{{"type", "string"}, {"format", "date-time"}};
    } else if constexpr (std::is_same_v<T, bool>) {
      return Json{{"type", "boolean"}};
    } else if constexpr (std::is_integral_v<T>) {
      if ((flags & schema::kCount) != 0) return IntOrString();  // "10k"
      return Json{{"type", "integer"}, {"format", sizeof(T) <= 4 ? "int32" : "int64"}};
    } else if constexpr (std::is_floating_point_v<T>) {
      return Json{{"type", "number"}};
    } else if constexpr (schema::NamedEnum<T> && schema::kOpenInCrd<T>) {
      return Json{{"type", "string"}};
    } else if constexpr (schema::NamedEnum<T>) {
      Json names = Json::array();
      for (const auto& [value, name] : schema::EnumNames<T>::kNames) names.push_back(std::string(name));
      return Json{{"type", "string"}, {"enum", std::move(names)}};
    } else if constexpr (std::is_same_v<T, CpuQuantity> || std::is_same_v<T, MemoryQuantity> ||
                         std::is_same_v<T, RateLevel>) {
      return IntOrString();
    } else {
      static_assert(std::is_same_v<T, nlohmann::json>, "no schema for this type");
      return Json{{"x-kubernetes-preserve-unknown-fields", true}};
    }
  }

 private:
  template <typename T>
  void AddDefault(Json& node, const T& value, unsigned flags) {
    if constexpr (schema::kIsOptional<T>) {
      return;  // absence means something: no default
    } else if constexpr (schema::Described<T>) {
      // Without a default for the object, the API server would not descend
      // into an absent one to apply the defaults of its fields.
      node["default"] = Json::object();
    } else {
      if (!Encoder::Omitted(value, flags)) node["default"] = NodeToJson(Encoder().Value(value));
    }
  }

  bool defaults_ = false;
  std::vector<Json*> objects_;
};

// Rules between fields that the API server can check itself (CEL), so that
// kubectl apply refuses such a run at once instead of the controller failing
// it later. Each has Validate's message and names Validate's field; rate is
// int-or-string ("10k"), and a string is zero when it has no digit 1–9.
void AddRules(Json& run) {
  Json& load = run["properties"]["spec"]["properties"]["load"];
  load["x-kubernetes-validations"] =
      Json::array({Json{{"rule",
                         "!has(self.rate) || !has(self.pipeline) || self.pipeline <= 1 || "
                         "(type(self.rate) == string ? !self.rate.matches('[1-9]') : self.rate <= 0)"},
                        {"message", std::string(kPipelineWithRate)},
                        {"fieldPath", ".pipeline"}}});
}

}  // namespace

nlohmann::ordered_json OpenApiV3Schema() {
  Json run = SchemaBuilder().Of<BenchmarkRun>(0);
  AddRules(run);
  return run;
}

}  // namespace fairbench::api
