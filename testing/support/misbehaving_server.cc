#include "testing/support/misbehaving_server.h"

#include <arpa/inet.h>
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
#include <ctime>
#include <mutex>
#include <string_view>
#include <thread>

namespace fairbench::testing {
namespace {

constexpr std::string_view kOkResponse =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, World!";

std::string Response(int code, std::string_view reason, std::string_view body, std::string_view extra = {}) {
  std::string r = "HTTP/1.1 " + std::to_string(code) + " " + std::string(reason) +
                  "\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  r.append(extra).append("\r\n").append(body);
  return r;
}

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

struct Request {
  bool keep_alive = true;
  std::string target;  // the request line's
};

// The current second as HTTP writes dates: "Sun, 06 Nov 1994 08:49:37 GMT".
std::string HttpDate(time_t t) {
  tm parts{};
  gmtime_r(&t, &parts);
  char text[64];
  const size_t n = strftime(text, sizeof text, "%a, %d %b %Y %H:%M:%S GMT", &parts);
  return std::string(text, n);
}

enum class ReadResult { kRequest, kClosed, kBad };

// Reads one complete request from fd into `buf` (which may hold bytes of a
// pipelined request already) and removes it from `buf`.
ReadResult ReadRequest(int fd, std::string* buf, Request* req) {
  size_t header_end;
  while ((header_end = buf->find("\r\n\r\n")) == std::string::npos) {
    if (buf->size() > 65536) return ReadResult::kBad;
    char tmp[8192];
    ssize_t n = recv(fd, tmp, sizeof(tmp), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ReadResult::kClosed;
    buf->append(tmp, static_cast<size_t>(n));
  }
  std::string_view head(buf->data(), header_end);
  size_t line_end = head.find("\r\n");
  std::string_view request_line = head.substr(0, line_end);
  req->keep_alive = request_line.size() < 8 || request_line.substr(request_line.size() - 8) != "HTTP/1.0";
  if (const size_t sp = request_line.find(' '); sp != std::string_view::npos) {
    const size_t end = request_line.find(' ', sp + 1);
    req->target =
        std::string(request_line.substr(sp + 1, end == std::string_view::npos ? std::string_view::npos : end - sp - 1));
  }
  size_t content_length = 0;
  size_t pos = line_end == std::string_view::npos ? head.size() : line_end + 2;
  while (pos < head.size()) {
    size_t eol = head.find("\r\n", pos);
    std::string_view line = head.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
    pos = eol == std::string_view::npos ? head.size() : eol + 2;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return ReadResult::kBad;
    std::string_view name = line.substr(0, colon);
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    if (IEquals(name, "Content-Length")) {
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), content_length);
      if (ec != std::errc() || ptr != value.data() + value.size()) return ReadResult::kBad;
    } else if (IEquals(name, "Transfer-Encoding")) {
      return ReadResult::kBad;
    } else if (IEquals(name, "Connection")) {
      if (IEquals(value, "close")) req->keep_alive = false;
      if (IEquals(value, "keep-alive")) req->keep_alive = true;
    }
  }
  const size_t total = header_end + 4 + content_length;
  while (buf->size() < total) {
    char tmp[8192];
    ssize_t n = recv(fd, tmp, sizeof(tmp), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ReadResult::kClosed;
    buf->append(tmp, static_cast<size_t>(n));
  }
  buf->erase(0, total);
  return ReadResult::kRequest;
}

// True if the peer has closed (EOF or reset) and sent nothing else.
bool PeerClosed(int fd) {
  char c;
  ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

// Orderly close: FIN first so that the client reads everything we wrote.
void CloseGracefully(int fd) {
  shutdown(fd, SHUT_WR);
  close(fd);
}

}  // namespace

Status MisbehavingServer::Listen() {
  sockaddr_storage addr{};
  socklen_t len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
  if (inet_pton(AF_INET, options_.host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(options_.port);
    len = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, options_.host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(options_.port);
    len = sizeof(sockaddr_in6);
  } else {
    return Status::InvalidArgument("--host must be a numeric address: " + options_.host);
  }
  listen_fd_ = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return Status::IoError(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  std::string where = options_.host + ":" + std::to_string(options_.port);
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    return Status::Unavailable("bind " + where + ": " + std::strerror(errno));
  }
  // slow-accept: with backlog 1 the kernel queues at most two completed
  // connections; later handshakes are not completed (SYNs are dropped).
  const int backlog = options_.mode == MisbehavingMode::kSlowAccept ? 1 : 1024;
  if (listen(listen_fd_, backlog) != 0) return Status::IoError("listen " + where + ": " + std::strerror(errno));
  socklen_t alen = sizeof(addr);
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &alen);
  port_ = ntohs(addr.ss_family == AF_INET ? v4->sin_port : v6->sin6_port);
  start_date_ = HttpDate(time(nullptr));
  return Status::Ok();
}

void MisbehavingServer::Serve() {
  if (options_.mode == MisbehavingMode::kSlowAccept) return;
  std::thread([this] { AcceptLoop(); }).detach();
}

void MisbehavingServer::AcceptLoop() {
  while (true) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: wait for connections to end instead of spinning.
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      return;
    }
    connections_accepted_.fetch_add(1);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    std::thread([this, fd] { HandleConnection(fd); }).detach();
  }
}

