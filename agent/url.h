// Url: the target address of a load run, parsed and resolved before any
// worker starts (resolution can block; it never happens on an event loop).
//
// Accepts http[s]://host[:port][/path][?query] with host a name, an IPv4
// address or a bracketed IPv6 address (ports 80 and 443 by default).
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/protocol.h"
#include "common/status.h"

namespace fairbench::agent {

struct Url {
  std::string host;  // without brackets
  Scheme scheme = Scheme::kHttp;
  uint16_t port = 80;  // 443 for https
  bool explicit_port = false;
  std::string target = "/";  // path and query, as sent on the request line
  // The Host header wrk sends: host, with ":port" only when the URL had one.
  std::string HostHeader() const;
};

Result<Url> ParseUrl(std::string_view text);

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  std::string ToString() const;  // "127.0.0.1:8080", "[::1]:8080"
};

// Resolves host and port (getaddrinfo, TCP). An unresolvable name is an
// InvalidArgument naming it.
Result<std::vector<SocketAddress>> Resolve(const std::string& host, uint16_t port);

}  // namespace fairbench::agent
