#include "testing/apiserver/yaml_json.h"

#include <gtest/gtest.h>

namespace fairbench::apiserver {
namespace {

TEST(YamlJson, ResolvesPlainScalarsAndKeepsQuotedStrings) {
  auto j = YamlToJson("a: 1\nb: '1'\nc: true\nd: ~\ne: 1.5\nf: [x, 2]\ng: {h: i}\n");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["a"], 1);
  EXPECT_EQ((*j)["b"], "1");
  EXPECT_EQ((*j)["c"], true);
  EXPECT_TRUE((*j)["d"].is_null());
  EXPECT_EQ((*j)["e"], 1.5);
  EXPECT_EQ((*j)["f"][0], "x");
  EXPECT_EQ((*j)["f"][1], 2);
  EXPECT_EQ((*j)["g"]["h"], "i");
}

TEST(YamlJson, JsonPassesThroughAndBadYamlFails) {
  auto j = YamlToJson(R"({"n": 12345678901234})");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["n"], 12345678901234LL);
  EXPECT_FALSE(YamlToJson("a: [1, 2").ok());
}

}  // namespace
}  // namespace fairbench::apiserver
