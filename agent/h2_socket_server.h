// H2SocketServer: H2TestServer (nghttp2's own server session) over real
// TCP on loopback, for the engine's HTTP/2 tests: one thread accepts
// connections and serves each with its own H2TestServer and an
// H2FrameScanner on the bytes the client sent. Optionally every byte the
// server writes is held back for `delay` (a known server time per
// response, for latency checks).
//
// Its totals over all connections (the servers' own counts and what the
// scanners saw) are the truth the engine's counts are compared with.
// Test code only. Start/Stop/totals from one thread; totals() after
// Stop() (or at any time, under the lock, for a snapshot).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>

#include "agent/h2_test_server.h"
#include "common/mutex.h"
#include "common/status.h"

namespace fairbench::agent {

struct H2SocketServerOptions {
  H2TestServerOptions server;          // for each connection
  std::chrono::microseconds delay{0};  // every write held back this long
};

struct H2SocketTotals {
  uint64_t connections = 0;
  uint64_t requests = 0;      // complete requests (H2TestServer::requests)
  uint64_t responses = 0;     // responses sent in full
  uint64_t resets_sent = 0;   // RST_STREAMs the servers sent
  uint64_t goaways_sent = 0;  // connections whose server sent GOAWAY
  // Streams the client opened (HEADERS seen by the scanner) above the
  // last-stream-id of the server's GOAWAY: refused, never processed.
  uint64_t refused_by_goaway = 0;
  uint32_t peak_open_streams = 0;  // the most any one connection had open
  // The first stream of the first connection that had one: its header
  // fields as the server read them, and its body.
  std::vector<std::pair<std::string, std::string>> first_request_fields;
  std::string first_request_body;
};

class H2SocketServer {
 public:
  explicit H2SocketServer(H2SocketServerOptions options = {});
  ~H2SocketServer();
  H2SocketServer(const H2SocketServer&) = delete;
  H2SocketServer& operator=(const H2SocketServer&) = delete;

  // Listens on 127.0.0.1 (a free port) and starts the thread.
  Status Start();
  uint16_t port() const { return port_; }
  // Closes every connection (counting it) and joins the thread.
  void Stop();
  H2SocketTotals totals() const;

 private:
  void Run();

  const H2SocketServerOptions opt_;
  int listen_fd_ = -1;
  int stop_fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
  mutable Mutex mu_;
  H2SocketTotals totals_ GUARDED_BY(mu_);
};

}  // namespace fairbench::agent
