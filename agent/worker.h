// Worker: one load thread — an epoll set, its share of the connections, its
// own counters and histograms.
//
// The loop waits with nanosecond deadlines (epoll_pwait2) for the earliest
// of: socket readiness, a request timeout (an intrusive FIFO: every request
// has the same timeout, so the oldest is always at the head), a timer on the
// heap (a reconnect after backoff, or the next scheduled send at a constant
// rate), a 100 ms rate sample, or an interval boundary.
//
// Per request on a keep-alive connection the loop makes one send and one
// recv: a socket is registered once, edge-triggered for IN|OUT|RDHUP; the
// next request is written right after the batch of events in which the
// previous response was parsed (all reads of a batch, then all writes);
// EPOLLOUT matters only after a short write; a read shorter than the buffer
// means the socket is drained.
//
// HTTPS (opt.tls_context set): after the TCP connect a connection is
// handshaking (SSL_connect on the non-blocking socket, resumed on each
// readiness event until done); its time is counted apart from request
// latency and a failure is a handshake error. Then SSL_write / SSL_read
// replace send / recv with the same one-write, one-read shape per request
// (OpenSSL's read-ahead fills a whole record in one read). Each connection's
// Transport (plain or TLS, chosen once it is connected: agent/transport.h)
// does the reads and writes and says done, retry, closed or error; the
// worker keeps the state machine. The worker keeps the sessions the server
// issued and offers the newest on each new connection (SessionPool: a TLS
// 1.3 ticket once, a TLS 1.2 session always); a connection's SSL object is
// reset and reused on its next connect.
//
// HTTP/2 (opt.protocol h2c or h2): once connected (and, for h2, once ALPN
// chose "h2" — otherwise a handshake error), a connection carries an
// H2Connection. Reads go to its Receive until the socket is drained; the
// streams that ended are counted (a response like an HTTP/1.1 one, latency
// from its submission; GOAWAY, RST_STREAM, protocol errors by kind, a
// stream cut by the end of the connection as a read error, a stream past
// its timeout cancelled and counted as a timeout). After the batch of
// events, new streams are submitted up to the stream limit and every
// stream's frames go out in one write. A connection whose GOAWAY left no
// open stream is closed and reopened. A timer per connection (on the heap)
// finds the streams past their timeout.
//
// A constant rate (opt.rate, wrk2's open model): each connection has its
// share, one request every C/R, connections staggered one slot apart over
// every agent's connections (connection_offset, total_connections).
// HTTP/1.1 sends a request at its time if the connection is idle, or right
// after the response in flight. HTTP/2 sends it at its time as a new
// stream if one of the connection's slots (--streams, capped by the
// server's SETTINGS_MAX_CONCURRENT_STREAMS) is free, or as soon as one
// frees; a second timer per connection wakes the loop for the next due
// request. Either way nothing goes out before its time, requests that fell
// behind go out one after the other as the connection frees up, and
// latency runs from the time each was due (the corrected histogram; the
// uncorrected one from the actual send), so a server that cannot keep up
// shows as latency that grows. The backlog is no queue, only how far the
// connection's next due time lags behind the clock; what was due by the
// end but never sent is counted (Counters::unsent).
//
// The HTTP/2 half of the worker lives in worker_h2.cc; gRPC's accounting
// of a stream's outcome in worker_grpc.cc.
//
// A wrk script (opt.script): the worker takes its requests, and its
// address, from its thread's ScriptThread (agent/script.h). A static script
// gives one request like the flags do, and nothing else changes. With
// request(), each request (or pipelined batch) is the text request()
// returned, kept in its connection until written (HTTP/2: parsed into
// streams). With response(), a response's bytes are kept while it arrives
// and handed to response() once complete; with delay(), a connection waits
// that long before each request. After thread:stop() the worker closes its
// connections and opens none until the end; after a script error it also
// counts a `script` error and stops the whole load (StopLoad).
//
// Vary (opt.vary, HTTP/1.1 with one request, pipeline 1): each request is
// built for its connection's next number into the connection's own
// buffer (`text`, grown once and reused), and every verify_every-th
// answer of a connection is kept while it arrives (`capture`) and checked
// against the expectation for its number; its Date is looked at too
// (Counters::answers). Without vary, nothing of this runs.
//
// The worker knows its coordinator (the engine) only as a LoadCoordinator:
// in its loop it reads the coordinator's LoadState (the stop flag, the
// start, the boundaries) without a call; it calls it once per interval
// (Deliver) and once per run (ReportConnected, SetLoadStart). Only the
// coordinator's Wake and those calls touch anything shared.
#pragma once

