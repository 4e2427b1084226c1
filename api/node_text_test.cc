// YAML and JSON text to Node and back: scalar kinds, positions, syntax
// errors, quoting on output.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "api/json_text.h"
#include "api/node.h"
#include "api/yaml_text.h"

namespace fairbench::api {
namespace {

TEST(YamlTextTest, ResolvesScalarsWithTheCoreSchema) {
  Result<Node> n = ParseYaml(
      "a: 4\nb: \"4\"\nc: true\nd: ~\ne: 1.5\nf: 0x1f\ng: yes\nh: 30s\ni: !!str 7\nj: 'x'\nk:\nl: -3\nm: .inf\n", "t");
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  const auto kind = [&](const char* key) { return n->Find(key)->kind(); };
  EXPECT_EQ(kind("a"), Node::Kind::kInt);
  EXPECT_EQ(kind("b"), Node::Kind::kString);
  EXPECT_EQ(kind("c"), Node::Kind::kBool);
  EXPECT_EQ(kind("d"), Node::Kind::kNull);
  EXPECT_EQ(kind("e"), Node::Kind::kFloat);
  EXPECT_EQ(kind("f"), Node::Kind::kInt);
  EXPECT_EQ(kind("g"), Node::Kind::kString);  // YAML 1.2: "yes" is not a boolean
  EXPECT_EQ(kind("h"), Node::Kind::kString);
  EXPECT_EQ(kind("i"), Node::Kind::kString);
  EXPECT_EQ(kind("j"), Node::Kind::kString);
  EXPECT_EQ(kind("k"), Node::Kind::kNull);
  EXPECT_EQ(kind("l"), Node::Kind::kInt);
  EXPECT_EQ(kind("m"), Node::Kind::kFloat);
  EXPECT_EQ(n->Find("b")->Describe(), "\"4\"");
  EXPECT_EQ(n->Find("a")->Describe(), "4");
}

TEST(YamlTextTest, KeepsPositions) {
  Result<Node> n = ParseYaml("spec:\n  load:\n    threads: four\n  targets:\n  - name: x\n", "t");
  ASSERT_TRUE(n.ok());
  const Node& load = *n->Find("spec")->Find("load");
  EXPECT_EQ(load.Find("threads")->mark(), (Mark{3, 14}));
  EXPECT_EQ(load.entries()[0].key_mark, (Mark{3, 5}));
  const Node& target = n->Find("spec")->Find("targets")->items()[0];
  EXPECT_EQ(target.mark(), (Mark{5, 5}));
}

TEST(YamlTextTest, EmptyValuePointsAtItsKey) {
  Result<Node> n = ParseYaml("a:\nb: 1\n", "t");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->Find("a")->mark(), (Mark{1, 1}));
}

TEST(YamlTextTest, SyntaxErrorsNameFileLineAndColumn) {
  EXPECT_EQ(ParseYaml("a: [1, 2\nb: 3\n", "run.yaml").status().message(),
            "run.yaml:2:2: invalid YAML: end of sequence flow not found");
  EXPECT_EQ(ParseYaml("spec:\n\tload: 1\n", "run.yaml").status().message(),
            "run.yaml:2:6: invalid YAML: illegal map value (a tab in the indentation; YAML indents with spaces only)");
  EXPECT_EQ(ParseYaml("a: 1\n---\nb: 2\n", "run.yaml").status().message(),
            "run.yaml: expected one YAML document, found 2 (separated by ---)");
  EXPECT_EQ(ParseYaml("key: [1, {a: 2]\n", "r.yaml").status().code(), Status::Code::kInvalidArgument);
}

// Found by fuzz/run_file_fuzzer: yaml-cpp 0.7's LoadAll never returns on
// a lone "," (it appends an empty document at the same place forever,
// yaml-cpp issue #1040), eating memory until the process dies. Run in a
// child with a time and memory limit, so that the bug fails the test
// instead of the machine.
// In a child: exits 0 when ParseYaml refuses `text` as invalid YAML within
// 10 s and 1 GiB.
[[noreturn]] void ExitZeroIfRefused(const char* text) {
  alarm(10);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  // (AddressSanitizer and ThreadSanitizer map terabytes of address space
  // for their shadow memory, so under this limit their allocators fail at
  // once: there the alarm alone bounds the child.)
  rlimit memory{};
  memory.rlim_cur = memory.rlim_max = rlim_t{1} << 30;
  setrlimit(RLIMIT_AS, &memory);
#endif
  Result<Node> n = ParseYaml(text, "run.yaml");
  std::_Exit(!n.ok() && n.status().message().find("invalid YAML") != std::string::npos ? 0 : 1);
}

TEST(YamlTextDeathTest, InputThatLoopsYamlCppsLoadAllIsAnError) {
  for (const char* text : {",", "\n,\n    ", "a: 1\n,\n", "- !+(.,.)"}) {
    EXPECT_EXIT(ExitZeroIfRefused(text), ::testing::ExitedWithCode(0), "") << text;
  }
}

// Found by fuzz/run_file_fuzzer: yaml-cpp passes any bytes through, and a
// run holding a string that is not UTF-8 loaded, then made nlohmann::json
// throw (an uncaught type_error) when written as JSON — the operator's
// object, the run's record. The loader refuses it where it is.
TEST(YamlTextTest, TextThatIsNotUtf8IsRefusedWhereItIs) {
  EXPECT_EQ(ParseYaml("a: 1\nname: x\xffy\n", "run.yaml").status().message(),
            "run.yaml:2:8: invalid YAML: not UTF-8 text");
  for (const char* bad : {"\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82", "\x80"}) {
    EXPECT_FALSE(ParseYaml(std::string("a: ") + bad + "\n", "t").ok()) << bad;
  }
  Result<Node> ok = ParseYaml("name: \"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80\"\n", "t");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->Find("name")->text(), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80");
}

// Found by fuzz/run_file_fuzzer: yaml-cpp reads a raw NUL in a plain
// scalar as its escape character ("\0_" became a lone byte 0xA0), so a run
// loaded whose canonical YAML did not. A raw control character is not YAML:
// the loader refuses it where it is.
TEST(YamlTextTest, ARawControlCharacterIsRefusedWhereItIs) {
  const std::string text("spec:\n  env: { \0_LIBRARY_PATH: /opt/lib}\n", 41);
  EXPECT_EQ(ParseYaml(text, "run.yaml").status().message(),
            "run.yaml:2:10: invalid YAML: control character U+0000 (YAML text holds only TAB, LF and CR raw; in a "
            "double-quoted string write it as \\x00)");
  Result<Node> escaped = ParseYaml("name: \"a\\x00b\\x1bc\"\n", "t");
  ASSERT_TRUE(escaped.ok()) << escaped.status().message();
  EXPECT_EQ(escaped->Find("name")->text(), std::string("a\0b\x1b"
                                                       "c",
                                                       5));
}

TEST(YamlTextTest, EmptyTextIsNull) {
  EXPECT_TRUE(ParseYaml("", "t")->is_null());
  EXPECT_TRUE(ParseYaml("# only a comment\n", "t")->is_null());
  EXPECT_TRUE(ParseYaml("---\n", "t")->is_null());
}

TEST(YamlTextTest, RefusesAliasBombs) {
  std::string doc = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 8; ++i) {
    const std::string prev = "*a" + std::to_string(i - 1);
    doc += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + prev + ", " + prev + ", " + prev + ", " +
           prev + ", " + prev + ", " + prev + ", " + prev + ", " + prev + ", " + prev + ", " + prev + "]\n";
  }
  Result<Node> n = ParseYaml(doc, "bomb.yaml");
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("document too large"), std::string::npos) << n.status().message();
}

