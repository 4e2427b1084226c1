#include "agent/worker.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <ctime>

namespace fairbench::agent {
namespace {

// Before a TLS call whose result SSL_get_error interprets: the thread's
// error queue must be empty. Every failed call empties it, so it almost
// always is, and peeking costs less than ERR_clear_error, which walks all
// of the queue's slots (a measurable share of a busy h2 connection's CPU).
inline void ClearTlsErrors() {
  if (ERR_peek_error() != 0) ERR_clear_error();
}

inline int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

constexpr int64_t kSampleNs = 100'000'000;  // wrk's Req/Sec sampling period
constexpr int64_t kMaxBackoffNs = 1'000'000'000;
constexpr int64_t kFirstBackoffNs = 1'000'000;
constexpr int kMaxEvents = 512;
constexpr uint32_t kMaxIov = 64;

std::vector<uint32_t> Weights(const EngineOptions& o) {
  std::vector<uint32_t> w;
  for (const BuiltRequest& r : o.requests) w.push_back(r.weight);
  return w;
}

}  // namespace

Worker::Worker(LoadCoordinator& coordinator, const EngineOptions& options, uint32_t index, uint32_t first_connection,
               uint32_t connections)
    : coordinator_(coordinator),
      load_(coordinator.state()),
      opt_(options),
      index_(index),
      first_conn_(first_connection),
      conns_(connections),
      schedule_(Weights(options)),
      h2_(options.protocol != HttpProtocol::kHttp1),
      timeout_ns_(options.timeout.count()) {}

Worker::~Worker() {
  for (Conn& c : conns_) {
    if (c.ssl != nullptr) TlsContext::Release(c.ssl);
    if (c.parked != nullptr) TlsContext::Release(c.parked);
    if (c.fd >= 0) ::close(c.fd);
  }
  if (epfd_ >= 0) ::close(epfd_);
  if (wakefd_ >= 0) ::close(wakefd_);
}

Status Worker::Init() {
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epfd_ < 0) return Status::IoError(std::string("epoll_create1: ") + std::strerror(errno));
  wakefd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wakefd_ < 0) return Status::IoError(std::string("eventfd: ") + std::strerror(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;
  if (epoll_ctl(epfd_, EPOLL_CTL_ADD, wakefd_, &ev) != 0) return Status::IoError(std::string("epoll_ctl: ") + std::strerror(errno));
  buf_ = std::make_unique<char[]>(kBufSize);
  tls_ = opt_.tls_context.get();
  // Room for two tickets per connection (what a full TLS 1.3 handshake
  // brings), bounded.
  if (tls_ != nullptr) sessions_ = std::make_unique<SessionPool>(std::min<size_t>(2 * conns_.size() + 2, 256));
  answered_.reserve(kMaxEvents);
  if (opt_.rate > 0) {
    // Each connection sends every C/R seconds; consecutive connections (of
    // all agents) are one slot apart.
    const double total = opt_.total_connections > 0 ? opt_.total_connections : opt_.connections;
    conn_period_ns_ = static_cast<int64_t>(std::llround(1e9 * opt_.connections / opt_.rate));
    slot_ns_ = static_cast<int64_t>(std::llround(static_cast<double>(conn_period_ns_) / total));
  }
  for (uint32_t i = 0; i < conns_.size(); ++i) {
    Conn& c = conns_[i];
    c.id = first_conn_ + i;
    if (opt_.pipeline > 1) c.batch = std::make_unique<uint32_t[]>(opt_.pipeline);
  }
  return Status::Ok();
}

void Worker::Wake() {
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wakefd_, &one, sizeof one);
}

// ---------------------------------------------------------------------------
// Connection life cycle

void Worker::SetState(Conn& c, State s) {
  const bool was_open = c.state == State::kIdle || c.state == State::kBusy;
  const bool is_open = s == State::kIdle || s == State::kBusy;
  if (was_open && !is_open) --open_;
  if (!was_open && is_open && ++open_ > peak_open_) peak_open_ = open_;
  if (c.state == State::kBusy) --in_flight_;
  if (s == State::kBusy) ++in_flight_;
  c.state = s;
}

void Worker::StartConnect(Conn& c, int64_t now) {
  const SocketAddress& addr = opt_.addresses.front();
  const int fd = ::socket(addr.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
  if (fd < 0) {
    Fail(c, Why::kConnect, now);
    return;
  }
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  c.fd = fd;
  c.sent_ns = now;  // connect start, for the connect time
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  ev.data.ptr = &c;
  if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    Fail(c, Why::kConnect, now);
    return;
  }
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr.storage), addr.length) == 0) {
    OnConnected(c, now);
    return;
  }
  if (errno == EINPROGRESS) {
    SetState(c, State::kConnecting);
    FifoPush(c, now + timeout_ns_);
    return;
  }
  Fail(c, errno == EADDRNOTAVAIL ? Why::kPortExhaustion : Why::kConnect, now);
}

