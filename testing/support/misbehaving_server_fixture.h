// MisbehavingServerFixture: runs fairbench-test-misbehaving-server as a
// real process on a loopback port and reads back what it counted.
//
// Start() launches the program with --port 0 and learns the port from its
// "listening on" line, so no other process can take the port in between
// and no probe connection is counted (or fills slow-accept's backlog).
// Stats() asks for a fresh snapshot (SIGUSR1) and waits for it; Stop() ends
// the server with SIGTERM, expects exit 0 and returns the final counters.
// The destructor kills a server that is still running. Not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "testing/support/misbehaving_mode.h"
#include "testing/support/misbehaving_stats.h"
#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"

namespace fairbench::testing {

struct MisbehavingFixtureOptions {
  MisbehavingMode mode = MisbehavingMode::kOk;
  std::chrono::milliseconds delay{1000};  // delay mode only
  std::string host = "127.0.0.1";
  std::string binary;  // empty: BinaryPath("fairbench-test-misbehaving-server")
  std::chrono::milliseconds start_timeout{5000};
};

class MisbehavingServerFixture {
 public:
  static Result<std::unique_ptr<MisbehavingServerFixture>> Start(MisbehavingFixtureOptions options);

  // A loopback port where nothing listens (connecting is refused). Like any
  // free port, another process could take it; tests use it at once.
  static Result<uint16_t> RefusedPort();

  const std::string& host() const { return options_.host; }
  uint16_t port() const { return port_; }
  MisbehavingMode mode() const { return options_.mode; }
  pid_t pid() const { return process_.pid(); }

  // A snapshot taken now (after every response already written is counted).
  Result<MisbehavingStats> Stats(std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // SIGTERM, exit 0 expected, final counters. Safe to call once.
  Result<MisbehavingStats> Stop(std::chrono::milliseconds timeout = std::chrono::seconds(5));

  // What the server printed (stdout and stderr), for failure messages.
  std::string Output() const;

 private:
  MisbehavingServerFixture(MisbehavingFixtureOptions options, TempDir dir, Subprocess process)
      : options_(std::move(options)), dir_(std::move(dir)), process_(std::move(process)) {}
  Result<MisbehavingStats> ReadStatsFile() const;

  MisbehavingFixtureOptions options_;
  TempDir dir_;
  Subprocess process_;
  uint16_t port_ = 0;
  uint64_t last_snapshot_ = 0;
};

}  // namespace fairbench::testing