#include <sys/epoll.h>

#include <cstdint>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "agent/engine_options.h"
#include "agent/h2_connection.h"
#include "agent/load_coordinator.h"
#include "agent/response_parser.h"
#include "agent/tls_context.h"
#include "agent/transport.h"
#include "common/metrics.h"
#include "common/status.h"

namespace fairbench::agent {

class ScriptThread;

class Worker {
 public:
  // `coordinator` and `options` must outlive the worker.
  Worker(LoadCoordinator& coordinator, const EngineOptions& options, uint32_t index, uint32_t first_connection,
         uint32_t connections);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  Status Init();
  void Run();
  // Wakes the loop from another thread (after the coordinator set the stop
  // flag or the start).
  void Wake();

  uint64_t drained() const { return drained_; }
  uint64_t abandoned() const { return abandoned_; }
  uint32_t peak_open() const { return peak_open_; }
  // What idle waiting did (opt.idle_wait): naps, or polls.
  const IdleReport& idle() const { return idle_; }

 private:
  // CLOCK_MONOTONIC in nanoseconds: the worker's clock.
  static int64_t NowNs() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  }

  enum class State : uint8_t { kClosed, kConnecting, kHandshaking, kIdle, kBusy };
  enum class Why : uint8_t { kConnect, kRead, kWrite, kTimeout, kPortExhaustion, kHandshake };

  struct Conn {
    Transport io;           // the socket, and HTTPS's SSL on it (while open)
    SSL* parked = nullptr;  // HTTPS: the last connection's SSL, reset and reused on the next
    State state = State::kClosed;
    bool in_fifo = false;
    uint16_t pending = 0;    // responses still expected for the batch in flight
    uint16_t answered = 0;   // responses of the batch already parsed
    uint32_t id = 0;         // global connection number
    uint32_t req = 0;        // request index (batch of one)
    uint32_t write_off = 0;  // bytes of the batch written so far
    uint32_t write_len = 0;  // bytes of the batch
    uint32_t failures = 0;   // consecutive failures since the last good response
    uint32_t timer_gen = 0;  // invalidates heap entries
    ResponseParser parser;
    int64_t sent_ns = 0;           // first byte of the batch written (connect / handshake start before)
    int64_t intended_ns = 0;       // constant rate: when it should have been sent
    int64_t next_intended_ns = 0;  // constant rate: the next slot of this connection
    int64_t deadline_ns = 0;       // FIFO: connect or response deadline
    Conn* prev = nullptr;
    Conn* next = nullptr;
    std::unique_ptr<uint32_t[]> batch;  // pipelining: request index of each response
    // A script: the text request() returned (being written), whether it is
    // HEAD, the response arriving (when response() wants it), and whether
    // delay() was waited for before the next request.
    std::string text;
    std::string capture;
    bool text_head = false;
    bool delayed = false;
    // Vary (opt.vary): the connection's numbers, the number of the request
    // in flight (its bytes are built into `text`), requests sent, and
    // whether this answer is kept in `capture` and checked.
    VarySequence numbers;
    uint64_t n = 0;
    uint64_t varied = 0;
    bool sampled = false;
    // HTTP/2: the codec (while open), the streams awaiting their outcome,
    // and when the armed timeout timer fires (0: none).
    std::unique_ptr<H2Connection> h2;
    uint32_t streams = 0;
    int64_t h2_timer_ns = 0;
    int64_t h2_send_ns = 0;  // constant rate: when the armed send timer fires (0: none)
  };

  // What a timer on the heap is for: the connection's own (a reconnect, an
  // HTTP/1.1 send or delay, HTTP/2's timeouts), or, at a constant rate,
  // HTTP/2's next due request.
  enum class TimerKind : uint8_t { kConn, kH2Send };
  struct Timer {
    int64_t at_ns;
    Conn* conn;
    uint32_t gen;
    TimerKind kind;
    bool operator>(const Timer& o) const { return at_ns > o.at_ns; }
  };