void Worker::OnConnected(Conn& c, int64_t now) {
  FifoRemove(c);
  if (!draining_) {
    ++cur_.counters.connects;
    cur_.counters.connect_time_us += static_cast<uint64_t>((now - c.sent_ns) / 1000);
  }
  if (tls_ == nullptr) {
    OnReady(c, now);
    return;
  }
  c.ssl = tls_->NewConnection(c.fd, sessions_.get(), c.parked);
  c.parked = nullptr;
  if (c.ssl == nullptr) {
    Fail(c, Why::kHandshake, now);
    return;
  }
  c.sent_ns = now;  // handshake start
  SetState(c, State::kHandshaking);
  FifoPush(c, now + timeout_ns_);
  Handshake(c, now);
}

void Worker::Handshake(Conn& c, int64_t now) {
  ERR_clear_error();
  const int r = SSL_connect(c.ssl);
  if (r == 1) {
    FifoRemove(c);
    if (!draining_) {
      Counters& k = cur_.counters;
      ++k.tls_handshakes;
      k.tls_handshake_time_us += static_cast<uint64_t>((now - c.sent_ns) / 1000);
      if (SSL_session_reused(c.ssl)) ++k.tls_resumed;
    }
    OnReady(c, now);
    return;
  }
  const int err = SSL_get_error(c.ssl, r);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) return;
  ERR_clear_error();
  Fail(c, Why::kHandshake, now);
}

void Worker::OnReady(Conn& c, int64_t now) {
  if (h2_) {
    H2Open(c, now);
    return;
  }
  SetState(c, State::kIdle);
  MaybeSend(c, now);
}

void Worker::Close(Conn& c) {
  if (c.ssl != nullptr) {
    TlsContext::Park(c.ssl);
    c.parked = c.ssl;
    c.ssl = nullptr;
  }
  if (c.fd >= 0) {
    ::close(c.fd);  // also removes it from the epoll set
    c.fd = -1;
  }
  FifoRemove(c);
  ++c.timer_gen;
  SetState(c, State::kClosed);
  c.pending = 0;
  c.write_off = c.write_len = 0;
  if (c.h2 != nullptr) {
    c.h2.reset();
    c.streams = 0;
    c.h2_timer_ns = 0;
  }
}

void Worker::Fail(Conn& c, Why why, int64_t now) {
  if (draining_) {
    if (c.state == State::kBusy && c.write_off == c.write_len) abandoned_ += c.pending;
    Close(c);
    return;
  }
  ErrorCounts& e = cur_.counters.errors;
  switch (why) {
    case Why::kConnect: ++e.connect; break;
    case Why::kRead: ++e.read; break;
    case Why::kWrite: ++e.write; break;
    case Why::kTimeout: ++e.timeout; break;
    case Why::kPortExhaustion: ++e.port_exhaustion; break;
    case Why::kHandshake: ++e.handshake; break;
  }
  Close(c);
  ScheduleReconnect(c, now, true);
}

void Worker::ScheduleReconnect(Conn& c, int64_t now, bool after_failure) {
  if (draining_) return;
  if (after_failure) ++c.failures;
  // The first reconnect after a failure is immediate (as wrk); repeated
  // failures back off exponentially up to 1 s, with jitter so that
  // thousands of connections do not retry in lockstep.
  if (c.failures < 2) {
    StartConnect(c, now);
    return;
  }
  const uint32_t doublings = std::min<uint32_t>(c.failures - 2, 10);
  const int64_t backoff = std::min(kMaxBackoffNs, kFirstBackoffNs << doublings);
  const uint64_t h = (uint64_t{c.id} * 0x9E3779B97F4A7C15ull) ^ (uint64_t{c.failures} * 0xC2B2AE3D27D4EB4Full);
  const int64_t delay = backoff / 2 + static_cast<int64_t>(h % static_cast<uint64_t>(backoff / 2 + 1));
  ArmTimer(c, now + delay);
}

void Worker::ArmTimer(Conn& c, int64_t at_ns) {
  heap_.push_back(Timer{at_ns, &c, c.timer_gen});
  std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
}

// ---------------------------------------------------------------------------
// Requests and responses

void Worker::MaybeSend(Conn& c, int64_t now) {
  if (draining_) {
    Close(c);
    return;
  }
  if (!started_) return;  // sent when the load starts
  int64_t intended = now;
  if (opt_.rate > 0) {
    if (c.next_intended_ns > now) {
      ArmTimer(c, c.next_intended_ns);
      return;
    }
    intended = c.next_intended_ns;
    c.next_intended_ns += conn_period_ns_;
  }
  Send(c, now, intended);
}

bool Worker::BatchHead(const Conn& c, uint16_t i) const {
  return opt_.requests[opt_.pipeline == 1 ? c.req : c.batch[i]].head;
}

