#include "api/field_path.h"

#include "api/node.h"

namespace fairbench::api {
namespace {

bool PlainKey(std::string_view key) {
  if (key.empty()) return false;
  for (const char c : key) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::string JoinField(std::string_view path, std::string_view field) {
  if (path.empty()) return std::string(field);
  std::string out(path);
  out += '.';
  out += field;
  return out;
}

std::string JoinIndex(std::string_view path, size_t index) {
  return std::string(path) + "[" + std::to_string(index) + "]";
}

std::string JoinKey(std::string_view path, std::string_view key) {
  if (PlainKey(key)) return JoinField(path, key);
  return std::string(path) + "[" + Quote(key) + "]";
}

std::string ParentPath(std::string_view path) {
  if (path.empty()) return "";
  if (path.back() == ']') {
    // Find the '[' that opens the last bracket, skipping a quoted key.
    size_t i = path.size() - 1;
    if (i > 0 && path[i - 1] == '"') {
      size_t j = i - 1;
      while (j > 0) {
        --j;
        if (path[j] == '"') {
          size_t backslashes = 0;
          for (size_t k = j; k > 0 && path[k - 1] == '\\'; --k) ++backslashes;
          if (backslashes % 2 == 0) break;
        }
      }
      if (j > 0 && path[j - 1] == '[') return std::string(path.substr(0, j - 1));
      return "";
    }
    const size_t open = path.rfind('[');
    return open == std::string_view::npos ? "" : std::string(path.substr(0, open));
  }
  const size_t dot = path.rfind('.');
  const size_t bracket = path.rfind(']');
  if (dot == std::string_view::npos) return "";
  if (bracket != std::string_view::npos && bracket > dot) return std::string(path.substr(0, bracket + 1));
  return std::string(path.substr(0, dot));
}

bool IsWithin(std::string_view path, std::string_view ancestor) {
  if (ancestor.empty()) return true;
  if (path.substr(0, ancestor.size()) != ancestor) return false;
  return path.size() == ancestor.size() || path[ancestor.size()] == '.' || path[ancestor.size()] == '[';
}

}  // namespace fairbench::api
