#include "api/yaml_text.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cstdint>
#include <sstream>
#include <exception>
#include <string>

#include "common/yaml_input.h"

namespace fairbench::api {
namespace {

// Aliases share nodes inside yaml-cpp but are copied here; this bounds the
// copy so that a "billion laughs" document fails instead of eating memory.
constexpr size_t kMaxNodes = 200'000;

bool IsDigits(std::string_view s, bool (*digit)(char)) {
  if (s.empty()) return false;
  for (const char c : s) {
    if (!digit(c)) return false;
  }
  return true;
}
bool Dec(char c) { return c >= '0' && c <= '9'; }
bool Oct(char c) { return c >= '0' && c <= '7'; }
bool Hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

bool IsCoreFloat(std::string_view s) {
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return true;
  std::string_view t = s;
  if (!t.empty() && (t[0] == '+' || t[0] == '-')) t.remove_prefix(1);
  if (t == ".inf" || t == ".Inf" || t == ".INF") return true;
  // [0-9]+(\.[0-9]*)? | \.[0-9]+, then an optional exponent.
  size_t i = 0;
  size_t int_digits = 0;
  while (i < t.size() && Dec(t[i])) {
    ++i;
    ++int_digits;
  }
  size_t frac_digits = 0;
  if (i < t.size() && t[i] == '.') {
    ++i;
    while (i < t.size() && Dec(t[i])) {
      ++i;
      ++frac_digits;
    }
  }
  if (int_digits == 0 && frac_digits == 0) return false;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    if (i == t.size()) return false;
    while (i < t.size() && Dec(t[i])) ++i;
  }
  return i == t.size();
}

class Converter {
 public:
  Result<Node> Convert(const YAML::Node& y, Mark fallback) {
    if (++count_ > kMaxNodes) {
      return Status::InvalidArgument("document too large (more than " + std::to_string(kMaxNodes) +
                                     " nodes once aliases are expanded)");
    }
    Mark mark = ToMark(y.Mark());
    if (!mark.known()) mark = fallback;
    Node out;
    switch (y.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        out = Node::Null();
        // yaml-cpp places an empty value at the next token; its key is a
        // better place to point at.
        mark = fallback.known() ? fallback : mark;
        break;
      case YAML::NodeType::Scalar: out = Node::Scalar(KindOf(y), y.Scalar()); break;
      case YAML::NodeType::Sequence: {
        out = Node::Sequence();
        for (const YAML::Node& item : y) {
          Result<Node> n = Convert(item, mark);
          if (!n.ok()) return n;
          out.Append(std::move(n).value());
        }
        break;
      }
      case YAML::NodeType::Map: {
        out = Node::Map();
        for (auto it = y.begin(); it != y.end(); ++it) {
          const Mark key_mark = ToMark(it->first.Mark());
          if (!it->first.IsScalar()) {
            return Status::InvalidArgument(Where(key_mark) + "invalid YAML: a key must be a plain string");
          }
          Result<Node> n = Convert(it->second, key_mark.known() ? key_mark : mark);
          if (!n.ok()) return n;
          out.Add(it->first.Scalar(), std::move(n).value(), key_mark);
        }
        break;
      }
    }
    out.set_mark(mark);
    return out;
  }

  std::string source;

  std::string Where(Mark m) const {
    if (!m.known()) return source + ": ";
    return source + ":" + std::to_string(m.line) + ":" + std::to_string(m.column) + ": ";
  }

 private:
  static Mark ToMark(const YAML::Mark& m) {
    if (m.line < 0 || m.column < 0) return {};
    return Mark{m.line + 1, m.column + 1};
  }

  static Node::Kind KindOf(const YAML::Node& y) {
    const std::string& tag = y.Tag();
    if (tag == "!" || tag == "tag:yaml.org,2002:str") return Node::Kind::kString;
    if (tag == "tag:yaml.org,2002:int") return Node::Kind::kInt;
    if (tag == "tag:yaml.org,2002:float") return Node::Kind::kFloat;
    if (tag == "tag:yaml.org,2002:bool") return Node::Kind::kBool;
    return ResolvePlainScalar(y.Scalar());
  }

  size_t count_ = 0;
};

// The source line a parser error points at, for the tab hint.
std::string_view LineAt(std::string_view text, int line0) {
  size_t start = 0;
  for (int i = 0; i < line0; ++i) {
    const size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) return {};
    start = nl + 1;
  }
  const size_t end = text.find('\n', start);
  return text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
}

void EmitNode(YAML::Emitter& out, const Node& n);

void EmitString(YAML::Emitter& out, const std::string& s) {
  // yaml-cpp writes "4" or "true" plain, which would read back as a number
  // or a boolean; multi-line strings stay on one line, escaped.
  if (s.empty() || ResolvePlainScalar(s) != Node::Kind::kString || s.find('\n') != std::string::npos) {
    out << YAML::DoubleQuoted << s;
  } else {
    out << s;
  }
}