void Worker::Send(Conn& c, int64_t now, int64_t intended) {
  const uint32_t depth = opt_.pipeline;
  uint32_t len = 0;
  if (depth == 1) {
    c.req = schedule_.Next();
    len = static_cast<uint32_t>(opt_.requests[c.req].bytes.size());
  } else {
    for (uint32_t i = 0; i < depth; ++i) {
      c.batch[i] = schedule_.Next();
      len += static_cast<uint32_t>(opt_.requests[c.batch[i]].bytes.size());
    }
  }
  c.parser.Reset(BatchHead(c, 0));
  c.pending = static_cast<uint16_t>(depth);
  c.answered = 0;
  c.write_off = 0;
  c.write_len = len;
  c.sent_ns = now;
  c.intended_ns = intended;
  SetState(c, State::kBusy);
  FifoPush(c, now + timeout_ns_);
  ContinueWrite(c, now);
}

void Worker::ContinueWrite(Conn& c, int64_t now) {
  if (c.ssl != nullptr) {
    ContinueWriteTls(c, now);
    return;
  }
  ssize_t n;
  if (opt_.pipeline == 1) {
    const std::string& bytes = opt_.requests[c.req].bytes;
    n = ::send(c.fd, bytes.data() + c.write_off, c.write_len - c.write_off, MSG_NOSIGNAL);
  } else {
    iovec iov[kMaxIov];
    uint32_t count = 0;
    uint32_t skip = c.write_off;
    for (uint32_t i = 0; i < opt_.pipeline && count < kMaxIov; ++i) {
      const std::string& bytes = opt_.requests[c.batch[i]].bytes;
      if (skip >= bytes.size()) {
        skip -= static_cast<uint32_t>(bytes.size());
        continue;
      }
      iov[count].iov_base = const_cast<char*>(bytes.data() + skip);
      iov[count].iov_len = bytes.size() - skip;
      skip = 0;
      ++count;
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = count;
    n = ::sendmsg(c.fd, &msg, MSG_NOSIGNAL);
  }
  if (n >= 0) {
    c.write_off += static_cast<uint32_t>(n);
    if (!draining_) cur_.counters.bytes_written += static_cast<uint64_t>(n);
    return;  // a short write resumes on EPOLLOUT
  }
  if (errno == EAGAIN || errno == EINTR) return;
  Fail(c, Why::kWrite, now);
}

void Worker::ContinueWriteTls(Conn& c, int64_t now) {
  const char* data;
  size_t len;
  if (opt_.pipeline == 1) {
    const std::string& bytes = opt_.requests[c.req].bytes;
    data = bytes.data() + c.write_off;
    len = c.write_len - c.write_off;
  } else {
    // SSL_write takes one buffer. The batch's rest is rebuilt on each try
    // (the same bytes; the context accepts a moved buffer), in a string
    // whose capacity is kept.
    tls_batch_.clear();
    uint32_t skip = c.write_off;
    for (uint32_t i = 0; i < opt_.pipeline; ++i) {
      const std::string& bytes = opt_.requests[c.batch[i]].bytes;
      if (skip >= bytes.size()) {
        skip -= static_cast<uint32_t>(bytes.size());
        continue;
      }
      tls_batch_.append(bytes, skip, std::string::npos);
      skip = 0;
    }
    data = tls_batch_.data();
    len = tls_batch_.size();
  }
  while (len > 0) {
    ClearTlsErrors();
    const int n = SSL_write(c.ssl, data, static_cast<int>(std::min<size_t>(len, INT_MAX)));
    if (n > 0) {
      c.write_off += static_cast<uint32_t>(n);
      if (!draining_) cur_.counters.bytes_written += static_cast<uint64_t>(n);
      data += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    const int err = SSL_get_error(c.ssl, n);
    if (err == SSL_ERROR_WANT_WRITE || err == SSL_ERROR_WANT_READ) return;  // resumes on the next event
    ERR_clear_error();
    Fail(c, Why::kWrite, now);
    return;
  }
}

void Worker::OnEvent(Conn& c, uint32_t events) {
  const uint32_t gen = c.timer_gen;
  if (c.state == State::kConnecting) {
    if (events & (EPOLLERR | EPOLLHUP)) {
      int err = 0;
      socklen_t len = sizeof err;
      getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
      Fail(c, err == EADDRNOTAVAIL ? Why::kPortExhaustion : Why::kConnect, NowNs());
      return;
    }
    if (!(events & EPOLLOUT)) return;
    OnConnected(c, NowNs());
    if (c.timer_gen != gen || c.state == State::kHandshaking) return;
    if (c.ssl != nullptr && !SSL_has_pending(c.ssl)) return;
  } else if (c.state == State::kHandshaking) {
    Handshake(c, NowNs());
    if (c.timer_gen != gen || c.state == State::kHandshaking) return;
    // Bytes OpenSSL read ahead past the handshake get no new edge.
    if (!SSL_has_pending(c.ssl)) return;
  }
  if (c.fd < 0) return;
  if (c.h2 != nullptr) {
    H2OnEvent(c, events);
    return;
  }
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
    Read(c, events);
    if (c.timer_gen != gen) return;
  }
  if ((events & EPOLLOUT) && c.state == State::kBusy && c.write_off < c.write_len) ContinueWrite(c, NowNs());
}

void Worker::ReadTls(Conn& c, uint32_t events) {
  char* const buf = buf_.get();
  for (;;) {
    ClearTlsErrors();
    const int n = SSL_read(c.ssl, buf, static_cast<int>(kBufSize));
    if (n > 0) {
      if (!draining_) cur_.counters.bytes_read += static_cast<uint64_t>(n);
      if (!OnBytes(c, buf, static_cast<size_t>(n))) return;
      // The response is complete and nothing is left in OpenSSL's buffer:
      // the next bytes come with a new edge (after RDHUP, read on to see the
      // end of the stream).
      if (c.state == State::kIdle && !SSL_has_pending(c.ssl) && !(events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))) return;
      continue;
    }
    const int err = SSL_get_error(c.ssl, n);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) return;
    ERR_clear_error();
    if (err == SSL_ERROR_ZERO_RETURN) {
      OnEof(c);
      return;
    }
    if (err == SSL_ERROR_SYSCALL && errno == EINTR) continue;
    Fail(c, Why::kRead, NowNs());
    return;
  }
}

