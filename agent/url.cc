#include "agent/url.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <cctype>
#include <cstring>

namespace fairbench::agent {

std::string Url::HostHeader() const {
  const bool v6 = host.find(':') != std::string::npos;
  std::string h = v6 ? "[" + host + "]" : host;
  if (explicit_port) h += ":" + std::to_string(port);
  return h;
}

Result<Url> ParseUrl(std::string_view text) {
  const std::string quoted = "'" + std::string(text) + "'";
  Url url;
  std::string_view rest = text;
  const size_t scheme_end = rest.find("://");
  if (scheme_end == std::string_view::npos)
    return Status::InvalidArgument("invalid URL " + quoted + ": expected http[s]://host[:port]/path");
  std::string scheme(rest.substr(0, scheme_end));
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme != "http" && scheme != "https") {
    return Status::InvalidArgument("invalid URL " + quoted + ": unsupported scheme '" + scheme + "' (http or https)");
  }
  url.scheme = scheme == "https" ? Scheme::kHttps : Scheme::kHttp;
  url.port = url.scheme == Scheme::kHttps ? 443 : 80;
  rest.remove_prefix(scheme_end + 3);

  const size_t path_start = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, path_start);
  std::string_view target = path_start == std::string_view::npos ? std::string_view() : rest.substr(path_start);
  if (const size_t hash = target.find('#'); hash != std::string_view::npos) target = target.substr(0, hash);
  if (authority.find('@') != std::string_view::npos)
    return Status::InvalidArgument("invalid URL " + quoted + ": user information is not supported");
  if (authority.empty()) return Status::InvalidArgument("invalid URL " + quoted + ": missing host");

  std::string_view port_text;
  if (authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos)
      return Status::InvalidArgument("invalid URL " + quoted + ": unterminated IPv6 address");
    url.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return Status::InvalidArgument("invalid URL " + quoted + ": junk after IPv6 address");
      port_text = after.substr(1);
      url.explicit_port = true;
    }
    in6_addr probe{};
    if (inet_pton(AF_INET6, url.host.c_str(), &probe) != 1)
      return Status::InvalidArgument("invalid URL " + quoted + ": bad IPv6 address");
  } else {
    const size_t colon = authority.rfind(':');
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      authority = authority.substr(0, colon);
      url.explicit_port = true;
    }
    url.host = std::string(authority);
    for (char c : url.host) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_') {
        return Status::InvalidArgument("invalid URL " + quoted + ": bad character in host");
      }
    }
  }
  if (url.host.empty()) return Status::InvalidArgument("invalid URL " + quoted + ": missing host");
  if (url.explicit_port) {
    if (port_text.empty() || port_text.size() > 5)
      return Status::InvalidArgument("invalid URL " + quoted + ": bad port");
    uint32_t port = 0;
    for (char c : port_text) {
      if (!std::isdigit(static_cast<unsigned char>(c)))
        return Status::InvalidArgument("invalid URL " + quoted + ": bad port");
      port = port * 10 + static_cast<uint32_t>(c - '0');
    }
    if (port == 0 || port > 65535) return Status::InvalidArgument("invalid URL " + quoted + ": port must be 1..65535");
    url.port = static_cast<uint16_t>(port);
  }
  url.target = target.empty() ? "/" : std::string(target);
  if (url.target.front() == '?') url.target.insert(0, "/");
  for (char c : url.target) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f)
      return Status::InvalidArgument("invalid URL " + quoted + ": spaces or control characters in the path");
  }
  return url;
}

std::string SocketAddress::ToString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  if (storage.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&storage);
    inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf);
    return "[" + std::string(buf) + "]:" + std::to_string(ntohs(a->sin6_port));
  }
  const auto* a = reinterpret_cast<const sockaddr_in*>(&storage);
  inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
  return std::string(buf) + ":" + std::to_string(ntohs(a->sin_port));
}

Result<std::vector<SocketAddress>> Resolve(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_ADDRCONFIG;
  addrinfo* list = nullptr;
  const std::string service = std::to_string(port);
  int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &list);
  if (rc == EAI_NONAME || rc == EAI_ADDRFAMILY || rc == EAI_NODATA) {
    hints.ai_flags = 0;  // loopback-only machines: AI_ADDRCONFIG may hide ::1/127.0.0.1
    rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &list);
  }
  if (rc != 0) return Status::InvalidArgument("cannot resolve host '" + host + "': " + gai_strerror(rc));
  std::vector<SocketAddress> out;
  for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    SocketAddress a;
    std::memcpy(&a.storage, ai->ai_addr, ai->ai_addrlen);
    a.length = ai->ai_addrlen;
    out.push_back(a);
  }
  freeaddrinfo(list);
  if (out.empty()) return Status::InvalidArgument("cannot resolve host '" + host + "': no addresses");
  return out;
}

}  // namespace fairbench::agent
