// DelayServer: an HTTP/1.1 server that answers each request after an exact,
// configured delay — the known quantity that latency tests measure a load
// generator against.
//
// Every request is answered "200 Hello, World!" (13 bytes; no body for
// HEAD) `delay` after its last byte arrived; with `stall_every` N > 0, every
// Nth request in the server's arrival order (counted over all connections)
// waits `delay + stall` instead. Keep-alive is HTTP/1.1's (Connection: close
// and HTTP/1.0 end a connection after its response); pipelined requests are
// read as they come, each timed from its own arrival, and answered in order
// (a stalled response holds back the ones behind it on its connection, as
// HTTP/1.1 requires).
//
// One thread, one epoll set: the listening socket, a timerfd armed
// (absolute CLOCK_MONOTONIC, timer slack 1 ns) for the earliest response due,
// a signalfd, and the connections. A request's arrival is the kernel's
// receive time of its last segment (SO_TIMESTAMPNS, moved onto the monotonic
// clock), or the time it was read when the kernel gives none: a busy loop
// therefore does not push responses late unless it is late by more than the
// delay. Each response is recorded (DelayRecords) with the time its first
// byte was handed to the kernel.
//
// Not thread-safe: Listen, Run and the callback Run makes all happen on one
// thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <time.h>

#include "common/status.h"
#include "testing/delay_server/delay_records.h"

namespace fairbench::testing {

struct DelayServerOptions {
  std::string host = "127.0.0.1";  // numeric IPv4 or IPv6 address
  uint16_t port = 0;               // 0: the kernel's choice (see port())
  std::chrono::nanoseconds delay{0};
  uint64_t stall_every = 0;  // 0: never
  std::chrono::nanoseconds stall{0};
  size_t max_records = 4'000'000;  // beyond: counted as dropped, not recorded
  // Keep each request's bytes in its record (tests of what a client sent).
  bool record_requests = false;
  // Each response carries "X-Request-Index: N", N the request's place in
  // the server's arrival order (DelayRecord::index): a value that changes
  // with every response, for clients that read responses.
  bool index_header = false;
  int backlog = 4096;
};

// The monotonic time of `real_ns`, a CLOCK_REALTIME instant (the kernel's
// receive stamp), reading the clocks with `read_clock`. Never earlier than
// the truth, whatever delays fall between the clock reads: a request's
// arrival stamped early would let the latency tests' bounds exceed what
// the agent can measure.
int64_t MonotonicOfRealtime(int64_t real_ns, int64_t (*read_clock)(clockid_t));

class DelayServer {
 public:
  explicit DelayServer(DelayServerOptions options);
  ~DelayServer();
  DelayServer(const DelayServer&) = delete;
  DelayServer& operator=(const DelayServer&) = delete;

  // Binds and listens; port() is the bound port afterwards.
  Status Listen();
  uint16_t port() const { return port_; }

  // Serves until `on_signal` returns false. `signals` must be blocked in
  // the calling thread (they are taken through a signalfd); `on_signal` runs
  // on the loop's thread, between events, and may call Snapshot().
  Status Run(const std::vector<int>& signals, const std::function<bool(int signal)>& on_signal);

  // Everything recorded so far, with the next snapshot number.
  DelayRecords Snapshot();

 private:
  struct Mark {
    uint64_t first;  // byte offset of the response on its connection
    uint64_t end;
    size_t record;  // index into records_, or kNoRecord
  };
  struct Pending {
    int64_t due_ns;
    size_t record;
    bool head;       // HEAD: no body
    bool close;      // answer with Connection: close, then close
    uint64_t index;  // in the server's arrival order
  };
  struct Conn {
    int fd = -1;
    uint32_t id = 0;
    uint32_t requests = 0;
    std::string in;  // bytes of requests not complete yet
    std::deque<Pending> pending;
    bool in_heap = false;
    bool closing = false;   // a Connection: close response is queued: read no more
    bool want_out = false;  // EPOLLOUT armed after a short write
    std::string out;
    size_t out_off = 0;
    uint64_t appended = 0;  // bytes of responses queued on this connection, ever
    uint64_t written = 0;   // of which handed to the kernel
    std::deque<Mark> marks;
  };
  struct Due {
    int64_t at_ns;
    int fd;
    uint32_t id;
    bool operator>(const Due& o) const { return at_ns > o.at_ns; }
  };
  static constexpr size_t kNoRecord = SIZE_MAX;

  void Accept();
  void OnReadable(Conn& c, uint32_t events);
  // Epoll interest from the connection's state (reading, waiting to write).
  void UpdateEvents(Conn& c);
  // Parses the complete requests in c.in; false when the connection was closed.
  bool ParseRequests(Conn& c, int64_t arrived_ns);
  void Schedule(Conn& c);
  void RunDue(int64_t now_ns);
  void Respond(Conn& c, int64_t now_ns);
  void Flush(Conn& c);
  void Close(Conn& c);
  void ArmTimer();
  Conn* Find(int fd, uint32_t id);

  DelayServerOptions options_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int timer_fd_ = -1;
  uint16_t port_ = 0;
  std::vector<std::unique_ptr<Conn>> conns_;  // by fd
  std::vector<Due> heap_;                     // min-heap: each connection's next response
  int64_t armed_ns_ = 0;                      // the timerfd's deadline; 0: disarmed
  std::unique_ptr<char[]> buf_;
  uint32_t next_conn_id_ = 0;
  uint64_t snapshot_ = 0;
  uint64_t requests_ = 0;
  uint64_t served_ = 0;
  uint64_t abandoned_ = 0;
  uint64_t dropped_ = 0;
  std::vector<DelayRecord> records_;
};

}  // namespace fairbench::testing