TEST(YamlTextTest, EmitQuotesWhatWouldChangeType) {
  Node m = Node::Map();
  for (const char* s : {"4", "true", "", "null", "~", "1.5", "a: b", "- x", "#c", "multi\nline", " lead", "{port}",
                        "0x10", "plain", "µs", "[x]", "'q'", "\"dq\""}) {
    m.Add(std::string("k") + std::to_string(m.entries().size()), Node::String(s));
  }
  m.Add("200", Node::Int(200));
  m.Add("list", Node::Sequence());
  m.Add("obj", Node::Map());
  Node seq = Node::Sequence();
  seq.Append(Node::Int(1));
  seq.Append(Node::String("2"));
  m.Add("levels", seq);
  const std::string text = EmitYaml(m);
  Result<Node> back = ParseYaml(text, "t");
  ASSERT_TRUE(back.ok()) << text;
  EXPECT_EQ(*back, m) << text;
  EXPECT_NE(text.find("levels: [1, \"2\"]"), std::string::npos) << text;
  EXPECT_NE(text.find("k0: \"4\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"200\": 200"), std::string::npos) << text;
}

TEST(JsonTextTest, ParsesInOrderAndReportsErrors) {
  Result<Node> n = ParseJson(R"({"b": 1, "a": [true, null, 1.5, "x", -2, 18446744073709551615]})", "run.json");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->entries()[0].key, "b");
  const Node& a = *n->Find("a");
  EXPECT_EQ(a.items()[0].kind(), Node::Kind::kBool);
  EXPECT_EQ(a.items()[1].kind(), Node::Kind::kNull);
  EXPECT_EQ(a.items()[2].kind(), Node::Kind::kFloat);
  EXPECT_EQ(a.items()[3].kind(), Node::Kind::kString);
  EXPECT_EQ(a.items()[4].text(), "-2");
  EXPECT_EQ(a.items()[5].text(), "18446744073709551615");
  EXPECT_FALSE(a.mark().known());

  EXPECT_EQ(ParseJson("{\"a\": 1,\n  \"b\": [1, 2,]\n}", "run.json").status().message(),
            "run.json:2:14: invalid JSON: syntax error while parsing value - unexpected ']'; expected '[', '{', or "
            "a literal");
  EXPECT_FALSE(ParseJson("", "run.json").ok());
}