void Worker::Read(Conn& c, uint32_t events) {
  if (c.ssl != nullptr) {
    ReadTls(c, events);
    return;
  }
  char* const buf = buf_.get();
  for (;;) {
    const ssize_t n = ::recv(c.fd, buf, kBufSize, 0);
    if (n > 0) {
      if (!draining_) cur_.counters.bytes_read += static_cast<uint64_t>(n);
      if (!OnBytes(c, buf, static_cast<size_t>(n))) return;
      // A short read drained the socket; edge-triggered epoll reports new
      // data with a new event. After RDHUP, read on to see the end of file.
      if (static_cast<size_t>(n) < kBufSize && !(events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))) return;
      continue;
    }
    if (n == 0) {
      OnEof(c);
      return;
    }
    if (errno == EAGAIN) return;
    if (errno == EINTR) continue;
    Fail(c, Why::kRead, NowNs());
    return;
  }
}

bool Worker::OnBytes(Conn& c, const char* data, size_t len) {
  const uint32_t gen = c.timer_gen;
  while (len > 0) {
    if (c.state != State::kBusy) {
      Fail(c, Why::kRead, NowNs());  // bytes nobody asked for
      return false;
    }
    size_t used = 0;
    const ResponseParser::Outcome o = c.parser.Feed(data, len, &used);
    if (o == ResponseParser::Outcome::kNeedMore) return true;
    if (o == ResponseParser::Outcome::kError) {
      Fail(c, Why::kRead, NowNs());
      return false;
    }
    data += used;
    len -= used;
    const int64_t now = NowNs();
    if (!OnResponse(c, now)) return false;
    if (c.timer_gen != gen) return false;
    if (c.state == State::kIdle) {
      if (len > 0) {
        Fail(c, Why::kRead, now);  // more bytes than the responses we asked for
        return false;
      }
      // The next request goes out after this batch of events: reads first,
      // then writes, which costs less per request than alternating.
      answered_.push_back({&c, c.timer_gen});
      return true;
    }
  }
  return true;
}

bool Worker::OnResponse(Conn& c, int64_t now) {
  const int status = c.parser.status();
  const bool keep = c.parser.keep_alive();
  --c.pending;
  ++c.answered;
  if (draining_) {
    ++drained_;
  } else {
    Counters& k = cur_.counters;
    ++k.requests;
    ++sample_requests_;
    const int cls = status / 100;
    ++k.status_classes[cls >= 1 && cls <= 5 ? cls : 0];
    if (status > 399) ++k.errors.status;
    const int64_t latency_us = (now - c.sent_ns) / 1000;
    if (opt_.rate > 0) {
      cur_.latency.Record((now - c.intended_ns) / 1000);
      cur_.uncorrected.Record(latency_us);
    } else {
      cur_.latency.Record(latency_us);
    }
  }
  c.failures = 0;
  if (c.pending > 0) {
    if (!keep) {
      Fail(c, Why::kRead, now);  // the server closes with pipelined requests unanswered
      return false;
    }
    c.parser.Reset(BatchHead(c, c.answered));
    return true;
  }
  FifoRemove(c);
  SetState(c, State::kIdle);
  if (!keep || !opt_.keep_alive) {
    if (!keep && opt_.keep_alive && !draining_) ++cur_.counters.closes_by_server;
    Close(c);
    ScheduleReconnect(c, now, false);
    return false;
  }
  return true;
}

