// PostgresServer: a real PostgreSQL server for tests — Debian's (the newest
// /usr/lib/postgresql/N/bin), in a fresh temp dir, owned by the test.
//
// Start() runs initdb into the temp dir and starts `postgres` in the
// foreground (its own process group, so that nothing outlives the object),
// listening on 127.0.0.1 at a free port and on a unix socket in the temp
// dir, with fsync on (a committed transaction is on disk, as in
// production). Logins: the superuser `postgres` without a password (trust,
// over the socket and TCP), and `fairbench` with the password kPassword
// (scram-sha-256 over TCP: the URL a test gives with a password, and a wrong
// one refused). initdb and postgres refuse to run as root: when the test is
// root they run as `nobody` (setpriv, util-linux) and the temp dir is
// nobody's ($TMPDIR must then be one nobody can enter; /tmp is). psql (/usr/bin/psql, the independent client) reads and writes
// as the superuser over the socket.
//
// The destructor stops the server (pg_ctl stop -m immediate, then SIGKILL
// to its group) and removes the temp dir. A missing PostgreSQL is a failed
// Status naming the package. Not thread-safe; not usable across fork().
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"

namespace fairbench::testing {

class PostgresServer {
 public:
  static constexpr const char* kPasswordUser = "fairbench";
  static constexpr const char* kPassword = "s3cret-Pa55";

  static Result<std::unique_ptr<PostgresServer>> Start();
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  uint16_t port() const { return port_; }
  const std::string& socket_dir() const { return socket_dir_; }
  // "postgresql://postgres@127.0.0.1:PORT/DATABASE".
  std::string Url(const std::string& database = "postgres") const;
  // The same, as kPasswordUser with `password`.
  std::string PasswordUrl(const std::string& database, const std::string& password = kPassword) const;

  // A new, empty database owned by `owner`; its Url().
  Result<std::string> CreateDatabase(const std::string& name, const std::string& owner = "postgres");
  // psql -X -A -t (unaligned, tuples only) on `database`: what it printed;
  // a failed Status with psql's stderr when it failed.
  Result<std::string> Psql(const std::string& database, const std::string& sql) const;

 private:
  PostgresServer() = default;

  std::optional<TempDir> dir_;
  std::string bin_dir_;  // /usr/lib/postgresql/N/bin
  std::string data_dir_;
  std::string socket_dir_;
  uint16_t port_ = 0;
  std::optional<Subprocess> postgres_;
};

}  // namespace fairbench::testing
