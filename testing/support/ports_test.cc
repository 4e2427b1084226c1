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

TEST(PortsTest, RejectsNamesThatAreNotAddresses) {
  EXPECT_EQ(WaitForPort("localhost", 80, std::chrono::milliseconds(10)).code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace fairbench::testing