void Worker::OnEof(Conn& c) {
  const int64_t now = NowNs();
  if (c.state == State::kBusy) {
    if (c.parser.FeedEof() == ResponseParser::Outcome::kComplete) {
      if (OnResponse(c, now) && c.state == State::kIdle) {
        Close(c);  // the connection is gone whatever the headers said
        ScheduleReconnect(c, now, false);
      } else if (c.state == State::kBusy) {
        Fail(c, Why::kRead, now);
      }
      return;
    }
    Fail(c, Why::kRead, now);  // cut short, or no answer at all
    return;
  }
  // The server closed an idle keep-alive connection. Not an error, but it
  // counts towards backoff so that a server that closes every connection at
  // once is not hammered in a loop.
  if (!draining_) ++cur_.counters.closes_by_server;
  Close(c);
  ScheduleReconnect(c, now, true);
}

// ---------------------------------------------------------------------------
// HTTP/2

void Worker::H2Open(Conn& c, int64_t now) {
  if (c.ssl != nullptr && !TlsContext::NegotiatedH2(c.ssl)) {
    Fail(c, Why::kHandshake, now);  // the server speaks HTTP/1.1 only: never fall back silently
    return;
  }
  auto h2 = H2Connection::Create(opt_.h2);
  if (!h2.ok()) {
    Fail(c, Why::kConnect, now);
    return;
  }
  c.h2 = std::move(*h2);
  c.streams = 0;
  c.h2_timer_ns = 0;
  SetState(c, State::kIdle);
  H2Pump(c, now);  // the preface and our SETTINGS; streams once the server's SETTINGS came
}

void Worker::H2OnEvent(Conn& c, uint32_t events) {
  const uint32_t gen = c.timer_gen;
  if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) || (c.ssl != nullptr && SSL_has_pending(c.ssl))) {
    H2Read(c, events);
    if (c.timer_gen != gen) return;
  }
  // The rest of a write, then streams in place of those its RST_STREAMs freed.
  if (events & EPOLLOUT) H2Pump(c, NowNs());
}

void Worker::H2Read(Conn& c, uint32_t events) {
  char* const buf = buf_.get();
  H2Connection& h2 = *c.h2;
  for (;;) {
    ssize_t n;
    if (c.ssl != nullptr) {
      ClearTlsErrors();
      const int r = SSL_read(c.ssl, buf, static_cast<int>(kBufSize));
      if (r <= 0) {
        const int err = SSL_get_error(c.ssl, r);
        if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) break;
        ERR_clear_error();
        if (err == SSL_ERROR_SYSCALL && errno == EINTR) continue;
        H2End(c, NowNs(), err == SSL_ERROR_ZERO_RETURN, Why::kRead);
        return;
      }
      n = r;
    } else {
      n = ::recv(c.fd, buf, kBufSize, 0);
      if (n <= 0) {
        if (n < 0 && errno == EAGAIN) break;
        if (n < 0 && errno == EINTR) continue;
        H2End(c, NowNs(), n == 0, Why::kRead);
        return;
      }
    }
    if (!draining_) cur_.counters.bytes_read += static_cast<uint64_t>(n);
    const bool ok = h2.Receive(reinterpret_cast<const uint8_t*>(buf), static_cast<size_t>(n));
    if (!ok) break;
    // A short read drained the socket (edge-triggered: new data brings a new
    // event); after RDHUP, read on to see the end of the stream.
    const bool more = c.ssl != nullptr ? SSL_has_pending(c.ssl) != 0 : static_cast<size_t>(n) == kBufSize;
    if (!more && !(events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))) break;
  }
  const int64_t now = NowNs();
  // A connection-level failure with no stream open is counted once.
  const bool lone_failure =
      h2.failed() && std::none_of(h2.outcomes().begin(), h2.outcomes().end(),
                                  [](const H2Outcome& o) { return o.error == H2Error::kProtocol; });
  H2Outcomes(c, now);
  if (!H2AfterRead(c, now, lone_failure)) return;
  // New streams and everything queued go out after this batch of events.
  answered_.push_back({&c, c.timer_gen});
}

bool Worker::H2AfterRead(Conn& c, int64_t now, bool lone_failure) {
  H2Connection& h2 = *c.h2;
  if (h2.failed()) {
    // The server broke HTTP/2: its open streams were counted as protocol
    // errors; send what nghttp2 queued (its GOAWAY) and start over.
    if (!draining_ && lone_failure) ++cur_.counters.errors.h2_protocol;
    H2Flush(c, now);
    if (c.h2 == nullptr) return false;
    Close(c);
    ScheduleReconnect(c, now, true);
    return false;
  }
  if (draining_ && c.streams == 0) {
    Close(c);
    return false;
  }
  if (!h2.Alive()) {
    // GOAWAY, and every stream it let finish is done.
    if (!draining_) ++cur_.counters.closes_by_server;
    Close(c);
    ScheduleReconnect(c, now, false);
    return false;
  }
  return true;
}

