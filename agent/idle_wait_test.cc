#include "agent/idle_wait.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace fairbench::agent {
namespace {

SocketAddress Addr(const char* host) {
  auto r = Resolve(host, 80);
  EXPECT_TRUE(r.ok()) << host;
  return r.ok() ? r->front() : SocketAddress{};
}

// Catches: a misspelt or missing setting accepted by --idle-wait's parser.
TEST(IdleWaitTest, ParsesTheFourSettings) {
  EXPECT_EQ(ParseIdleWaitMode("auto"), IdleWaitMode::kAuto);
  EXPECT_EQ(ParseIdleWaitMode("block"), IdleWaitMode::kBlock);
  EXPECT_EQ(ParseIdleWaitMode("nap"), IdleWaitMode::kNap);
  EXPECT_EQ(ParseIdleWaitMode("poll"), IdleWaitMode::kPoll);
  EXPECT_EQ(ParseIdleWaitMode("Nap"), std::nullopt);
  EXPECT_EQ(ParseIdleWaitMode("spin"), std::nullopt);
  EXPECT_EQ(ParseIdleWaitMode(""), std::nullopt);
  for (const auto& [mode, name] : kIdleWaitModeNames) EXPECT_EQ(ParseIdleWaitMode(ToString(mode)), mode) << name;
}

// Catches: only 127.0.0.1 taken for loopback (the test kubelet gives pods
// 127.0.x.y), IPv6 forgotten, or a documentation address (TEST-NET-1,
// 2001:db8::/32: never this machine) taken for local.
TEST(IdleWaitTest, LoopbackIsThisMachineADocumentationAddressIsNot) {
  EXPECT_TRUE(IsThisMachine(Addr("127.0.0.1")));
  EXPECT_TRUE(IsThisMachine(Addr("127.3.2.1")));
  EXPECT_TRUE(IsThisMachine(Addr("::1")));
  EXPECT_TRUE(IsThisMachine(Addr("::ffff:127.0.0.1")));
  EXPECT_FALSE(IsThisMachine(Addr("192.0.2.1")));
  EXPECT_FALSE(IsThisMachine(Addr("2001:db8::1")));
}

// The source address the kernel would use towards another host is an
// address of one of this machine's interfaces (not loopback): the
// independent oracle for the getifaddrs walk. Catches: interface addresses
// not looked at (a target on the node's own IP would block).
TEST(IdleWaitTest, AnInterfaceAddressIsThisMachine) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(9);
  inet_pton(AF_INET, "192.0.2.1", &to.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    close(fd);
    GTEST_SKIP() << "no route off this machine";
  }
  SocketAddress self;
  self.length = sizeof(sockaddr_in);
  socklen_t len = self.length;
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&self.storage), &len), 0);
  close(fd);
  EXPECT_TRUE(IsThisMachine(self)) << self.ToString();
}

// Catches: auto resolved the same way everywhere, or an explicit setting
// overridden by the address.
TEST(IdleWaitTest, AutoNapsOnlyForATargetOnThisMachine) {
  EXPECT_EQ(ResolveIdleWait(IdleWaitMode::kAuto, Addr("127.0.0.1")), IdleWait::kNap);
  EXPECT_EQ(ResolveIdleWait(IdleWaitMode::kAuto, Addr("192.0.2.1")), IdleWait::kBlock);
  EXPECT_EQ(ResolveIdleWait(IdleWaitMode::kBlock, Addr("127.0.0.1")), IdleWait::kBlock);
  EXPECT_EQ(ResolveIdleWait(IdleWaitMode::kNap, Addr("192.0.2.1")), IdleWait::kNap);
  EXPECT_EQ(ResolveIdleWait(IdleWaitMode::kPoll, Addr("192.0.2.1")), IdleWait::kPoll);
}

}  // namespace
}  // namespace fairbench::agent
