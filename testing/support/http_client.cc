#include "testing/support/http_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>

namespace fairbench::testing {
namespace {

using Clock = std::chrono::steady_clock;

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

int RemainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

// Parses "name: value" lines until an empty line.
template <typename ReadLineFn>
Status ReadFields(ReadLineFn&& read_line, std::vector<std::pair<std::string, std::string>>* out) {
  while (true) {
    auto line = read_line();
    if (!line.ok()) return line.status();
    if (line->empty()) return Status::Ok();
    auto colon = line->find(':');
    if (colon == std::string::npos || colon == 0) {
      return Status::InvalidArgument("malformed header line: " + *line);
    }
    out->emplace_back(line->substr(0, colon), Trim(std::string_view(*line).substr(colon + 1)));
  }
}

}  // namespace

std::string HttpResponse::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (IEquals(k, name)) return v;
  }
  return "";
}

bool HttpResponse::HasHeader(std::string_view name) const {
  return std::any_of(headers.begin(), headers.end(), [&](const auto& h) { return IEquals(h.first, name); });
}

std::string BuildRequest(std::string_view method, std::string_view path, std::string_view host,
                         const std::vector<std::pair<std::string, std::string>>& headers, std::string_view body) {
  std::string r;
  r.append(method).append(" ").append(path).append(" HTTP/1.1\r\nHost: ").append(host).append("\r\n");
  for (const auto& [k, v] : headers) r.append(k).append(": ").append(v).append("\r\n");
  if (!body.empty() || method == "POST" || method == "PUT") {
    r.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n");
  }
  r.append("\r\n").append(body);
  return r;
}

Result<HttpConnection> HttpConnection::Connect(const std::string& host, uint16_t port,
                                               std::chrono::milliseconds timeout) {
  sockaddr_storage addr{};
  socklen_t len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    len = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    len = sizeof(sockaddr_in6);
  } else {
    return Status::InvalidArgument("not a numeric address: " + host);
  }
  int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Status::IoError(std::string("socket: ") + std::strerror(errno));
  HttpConnection conn(fd);
  std::string where = host + ":" + std::to_string(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    if (errno != EINPROGRESS) return Status::Unavailable("connect " + where + ": " + std::strerror(errno));
    pollfd p{fd, POLLOUT, 0};
    int r;
    do {
      r = poll(&p, 1, static_cast<int>(timeout.count()));
    } while (r < 0 && errno == EINTR);
    if (r == 0) return Status::DeadlineExceeded("connect " + where + ": timed out");
    int err = 0;
    socklen_t elen = sizeof(err);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen);
    if (err != 0) return Status::Unavailable("connect " + where + ": " + std::strerror(err));
  }
  // Blocking from here on: every read is preceded by poll() with a deadline.
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return conn;
}

HttpConnection::HttpConnection(HttpConnection&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), buf_(std::move(other.buf_)), consumed_(other.consumed_) {}

HttpConnection& HttpConnection::operator=(HttpConnection&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
    buf_ = std::move(other.buf_);
    consumed_ = other.consumed_;
  }
  return *this;
}

HttpConnection::~HttpConnection() { Close(); }

void HttpConnection::Close(bool reset) {
  if (fd_ < 0) return;
  if (reset) {
    linger l{1, 0};
    setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  }
  close(fd_);
  fd_ = -1;
}

