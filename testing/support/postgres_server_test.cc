// PostgresServer: a real server that fsyncs, listens on loopback and on its
// socket, runs unprivileged, and leaves nothing behind.
#include "testing/support/postgres_server.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "testing/support/ports.h"

namespace fairbench::testing {
namespace {

// Catches: a server that does not fsync (a killed writer's test proving
// nothing about the disk), one listening beyond loopback, running as root,
// or outliving its object (a process on the port, files in /tmp).
TEST(PostgresServerTest, StartsUnprivilegedWithFsyncAndLeavesNothingBehind) {
  auto started = PostgresServer::Start();
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  std::unique_ptr<PostgresServer> server = std::move(*started);
  EXPECT_EQ(*server->Psql("postgres", "SHOW fsync"), "on\n");
  EXPECT_EQ(*server->Psql("postgres", "SHOW listen_addresses"), "127.0.0.1\n");
  EXPECT_EQ(*server->Psql("postgres", "SELECT current_user"), "postgres\n");
  EXPECT_TRUE(PortAccepts("127.0.0.1", server->port()));
  const std::string dir = server->socket_dir();
  struct stat st {};
  ASSERT_EQ(stat((dir + "/data").c_str(), &st), 0);
  if (geteuid() == 0) {
    EXPECT_NE(st.st_uid, 0u) << "the server's files are root's: it ran as root";
  }
  EXPECT_TRUE(std::filesystem::exists(dir + "/.s.PGSQL." + std::to_string(server->port())));
  auto bad = server->Psql("postgres", "SELECT * FROM no_such_table");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("no_such_table"), std::string::npos) << bad.status().message();

  const uint16_t port = server->port();
  server.reset();
  EXPECT_FALSE(PortAccepts("127.0.0.1", port));
  EXPECT_FALSE(std::filesystem::exists(dir));
}

}  // namespace
}  // namespace fairbench::testing
