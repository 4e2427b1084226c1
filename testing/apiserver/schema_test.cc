#include "testing/apiserver/schema.h"

#include <gtest/gtest.h>

namespace fairbench::apiserver {
namespace {

using nlohmann::json;

json RunSchema() {
  return json::parse(R"({
    "type": "object",
    "required": ["spec"],
    "properties": {
      "spec": {
        "type": "object",
        "required": ["targets"],
        "properties": {
          "threads": {"type": "integer", "minimum": 1, "maximum": 64, "default": 2},
          "mode": {"type": "string", "enum": ["open", "closed"]},
          "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8},
          "targets": {"type": "array", "minItems": 1, "items": {"type": "object", "required": ["name"],
                      "properties": {"name": {"type": "string"}, "port": {"type": "integer", "default": 80}}}},
          "labels": {"type": "object", "additionalProperties": {"type": "string"}},
          "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
          "port": {"x-kubernetes-int-or-string": true}
        }
      },
      "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
    }
  })");
}

std::shared_ptr<const Schema> Parse(const json& j) {
  std::vector<Cause> errs;
  auto s = Schema::Parse(j, "spec.versions[0].schema.openAPIV3Schema", &errs);
  EXPECT_TRUE(errs.empty()) << errs.front().field << ": " << errs.front().message;
  return s;
}

TEST(Schema, StructuralRulesAreEnforced) {
  std::vector<Cause> errs;
  Schema::Parse(json::parse(R"({"type":"object","properties":{"spec":{"properties":{"a":{"type":"string"}}}}})"), "s",
                &errs);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].field, "s.properties[spec].type");
  EXPECT_EQ(errs[0].reason, "FieldValueRequired");

  errs.clear();
  Schema::Parse(json::parse(R"({"type":"object","properties":{"l":{"type":"array"}}})"), "s", &errs);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].field, "s.properties[l].items");

  errs.clear();
  Schema::Parse(json::parse(R"({"type":"object","properties":{"x":{"type":"string","anyOf":[{"type":"string"}]}}})"),
                "s", &errs);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].field, "s.properties[x].anyOf[0].type");

  errs.clear();
  Schema::Parse(json::parse(R"({"type":"object","properties":{"metadata":{"type":"object","properties":{"labels":{"type":"object"}}}}})"),
                "s", &errs);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].reason, "FieldValueForbidden");

  errs.clear();
  Schema::Parse(json::parse(R"({"type":"object","properties":{"n":{"type":"integer","minimum":1,"default":0}}})"), "s",
                &errs);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].field, "s.properties[n].default");
}

TEST(Schema, PrunesUnknownFieldsButKeepsPreservedOnes) {
  auto s = Parse(RunSchema());
  json o = json::parse(R"({"apiVersion":"a/v1","kind":"K","metadata":{"name":"x","bogus":1},
    "spec":{"targets":[{"name":"t","extra":1}],"unknown":2,"free":{"any":{"thing":1}},"labels":{"a":"b"}},
    "top":3})");
  std::vector<std::string> unknown;
  s->Prune(o, &unknown);
  EXPECT_FALSE(o.contains("top"));
  EXPECT_FALSE(o["spec"].contains("unknown"));
  EXPECT_FALSE(o["spec"]["targets"][0].contains("extra"));
  EXPECT_FALSE(o["metadata"].contains("bogus"));
  EXPECT_EQ(o["spec"]["free"]["any"]["thing"], 1);
  EXPECT_EQ(o["spec"]["labels"]["a"], "b");
  std::vector<std::string> want = {"metadata.bogus", "spec.targets[0].extra", "spec.unknown", "top"};
  std::sort(unknown.begin(), unknown.end());
  EXPECT_EQ(unknown, want);
}

TEST(Schema, AppliesDefaultsDeeply) {
  auto s = Parse(RunSchema());
  json o = json::parse(R"({"spec":{"targets":[{"name":"t"}]}})");
  s->ApplyDefaults(o);
  EXPECT_EQ(o["spec"]["threads"], 2);
  EXPECT_EQ(o["spec"]["targets"][0]["port"], 80);
}

TEST(Schema, ValidationCausesUseApiServerWording) {
  auto s = Parse(RunSchema());
  json o = json::parse(R"({"spec":{"threads":0,"mode":"half","name":"ABC","targets":[{}],"port":true}})");
  std::vector<Cause> causes;
  s->Validate(o, &causes);
  std::map<std::string, Cause> by_field;
  for (const auto& c : causes) by_field[c.field] = c;
  ASSERT_TRUE(by_field.count("spec.threads"));
  EXPECT_EQ(by_field["spec.threads"].message,
            "Invalid value: 0: spec.threads in body should be greater than or equal to 1");
  EXPECT_EQ(by_field["spec.mode"].message, "Unsupported value: \"half\": supported values: \"open\", \"closed\"");
  EXPECT_EQ(by_field["spec.mode"].reason, "FieldValueNotSupported");
  EXPECT_EQ(by_field["spec.name"].message, "Invalid value: \"ABC\": spec.name in body should match '^[a-z]+$'");
  EXPECT_EQ(by_field["spec.targets[0].name"].reason, "FieldValueRequired");
  EXPECT_EQ(by_field["spec.port"].reason, "FieldValueTypeInvalid");

  causes.clear();
  s->Validate(json::parse(R"({"spec":{"threads":"many","targets":[]}})"), &causes);
  by_field.clear();
  for (const auto& c : causes) by_field[c.field] = c;
  EXPECT_EQ(by_field["spec.threads"].message,
            "Invalid value: \"many\": spec.threads in body must be of type integer: \"string\"");
  EXPECT_EQ(by_field["spec.targets"].message, "Invalid value: []: spec.targets in body should have at least 1 items");

  causes.clear();
  s->Validate(json::parse(R"({"metadata":{}})"), &causes);
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_EQ(causes[0].field, "spec");
  EXPECT_EQ(causes[0].message, "Required value");
}

}  // namespace
}  // namespace fairbench::apiserver