// JSON nested 50,000 deep (a run file, or results.json given to compare)
// is refused with a line, not walked until the stack runs out; 1,000 levels
// still parse. Catches: the bound dropped (exit 139 from `fairbench run
// deep.json`), an off-by-one that refuses the deepest legal document.
TEST(JsonTextTest, NestingIsBounded) {
  auto nested = [](int depth, const char* open, const char* close) {
    std::string t;
    for (int i = 0; i < depth; ++i) t += open;
    t += "1";
    for (int i = 0; i < depth; ++i) t += close;
    return t;
  };
  for (const auto& [open, close] : {std::pair{"{\"a\":", "}"}, std::pair{"[", "]"}}) {
    Result<Node> deep = ParseJson(nested(50000, open, close), "deep.json");
    ASSERT_FALSE(deep.ok());
    EXPECT_EQ(deep.status().message(), "deep.json: invalid JSON: nested deeper than 1000 levels");
    EXPECT_TRUE(ParseJson(nested(kMaxJsonDepth, open, close), "ok.json").ok()) << open;
    EXPECT_FALSE(ParseJson(nested(kMaxJsonDepth + 1, open, close), "ok.json").ok()) << open;
  }
}

TEST(JsonTextTest, RoundTrips) {
  Result<Node> n = ParseJson(R"({"s": "4", "i": 4, "f": 0.25, "b": false, "n": null, "l": [1, {"x": "y"}]})", "t");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(EmitJson(*n, -1), R"({"s":"4","i":4,"f":0.25,"b":false,"n":null,"l":[1,{"x":"y"}]})");
  Result<Node> back = ParseJson(EmitJson(*n), "t");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, *n);
  // And through YAML: every kind survives.
  Result<Node> via_yaml = ParseYaml(EmitYaml(*n), "t");
  ASSERT_TRUE(via_yaml.ok());
  EXPECT_EQ(*via_yaml, *n);
}

}  // namespace
}  // namespace fairbench::api