Status HttpConnection::Send(std::string_view bytes) {
  if (fd_ < 0) return Status::FailedPrecondition("connection closed");
  while (!bytes.empty()) {
    ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IoError(std::string("send: ") + std::strerror(errno));
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

Status HttpConnection::Fill(Clock::time_point deadline) {
  if (fd_ < 0) return Status::FailedPrecondition("connection closed");
  while (true) {
    pollfd p{fd_, POLLIN, 0};
    int r = poll(&p, 1, RemainingMs(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Status::IoError(std::string("poll: ") + std::strerror(errno));
    if (r == 0) return Status::DeadlineExceeded("no response in time after " + std::to_string(buf_.size()) + " bytes");
    char tmp[16384];
    ssize_t n = recv(fd_, tmp, sizeof(tmp), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return Status::IoError(std::string("recv: ") + std::strerror(errno) + " after " + std::to_string(buf_.size()) +
                             " bytes");
    }
    if (n == 0) return Status::IoError("closed by peer after " + std::to_string(buf_.size()) + " bytes");
    buf_.append(tmp, static_cast<size_t>(n));
    return Status::Ok();
  }
}

Result<std::string> HttpConnection::ReadLine(Clock::time_point deadline) {
  while (true) {
    auto eol = buf_.find("\r\n", consumed_);
    if (eol != std::string::npos) {
      std::string line = buf_.substr(consumed_, eol - consumed_);
      consumed_ = eol + 2;
      return line;
    }
    if (buf_.size() - consumed_ > 65536) return Status::InvalidArgument("line longer than 64 KiB");
    if (Status s = Fill(deadline); !s.ok()) return s;
  }
}

Result<HttpResponse> HttpConnection::ReadResponse(std::chrono::milliseconds timeout, bool head_response) {
  const auto deadline = Clock::now() + timeout;
  consumed_ = 0;
  auto read_line = [&] { return ReadLine(deadline); };
  HttpResponse resp;

  auto status_line = read_line();
  if (!status_line.ok()) return status_line.status();
  {
    // "HTTP/1.1 200 OK": version, a three-digit code, an optional reason.
    std::string_view s = *status_line;
    auto sp1 = s.find(' ');
    if (sp1 == std::string_view::npos || s.substr(0, 5) != "HTTP/") {
      return Status::InvalidArgument("malformed status line: " + *status_line);
    }
    resp.version = std::string(s.substr(0, sp1));
    std::string_view rest = s.substr(sp1 + 1);
    std::string_view code = rest.substr(0, rest.find(' '));
    auto [ptr, ec] = std::from_chars(code.data(), code.data() + code.size(), resp.status);
    if (ec != std::errc() || ptr != code.data() + code.size() || code.size() != 3) {
      return Status::InvalidArgument("malformed status line: " + *status_line);
    }
    resp.reason = code.size() < rest.size() ? std::string(rest.substr(code.size() + 1)) : "";
  }
  if (Status st = ReadFields(read_line, &resp.headers); !st.ok()) return st;

  const bool no_body = head_response || resp.status / 100 == 1 || resp.status == 204 || resp.status == 304;
  const std::string te = resp.Header("Transfer-Encoding");
  if (no_body) {
    // Nothing follows the headers.
  } else if (!te.empty() && IEquals(te.substr(te.size() >= 7 ? te.size() - 7 : 0), "chunked")) {
    resp.chunked = true;
    while (true) {
      auto size_line = read_line();
      if (!size_line.ok()) return size_line.status();
      std::string_view hex = *size_line;
      hex = hex.substr(0, hex.find(';'));  // chunk extensions are ignored
      while (!hex.empty() && (hex.back() == ' ' || hex.back() == '\t')) hex.remove_suffix(1);
      size_t size = 0;
      auto [ptr, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), size, 16);
      if (hex.empty() || ec != std::errc() || ptr != hex.data() + hex.size()) {
        return Status::InvalidArgument("malformed chunk size line: " + *size_line);
      }
      if (size == 0) break;
      while (buf_.size() - consumed_ < size + 2) {
        if (Status s = Fill(deadline); !s.ok()) return s;
      }
      resp.body.append(buf_, consumed_, size);
      if (buf_.compare(consumed_ + size, 2, "\r\n") != 0) return Status::InvalidArgument("chunk not followed by CRLF");
      consumed_ += size + 2;
    }
    if (Status st = ReadFields(read_line, &resp.trailers); !st.ok()) return st;
  } else if (resp.HasHeader("Content-Length")) {
    const std::string cl = resp.Header("Content-Length");
    size_t length = 0;
    auto [ptr, ec] = std::from_chars(cl.data(), cl.data() + cl.size(), length);
    if (cl.empty() || ec != std::errc() || ptr != cl.data() + cl.size()) {
      return Status::InvalidArgument("malformed Content-Length: " + cl);
    }
    while (buf_.size() - consumed_ < length) {
      if (Status s = Fill(deadline); !s.ok()) return s;
    }
    resp.body = buf_.substr(consumed_, length);
    consumed_ += length;
  } else {
    resp.close_delimited = true;
    while (true) {
      Status s = Fill(deadline);
      if (s.ok()) continue;
      if (s.code() == Status::Code::kIoError && s.message().rfind("closed by peer", 0) == 0) break;
      return s;
    }
    resp.body = buf_.substr(consumed_);
    consumed_ = buf_.size();
  }
  resp.wire_bytes = consumed_;
  buf_.erase(0, consumed_);
  consumed_ = 0;
  return resp;
}

Result<HttpResponse> HttpConnection::RoundTrip(std::string_view request, std::chrono::milliseconds timeout) {
  if (Status s = Send(request); !s.ok()) return s;
  return ReadResponse(timeout);
}

bool HttpConnection::WaitForClose(std::chrono::milliseconds timeout) {
  if (fd_ < 0) return true;
  if (!buf_.empty()) return false;
  pollfd p{fd_, POLLIN, 0};
  int r;
  do {
    r = poll(&p, 1, static_cast<int>(timeout.count()));
  } while (r < 0 && errno == EINTR);
  if (r <= 0) return false;
  char c;
  ssize_t n = recv(fd_, &c, 1, MSG_PEEK);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

}  // namespace fairbench::testing
