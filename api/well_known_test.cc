// The API's words are spelt once: every string literal in the product's
// sources (agent/, common/, controller/, tests excluded) is read, and one
// that spells a word of well_known.h (a condition type, a reason, a cell
// reason), or any fairbench.dev/ or app.kubernetes.io/ key, fails the test
// with its file and line. Two exceptions, both other vocabularies by
// design: a line that spells its own enumerator ({RunPhase::kFailed,
// "Failed"}, case Code::kCancelled: return "Cancelled"), and
// controller/kube/api_fields.h (Kubernetes' words: the pod phase "Failed").
#include "api/well_known.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fairbench::api {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = FAIRBENCH_SOURCE_DIR;

struct Literal {
  std::string text;  // as written, escapes not undone
  int line = 0;
};

// The string literals of C++ source text: comments, character literals and
// raw strings are understood; adjacent literals are kept apart.
std::vector<Literal> Literals(const std::string& src) {
  std::vector<Literal> out;
  int line = 1;
  size_t i = 0;
  auto newlines = [&](size_t from, size_t to) {
    line +=
        static_cast<int>(std::count(src.begin() + static_cast<long>(from), src.begin() + static_cast<long>(to), '\n'));
  };
  while (i < src.size()) {
    const char c = src[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (src.compare(i, 2, "//") == 0) {
      const size_t end = src.find('\n', i);
      i = end == std::string::npos ? src.size() : end;
    } else if (src.compare(i, 2, "/*") == 0) {
      const size_t end = src.find("*/", i + 2);
      const size_t stop = end == std::string::npos ? src.size() : end + 2;
      newlines(i, stop);
      i = stop;
    } else if (c == 'R' && i + 1 < src.size() && src[i + 1] == '"' &&
               (i == 0 || !(std::isalnum(static_cast<unsigned char>(src[i - 1])) || src[i - 1] == '_'))) {
      const size_t open = src.find('(', i + 2);
      if (open == std::string::npos) break;
      const std::string close = ")" + src.substr(i + 2, open - i - 2) + "\"";
      const size_t end = src.find(close, open + 1);
      const size_t stop = end == std::string::npos ? src.size() : end;
      out.push_back({src.substr(open + 1, stop - open - 1), line});
      newlines(i, stop);
      i = stop == src.size() ? stop : stop + close.size();
    } else if (c == '"' || c == '\'') {
      size_t j = i + 1;
      std::string text;
      while (j < src.size() && src[j] != c && src[j] != '\n') {
        if (src[j] == '\\' && j + 1 < src.size()) text += src[j++];
        text += src[j++];
      }
      if (c == '"') out.push_back({text, line});
      i = j + 1;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      // A digit separator (1'000) is not a character literal.
      while (i < src.size() && (std::isalnum(static_cast<unsigned char>(src[i])) || src[i] == '\'' || src[i] == '.'))
        ++i;
    } else {
      ++i;
    }
  }
  return out;
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// The words well_known.h spells: CamelCase literals.
std::set<std::string> Words() {
  std::set<std::string> out;
  static const std::regex kWord("[A-Z][A-Za-z0-9]+");
  for (const Literal& l : Literals(Slurp(kSource / "api/well_known.h"))) {
    if (std::regex_match(l.text, kWord)) out.insert(l.text);
  }
  return out;
}

// "file:line: \"literal\"" for each literal of `text` that spells an API
// word or key outside well_known.h.
std::vector<std::string> Violations(const std::string& file, const std::string& text,
                                    const std::set<std::string>& words) {
  static const std::regex kKey(R"((fairbench\.dev|app\.kubernetes\.io)/(?!v[0-9]))");
  std::vector<std::string> out;
  const std::vector<std::string> lines = Lines(text);
  for (const Literal& l : Literals(text)) {
    const std::string& where = l.line >= 1 && static_cast<size_t>(l.line) <= lines.size() ? lines[l.line - 1] : "";
    const bool key = std::regex_search(l.text, kKey);
    const bool word = words.count(l.text) != 0 && where.find("::k" + l.text) == std::string::npos;
    if (key || word) out.push_back(file + ":" + std::to_string(l.line) + ": \"" + l.text + "\"");
  }
  return out;
}

// Catches: the lexer missing literals (a test that could never fail) —
// a literal after a comment, in a raw string and beside a digit separator
// is found; one in a comment, and an enumerator's own spelling, is not.
TEST(WellKnownTest, FindsTheLiteralsItShould) {
  const std::set<std::string> words = Words();
  const std::string text =
      "int n = 1'000; // \"Queued\" in a comment\n"
      "c.reason = \"SlotLost\";  /* \"Complete\" */\n"
      "auto s = R\"(fairbench.dev/run=x)\";\n"
      "{RunPhase::kQueued, \"Queued\"},\n"
      "auto v = \"fairbench.dev/v1alpha1\"; auto q = 'x';\n";
  EXPECT_EQ(Violations("x.cc", text, words),
            (std::vector<std::string>{"x.cc:2: \"SlotLost\"", "x.cc:3: \"fairbench.dev/run=x\""}));
  // Every kind of word is there to be found.
  for (const char* w : {"Progressing", "InvalidSpec", "TargetOOMKilled", "SlotLost", "AgentTimeout"}) {
    EXPECT_EQ(words.count(w), 1u) << w;
  }
}

// Catches: a reason, condition, label or annotation spelt again outside
// well_known.h (orchestrator.cc's `reason == "SlotLost"`, a label in a
// header of its own).
TEST(WellKnownTest, NoProductSourceSpellsTheApisWordsAgain) {
  const std::set<std::string> words = Words();
  std::vector<std::string> found;
  size_t files = 0;
  for (const char* dir : {"agent", "api", "common", "controller", "host"}) {
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(kSource / dir)) {
      const fs::path& p = e.path();
      const std::string name = p.filename().string();
      if (!e.is_regular_file() || (p.extension() != ".h" && p.extension() != ".cc")) continue;
      if (name.find("test") != std::string::npos) continue;  // tests check the spellings from outside
      const std::string rel = fs::relative(p, kSource).string();
      if (rel == "api/well_known.h" || rel == "controller/kube/api_fields.h") continue;
      ++files;
      for (std::string& v : Violations(rel, Slurp(p), words)) found.push_back(std::move(v));
    }
  }
  EXPECT_GT(files, 200u);
  std::string all;
  for (const std::string& v : found) all += v + "\n";
  EXPECT_TRUE(found.empty()) << "spelt outside api/well_known.h:\n" << all;
}

}  // namespace
}  // namespace fairbench::api
