#include "agent/request_text.h"

#include <cctype>
#include <cstdio>
#include <cstring>

namespace fairbench::agent {
namespace {

bool IsTokenChar(char c) {
  if (std::isalnum(static_cast<unsigned char>(c))) return true;
  return std::strchr("!#$%&'*+-.^_`|~", c) != nullptr && c != '\0';
}

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsTokenChar(c)) return false;
  }
  return true;
}

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
  }
  return true;
}

// One request of a text: where it ends and, when asked, its parts.
struct One {
  std::string_view method, target, body;
  size_t end = 0;  // offset just past it
};

// Reads the line at *pos (without its CR LF / LF) and moves *pos past it;
// false when no line end is left.
bool NextLine(std::string_view text, size_t* pos, std::string_view* line) {
  const size_t nl = text.find('\n', *pos);
  if (nl == std::string_view::npos) return false;
  size_t end = nl;
  if (end > *pos && text[end - 1] == '\r') --end;
  *line = text.substr(*pos, end - *pos);
  *pos = nl + 1;
  return true;
}

// Parses the request at `pos`; the reason on failure goes to *why.
bool ParseOne(std::string_view text, size_t pos, One* out, std::vector<std::pair<std::string, std::string>>* headers,
              std::string* why) {
  std::string_view line;
  if (!NextLine(text, &pos, &line)) {
    *why = "incomplete request line";
    return false;
  }
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) {
    *why = "the request line is not 'METHOD target HTTP/1.1'";
    return false;
  }
  out->method = line.substr(0, sp1);
  out->target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!IsToken(out->method)) {
    *why = "the method is not a token";
    return false;
  }
  if (out->target.empty()) {
    *why = "empty request target";
    return false;
  }
  for (char c : out->target) {
    if (static_cast<unsigned char>(c) < 0x21 || c == 0x7f) {
      *why = "the request target has a control character";
      return false;
    }
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    *why = "the version is not HTTP/1.1 or HTTP/1.0";
    return false;
  }
  bool has_length = false;
  uint64_t length = 0;
  for (;;) {
    if (!NextLine(text, &pos, &line)) {
      *why = "incomplete request: no blank line after the headers";
      return false;
    }
    if (line.empty()) break;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || !IsToken(line.substr(0, colon))) {
      *why = "a header line is not 'Name: value'";
      return false;
    }
    const std::string_view name = line.substr(0, colon);
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    if (IEquals(name, "content-length")) {
      if (value.empty() || value.size() > 15) {
        *why = "Content-Length is not a number";
        return false;
      }
      uint64_t n = 0;
      for (char c : value) {
        if (c < '0' || c > '9') {
          *why = "Content-Length is not a number";
          return false;
        }
        n = n * 10 + static_cast<uint64_t>(c - '0');
      }
      if (has_length && n != length) {
        *why = "two different Content-Length headers";
        return false;
      }
      has_length = true;
      length = n;
      continue;  // re-derived from the body by whoever rebuilds the request
    }
    if (IEquals(name, "transfer-encoding")) {
      *why = "a Transfer-Encoding body (chunked) is not supported: give a Content-Length";
      return false;
    }
    if (headers != nullptr) headers->emplace_back(std::string(name), std::string(value));
  }
  if (text.size() - pos < length) {
    *why = "incomplete request: the body is shorter than its Content-Length";
    return false;
  }
  out->body = text.substr(pos, length);
  out->end = pos + length;
  return true;
}

Status NotARequest(std::string_view text, const std::string& why) {
  return Status::InvalidArgument("not an HTTP request (" + why + "): " + QuoteText(text));
}

}  // namespace

Result<uint32_t> CountRequests(std::string_view text) {
  if (text.empty()) return NotARequest(text, "empty text");
  uint32_t count = 0;
  size_t pos = 0;
  std::string why;
  while (pos < text.size()) {
    One one;
    if (!ParseOne(text, pos, &one, nullptr, &why))
      return NotARequest(text, count == 0 ? why : "request " + std::to_string(count + 1) + ": " + why);
    pos = one.end;
    if (++count > 65535) return NotARequest(text, "more than 65535 requests in one text");
  }
  return count;
}

Result<std::vector<RequestSpec>> SplitRequests(std::string_view text) {
  if (text.empty()) return NotARequest(text, "empty text");
  std::vector<RequestSpec> out;
  size_t pos = 0;
  std::string why;
  while (pos < text.size()) {
    One one;
    RequestSpec spec;
    if (!ParseOne(text, pos, &one, &spec.headers, &why)) {
      return NotARequest(text, out.empty() ? why : "request " + std::to_string(out.size() + 1) + ": " + why);
    }
    spec.method = std::string(one.method);
    spec.target = std::string(one.target);
    spec.body = std::string(one.body);
    out.push_back(std::move(spec));
    pos = one.end;
  }
  return out;
}

std::string QuoteText(std::string_view text, size_t limit) {
  std::string out = "\"";
  size_t shown = 0;
  for (char ch : text) {
    if (shown == limit) {
      out += "…";
      break;
    }
    ++shown;
    const auto c = static_cast<unsigned char>(ch);
    if (ch == '\r') out += "\\r";
    else if (ch == '\n') out += "\\n";
    else if (ch == '"' || ch == '\\') (out += '\\') += ch;
    else if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += ch;
    }
  }
  out += "\"";
  return out;
}

}  // namespace fairbench::agent