  // Connection life cycle.
  void SetState(Conn& c, State s);
  void StartConnect(Conn& c, int64_t now);
  void OnConnected(Conn& c, int64_t now);
  // HTTPS: advances the handshake; on success the connection is idle.
  void Handshake(Conn& c, int64_t now);
  // The connection is ready for requests (TCP connected, TLS done).
  void OnReady(Conn& c, int64_t now);
  void Close(Conn& c);
  void Fail(Conn& c, Why why, int64_t now);
  void ScheduleReconnect(Conn& c, int64_t now, bool after_failure);
  void ArmTimer(Conn& c, int64_t at_ns, TimerKind kind = TimerKind::kConn);
  // Starts the first connect of connections not yet opened, at a bounded pace.
  void OpenConnections(int64_t now);

  // Requests and responses.
  void MaybeSend(Conn& c, int64_t now);
  void Send(Conn& c, int64_t now, int64_t intended);
  void ContinueWrite(Conn& c, int64_t now);
  void OnEvent(Conn& c, uint32_t events);
  void Read(Conn& c, uint32_t events);
  // Returns false when the connection was closed while handling the bytes.
  bool OnBytes(Conn& c, const char* data, size_t len);
  // Returns false when the connection was closed (end of keep-alive, error).
  bool OnResponse(Conn& c, int64_t now);
  void OnEof(Conn& c);
  bool BatchHead(const Conn& c, uint16_t i) const;
  // Script: thread:stop() or an error: close every connection and open
  // none until the end (after an error, stop the whole load).
  void Halt(int64_t now);
  // HTTP/2 with request(): submits the next stream from request()'s texts;
  // false when nothing was submitted. `intended`: when it was due.
  bool H2SubmitScripted(Conn& c, int64_t now, int64_t intended);
  // Vary: checks the sampled answer in c.capture against c.n's expectation.
  void CheckAnswer(Conn& c, int status, int64_t now);
  // Constant rate: the requests due before `at` that their connections
  // have not sent, but for one a free connection's timer is about to send.
  uint64_t Unsent(int64_t at) const;

  // HTTP/2.
  void H2Open(Conn& c, int64_t now);
  void H2OnEvent(Conn& c, uint32_t events);
  void H2Read(Conn& c, uint32_t events);
  // Submits new streams (once started, not draining; at a constant rate,
  // those due by `now`, and arms the send timer for the next), then writes
  // the frames. Returns false when the connection was closed.
  bool H2Pump(Conn& c, int64_t now);
  bool H2Flush(Conn& c, int64_t now);
  // Counts the streams that ended.
  void H2Outcomes(Conn& c, int64_t now);
  // The transport ended (EOF, a read or write error): open streams end as
  // kClosed; the connection is closed and reopened.
  void H2End(Conn& c, int64_t now, bool eof, Why why);
  // After reading: closes a connection that failed or whose GOAWAY is done.
  // Returns false when it was closed. `lone_failure`: the connection failed
  // with no stream to count it on.
  bool H2AfterRead(Conn& c, int64_t now, bool lone_failure);
  void H2Expire(Conn& c, int64_t at_ns, int64_t now);
  // gRPC (worker_grpc.cc): counts a complete response as a call by its
  // grpc-status, or as a protocol error by kind (then returns false: it is
  // no request and has no latency).
  bool GrpcCall(const H2Outcome& o);
  void H2ArmTimer(Conn& c, int64_t at_ns);

  // Timers.
  void FifoPush(Conn& c, int64_t deadline);
  void FifoRemove(Conn& c);
  void ExpireTimeouts(int64_t now);
  void RunTimers(int64_t now);
  void CrossBoundaries(int64_t now);
  void BeginDrain(int64_t now);
  // Starts the load once the load's start time is known and has come.
  void MaybeStart(int64_t now);
  void SampleRate(int64_t now);
  int64_t NextDeadline(int64_t now) const;
  // Waits for events until `deadline` (idle waiting as opt.idle_wait says)
  // and handles them.
  void Wait(int64_t deadline, int64_t now);
  // kNap: a zero-timeout poll; if nothing is ready, one nap of nap_ns_ on
  // the thread's own timer, then another poll. Returns the events found.
  int Nap(epoll_event* events);
  // Sleeps in epoll until an event or `deadline`; returns the events found.
  int Block(epoll_event* events, int64_t deadline, int64_t now);
  // kNap: the next nap's length from the responses of the last sample
  // period, `period_ns` long: at most 1/kNapShare of their mean latency
  // and kMaxNapNs, or twice both where at least one response came per
  // such long nap; none below kMinNapNs, where a timer costs more than
  // the wake-up it saves.
  void SizeNap(int64_t period_ns);

