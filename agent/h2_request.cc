#include "agent/h2_request.h"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace fairbench::agent {
namespace {

bool IsTokenChar(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (std::isalnum(u)) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

nghttp2_nv Nv(const std::string& name, const std::string& value) {
  // The strings outlive every submitted request (see the header's contract).
  return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                    reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
                    NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE};
}

}  // namespace

Result<std::unique_ptr<H2Request>> H2Request::Build(const RequestSpec& spec, const std::string& scheme,
                                                    const std::string& authority) {
  const std::string where = spec.name.empty() ? "request: " : "request '" + spec.name + "': ";
  if (spec.method.empty() || !std::all_of(spec.method.begin(), spec.method.end(), IsTokenChar)) {
    return Status::InvalidArgument(where + "method '" + spec.method + "' is not an HTTP method token");
  }
  if (spec.target.empty() || spec.target.front() != '/') {
    return Status::InvalidArgument(where + "path '" + spec.target + "' must start with '/'");
  }
  for (char c : spec.target) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return Status::InvalidArgument(where + "path '" + spec.target + "' contains spaces or control characters");
    }
  }
  if (scheme != "http" && scheme != "https") {
    return Status::InvalidArgument(where + "scheme '" + scheme + "' must be http or https");
  }
  std::unique_ptr<H2Request> r(new H2Request());
  r->method_ = spec.method;
  r->scheme_ = scheme;
  r->authority_ = authority;
  r->path_ = spec.target;
  r->body_ = spec.body;
  bool has_length = false;
  for (const auto& [name, value] : spec.headers) {
    if (name.empty() || !std::all_of(name.begin(), name.end(), IsTokenChar)) {
      return Status::InvalidArgument(where + "header name '" + name + "' is not a token");
    }
    if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
      return Status::InvalidArgument(where + "header '" + name + "' contains CR, LF or NUL");
    }
    std::string lower = Lower(name);
    if (lower == "connection" || lower == "keep-alive" || lower == "proxy-connection" || lower == "transfer-encoding" ||
        lower == "upgrade") {
      return Status::InvalidArgument(where + "header '" + name + "' is not allowed in HTTP/2 (RFC 9113 §8.2.2)");
    }
    if (lower == "te" && Lower(value) != "trailers") {
      return Status::InvalidArgument(where + "header 'TE' may only be 'trailers' in HTTP/2");
    }
    if (lower == "host") {
      r->authority_ = value;
      continue;
    }
    if (lower == "content-length") has_length = true;
    r->fields_.emplace_back(std::move(lower), value);
  }
  if (r->authority_.empty()) return Status::InvalidArgument(where + "empty :authority (host)");
  if (!spec.body.empty() && !has_length) r->content_length_ = std::to_string(spec.body.size());

  static const std::string kMethod = ":method", kScheme = ":scheme", kAuthority = ":authority", kPath = ":path",
                           kLength = "content-length";
  r->nva_.push_back(Nv(kMethod, r->method_));
  r->nva_.push_back(Nv(kScheme, r->scheme_));
  r->nva_.push_back(Nv(kAuthority, r->authority_));
  r->nva_.push_back(Nv(kPath, r->path_));
  for (const auto& [name, value] : r->fields_) r->nva_.push_back(Nv(name, value));
  if (!r->content_length_.empty()) r->nva_.push_back(Nv(kLength, r->content_length_));
  return r;
}

size_t H2Request::header_list_size() const {
  size_t n = 0;
  for (const nghttp2_nv& nv : nva_) n += nv.namelen + nv.valuelen + 32;
  return n;
}

}  // namespace fairbench::agent
