#include "testing/kubetest/yaml_json.h"

#include <gtest/gtest.h>

namespace fairbench::kubetest {
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

// As the API server, whose reader (libyaml's, ported to Go) checks every
// character before parsing; yaml-cpp would take "\0_" for the escape "\_"
// (a lone byte 0xA0) and pass any bytes through. Each message and the order
// of the checks (a sequence cut short by the end of the text is "incomplete"
// before its octets are looked at) are go-yaml's.
TEST(YamlJson, ControlCharactersAndTextThatIsNotUtf8AreRefused) {
  const auto message = [](std::string_view text) { return std::string(YamlToJson(text).status().message()); };
  const std::string prefix = "error converting YAML to JSON: yaml: ";
  EXPECT_EQ(message(std::string("a: x\0_b\n", 8)), prefix + "control characters are not allowed");
  EXPECT_EQ(message("a: x\x7fy\n"), prefix + "control characters are not allowed");          // DEL
  EXPECT_EQ(message("a: x\xc2\x80y\n"), prefix + "control characters are not allowed");      // a C1 control
  EXPECT_EQ(message("a: x\xef\xbf\xbey\n"), prefix + "control characters are not allowed");  // U+FFFE
  EXPECT_EQ(message("a: \xff\n"), prefix + "invalid leading UTF-8 octet");
  EXPECT_EQ(message("a: \x80\n"), prefix + "invalid leading UTF-8 octet");
  EXPECT_EQ(message("a: caf\xe9 au lait\n"), prefix + "invalid trailing UTF-8 octet");
  EXPECT_EQ(message("a: caf\xe9\n"), prefix + "incomplete UTF-8 octet sequence");  // 3 octets, 2 left
  EXPECT_EQ(message("a: \xc3"), prefix + "incomplete UTF-8 octet sequence");
  EXPECT_EQ(message("a: \xc0\x80\n"), prefix + "invalid length of a UTF-8 sequence");
  EXPECT_EQ(message("a: \xed\xa0\x80\n"), prefix + "invalid Unicode character");      // a surrogate
  EXPECT_EQ(message("a: \xf4\x90\x80\x80\n"), prefix + "invalid Unicode character");  // past U+10FFFF
  auto nel = YamlToJson("a: x\xc2\x85y \xef\xbf\xbd \xf0\x9f\x98\x80\n");  // NEL, U+FFFD, U+1F600 are printable
  ASSERT_TRUE(nel.ok()) << nel.status().message();
  auto ok = YamlToJson("a: \"x\\0b\"\nc: caf\xc3\xa9\n");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ((*ok)["a"], std::string("x\0b", 3));
  EXPECT_EQ((*ok)["c"], "caf\xc3\xa9");
}

}  // namespace
}  // namespace fairbench::kubetest
