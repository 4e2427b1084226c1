// Node: a format-neutral document tree between text (YAML, JSON) and the
// typed BenchmarkRun.
//
// Both codecs read text into a Node and write a Node out as text, so the
// typed decoding, the defaults, the field names and the error messages exist
// once, whatever the format. A Node remembers where it came from (line and
// column, 1-based, when parsed from YAML) so that errors can point into the
// user's file. Scalars keep the text as written plus the kind the format
// gave them: in YAML a plain `4` is an integer and a quoted "4" is a string,
// exactly as the Kubernetes API server would see the same file.
//
// Plain value type; copy freely.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fairbench::api {

// A position in a source text; 1-based. line == 0 means unknown.
struct Mark {
  int line = 0;
  int column = 0;
  bool known() const { return line > 0; }
  friend bool operator==(const Mark&, const Mark&) = default;
};

class Node {
 public:
  enum class Kind { kNull, kBool, kInt, kFloat, kString, kSequence, kMap };

  struct Entry;

  // The inline functions that make a Node are defined after Entry: clang
  // instantiates std::vector<Entry>'s members where they are written.
  Node();
  static Node Null();
  static Node Bool(bool b);
  static Node Int(long long v);
  static Node Uint(unsigned long long v);
  static Node Float(double v);  // shortest text that reads back as the same double
  static Node String(std::string s);
  static Node Scalar(Kind kind, std::string text);
  static Node Sequence();
  static Node Map();

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool is_scalar() const { return kind_ != Kind::kSequence && kind_ != Kind::kMap; }
  bool is_sequence() const { return kind_ == Kind::kSequence; }
  bool is_map() const { return kind_ == Kind::kMap; }

  // The scalar as written ("4", "30s", "true"); empty for null and collections.
  const std::string& text() const { return text_; }

  // Sequence items, in order.
  const std::vector<Node>& items() const { return items_; }
  void Append(Node item);

  // Map entries in document order. Keys are strings; a map read from YAML
  // may hold a key twice (the parsers report that, the tree keeps both).
  const std::vector<Entry>& entries() const { return entries_; }
  void Add(std::string key, Node value, Mark key_mark = {});
  // The first entry with this key, or nullptr.
  const Node* Find(std::string_view key) const;

  // Where the value starts in the source, when known.
  const Mark& mark() const { return mark_; }
  void set_mark(Mark m) { mark_ = m; }

  // "an object", "a list", "null", or the scalar quoted when it is a string
  // ("\"four\"") and bare otherwise (4, true): the "got …" of an error.
  std::string Describe() const;

  friend bool operator==(const Node& a, const Node& b);

 private:
  Kind kind_ = Kind::kNull;
  std::string text_;
  std::vector<Node> items_;
  std::vector<Entry> entries_;
  Mark mark_;
};

struct Node::Entry {
  std::string key;
  Mark key_mark;
  Node value;
};

inline Node::Node() = default;
inline Node Node::Null() { return Node(); }
inline Node Node::Bool(bool b) { return Scalar(Kind::kBool, b ? "true" : "false"); }
inline Node Node::Int(long long v) { return Scalar(Kind::kInt, std::to_string(v)); }
inline Node Node::Uint(unsigned long long v) { return Scalar(Kind::kInt, std::to_string(v)); }
inline Node Node::String(std::string s) { return Scalar(Kind::kString, std::move(s)); }
inline void Node::Append(Node item) { items_.push_back(std::move(item)); }
inline Node Node::Sequence() {
  Node n;
  n.kind_ = Kind::kSequence;
  return n;
}
inline Node Node::Map() {
  Node n;
  n.kind_ = Kind::kMap;
  return n;
}

// Quotes and escapes a string the way JSON does: "a\"b".
std::string Quote(std::string_view s);

}  // namespace fairbench::api
