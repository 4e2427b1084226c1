#include "testing/apiserver/managed_fields.h"

#include <gtest/gtest.h>

namespace fairbench::apiserver {
namespace {

using nlohmann::json;

ManagerEntry Who(const std::string& m, const std::string& op) { return {m, op, "v1", "t", "", {}}; }

TEST(ManagedFields, UpdateTakesChangedLeavesFromOthers) {
  json a = json::parse(R"({"metadata":{"name":"x","labels":{"l":"1"}},"spec":{"a":1,"b":2}})");
  json b = json::parse(R"({"metadata":{"name":"x","labels":{"l":"1"}},"spec":{"a":1,"b":3}})");
  std::vector<ManagerEntry> entries;
  RecordUpdate(entries, nullptr, a, Who("first", "Update"));
  RecordUpdate(entries, a, b, Who("second", "Update"));
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_TRUE(entries[0].fields.count({"spec", "a"}));
  EXPECT_FALSE(entries[0].fields.count({"spec", "b"}));
  EXPECT_TRUE(entries[1].fields.count({"spec", "b"}));
  json obj = b;
  WriteManagedFields(obj, entries);
  auto back = ReadManagedFields(obj);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].fields, entries[1].fields);
  EXPECT_TRUE(obj["metadata"]["managedFields"][0]["fieldsV1"]["f:metadata"]["f:labels"].contains("f:l"));
}

TEST(ManagedFields, ApplyConflictsUnlessForcedAndRemovesDroppedFields) {
  json live = json::parse(R"({"metadata":{"name":"x"},"spec":{"a":1}})");
  std::vector<ManagerEntry> entries;
  RecordUpdate(entries, nullptr, live, Who("editor", "Update"));

  json config = json::parse(R"({"apiVersion":"v1","kind":"K","metadata":{"name":"x"},"spec":{"a":2,"c":3}})");
  auto conflicts = ApplyConfig(live, config, Who("applier", "Apply"), false, entries);
  ASSERT_EQ(conflicts.size(), 1u);
  EXPECT_EQ(conflicts[0].manager, "editor");
  EXPECT_EQ(conflicts[0].field, ".spec.a");
  EXPECT_EQ(live["spec"]["a"], 1);

  conflicts = ApplyConfig(live, config, Who("applier", "Apply"), true, entries);
  EXPECT_TRUE(conflicts.empty());
  EXPECT_EQ(live["spec"]["a"], 2);
  EXPECT_EQ(live["spec"]["c"], 3);

  // Same value as the live object: shared ownership, no conflict.
  json same = json::parse(R"({"apiVersion":"v1","kind":"K","spec":{"c":3}})");
  EXPECT_TRUE(ApplyConfig(live, same, Who("other", "Apply"), false, entries).empty());

  // The applier stops sending spec.a: it is removed (nobody else owns it).
  json less = json::parse(R"({"apiVersion":"v1","kind":"K","spec":{"c":3}})");
  EXPECT_TRUE(ApplyConfig(live, less, Who("applier", "Apply"), false, entries).empty());
  EXPECT_FALSE(live["spec"].contains("a"));
  EXPECT_EQ(live["spec"]["c"], 3);
}

}  // namespace
}  // namespace fairbench::apiserver
