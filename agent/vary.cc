#include "agent/vary.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <charconv>

namespace fairbench::agent {
namespace {

constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ull;

uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::string Clip(std::string_view s, size_t n = 80) {
  std::string out(s.substr(0, n));
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  if (s.size() > n) out += "…";
  return out;
}

// A chunked body from `data` into `body`; false when it is malformed.
bool Dechunk(std::string_view data, std::string& body) {
  for (;;) {
    const size_t eol = data.find('\n');
    if (eol == std::string_view::npos) return false;
    std::string_view line = data.substr(0, eol);
    data.remove_prefix(eol + 1);
    if (const size_t semi = line.find(';'); semi != std::string_view::npos) line = line.substr(0, semi);
    line = Trim(line);
    uint64_t size = 0;
    const auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), size, 16);
    if (ec != std::errc() || end != line.data() + line.size() || line.empty()) return false;
    if (size == 0) return true;  // trailers are not the body
    if (data.size() < size) return false;
    body.append(data.substr(0, size));
    data.remove_prefix(size);
    if (data.starts_with("\r\n")) data.remove_prefix(2);
    else if (data.starts_with("\n")) data.remove_prefix(1);
    else return false;
  }
}

}  // namespace

VarySequence::VarySequence(uint64_t seed, uint64_t stream)
    : state_(Mix(seed + kGamma) ^ Mix(Mix(stream) + 2 * kGamma)) {}

uint64_t VarySequence::Next() {
  state_ += kGamma;
  return Mix(state_);
}

size_t FormatVaryNumber(uint64_t n, char* out) {
  const auto [end, ec] = std::to_chars(out, out + 20, n);
  return static_cast<size_t>(end - out);
}

VaryTemplate::VaryTemplate(std::string_view text) {
  for (;;) {
    const size_t at = text.find(kVaryToken);
    pieces_.emplace_back(text.substr(0, at));
    if (at == std::string_view::npos) break;
    text.remove_prefix(at + kVaryToken.size());
  }
}

size_t VaryTemplate::Size(size_t digits) const {
  size_t n = pieces_.empty() ? 0 : (pieces_.size() - 1) * digits;
  for (const std::string& p : pieces_) n += p.size();
  return n;
}

void VaryTemplate::AppendTo(std::string& out, std::string_view n) const {
  for (size_t i = 0; i < pieces_.size(); ++i) {
    if (i > 0) out += n;
    out += pieces_[i];
  }
}

std::string VaryTemplate::Expand(std::string_view n) const {
  std::string out;
  AppendTo(out, n);
  return out;
}

VaryRequest::VaryRequest(const RequestSpec& spec, const std::string& host_header, bool keep_alive) {
  bool user_host = false, user_connection = false;
  for (const auto& [name, value] : spec.headers) {
    user_host |= IEquals(name, "host");
    length_ &= !IEquals(name, "content-length");
    user_connection |= IEquals(name, "connection");
  }
  std::string head = spec.method + " " + spec.target + " HTTP/1.1\r\n";
  if (!user_host) head += "Host: " + host_header + "\r\n";
  for (const auto& [name, value] : spec.headers) head += name + ": " + value + "\r\n";
  head_ = VaryTemplate(head);
  body_ = VaryTemplate(spec.body);
  length_ &= body_.Size(0) > 0 || body_.varies();
  if (!keep_alive && !user_connection) tail_ = "Connection: close\r\n";
  tail_ += "\r\n";
}

void VaryRequest::Build(uint64_t n, std::string& out) const {
  char digits[24];
  const std::string_view text(digits, FormatVaryNumber(n, digits));
  out.clear();
  head_.AppendTo(out, text);
  if (length_) {
    char length[24];
    const auto [end, ec] = std::to_chars(length, length + sizeof length, body_.Size(text.size()));
    out += "Content-Length: ";
    out.append(length, end);
    out += "\r\n";
  }
  out += tail_;
  body_.AppendTo(out, text);
}

bool VaryExpect::Matches(std::string_view body, std::string_view n, std::string& scratch) const {
  scratch.clear();
  text_.AppendTo(scratch, n);
  if (kind_ == Kind::kBody) return body == scratch;
  const nlohmann::json want = nlohmann::json::parse(scratch, nullptr, false);
  const nlohmann::json got = nlohmann::json::parse(body, nullptr, false);
  return !want.is_discarded() && !got.is_discarded() && want == got;
}

std::string VaryExpect::Describe(std::string_view body, std::string_view n) const {
  return "expected '" + Clip(text_.Expand(n)) + "', got '" + Clip(body) + "'";
}

bool SplitAnswer(std::string_view raw, std::string& body, std::string_view* date) {
  body.clear();
  *date = {};
  std::string_view rest = raw;
  bool has_length = false, chunked = false, no_body = false;
  uint64_t length = 0;
  // Interim 1xx answers come before the final one; skip them.
  for (bool final_seen = false; !final_seen;) {
    const size_t eol = rest.find('\n');
    if (eol == std::string_view::npos || !rest.starts_with("HTTP/1.")) return false;
    const std::string_view status_line = rest.substr(0, eol);
    rest.remove_prefix(eol + 1);
    int status = 0;
    if (status_line.size() >= 12) std::from_chars(status_line.data() + 9, status_line.data() + 12, status);
    final_seen = status >= 200;
    no_body = status == 204 || status == 304;
    for (;;) {
      const size_t end = rest.find('\n');
      if (end == std::string_view::npos) return false;
      const std::string_view line = rest.substr(0, end);
      rest.remove_prefix(end + 1);
      if (Trim(line).empty()) break;
      const size_t colon = line.find(':');
      if (colon == std::string_view::npos || !final_seen) continue;
      const std::string_view name = line.substr(0, colon);
      const std::string_view value = Trim(line.substr(colon + 1));
      if (IEquals(name, "date")) {
        *date = value;
      } else if (IEquals(name, "content-length")) {
        has_length = std::from_chars(value.data(), value.data() + value.size(), length).ec == std::errc();
      } else if (IEquals(name, "transfer-encoding")) {
        chunked = value.size() >= 7 && IEquals(value.substr(value.size() - 7), "chunked");
      }
    }
  }
  if (no_body) return true;
  if (chunked) return Dechunk(rest, body);
  if (has_length) {
    body.assign(rest.substr(0, length));
    return rest.size() >= length;
  }
  body.assign(rest);  // until the connection closed
  return true;
}

}  // namespace fairbench::agent
