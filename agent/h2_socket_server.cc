#include "agent/h2_socket_server.h"
#include "common/mutex.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <memory>
#include <vector>

namespace fairbench::agent {
namespace {

int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Peer {
  int fd = -1;
  std::unique_ptr<H2TestServer> server;
  H2FrameScanner up{true};
  struct Chunk {
    int64_t due_us;
    std::vector<uint8_t> bytes;
  };
  std::deque<Chunk> out;
  size_t out_off = 0;
  bool dead = false;
};

}  // namespace

H2SocketServer::H2SocketServer(H2SocketServerOptions options) : opt_(options) {}

H2SocketServer::~H2SocketServer() {
  Stop();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (stop_fd_ >= 0) ::close(stop_fd_);
}

Status H2SocketServer::Start() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return Status::IoError(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 1024) != 0) {
    return Status::IoError(std::string("bind/listen: ") + std::strerror(errno));
  }
  socklen_t len = sizeof addr;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  stop_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (stop_fd_ < 0) return Status::IoError(std::string("eventfd: ") + std::strerror(errno));
  thread_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void H2SocketServer::Stop() {
  if (!thread_.joinable()) return;
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(stop_fd_, &one, sizeof one);
  thread_.join();
}

H2SocketTotals H2SocketServer::totals() const {
  MutexLock lock(mu_);
  return totals_;
}

void H2SocketServer::Run() {
  std::vector<std::unique_ptr<Peer>> peers;
  std::vector<uint8_t> buf(64 * 1024);
  auto finish = [this](Peer& p) {
    MutexLock lock(mu_);
    H2TestServer& s = *p.server;
    ++totals_.connections;
    totals_.requests += s.requests();
    totals_.responses += s.responses();
    totals_.resets_sent += s.resets_sent();
    totals_.peak_open_streams = std::max(totals_.peak_open_streams, s.peak_open_streams());
    if (totals_.first_request_fields.empty()) {
      totals_.first_request_fields = s.first_request_fields();
      totals_.first_request_body = s.first_request_body();
    }
    if (s.goaway_last_stream_id() != 0) {
      ++totals_.goaways_sent;
      for (int32_t id : p.up.opened()) {
        if (id > s.goaway_last_stream_id()) ++totals_.refused_by_goaway;
      }
    }
    ::close(p.fd);
  };
  std::vector<pollfd> fds;
  for (;;) {
    const int64_t now = NowUs();
    int timeout_ms = 100;
    fds.clear();
    fds.push_back({stop_fd_, POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    for (const auto& p : peers) {
      short events = POLLIN;
      if (!p->out.empty()) {
        if (p->out.front().due_us <= now) {
          events |= POLLOUT;
        } else {
          timeout_ms = std::min<int>(timeout_ms, static_cast<int>((p->out.front().due_us - now + 999) / 1000));
        }
      }
      fds.push_back({p->fd, events, 0});
    }
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) break;
    if (fds[0].revents & POLLIN) break;
    if (fds[1].revents & POLLIN) {
      for (;;) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        auto p = std::make_unique<Peer>();
        p->fd = fd;
        p->server = std::make_unique<H2TestServer>(opt_.server);
        peers.push_back(std::move(p));
      }
    }
    for (size_t i = 0; i < peers.size(); ++i) {
      Peer& p = *peers[i];
      const short revents = i + 2 < fds.size() && fds[i + 2].fd == p.fd ? fds[i + 2].revents : 0;
      if (revents & (POLLIN | POLLHUP | POLLERR)) {
        for (;;) {
          const ssize_t n = ::recv(p.fd, buf.data(), buf.size(), 0);
          if (n > 0) {
            p.up.Feed(buf.data(), static_cast<size_t>(n));
            if (!p.server->Receive(buf.data(), static_cast<size_t>(n))) {
              p.dead = true;
              break;
            }
            continue;
          }
          if (n < 0 && errno == EINTR) continue;
          if (n == 0 || errno != EAGAIN) p.dead = true;
          break;
        }
      }
      // What the server queued, held back by the delay.
      const int64_t due = NowUs() + opt_.delay.count();
      for (;;) {
        const std::span<const uint8_t> out = p.server->Output();
        if (out.empty()) break;
        if (!p.out.empty() && p.out.back().due_us == due) {
          p.out.back().bytes.insert(p.out.back().bytes.end(), out.begin(), out.end());
        } else {
          p.out.push_back({due, std::vector<uint8_t>(out.begin(), out.end())});
        }
        p.server->Consumed(out.size());
      }
      const int64_t t = NowUs();
      while (!p.dead && !p.out.empty() && p.out.front().due_us <= t) {
        Peer::Chunk& c = p.out.front();
        const ssize_t n = ::send(p.fd, c.bytes.data() + p.out_off, c.bytes.size() - p.out_off, MSG_NOSIGNAL);
        if (n < 0) {
          if (errno != EAGAIN && errno != EINTR) p.dead = true;
          break;
        }
        p.out_off += static_cast<size_t>(n);
        if (p.out_off == c.bytes.size()) {
          p.out.pop_front();
          p.out_off = 0;
        }
      }
    }
    for (size_t i = 0; i < peers.size();) {
      if (peers[i]->dead) {
        finish(*peers[i]);
        peers.erase(peers.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
  }
  for (auto& p : peers) finish(*p);
}

}  // namespace fairbench::agent