void Worker::H2Outcomes(Conn& c, int64_t now) {
  std::vector<H2Outcome>& out = c.h2->outcomes();
  if (out.empty()) return;
  c.streams -= static_cast<uint32_t>(std::min<size_t>(out.size(), c.streams));
  if (draining_) {
    for (const H2Outcome& o : out) {
      if (o.error == H2Error::kNone) ++drained_;
      else ++abandoned_;
    }
  } else {
    Counters& k = cur_.counters;
    for (const H2Outcome& o : out) {
      switch (o.error) {
        case H2Error::kNone: {
          ++k.requests;
          ++sample_requests_;
          const int cls = o.status / 100;
          ++k.status_classes[cls >= 1 && cls <= 5 ? cls : 0];
          if (o.status > 399) ++k.errors.status;
          cur_.latency.Record((now - static_cast<int64_t>(o.cookie)) / 1000);
          c.failures = 0;
          break;
        }
        case H2Error::kGoaway: ++k.errors.goaway; break;
        case H2Error::kRstStream: ++k.errors.rst_stream; break;
        case H2Error::kProtocol: ++k.errors.h2_protocol; break;
        case H2Error::kClosed: ++k.errors.read; break;
        case H2Error::kCancelled: ++k.errors.timeout; break;
      }
    }
  }
  out.clear();
  if (c.streams == 0 && c.state == State::kBusy) SetState(c, State::kIdle);
}

bool Worker::H2Pump(Conn& c, int64_t now) {
  H2Connection& h2 = *c.h2;
  if (started_ && !draining_) {
    const uint32_t before = c.streams;
    // In batches (RefillDue): one write then carries many requests.
    const bool refill = h2.RefillDue();
    while (refill && h2.CanSubmit()) {
      const uint32_t r = schedule_.Next();
      if (h2.Submit(*opt_.h2_requests[r], r, static_cast<uint64_t>(now)) == 0) break;
      ++c.streams;
    }
    if (c.streams > before) {
      if (c.state == State::kIdle) SetState(c, State::kBusy);
      if (c.h2_timer_ns == 0) H2ArmTimer(c, now + timeout_ns_);
    }
  }
  return H2Flush(c, now);
}

bool Worker::H2Flush(Conn& c, int64_t now) {
  H2Connection& h2 = *c.h2;
  for (;;) {
    const std::span<const uint8_t> out = h2.Output();
    if (out.empty()) {
      if (!h2.outcomes().empty()) H2Outcomes(c, now);  // streams nghttp2 could not send
      return true;
    }
    ssize_t n;
    if (c.ssl != nullptr) {
      ClearTlsErrors();
      const int r = SSL_write(c.ssl, out.data(), static_cast<int>(std::min<size_t>(out.size(), INT_MAX)));
      if (r <= 0) {
        const int err = SSL_get_error(c.ssl, r);
        if (err == SSL_ERROR_WANT_WRITE || err == SSL_ERROR_WANT_READ) return true;  // resumes on the next event
        ERR_clear_error();
        H2End(c, now, false, Why::kWrite);
        return false;
      }
      n = r;
    } else {
      n = ::send(c.fd, out.data(), out.size(), MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EAGAIN) return true;  // resumes on EPOLLOUT
        if (errno == EINTR) continue;
        H2End(c, now, false, Why::kWrite);
        return false;
      }
    }
    h2.Consumed(static_cast<size_t>(n));
    if (!draining_) cur_.counters.bytes_written += static_cast<uint64_t>(n);
  }
}

void Worker::H2End(Conn& c, int64_t now, bool eof, Why why) {
  const uint32_t open = c.streams;
  c.h2->Fail(H2Error::kClosed);
  H2Outcomes(c, now);  // each open stream: a read error
  if (draining_) {
    Close(c);
    return;
  }
  if (open == 0) {
    // Between streams: a clean close is not an error (it counts toward
    // backoff all the same, as for HTTP/1.1), a failed read or write is.
    if (eof) {
      ++cur_.counters.closes_by_server;
    } else if (why == Why::kWrite) {
      ++cur_.counters.errors.write;
    } else {
      ++cur_.counters.errors.read;
    }
  }
  Close(c);
  ScheduleReconnect(c, now, true);
}

void Worker::H2ArmTimer(Conn& c, int64_t at_ns) {
  c.h2_timer_ns = at_ns;
  ArmTimer(c, at_ns);
}

void Worker::H2Expire(Conn& c, int64_t at_ns, int64_t now) {
  if (at_ns != c.h2_timer_ns) return;  // superseded (one timer per connection is live)
  c.h2_timer_ns = 0;
  if (c.streams == 0) return;
  int64_t oldest = INT64_MAX;
  expired_.clear();
  c.h2->ForEachWaiting([&](int32_t id, uint64_t cookie) {
    const int64_t sent = static_cast<int64_t>(cookie);
    if (sent + timeout_ns_ <= now) expired_.push_back(id);
    else oldest = std::min(oldest, sent);
  });
  for (int32_t id : expired_) c.h2->Cancel(id);
  H2Outcomes(c, now);  // each one a timeout
  if (oldest != INT64_MAX) H2ArmTimer(c, oldest + timeout_ns_);
  // A cancelled stream holds its slot until its RST_STREAM is written: write
  // them first, so that RefillDue() sees the slots free (when every stream
  // timed out at once, no answer would come to refill them later).
  if (!H2Flush(c, now)) return;
  H2Pump(c, now);  // streams in their place
}

