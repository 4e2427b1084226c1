#include "api/names.h"

#include <cstring>

#include "api/node.h"
#include "common/load_rules.h"

namespace fairbench::api {
namespace {

bool LowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool Alnum(char c) { return LowerAlnum(c) || (c >= 'A' && c <= 'Z'); }

// Shared by labels and subdomain parts; `inner` says which characters may
// appear anywhere (edges included).
bool Shaped(std::string_view s, bool (*edge)(char), bool (*inner)(char)) {
  if (s.empty() || !edge(s.front()) || !edge(s.back())) return false;
  for (const char c : s) {
    if (!inner(c)) return false;
  }
  return true;
}

bool DnsInner(char c) { return LowerAlnum(c) || c == '-'; }
bool NameInner(char c) { return Alnum(c) || c == '-' || c == '_' || c == '.'; }

}  // namespace

std::string CheckDnsLabel(std::string_view name) {
  if (name.size() > 63) return "must be at most 63 characters";
  if (!Shaped(name, LowerAlnum, DnsInner)) {
    return Quote(name) +
           " is not a valid name: use lowercase letters, digits and '-', starting and ending "
           "with a letter or digit (RFC 1123 label)";
  }
  return "";
}

std::string CheckDnsSubdomain(std::string_view name) {
  if (name.size() > 253) return "must be at most 253 characters";
  size_t start = 0;
  bool ok = !name.empty();
  while (ok && start <= name.size()) {
    size_t dot = name.find('.', start);
    if (dot == std::string_view::npos) dot = name.size();
    ok = Shaped(name.substr(start, dot - start), LowerAlnum, DnsInner);
    start = dot + 1;
  }
  if (!ok) {
    return Quote(name) +
           " is not a valid name: use lowercase letters, digits, '-' and '.', starting and "
           "ending with a letter or digit (RFC 1123 subdomain)";
  }
  return "";
}

std::string CheckQualifiedName(std::string_view key) {
  std::string_view name = key;
  const size_t slash = key.find('/');
  if (slash != std::string_view::npos) {
    const std::string_view prefix = key.substr(0, slash);
    name = key.substr(slash + 1);
    if (!CheckDnsSubdomain(prefix).empty()) {
      return "the prefix " + Quote(prefix) + " must be a DNS subdomain such as \"example.com\"";
    }
  }
  if (name.size() > 63) return "the name part must be at most 63 characters";
  if (!Shaped(name, Alnum, NameInner)) {
    return Quote(key) +
           " is not a valid key: use letters, digits, '-', '_' and '.', starting and ending with "
           "a letter or digit, after an optional \"prefix/\"";
  }
  return "";
}

std::string CheckLabelValue(std::string_view value) {
  if (value.empty()) return "";
  if (value.size() > 63) return "must be at most 63 characters";
  if (!Shaped(value, Alnum, NameInner)) {
    return Quote(value) +
           " is not a valid label value: use letters, digits, '-', '_' and '.', starting and "
           "ending with a letter or digit";
  }
  return "";
}

bool IsHttpToken(std::string_view s) { return load_rules::IsToken(s); }

std::string CheckEnvName(std::string_view name) {
  if (name.empty()) return "an environment variable needs a name";
  if (name.find('=') != std::string_view::npos) return "a variable name cannot contain '='";
  if (name.find('\0') != std::string_view::npos) return "a variable name cannot contain NUL";
  return "";
}

}  // namespace fairbench::api