void EmitNode(YAML::Emitter& out, const Node& n) {
  switch (n.kind()) {
    case Node::Kind::kNull: out << YAML::Null; return;
    case Node::Kind::kBool:
    case Node::Kind::kInt:
    case Node::Kind::kFloat: out << n.text(); return;
    case Node::Kind::kString: EmitString(out, n.text()); return;
    case Node::Kind::kSequence: {
      bool scalars = true;
      for (const Node& item : n.items()) scalars = scalars && item.is_scalar();
      if (scalars) out << YAML::Flow;
      out << YAML::BeginSeq;
      for (const Node& item : n.items()) EmitNode(out, item);
      out << YAML::EndSeq;
      return;
    }
    case Node::Kind::kMap: {
      if (n.entries().empty()) out << YAML::Flow;
      out << YAML::BeginMap;
      for (const Node::Entry& e : n.entries()) {
        out << YAML::Key;
        EmitString(out, e.key);
        out << YAML::Value;
        EmitNode(out, e.value);
      }
      out << YAML::EndMap;
      return;
    }
  }
}

}  // namespace

Node::Kind ResolvePlainScalar(std::string_view s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return Node::Kind::kNull;
  if (s == "true" || s == "True" || s == "TRUE" || s == "false" || s == "False" || s == "FALSE") {
    return Node::Kind::kBool;
  }
  std::string_view t = s;
  if (t[0] == '+' || t[0] == '-') t.remove_prefix(1);
  if (IsDigits(t, Dec)) return Node::Kind::kInt;
  if (s.size() > 2 && s[0] == '0' && s[1] == 'o' && IsDigits(s.substr(2), Oct)) return Node::Kind::kInt;
  if (s.size() > 2 && s[0] == '0' && s[1] == 'x' && IsDigits(s.substr(2), Hex)) return Node::Kind::kInt;
  if (IsCoreFloat(s)) return Node::Kind::kFloat;
  return Node::Kind::kString;
}

// Counts the documents of a stream without building them. It replaces
// YAML::LoadAll, which in yaml-cpp 0.7 never returns on some invalid input
// (a lone ",": the parser reports an empty document at the same place
// again and again, each appended to a growing vector — yaml-cpp issue
// #1040, fixed upstream in 0.8.1 by PR #1319). Here a document that starts
// where the previous one started is that loop, and an error.
class DocumentCounter final : public YAML::EventHandler {
 public:
  int documents = 0;
  YAML::Mark first;     // where the current document's first node is
  bool placed = false;  // first is set

  void OnDocumentStart(const YAML::Mark&) override {
    ++documents;
    placed = false;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { Place(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Place(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string&) override {
    Place(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    Place(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    Place(mark);
  }
  void OnMapEnd() override {}

 private:
  void Place(const YAML::Mark& mark) {
    if (placed) return;
    placed = true;
    first = mark;
  }
};

Result<Node> ParseYaml(std::string_view text, std::string_view source) {
  Converter conv;
  conv.source = std::string(source);
  if (const auto fault = CheckYamlText(text)) {
    return Status::InvalidArgument(conv.Where(Mark{fault->line, fault->column}) + "invalid YAML: " + fault->what);
  }
  try {
    const std::string copy(text);
    std::istringstream in(copy);
    YAML::Parser parser(in);
    DocumentCounter counter;
    int previous_pos = -1;
    while (parser.HandleNextDocument(counter)) {
      // Each document takes at least one byte (a separator): more of them
      // than bytes is the same loop in another guise.
      if ((counter.placed && counter.first.pos == previous_pos) ||
          static_cast<size_t>(counter.documents) > copy.size() + 1) {
        return Status::InvalidArgument(conv.Where(Mark{counter.first.line + 1, counter.first.column + 1}) +
                                       "invalid YAML: unexpected character");
      }
      previous_pos = counter.placed ? counter.first.pos : -1;
    }
    if (counter.documents == 0) return Node::Null();
    if (counter.documents > 1) {
      return Status::InvalidArgument(conv.source + ": expected one YAML document, found " +
                                     std::to_string(counter.documents) + " (separated by ---)");
    }
    return conv.Convert(YAML::Load(copy), Mark{1, 1});
  } catch (const YAML::Exception& e) {
    std::string msg = conv.Where(Mark{e.mark.line + 1, e.mark.column + 1}) + "invalid YAML: " + e.msg;
    if (e.mark.line < 0) msg = conv.source + ": invalid YAML: " + e.msg;
    const std::string_view line = LineAt(text, e.mark.line);
    const size_t first = line.find_first_not_of(" \t");
    if (line.substr(0, first).find('\t') != std::string_view::npos) {
      msg += " (a tab in the indentation; YAML indents with spaces only)";
    }
    return Status::InvalidArgument(std::move(msg));
  } catch (const std::exception& e) {
    return Status::InvalidArgument(conv.source + ": invalid YAML: " + e.what());
  }
}

std::string EmitYaml(const Node& node) {
  YAML::Emitter out;
  out.SetIndent(2);
  EmitNode(out, node);
  std::string s = out.c_str();
  if (!s.empty() && s.back() != '\n') s += '\n';
  return s;
}

}  // namespace fairbench::api