// ---------------------------------------------------------------------------
// Timers

void Worker::FifoPush(Conn& c, int64_t deadline) {
  if (c.in_fifo) FifoRemove(c);
  c.deadline_ns = deadline;
  c.prev = fifo_tail_;
  c.next = nullptr;
  if (fifo_tail_ != nullptr) fifo_tail_->next = &c;
  else fifo_head_ = &c;
  fifo_tail_ = &c;
  c.in_fifo = true;
}

void Worker::FifoRemove(Conn& c) {
  if (!c.in_fifo) return;
  if (c.prev != nullptr) c.prev->next = c.next;
  else fifo_head_ = c.next;
  if (c.next != nullptr) c.next->prev = c.prev;
  else fifo_tail_ = c.prev;
  c.prev = c.next = nullptr;
  c.in_fifo = false;
}

void Worker::ExpireTimeouts(int64_t now) {
  while (fifo_head_ != nullptr && fifo_head_->deadline_ns <= now) {
    Conn& c = *fifo_head_;
    FifoRemove(c);
    const Why why = c.state == State::kConnecting ? Why::kConnect
                    : c.state == State::kHandshaking ? Why::kHandshake
                                                      : Why::kTimeout;
    Fail(c, why, now);
  }
}

void Worker::RunTimers(int64_t now) {
  while (!heap_.empty() && heap_.front().at_ns <= now) {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    const Timer t = heap_.back();
    heap_.pop_back();
    Conn& c = *t.conn;
    if (t.gen != c.timer_gen) continue;
    if (c.h2 != nullptr) H2Expire(c, t.at_ns, NowNs());
    else if (c.state == State::kClosed) StartConnect(c, NowNs());
    else if (c.state == State::kIdle) MaybeSend(c, NowNs());
  }
}

void Worker::SampleRate(int64_t now) {
  if (now < next_sample_ns_) return;
  if (sample_requests_ > 0) {
    const double elapsed = static_cast<double>(now - last_sample_ns_) / 1e9;
    cur_.rate_samples.push_back(static_cast<double>(sample_requests_) / elapsed);
    sample_requests_ = 0;
  }
  last_sample_ns_ = now;
  next_sample_ns_ = now + kSampleNs;
}

void Worker::CrossBoundaries(int64_t now) {
  const std::vector<Boundary>& bounds = load_.boundaries;
  while (boundary_ < bounds.size() && now >= start_ns_ + bounds[boundary_].at_ns) {
    const Boundary& b = bounds[boundary_];
    coordinator_.Deliver(boundary_, index_, std::move(cur_), open_, b.at_ns, b.last);
    cur_ = IntervalStats();
    ++boundary_;
    if (b.last) {
      BeginDrain(now);
      return;
    }
  }
}

void Worker::OpenConnections(int64_t now) {
  // Ten thousand SYNs at once overflow the server's accept queue (somaxconn):
  // dropped handshakes come back a second or three later and their requests
  // time out — an artefact of the generator, not a property of the server.
  // First connects therefore draw from a token bucket (kOpenBurst deep,
  // refilled at kOpenPerMs), at most kOpenPerCall at a time so that events
  // are handled in between.
  open_tokens_ = std::min<double>(static_cast<double>(kOpenBurst),
                                  open_tokens_ + static_cast<double>(now - open_refill_ns_) * kOpenPerMs / 1e6);
  open_refill_ns_ = now;
  uint32_t started = 0;
  while (opened_ < conns_.size() && open_tokens_ >= 1.0 && started < kOpenPerCall) {
    StartConnect(conns_[opened_++], now);
    open_tokens_ -= 1.0;
    ++started;
  }
}

void Worker::MaybeStart(int64_t now) {
  int64_t start = load_.load_start_ns.load(std::memory_order_acquire);
  if (start == 0) {
    // Starting when connected: the last worker to have all its connections
    // established, or the first to reach the deadline, sets the start.
    if (!reported_connected_ && open_ == conns_.size()) {
      reported_connected_ = true;
      coordinator_.ReportConnected(now);
    } else if (now >= load_.connect_deadline_ns) {
      coordinator_.SetLoadStart(now);
    }
    start = load_.load_start_ns.load(std::memory_order_acquire);
    if (start == 0 || now < start) return;
  } else if (now < start) {
    return;
  }
  started_ = true;
  start_ns_ = start;
  interval_start_ns_ = start;
  last_sample_ns_ = start;
  next_sample_ns_ = start + kSampleNs;
  for (Conn& c : conns_) {
    // Constant rate: connection g sends at start + g/R, then every C/R.
    if (opt_.rate > 0) c.next_intended_ns = start + static_cast<int64_t>(opt_.connection_offset + c.id) * slot_ns_;
    if (c.h2 != nullptr) H2Pump(c, now);
    else if (c.state == State::kIdle) MaybeSend(c, now);
  }
}

