// H2Request: one HTTP/2 request, built once before the run into the header
// array nghttp2 submits, so that sending it costs no allocation of ours.
//
// The pseudo-headers come first (:method, :scheme, :authority, :path), then
// the user's headers with their names lowercased (HTTP/2 requires it), then
// content-length when there is a body and the user gave none — what h2load
// sends. A user's Host header becomes :authority. Headers that HTTP/2 forbids
// (Connection, Keep-Alive, Proxy-Connection, Transfer-Encoding, Upgrade, and
// TE other than "trailers") are refused with an error naming the header.
//
// The header array points into the object's own strings (nghttp2 is told not
// to copy them), so an H2Request must not move while a request submitted
// from it may still be sent: keep requests in a vector that is built once
// and then left alone. Immutable after Build; safe to share between threads.
#pragma once

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agent/request.h"
#include "common/status.h"

namespace fairbench::agent {

class H2Request {
 public:
  // `scheme` is "http" (h2c) or "https" (h2 over TLS); `authority` is what
  // HTTP/1 would put in Host ("host" or "host:port").
  static Result<std::unique_ptr<H2Request>> Build(const RequestSpec& spec, const std::string& scheme,
                                                  const std::string& authority);

  H2Request(const H2Request&) = delete;
  H2Request& operator=(const H2Request&) = delete;

  const nghttp2_nv* headers() const { return nva_.data(); }
  size_t header_count() const { return nva_.size(); }
  const std::string& body() const { return body_; }
  const std::string& method() const { return method_; }
  const std::string& path() const { return path_; }
  bool head() const { return method_ == "HEAD"; }
  // What the header block weighs before HPACK: Σ name + value + 32 (RFC 7541 §4.1).
  size_t header_list_size() const;

 private:
  H2Request() = default;
  std::string method_, scheme_, authority_, path_;
  std::vector<std::pair<std::string, std::string>> fields_;  // lowercased names
  std::string body_;
  std::string content_length_;
  std::vector<nghttp2_nv> nva_;
};

}  // namespace fairbench::agent
