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

// As the API server: yaml-cpp would take "\0_" for the escape "\_" (a lone
// byte 0xA0) and pass any bytes through.
TEST(YamlJson, ControlCharactersAndTextThatIsNotUtf8AreRefused) {
  EXPECT_EQ(YamlToJson(std::string("a: x\0_b\n", 8)).status().message(),
            "error converting YAML to JSON: yaml: control characters are not allowed");
  EXPECT_EQ(YamlToJson("a: caf\xe9\n").status().message(),
            "error converting YAML to JSON: yaml: invalid trailing UTF-8 octet");
  EXPECT_EQ(YamlToJson("a: \xff\n").status().message(), "error converting YAML to JSON: yaml: invalid leading UTF-8 octet");
  auto ok = YamlToJson("a: \"x\\0b\"\nc: caf\xc3\xa9\n");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ((*ok)["a"], std::string("x\0b", 3));
  EXPECT_EQ((*ok)["c"], "caf\xc3\xa9");
}

}  // namespace
}  // namespace fairbench::apiserver
