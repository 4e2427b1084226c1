#include "testing/support/tcp_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace fairbench::testing {
namespace {

sockaddr_in Loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  return a;
}

// Writes all of buf; false when the peer is gone.
bool WriteAll(int fd, const char* buf, size_t n) {
  while (n > 0) {
    const ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    buf += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

namespace {

// A listening socket on 127.0.0.1:port (0: any free port), or -1.
int Listen(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a = Loopback(port);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 128) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

Result<std::unique_ptr<TcpProxy>> TcpProxy::Start(int upstream_port) {
  std::unique_ptr<TcpProxy> p(new TcpProxy());
  p->upstream_port_ = upstream_port;
  p->listen_fd_ = Listen(0);
  if (p->listen_fd_ < 0) return Status::Unavailable("cannot listen on 127.0.0.1: " + std::string(strerror(errno)));
  sockaddr_in a{};
  socklen_t len = sizeof a;
  getsockname(p->listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
  p->port_ = ntohs(a.sin_port);
  p->listening_ = true;
  p->acceptor_ = std::thread([raw = p.get()] { raw->AcceptLoop(); });
  return p;
}

TcpProxy::~TcpProxy() {
  stop_ = true;
  if (acceptor_.joinable()) acceptor_.join();
  if (listen_fd_ >= 0) close(listen_fd_);
  CutAll();
  std::vector<std::thread> relays;
  {
    std::lock_guard<std::mutex> lock(mu_);
    relays.swap(relays_);
  }
  for (auto& t : relays) t.join();
}

void TcpProxy::SetRefusing(bool refusing) {
  refusing_ = refusing;
  while (listening_ == refusing && !stop_) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

int TcpProxy::CutAll() {
  std::lock_guard<std::mutex> lock(mu_);
  for (int fd : open_fds_) shutdown(fd, SHUT_RDWR);
  return static_cast<int>(open_fds_.size() / 2);
}

void TcpProxy::AcceptLoop() {
  while (!stop_) {
    if (refusing_ && listen_fd_ >= 0) {
      close(listen_fd_);
      listen_fd_ = -1;
      listening_ = false;
    } else if (!refusing_ && listen_fd_ < 0) {
      listen_fd_ = Listen(port_);  // the same port again
      listening_ = listen_fd_ >= 0;
    }
    if (listen_fd_ < 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    pollfd pfd{listen_fd_, POLLIN, 0};
    if (poll(&pfd, 1, 20) <= 0) continue;
    const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    std::lock_guard<std::mutex> lock(mu_);
    relays_.emplace_back([this, client] { Relay(client); });
  }
}

void TcpProxy::Relay(int client) {
  const int upstream = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a = Loopback(upstream_port_);
  if (upstream < 0 || connect(upstream, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (upstream >= 0) close(upstream);
    close(client);
    return;
  }
  const int one = 1;
  setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(upstream, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  {
    std::lock_guard<std::mutex> lock(mu_);
    open_fds_.insert(client);
    open_fds_.insert(upstream);
  }
  ++relayed_;
  char buf[16384];
  pollfd fds[2] = {{client, POLLIN, 0}, {upstream, POLLIN, 0}};
  while (!stop_) {
    const int n = poll(fds, 2, 100);
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    bool done = false;
    for (int i = 0; i < 2 && !done; ++i) {
      if (fds[i].revents == 0) continue;
      const ssize_t r = recv(fds[i].fd, buf, sizeof buf, 0);
      if (r <= 0 || !WriteAll(fds[1 - i].fd, buf, static_cast<size_t>(r))) done = true;
    }
    if (done) break;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    open_fds_.erase(client);
    open_fds_.erase(upstream);
  }
  close(client);
  close(upstream);
}

}  // namespace fairbench::testing
