// DelayServerFixture: runs fairbench-test-delay-server as a real process on
// a loopback port and reads back what it recorded.
//
// Start() launches the program with --port 0 and learns the port from its
// "listening on" line (no probe connection is made, so none is recorded).
// Records() asks for a fresh snapshot (SIGUSR1) and waits for it; Stop()
// ends the server with SIGTERM, expects exit 0 and returns the final
// records. The destructor kills a server that is still running.
// Not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "testing/delay_server/delay_records.h"
#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"

namespace fairbench::testing {

struct DelayFixtureOptions {
  std::chrono::nanoseconds delay{0};
  uint64_t stall_every = 0;
  std::chrono::nanoseconds stall{0};
  std::string host = "127.0.0.1";
  std::vector<int> cpus;  // pin the server to these CPUs; empty: anywhere
  std::string binary;     // empty: BinaryPath("fairbench-test-delay-server")
  std::chrono::milliseconds start_timeout{5000};
  bool record_requests = false;  // --record-requests: each record keeps its request's bytes
  bool index_header = false;     // --index-header: responses carry X-Request-Index
};

class DelayServerFixture {
 public:
  static Result<std::unique_ptr<DelayServerFixture>> Start(DelayFixtureOptions options);

  const std::string& host() const { return options_.host; }
  uint16_t port() const { return port_; }
  pid_t pid() const { return process_.pid(); }

  // A snapshot taken now.
  Result<DelayRecords> Records(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // SIGTERM, exit 0 expected, the final records. Safe to call once.
  Result<DelayRecords> Stop(std::chrono::milliseconds timeout = std::chrono::seconds(10));

  // What the server printed (stdout and stderr), for failure messages.
  std::string Output() const;

 private:
  DelayServerFixture(DelayFixtureOptions options, TempDir dir, Subprocess process)
      : options_(std::move(options)), dir_(std::move(dir)), process_(std::move(process)) {}
  Result<DelayRecords> ReadRecords() const;

  DelayFixtureOptions options_;
  TempDir dir_;
  Subprocess process_;
  uint16_t port_ = 0;
  uint64_t last_snapshot_ = 0;
};

}  // namespace fairbench::testing
