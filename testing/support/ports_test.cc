#include "testing/support/ports.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace fairbench::testing {
namespace {

TEST(PortsTest, FreePortIsRefusedUntilSomeoneListens) {
  auto port = FreeLoopbackPort();
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  EXPECT_GT(*port, 0);
  EXPECT_FALSE(PortAccepts("127.0.0.1", *port));

  Status timed_out = WaitForPort("127.0.0.1", *port, std::chrono::milliseconds(50));
  EXPECT_EQ(timed_out.code(), Status::Code::kDeadlineExceeded);

  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(*port);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 16), 0);
  EXPECT_TRUE(WaitForPort("127.0.0.1", *port, std::chrono::seconds(2)).ok());
  close(fd);
}

// Catches: a free port checked on 127.0.0.1 only: a port another address
// holds (here 127.0.0.2, as a real kubelet holds one on 198.18.N.1) would
// be handed out, and a test server binding 0.0.0.0 on it would fail.
TEST(PortsTest, APortBoundOnAnotherAddressIsNotFree) {
  auto port = FreeLoopbackPort();
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  EXPECT_TRUE(PortFreeOnEveryAddress(*port));
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  ASSERT_EQ(inet_pton(AF_INET, "127.0.0.2", &addr.sin_addr), 1);
  addr.sin_port = htons(*port);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_FALSE(PortFreeOnEveryAddress(*port));
  close(fd);
  EXPECT_TRUE(PortFreeOnEveryAddress(*port));
}

TEST(PortsTest, RejectsNamesThatAreNotAddresses) {
  EXPECT_EQ(WaitForPort("localhost", 80, std::chrono::milliseconds(10)).code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace fairbench::testing
