// The CRD schema generated from schema.h: structural, typed, and defaulting
// exactly as decoding does.
#include "api/openapi.h"

#include <gtest/gtest.h>

#include "api/codec.h"
#include "api/json_text.h"

namespace fairbench::api {
namespace {

using Json = nlohmann::ordered_json;

// Every node says what it holds (Kubernetes' structural schema rule).
void ExpectStructural(const Json& node, const std::string& where) {
  const bool typed = node.contains("type") || node.value("x-kubernetes-int-or-string", false) ||
                     node.value("x-kubernetes-preserve-unknown-fields", false);
  EXPECT_TRUE(typed) << where;
  if (node.contains("properties")) {
    for (const auto& [name, child] : node["properties"].items()) ExpectStructural(child, where + "." + name);
  }
  if (node.contains("items")) ExpectStructural(node["items"], where + "[]");
  if (node.contains("additionalProperties")) ExpectStructural(node["additionalProperties"], where + "{}");
}

bool HasDefaults(const Json& node) {
  if (node.contains("default")) return true;
  if (node.contains("properties")) {
    for (const auto& [name, child] : node["properties"].items()) {
      if (HasDefaults(child)) return true;
    }
  }
  return node.contains("items") && HasDefaults(node["items"]);
}

// What the API server does with a schema's defaults.
void ApplyDefaults(const Json& schema, nlohmann::json& value) {
  if (value.is_object() && schema.contains("properties")) {
    for (const auto& [name, prop] : schema["properties"].items()) {
      if (!value.contains(name) && prop.contains("default")) value[name] = prop["default"];
      if (value.contains(name)) ApplyDefaults(prop, value[name]);
    }
  }
  if (value.is_array() && schema.contains("items")) {
    for (nlohmann::json& item : value) ApplyDefaults(schema["items"], item);
  }
}

TEST(OpenApiTest, IsStructuralAndTyped) {
  const Json schema = OpenApiV3Schema();
  ExpectStructural(schema, "");
  EXPECT_EQ(schema["required"], Json::array({"spec"}));
  EXPECT_EQ(schema["properties"]["metadata"], Json({{"type", "object"}}));
  const Json& load = schema["properties"]["spec"]["properties"]["load"];
  EXPECT_EQ(load["properties"]["threads"], Json({{"type", "integer"}, {"format", "int32"}, {"default", 4}}));
  EXPECT_EQ(load["properties"]["duration"], Json({{"type", "string"}, {"default", "30s"}}));
  EXPECT_EQ(load["properties"]["connections"]["default"], Json::array({100}));
  EXPECT_TRUE(load["properties"]["connections"]["items"]["x-kubernetes-int-or-string"].get<bool>());
  EXPECT_FALSE(load["properties"]["rate"].contains("default"));
  const Json& target = schema["properties"]["spec"]["properties"]["targets"]["items"];
  EXPECT_EQ(target["properties"]["port"]["default"], 8080);
  EXPECT_TRUE(target["properties"]["resources"]["properties"]["cpu"]["x-kubernetes-int-or-string"].get<bool>());
  EXPECT_FALSE(target["properties"]["local"].contains("default"));
  const Json& scenario = schema["properties"]["spec"]["properties"]["scenarios"]["items"];
  EXPECT_TRUE(
      scenario["properties"]["expect"]["properties"]["json"]["x-kubernetes-preserve-unknown-fields"].get<bool>());
  EXPECT_EQ(scenario["properties"]["requests"]["items"]["properties"]["weight"]["default"], 1);
  const Json& status = schema["properties"]["status"];
  EXPECT_EQ(status["properties"]["phase"]["enum"],
            Json::array({"Queued", "Running", "Succeeded", "Failed", "Cancelled"}));
  EXPECT_EQ(status["properties"]["results"]["items"]["properties"]["startTime"]["format"], "date-time");
  EXPECT_FALSE(HasDefaults(status));
}

TEST(OpenApiTest, DefaultsLikeDecoding) {
  const nlohmann::json sparse = nlohmann::json::parse(R"({
    "apiVersion": "fairbench.dev/v1alpha1", "kind": "BenchmarkRun", "metadata": {"name": "t"},
    "spec": {
      "targets": [{"name": "a", "image": "img", "local": {"command": ["./srv"]}}],
      "scenarios": [{"name": "s", "request": {"path": "/"}},
                    {"name": "m", "requests": [{"path": "/a"}, {"path": "/b", "weight": 2}]}]
    }})");
  nlohmann::json defaulted = sparse;
  ApplyDefaults(OpenApiV3Schema(), defaulted);
  EXPECT_NE(defaulted, sparse);
  const Decoded a = DecodeRun(NodeFromJson(sparse));
  const Decoded b = DecodeRun(NodeFromJson(defaulted));
  ASSERT_TRUE(a.diagnostics.empty()) << a.diagnostics.Format("");
  ASSERT_TRUE(b.diagnostics.empty()) << b.diagnostics.Format("") << "\n" << defaulted.dump(2);
  EXPECT_EQ(a.run, b.run);
}

}  // namespace
}  // namespace fairbench::api