  LoadCoordinator& coordinator_;
  const LoadState& load_;  // coordinator_.state()
  const EngineOptions& opt_;
  const uint32_t index_;
  const uint32_t first_conn_;
  std::vector<Conn> conns_;
  RequestSchedule schedule_;

  int epfd_ = -1;
  int wakefd_ = -1;
  bool have_pwait2_ = true;
  std::unique_ptr<char[]> buf_;
  // HTTPS: the engine's context, and the sessions the server issued, offered
  // on this worker's new connections.
  const TlsContext* tls_ = nullptr;
  std::unique_ptr<SessionPool> sessions_;
  std::string tls_batch_;  // HTTPS with pipelining: the rest of a batch, contiguous
  static constexpr size_t kBufSize = 64 * 1024;

  // First connects: a token bucket kOpenBurst deep, refilled at kOpenPerMs.
  static constexpr uint32_t kOpenBurst = 512;
  static constexpr double kOpenPerMs = 50;
  static constexpr uint32_t kOpenPerCall = 128;
  static constexpr int64_t kOpenTickNs = 1'000'000;
  static constexpr int kMaxEvents = 512;  // epoll events taken per turn
  size_t opened_ = 0;
  double open_tokens_ = 0;
  int64_t open_refill_ns_ = 0;

  Conn* fifo_head_ = nullptr;
  Conn* fifo_tail_ = nullptr;
  std::vector<Timer> heap_;  // min-heap by at_ns
  // Connections whose response completed in the current batch of events;
  // their next requests are sent when the batch is done.
  struct Answered {
    Conn* conn;
    uint32_t gen;
  };
  std::vector<Answered> answered_;
  std::vector<int32_t> expired_;  // HTTP/2: streams past their timeout, reused
  const bool h2_;                 // opt_.protocol is h2c or h2
  // Where requests come from: opt_'s, or the script thread's. script_ is
  // set only when the script runs during the load (request(), response()
  // or delay()).
  ScriptThread* const script_;
  const std::vector<BuiltRequest>* requests_;
  const std::vector<std::shared_ptr<const H2Request>>* h2_requests_;
  const SocketAddress* address_;
  const VaryPlan* const vary_;  // opt_.vary, or null
  std::string answer_body_;     // vary: a sampled answer's body, reused
  std::string expected_;        // vary: its expectation, reused
  std::string date_;            // vary: the last Date seen in a sampled answer
  int64_t date_since_ns_ = 0;   // when it was first seen
  bool dynamic_ = false;        // the script has request()
  bool capture_ = false;        // the script has response()
  bool halted_ = false;
  // HTTP/2: the streams of request()'s last text still to submit.
  std::vector<std::shared_ptr<const H2Request>> h2_queue_;
  size_t h2_next_ = 0;

  // Timing, all in CLOCK_MONOTONIC nanoseconds.
  int64_t start_ns_ = 0;  // load began (once started_)
  int64_t timeout_ns_;
  int64_t conn_period_ns_ = 0;  // constant rate: each connection's send period
  int64_t slot_ns_ = 0;         // constant rate: spacing of consecutive connections
  size_t boundary_ = 0;         // next boundary to cross
  int64_t interval_start_ns_ = 0;
  int64_t next_sample_ns_ = 0;
  int64_t last_sample_ns_ = 0;
  uint64_t sample_requests_ = 0;

  bool started_ = false;
  bool reported_connected_ = false;
  bool draining_ = false;
  int64_t drain_deadline_ns_ = 0;
  uint32_t in_flight_ = 0;  // connections with a batch in flight
  uint32_t open_ = 0;       // established connections
  uint32_t peak_open_ = 0;
  uint64_t drained_ = 0;
  uint64_t abandoned_ = 0;
  IdleReport idle_;
  int64_t nap_ns_ = 0;       // kNap: the next nap's length; 0: block
  uint64_t nap_lat_us_ = 0;  // kNap: latencies summed over the sample period
  uint64_t nap_lat_n_ = 0;
  static constexpr int64_t kMaxNapNs = 50'000;
  static constexpr int64_t kMinNapNs = 10'000;
  static constexpr int64_t kNapShare = 50;

  IntervalStats cur_;
};

}  // namespace fairbench::agent