std::string MisbehavingServer::Echo(std::string_view target) {
  static constexpr std::string_view kPrefix = "/echo/";
  const MisbehavingMode mode = options_.mode;
  std::string date;
  if (mode == MisbehavingMode::kEchoFrozenDate) date = "Date: " + start_date_ + "\r\n";
  else if (mode != MisbehavingMode::kEchoNoDate) date = "Date: " + HttpDate(time(nullptr)) + "\r\n";
  if (!target.starts_with(kPrefix)) return Response(404, "Not Found", "Not Found", date);
  std::string body(target.substr(kPrefix.size()));
  if (mode == MisbehavingMode::kEchoCached) {
    std::lock_guard lock(cache_mu_);
    if (cached_.empty()) cached_ = body;
    body = cached_;
  }
  if (mode == MisbehavingMode::kEchoWrongLength) {
    std::string r = Response(200, "OK", body, date + "Connection: close\r\n");
    return r + "\n";
  }
  return Response(200, "OK", body, date);
}

bool MisbehavingServer::WriteResponse(int fd, const std::string& data, bool count) {
  std::shared_lock lock(settle_mu_);
  std::string_view rest = data;
  while (!rest.empty()) {
    ssize_t n = send(fd, rest.data(), rest.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    rest.remove_prefix(static_cast<size_t>(n));
  }
  if (count) responses_written_.fetch_add(1);
  return true;
}

void MisbehavingServer::HandleConnection(int fd) {
  static const std::string kOk(kOkResponse);
  std::string buf;
  uint64_t index = 0;  // requests on this connection
  while (true) {
    Request req;
    ReadResult rr = ReadRequest(fd, &buf, &req);
    if (rr != ReadResult::kRequest) {
      close(fd);
      return;
    }
    requests_read_.fetch_add(1);
    bool keep_open = req.keep_alive;
    switch (options_.mode) {
      case MisbehavingMode::kOk: keep_open = WriteResponse(fd, kOk, true) && keep_open; break;
      case MisbehavingMode::kResetMidResponse: {
        WriteResponse(fd, kOk.substr(0, kOk.size() / 2), false);
        partial_responses_.fetch_add(1);
        linger l{1, 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
        close(fd);
        return;
      }
      case MisbehavingMode::kCloseEarly: CloseGracefully(fd); return;
      case MisbehavingMode::kCloseAfterHeaders:
        WriteResponse(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\n0123456789",
                      false);
        partial_responses_.fetch_add(1);
        CloseGracefully(fd);
        return;
      case MisbehavingMode::kDelay:
        std::this_thread::sleep_for(options_.delay);
        if (PeerClosed(fd)) {
          abandoned_responses_.fetch_add(1);
          close(fd);
          return;
        }
        keep_open = WriteResponse(fd, kOk, true) && keep_open;
        break;
      case MisbehavingMode::kStatus500: {
        static const std::string k500 = Response(500, "Internal Server Error", "Internal Server Error");
        keep_open = WriteResponse(fd, k500, true) && keep_open;
        break;
      }
      case MisbehavingMode::kStatusMix: {
        static const std::string kMix[4] = {
            kOk,
            Response(301, "Moved Permanently", "Moved", "Location: /\r\n"),
            Response(404, "Not Found", "Not Found"),
            Response(503, "Service Unavailable", "Service Unavailable"),
        };
        keep_open = WriteResponse(fd, kMix[index % 4], true) && keep_open;
        break;
      }
      case MisbehavingMode::kChunked: {
        static const std::string kChunked =
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n"
            "Trailer: X-Checksum\r\n\r\n"
            "5;name=value\r\nHello\r\n"
            "8;quoted=\"a;b\"\r\n, World!\r\n"
            "0\r\nX-Checksum: 13\r\n\r\n";
        keep_open = WriteResponse(fd, kChunked, true) && keep_open;
        break;
      }
      case MisbehavingMode::kConnectionClose: {
        static const std::string kClose = Response(200, "OK", "Hello, World!", "Connection: close\r\n");
        WriteResponse(fd, kClose, true);
        keep_open = false;
        break;
      }
      case MisbehavingMode::kCloseDelimited:
        WriteResponse(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nHello, World!", true);
        keep_open = false;
        break;
      case MisbehavingMode::kGarbage:
        keep_open =
            WriteResponse(fd, "HTTP/1.1 abc Garbage\r\nContent-Length: 13\r\n\r\nHello, World!", true) && keep_open;
        break;
      case MisbehavingMode::kSlowAccept: break;  // never accepted, so never here
      case MisbehavingMode::kEcho:
      case MisbehavingMode::kEchoCached:
      case MisbehavingMode::kEchoNoDate:
      case MisbehavingMode::kEchoFrozenDate: keep_open = WriteResponse(fd, Echo(req.target), true) && keep_open; break;
      case MisbehavingMode::kEchoWrongLength:
        WriteResponse(fd, Echo(req.target), true);
        keep_open = false;
        break;
    }
    ++index;
    if (!keep_open) {
      CloseGracefully(fd);
      return;
    }
  }
}

MisbehavingStats MisbehavingServer::TakeStats() {
  std::unique_lock lock(settle_mu_, std::defer_lock);
  bool settled = lock.try_lock_for(std::chrono::seconds(1));
  MisbehavingStats s;
  s.mode = std::string(ModeName(options_.mode));
  s.snapshot = ++snapshots_;
  s.settled = settled;
  s.connections_accepted = connections_accepted_.load();
  s.requests_read = requests_read_.load();
  s.responses_written = responses_written_.load();
  s.partial_responses = partial_responses_.load();
  s.abandoned_responses = abandoned_responses_.load();
  return s;
}

}  // namespace fairbench::testing
