#include "api/node.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace fairbench::api {

Node Node::Float(double v) {
  if (std::isnan(v)) return Scalar(Kind::kFloat, ".nan");
  if (std::isinf(v)) return Scalar(Kind::kFloat, v > 0 ? ".inf" : "-.inf");
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return Scalar(Kind::kFloat, std::string(buf, res.ptr));
}

Node Node::Scalar(Kind kind, std::string text) {
  Node n;
  n.kind_ = kind;
  n.text_ = std::move(text);
  return n;
}

void Node::Add(std::string key, Node value, Mark key_mark) {
  entries_.push_back(Entry{std::move(key), key_mark, std::move(value)});
}

const Node* Node::Find(std::string_view key) const {
  for (const Entry& e : entries_) {
    if (e.key == key) return &e.value;
  }
  return nullptr;
}

std::string Node::Describe() const {
  switch (kind_) {
    case Kind::kNull: return "null";
    case Kind::kSequence: return "a list";
    case Kind::kMap: return "an object";
    case Kind::kString: return Quote(text_);
    case Kind::kBool:
    case Kind::kInt:
    case Kind::kFloat: return text_;
  }
  return text_;
}

bool operator==(const Node& a, const Node& b) {
  if (a.kind_ != b.kind_ || a.text_ != b.text_ || a.items_ != b.items_) return false;
  if (a.entries_.size() != b.entries_.size()) return false;
  for (size_t i = 0; i < a.entries_.size(); ++i) {
    if (a.entries_[i].key != b.entries_[i].key || !(a.entries_[i].value == b.entries_[i].value)) return false;
  }
  return true;
}

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

}  // namespace fairbench::api
