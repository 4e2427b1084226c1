#include "testing/apiserver/selectors.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace fairbench::apiserver {
namespace {

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

// Splits on commas that are not inside parentheses.
Result<std::vector<std::string>> SplitTop(std::string_view text) {
  std::vector<std::string> parts;
  int depth = 0;
  std::string cur;
  for (char c : text) {
    if (c == '(') ++depth;
    if (c == ')') {
      if (--depth < 0) return Status::InvalidArgument("unable to parse requirement: unbalanced ')'");
    }
    if (c == ',' && depth == 0) {
      parts.push_back(Trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (depth != 0) return Status::InvalidArgument("unable to parse requirement: unbalanced '('");
  parts.push_back(Trim(cur));
  return parts;
}

bool ValidKey(const std::string& k) {
  if (k.empty() || k.size() > 316) return false;
  for (char c : k) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '/')) return false;
  }
  return true;
}

bool ValidValue(const std::string& v) {
  if (v.size() > 63) return false;
  for (char c : v) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
  }
  return true;
}

Status Bad(const std::string& part, const std::string& why) {
  return Status::InvalidArgument("unable to parse requirement: \"" + part + "\": " + why);
}

}  // namespace

Result<LabelSelector> LabelSelector::Parse(std::string_view text) {
  LabelSelector sel;
  if (Trim(text).empty()) return sel;
  auto parts = SplitTop(text);
  if (!parts.ok()) return parts.status();
  for (const auto& part : *parts) {
    if (part.empty()) return Bad(part, "empty requirement");
    Requirement r;
    if (part[0] == '!') {
      r.key = Trim(part.substr(1));
      r.op = Op::kDoesNotExist;
    } else {
      // Set-based forms: "key in (a,b)" / "key notin (a)".
      size_t paren = part.find('(');
      if (paren != std::string::npos) {
        std::string head = Trim(part.substr(0, paren));
        if (part.back() != ')') return Bad(part, "expected ')'");
        size_t sp = head.find_last_of(" \t");
        if (sp == std::string::npos) return Bad(part, "expected 'in' or 'notin'");
        std::string op = Trim(head.substr(sp + 1));
        r.key = Trim(head.substr(0, sp));
        if (op == "in") {
          r.op = Op::kIn;
        } else if (op == "notin") {
          r.op = Op::kNotIn;
        } else {
          return Bad(part, "expected 'in' or 'notin', found '" + op + "'");
        }
        std::string inner = part.substr(paren + 1, part.size() - paren - 2);
        size_t start = 0;
        while (start <= inner.size()) {
          size_t comma = inner.find(',', start);
          std::string v = Trim(inner.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
          if (!ValidValue(v)) return Bad(part, "invalid label value '" + v + "'");
          if (!v.empty() || inner.find_first_not_of(" \t") == std::string::npos) r.values.insert(v);
          if (comma == std::string::npos) break;
          start = comma + 1;
        }
        if (r.values.empty()) return Bad(part, "for 'in', 'notin' operators, values set can't be empty");
      } else {
        size_t pos;
        if ((pos = part.find("!=")) != std::string::npos) {
          r.op = Op::kNotEquals;
          r.key = Trim(part.substr(0, pos));
          r.values.insert(Trim(part.substr(pos + 2)));
        } else if ((pos = part.find("==")) != std::string::npos) {
          r.op = Op::kEquals;
          r.key = Trim(part.substr(0, pos));
          r.values.insert(Trim(part.substr(pos + 2)));
        } else if ((pos = part.find('=')) != std::string::npos) {
          r.op = Op::kEquals;
          r.key = Trim(part.substr(0, pos));
          r.values.insert(Trim(part.substr(pos + 1)));
        } else if ((pos = part.find_first_of("<>")) != std::string::npos) {
          r.op = part[pos] == '>' ? Op::kGreater : Op::kLess;
          r.key = Trim(part.substr(0, pos));
          std::string v = Trim(part.substr(pos + 1));
          char* end = nullptr;
          std::strtoll(v.c_str(), &end, 10);
          if (v.empty() || *end != '\0') return Bad(part, "for 'Gt', 'Lt' operators, the value must be an integer");
          r.values.insert(v);
        } else {
          r.key = part;
          r.op = Op::kExists;
        }
        for (const auto& v : r.values) {
          if (!ValidValue(v)) return Bad(part, "invalid label value '" + v + "'");
        }
      }
    }
    if (!ValidKey(r.key)) return Bad(part, "invalid label key '" + r.key + "'");
    sel.reqs_.push_back(std::move(r));
  }
  return sel;
}

bool LabelSelector::Matches(const nlohmann::json& labels) const {
  for (const auto& r : reqs_) {
    bool has = labels.is_object() && labels.contains(r.key) && labels[r.key].is_string();
    std::string v = has ? labels[r.key].get<std::string>() : "";
    switch (r.op) {
      case Op::kEquals:
      case Op::kIn:
        if (!has || !r.values.count(v)) return false;
        break;
      case Op::kNotEquals:
      case Op::kNotIn:
        if (has && r.values.count(v)) return false;
        break;
      case Op::kExists:
        if (!has) return false;
        break;
      case Op::kDoesNotExist:
        if (has) return false;
        break;
      case Op::kGreater:
      case Op::kLess: {
        if (!has) return false;
        char* end = nullptr;
        long long lv = std::strtoll(v.c_str(), &end, 10);
        if (v.empty() || *end != '\0') return false;
        long long rv = std::strtoll(r.values.begin()->c_str(), nullptr, 10);
        if (r.op == Op::kGreater ? !(lv > rv) : !(lv < rv)) return false;
        break;
      }
    }
  }
  return true;
}

Result<FieldSelector> FieldSelector::Parse(std::string_view text, const std::vector<std::string>& allowed) {
  FieldSelector sel;
  if (Trim(text).empty()) return sel;
  auto parts = SplitTop(text);
  if (!parts.ok()) return parts.status();
  for (const auto& part : *parts) {
    Requirement r;
    size_t pos;
    if ((pos = part.find("!=")) != std::string::npos) {
      r.equals = false;
      r.field = Trim(part.substr(0, pos));
      r.value = Trim(part.substr(pos + 2));
    } else if ((pos = part.find("==")) != std::string::npos) {
      r.equals = true;
      r.field = Trim(part.substr(0, pos));
      r.value = Trim(part.substr(pos + 2));
    } else if ((pos = part.find('=')) != std::string::npos) {
      r.equals = true;
      r.field = Trim(part.substr(0, pos));
      r.value = Trim(part.substr(pos + 1));
    } else {
      return Status::InvalidArgument("invalid selector: '" + std::string(text) +
                                     "'; can't understand '" + part + "'");
    }
    if (std::find(allowed.begin(), allowed.end(), r.field) == allowed.end()) {
      return Status::InvalidArgument("field label not supported: " + r.field);
    }
    sel.reqs_.push_back(std::move(r));
  }
  return sel;
}

std::string FieldText(const nlohmann::json& object, const std::string& dotted) {
  const nlohmann::json* cur = &object;
  size_t start = 0;
  while (start <= dotted.size()) {
    size_t dot = dotted.find('.', start);
    std::string key = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!cur->is_object() || !cur->contains(key)) return "";
    cur = &(*cur)[key];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (cur->is_string()) return cur->get<std::string>();
  if (cur->is_null()) return "";
  return cur->dump();
}

bool FieldSelector::Matches(const nlohmann::json& object) const {
  for (const auto& r : reqs_) {
    if ((FieldText(object, r.field) == r.value) != r.equals) return false;
  }
  return true;
}

}  // namespace fairbench::apiserver
