#include "testing/support/ports.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>
#include <thread>

namespace fairbench::testing {
namespace {

// Fills a sockaddr for a numeric address; false if it is not one.
bool MakeAddress(const std::string& host, uint16_t port, sockaddr_storage* out, socklen_t* len) {
  std::memset(out, 0, sizeof(*out));
  auto* v4 = reinterpret_cast<sockaddr_in*>(out);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    *len = sizeof(sockaddr_in);
    return true;
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(out);
  if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    *len = sizeof(sockaddr_in6);
    return true;
  }
  return false;
}

}  // namespace

Result<uint16_t> FreeLoopbackPort() {
  // Below Linux's ephemeral range (32768-60999 by default): a port the
  // kernel hands out as the source port of an outgoing connection — the
  // many a Kubernetes control plane and its clients open — could be taken
  // that way between this call and the caller's bind. A random port from
  // 20000-32767 that binds now: only another test's pick can race it.
  static thread_local std::mt19937 rng(std::random_device{}() ^ static_cast<unsigned>(getpid()));
  std::uniform_int_distribution<int> pick(20000, 32767);
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int port = pick(rng);
    if (PortFreeOnEveryAddress(static_cast<uint16_t>(port))) return static_cast<uint16_t>(port);
  }
  return Status::IoError("no free loopback port in 20000-32767 after 200 tries");
}

bool PortFreeOnEveryAddress(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(port);
  const bool free = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return free;
}

bool PortAccepts(const std::string& host, uint16_t port) {
  sockaddr_storage addr;
  socklen_t len = 0;
  if (!MakeAddress(host, port, &addr, &len)) return false;
  int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0;
  close(fd);
  return ok;
}

Status WaitForPort(const std::string& host, uint16_t port, std::chrono::milliseconds timeout) {
  sockaddr_storage addr;
  socklen_t len = 0;
  if (!MakeAddress(host, port, &addr, &len)) {
    return Status::InvalidArgument("not a numeric address: " + host);
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::milliseconds(2);
  while (true) {
    if (PortAccepts(host, port)) return Status::Ok();
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::DeadlineExceeded(host + ":" + std::to_string(port) + " did not accept within " +
                                      std::to_string(timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

}  // namespace fairbench::testing
