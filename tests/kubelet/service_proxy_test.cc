// The test kubelet's Service forwarder against real sockets on loopback:
// what a client dialling the Service's address and port receives is what
// the target server sent, the target can change, and a port dropped stops
// answering.
#include "testing/kubelet/service_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace fairbench::kubelet {
namespace {

// A server on 127.0.0.1:<any> that writes `greeting` to each connection,
// then echoes what it reads until the client closes.
class GreetingServer {
 public:
  explicit GreetingServer(std::string greeting) : greeting_(std::move(greeting)) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    listen(fd_, 8);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      while (true) {
        const int c = accept(fd_, nullptr, nullptr);
        if (c < 0) return;  // closed: the test is over
        (void)!write(c, greeting_.data(), greeting_.size());
        char buf[256];
        ssize_t n;
        while ((n = read(c, buf, sizeof buf)) > 0) (void)!write(c, buf, static_cast<size_t>(n));
        close(c);
      }
    });
  }
  ~GreetingServer() {
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
  }
  int port() const { return port_; }

 private:
  std::string greeting_;
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

// Dials ip:port, sends `send`, half-closes, and returns all it reads ("" when refused).
std::string Exchange(const std::string& ip, int port, const std::string& send) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string out;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    (void)!write(fd, send.data(), send.size());
    shutdown(fd, SHUT_WR);
    char buf[256];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

// Catches: a Service address that does not forward (or forwards to the
// wrong port), bytes lost in either direction or a half-close not passed
// on (the echo would hang or be cut), a new target not taking effect, a
// port no longer routed still answering, and two Services given one address.
TEST(ServiceProxy, ForwardsAServicePortToTheTargetAndFollowsIt) {
  auto pool = std::make_shared<AddressPool>("127.77.77");
  ServiceProxy proxy(pool);
  GreetingServer one("one:"), two("two:");
  auto address = proxy.Route("ns", "web", {{8081, "127.0.0.1", one.port()}});
  ASSERT_TRUE(address.ok()) << address.status().ToString();
  EXPECT_EQ(*address, "127.77.77.1");
  EXPECT_EQ(Exchange(*address, 8081, "ping"), "one:ping");

  auto other = proxy.Route("ns", "other", {{8081, "127.0.0.1", one.port()}});
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*other, *address);

  auto again = proxy.Route("ns", "web", {{8081, "127.0.0.1", two.port()}, {8082, "127.0.0.1", one.port()}});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *address) << "a Service keeps its address";
  EXPECT_EQ(Exchange(*address, 8081, "x"), "two:x");
  EXPECT_EQ(Exchange(*address, 8082, "y"), "one:y");

  ASSERT_TRUE(proxy.Route("ns", "web", {{8082, "127.0.0.1", one.port()}}).ok());
  EXPECT_EQ(Exchange(*address, 8081, "z"), "") << "a port dropped from the Service still answers";
  EXPECT_FALSE(proxy.Route("ns", "web", {{8082, "10.0.0.1", 80}}).ok()) << "forwarded off loopback";
  proxy.Stop();
}

}  // namespace
}  // namespace fairbench::kubelet
