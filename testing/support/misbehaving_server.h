// MisbehavingServer: a deliberately bad HTTP/1.1 server that lets tests
// prove a client counts each kind of error exactly.
//
// One thread accepts; each connection gets its own thread (simple beats
// fast here: a few hundred connections are fine). Requests are read
// completely (headers, then a Content-Length body; a chunked request body is
// not supported and closes the connection). "The OK response" below is
//   HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nHello, World!
// and a connection stays open for the next request unless the mode says
// otherwise or the client sent "Connection: close" (or HTTP/1.0).
//
//   ok                  the OK response, keep-alive.
//   reset-mid-response  writes the first half of the OK response, then
//                       closes with SO_LINGER 0: the client gets RST
//                       (ECONNRESET). Counts a partial response.
//   close-early         closes (FIN) without answering.
//   close-after-headers headers with Content-Length: 100 and 10 body bytes,
//                       then closes (FIN). Counts a partial response.
//   delay               waits --delay, then the OK response; if the client
//                       has closed by then nothing is written and the
//                       response counts as abandoned.
//   status-500          500 Internal Server Error, 21-byte body, keep-alive.
//   status-mix          200, 301, 404, 503, 200, ... by request index on
//                       each connection (a new connection starts at 200).
//   chunked             the body "Hello, World!" as chunks "Hello" and
//                       ", World!", each with a chunk extension, then a
//                       zero chunk and trailer "X-Checksum: 13"; keep-alive.
//   connection-close    the OK response plus "Connection: close", then
//                       closes (FIN): one request per connection.
//   close-delimited     status line, Content-Type, blank line, body; no
//                       Content-Length, no chunking; then closes (FIN).
//   garbage             "HTTP/1.1 abc Garbage" as the status line (then
//                       Content-Length: 13 and a body); keep-alive.
//   slow-accept         listens with backlog 1 and never accepts.
//
// The echo modes answer a request for /echo/N with N as a text/plain body
// (any other target: 404), keep-alive, with a Date header of the current
// second (RFC 9110's IMF-fixdate):
//   echo                honestly, each request its own answer.
//   echo-cached         a server that caches: every /echo/* gets the first
//                       answer it computed, whatever N was asked.
//   echo-wrong-length   honestly, but the body is followed by one more
//                       byte ("\n") than its Content-Length says; then
//                       "Connection: close" and closes (FIN), so that the
//                       stray byte ends no other answer.
//   echo-no-date        honestly, without a Date header.
//   echo-frozen-date    honestly, but Date is the second the server
//                       started, forever.
//
// Counters (see MisbehavingStats) are atomics. requests_read is counted
// before anything is written back, so a client never sees the answer to an
// uncounted request; responses_written is counted right after the write,
// and a settle lock makes it exact in snapshots taken by TakeStats().
// connections_accepted counts accept() returns: a connection the kernel
// has completed but the server not yet accepted is not in it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <string>

#include "common/status.h"
#include "testing/support/misbehaving_mode.h"
#include "testing/support/misbehaving_stats.h"

namespace fairbench::testing {

struct MisbehavingServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0: the kernel picks; see port()
  MisbehavingMode mode = MisbehavingMode::kOk;
  std::chrono::milliseconds delay{1000};
};

class MisbehavingServer {
 public:
  explicit MisbehavingServer(MisbehavingServerOptions options) : options_(std::move(options)) {}
  MisbehavingServer(const MisbehavingServer&) = delete;
  MisbehavingServer& operator=(const MisbehavingServer&) = delete;

  // Binds and listens. After it, port() is the real port.
  Status Listen();
  uint16_t port() const { return port_; }
  // Starts the accept thread (not in slow-accept mode). Connection threads
  // are detached: the process ends with _exit, so they are never joined.
  void Serve();
  // A consistent snapshot: waits (up to a second) for writes in progress.
  MisbehavingStats TakeStats();

 private:
  void AcceptLoop();
  void HandleConnection(int fd);
  // The echo modes' answer to `target`.
  std::string Echo(std::string_view target);
  // Writes all of `data`; counts a response if `count` and it all went out.
  bool WriteResponse(int fd, const std::string& data, bool count);

  MisbehavingServerOptions options_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;

  std::atomic<uint64_t> connections_accepted_{0};
  std::atomic<uint64_t> requests_read_{0};
  std::atomic<uint64_t> responses_written_{0};
  std::atomic<uint64_t> partial_responses_{0};
  std::atomic<uint64_t> abandoned_responses_{0};
  std::string cached_;  // echo-cached: the first answer's body (guarded by cache_mu_)
  std::mutex cache_mu_;
  std::string start_date_;  // echo-frozen-date: Date at Listen()
  uint64_t snapshots_ = 0;  // only the signal thread takes snapshots

  // Held shared by a connection while it writes a response and counts it,
  // exclusively by TakeStats(): a snapshot never sees a response on the
  // wire that is not counted yet.
  std::shared_timed_mutex settle_mu_;
};

}  // namespace fairbench::testing
