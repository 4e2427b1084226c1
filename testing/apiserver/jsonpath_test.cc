#include "testing/apiserver/jsonpath.h"

#include <gtest/gtest.h>

namespace fairbench::apiserver {
namespace {

using nlohmann::json;

TEST(JsonPath, PrinterColumnForms) {
  json o = {{"spec", {{"replicas", 3}, {"targets", {{{"name", "a"}}, {{"name", "b"}}}}}},
            {"status", {{"conditions", {{{"type", "Ready"}, {"status", "True"}}, {{"type", "Done"}, {"status", "False"}}}}}}};
  EXPECT_EQ(EvalJsonPath(o, ".spec.replicas")->at(0), 3);
  EXPECT_EQ(EvalJsonPath(o, ".spec.targets[1].name")->at(0), "b");
  EXPECT_EQ(EvalJsonPath(o, ".spec.targets[*].name")->size(), 2u);
  EXPECT_EQ(EvalJsonPath(o, ".status.conditions[?(@.type==\"Ready\")].status")->at(0), "True");
  EXPECT_EQ(EvalJsonPath(o, "{.status.conditions[?(@.type=='Done')].status}")->at(0), "False");
  EXPECT_EQ(EvalJsonPath(o, ".spec['replicas']")->at(0), 3);
  EXPECT_TRUE(EvalJsonPath(o, ".spec.absent")->empty());
  EXPECT_FALSE(EvalJsonPath(o, ".spec[").ok());
}

}  // namespace
}  // namespace fairbench::apiserver