void Worker::BeginDrain(int64_t now) {
  draining_ = true;
  drain_deadline_ns_ = now + timeout_ns_;
  heap_.clear();
  for (Conn& c : conns_) {
    if (c.state != State::kBusy) Close(c);
    else if (c.h2 != nullptr) c.h2_timer_ns = 0;  // the heap was cleared
  }
}

int64_t Worker::NextDeadline(int64_t now) const {
  int64_t d = INT64_MAX;
  if (!started_) {
    const int64_t start = load_.load_start_ns.load(std::memory_order_acquire);
    d = start != 0 ? start : load_.connect_deadline_ns;
  } else if (!draining_) {
    d = std::min(d, start_ns_ + load_.boundaries[boundary_].at_ns);
    d = std::min(d, next_sample_ns_);
  }
  if (draining_) d = std::min(d, drain_deadline_ns_);
  if (!draining_ && opened_ < conns_.size()) d = std::min(d, now + kOpenTickNs);
  if (fifo_head_ != nullptr) d = std::min(d, fifo_head_->deadline_ns);
  if (!heap_.empty()) d = std::min(d, heap_.front().at_ns);
  return d;
}

void Worker::Wait(int64_t deadline, int64_t now) {
  epoll_event events[kMaxEvents];
  int n;
  if (have_pwait2_) {
    timespec ts{};
    timespec* tsp = nullptr;
    if (deadline != INT64_MAX) {
      const int64_t delta = std::max<int64_t>(0, deadline - now);
      ts.tv_sec = delta / 1'000'000'000;
      ts.tv_nsec = delta % 1'000'000'000;
      tsp = &ts;
    }
    n = epoll_pwait2(epfd_, events, kMaxEvents, tsp, nullptr);
    if (n < 0 && errno == ENOSYS) {
      have_pwait2_ = false;  // old kernel or a seccomp profile without it
      return;
    }
  } else {
    int ms = -1;
    if (deadline != INT64_MAX) {
      const int64_t delta = std::max<int64_t>(0, deadline - now);
      ms = static_cast<int>(std::min<int64_t>(INT_MAX, (delta + 999'999) / 1'000'000));
    }
    n = epoll_wait(epfd_, events, kMaxEvents, ms);
  }
  if (n < 0) return;  // EINTR
  for (int i = 0; i < n; ++i) {
    if (events[i].data.ptr == nullptr) {
      uint64_t drain;
      [[maybe_unused]] const ssize_t r = ::read(wakefd_, &drain, sizeof drain);
      continue;
    }
    OnEvent(*static_cast<Conn*>(events[i].data.ptr), events[i].events);
  }
  if (h2_) {
    const int64_t now2 = answered_.empty() ? 0 : NowNs();
    for (const Answered& a : answered_) {
      if (a.conn->timer_gen == a.gen && a.conn->h2 != nullptr) H2Pump(*a.conn, now2);
    }
    answered_.clear();
    return;
  }
  for (const Answered& a : answered_) {
    if (a.conn->timer_gen == a.gen && a.conn->state == State::kIdle) MaybeSend(*a.conn, NowNs());
  }
  answered_.clear();
}

// ---------------------------------------------------------------------------

void Worker::Run() {
  if (!opt_.cpus.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(opt_.cpus[index_ % opt_.cpus.size()], &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  }
  int64_t now = NowNs();
  open_refill_ns_ = now;
  open_tokens_ = kOpenBurst;
  OpenConnections(now);
  for (;;) {
    now = NowNs();
    if (!draining_) {
      if (load_.stop.load(std::memory_order_relaxed)) {
        const size_t k = std::min(boundary_, load_.boundaries.size() - 1);
        coordinator_.Deliver(k, index_, std::move(cur_), open_, started_ ? std::max<int64_t>(0, now - start_ns_) : 0, true);
        cur_ = IntervalStats();
        BeginDrain(now);
      } else if (!started_) {
        MaybeStart(now);
      }
      if (started_ && !draining_) {
        SampleRate(now);
        CrossBoundaries(now);
      }
    }
    ExpireTimeouts(now);
    RunTimers(now);
    if (!draining_ && opened_ < conns_.size()) OpenConnections(now);
    if (draining_ && (in_flight_ == 0 || now >= drain_deadline_ns_)) break;
    Wait(NextDeadline(now), now);
  }
  for (Conn& c : conns_) {
    if (c.h2 != nullptr) abandoned_ += c.streams;
    else if (c.state == State::kBusy && c.write_off == c.write_len) abandoned_ += c.pending;
    Close(c);
  }
}

}  // namespace fairbench::agent
