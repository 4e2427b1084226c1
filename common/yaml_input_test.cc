#include "common/yaml_input.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <string>

namespace fairbench {
namespace {

using namespace std::string_literals;

TEST(CheckYamlText, PlainUtf8WithTabsAndLineBreaksIsFine) {
  EXPECT_FALSE(CheckYamlText(""));
  EXPECT_FALSE(CheckYamlText("a: 1\r\nb:\t\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80\"\n# \x7f\n"));
}

// Why the check is there: yaml-cpp takes a raw NUL in a plain scalar for
// its escape character and reads "\0_" as the escape "\_", a lone 0xA0
// byte. (If a later yaml-cpp reads it right, this test says so; the check
// stays, as YAML does not allow the character.)
TEST(CheckYamlText, YamlCppMisreadsARawNul) {
  const YAML::Node n = YAML::Load("a: x\0_b\n"s);
  EXPECT_EQ(n["a"].Scalar(),
            "x\xa0"
            "b");
}

TEST(CheckYamlText, AControlCharacterIsNamedWhereItIs) {
  auto fault = CheckYamlText("a: 1\nenv: {\0_X: y}\n"s);
  ASSERT_TRUE(fault);
  EXPECT_EQ(fault->offset, 11u);
  EXPECT_EQ(fault->line, 2);
  EXPECT_EQ(fault->column, 7);
  EXPECT_EQ(fault->what,
            "control character U+0000 (YAML text holds only TAB, LF and CR raw; in a double-quoted string write it "
            "as \\x00)");
  for (char c = 1; c < 0x20; ++c) {
    const bool allowed = c == '\t' || c == '\n' || c == '\r';
    EXPECT_EQ(CheckYamlText("a: "s + c).has_value(), !allowed) << static_cast<int>(c);
  }
  fault = CheckYamlText("a: \x1b[0m\n");
  ASSERT_TRUE(fault);
  EXPECT_EQ(fault->what.substr(0, 24), "control character U+001B");
}

TEST(CheckYamlText, TextThatIsNotUtf8IsNamedWhereItIs) {
  // Columns count bytes: the two-byte e-acute counts 2.
  auto fault = CheckYamlText("a: 1\nname: caf\xc3\xa9x\xffy\n");
  ASSERT_TRUE(fault);
  EXPECT_EQ(fault->line, 2);
  EXPECT_EQ(fault->column, 13);
  EXPECT_EQ(fault->offset, 17u);
  EXPECT_EQ(fault->what, "not UTF-8 text");
  // Overlong, surrogate, beyond U+10FFFF, cut short, a lone continuation byte.
  for (const char* bad : {"\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82", "\x80"}) {
    EXPECT_TRUE(CheckYamlText("a: "s + bad)) << bad;
  }
}

}  // namespace
}  // namespace fairbench
