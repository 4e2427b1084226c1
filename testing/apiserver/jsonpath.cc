#include "testing/apiserver/jsonpath.h"

#include <cctype>
#include <cstdlib>
#include <string>

namespace fairbench::apiserver {
namespace {

using nlohmann::json;

struct Filter {
  std::vector<std::string> field;  // @.a.b → {a, b}
  bool equals = true;
  json value;
};

struct Step {
  enum class Kind { kKey, kIndex, kAll, kFilter } kind;
  std::string key;
  long index = 0;
  Filter filter;
};

Result<json> ParseLiteral(std::string_view s) {
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front()) {
    return json(std::string(s.substr(1, s.size() - 2)));
  }
  auto j = json::parse(s.begin(), s.end(), nullptr, false);
  if (j.is_discarded()) return Status::InvalidArgument("bad literal " + std::string(s));
  return j;
}

Result<std::vector<Step>> Parse(std::string_view p) {
  std::vector<Step> steps;
  // Printer columns are written with or without "{...}" and a leading '$'.
  if (!p.empty() && p.front() == '{' && p.back() == '}') p = p.substr(1, p.size() - 2);
  if (!p.empty() && p.front() == '$') p.remove_prefix(1);
  size_t i = 0;
  while (i < p.size()) {
    if (p[i] == '.') {
      ++i;
      size_t b = i;
      while (i < p.size() && p[i] != '.' && p[i] != '[') ++i;
      if (i == b) return Status::InvalidArgument("empty field name in " + std::string(p));
      Step s{Step::Kind::kKey, std::string(p.substr(b, i - b)), 0, {}};
      if (s.key == "*") s.kind = Step::Kind::kAll;
      steps.push_back(std::move(s));
    } else if (p[i] == '[') {
      size_t close = p.find(']', i);
      if (p.compare(i, 3, "[?(") == 0) close = p.find(")]", i) + 1;
      if (close == std::string_view::npos || close == 0) return Status::InvalidArgument("unclosed [ in " + std::string(p));
      std::string_view inner = p.substr(i + 1, close - i - 1);
      i = close + 1;
      if (inner == "*") {
        steps.push_back({Step::Kind::kAll, "", 0, {}});
      } else if (!inner.empty() && (inner.front() == '\'' || inner.front() == '"')) {
        steps.push_back({Step::Kind::kKey, std::string(inner.substr(1, inner.size() - 2)), 0, {}});
      } else if (inner.size() > 3 && inner.substr(0, 2) == "?(" && inner.back() == ')') {
        std::string_view expr = inner.substr(2, inner.size() - 3);
        size_t op = expr.find("==");
        bool eq = true;
        if (op == std::string_view::npos) {
          op = expr.find("!=");
          eq = false;
        }
        if (op == std::string_view::npos) return Status::InvalidArgument("unsupported filter " + std::string(expr));
        std::string lhs(expr.substr(0, op));
        while (!lhs.empty() && std::isspace(static_cast<unsigned char>(lhs.back()))) lhs.pop_back();
        std::string_view rhs = expr.substr(op + 2);
        while (!rhs.empty() && std::isspace(static_cast<unsigned char>(rhs.front()))) rhs.remove_prefix(1);
        if (lhs.rfind("@.", 0) != 0) return Status::InvalidArgument("filter must start with @. in " + std::string(expr));
        Filter f;
        f.equals = eq;
        size_t start = 2;
        while (start <= lhs.size()) {
          size_t dot = lhs.find('.', start);
          f.field.push_back(lhs.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
          if (dot == std::string::npos) break;
          start = dot + 1;
        }
        auto lit = ParseLiteral(rhs);
        if (!lit.ok()) return lit.status();
        f.value = *lit;
        steps.push_back({Step::Kind::kFilter, "", 0, std::move(f)});
      } else {
        char* end = nullptr;
        std::string num(inner);
        long idx = std::strtol(num.c_str(), &end, 10);
        if (num.empty() || *end != '\0') return Status::InvalidArgument("bad index [" + num + "]");
        steps.push_back({Step::Kind::kIndex, "", idx, {}});
      }
    } else {
      return Status::InvalidArgument("unexpected '" + std::string(1, p[i]) + "' in " + std::string(p));
    }
  }
  return steps;
}

}  // namespace

Result<std::vector<json>> EvalJsonPath(const json& object, std::string_view path) {
  auto steps = Parse(path);
  if (!steps.ok()) return steps.status();
  std::vector<json> cur = {object};
  for (const auto& s : *steps) {
    std::vector<json> next;
    for (const auto& v : cur) {
      switch (s.kind) {
        case Step::Kind::kKey:
          if (v.is_object() && v.contains(s.key)) next.push_back(v[s.key]);
          break;
        case Step::Kind::kIndex:
          if (v.is_array()) {
            long n = static_cast<long>(v.size());
            long idx = s.index < 0 ? n + s.index : s.index;
            if (idx >= 0 && idx < n) next.push_back(v[static_cast<size_t>(idx)]);
          }
          break;
        case Step::Kind::kAll:
          if (v.is_array() || v.is_object()) {
            for (const auto& item : v) next.push_back(item);
          }
          break;
        case Step::Kind::kFilter:
          if (v.is_array()) {
            for (const auto& item : v) {
              const json* f = &item;
              for (const auto& k : s.filter.field) {
                if (!f->is_object() || !f->contains(k)) {
                  f = nullptr;
                  break;
                }
                f = &(*f)[k];
              }
              bool match = f != nullptr && *f == s.filter.value;
              if (match == s.filter.equals && (f != nullptr || !s.filter.equals)) next.push_back(item);
            }
          }
          break;
      }
    }
    cur = std::move(next);
  }
  return cur;
}

}  // namespace fairbench::apiserver
