#include "agent/worker.h"

#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <ctime>

#include "agent/script.h"
#include "common/backoff.h"

namespace fairbench::agent {
namespace {

constexpr int64_t kSampleNs = 100'000'000;  // wrk's Req/Sec sampling period
constexpr uint32_t kMaxIov = 64;

ScriptThread* ScriptOf(const EngineOptions& o, uint32_t index) {
  return o.script != nullptr ? &o.script->thread(index) : nullptr;
}

// The script thread whose functions run during the load (request(),
// response() or delay()); none for a static script, which then costs
// exactly what the same request given by flags costs.
ScriptThread* HooksOf(const EngineOptions& o, uint32_t index) {
  ScriptThread* t = ScriptOf(o, index);
  return t != nullptr && (t->dynamic() || t->wants_response() || t->has_delay()) ? t : nullptr;
}

const std::vector<BuiltRequest>& RequestsOf(const EngineOptions& o, uint32_t index) {
  return o.script != nullptr ? o.script->thread(index).requests() : o.requests;
}

std::vector<uint32_t> Weights(const std::vector<BuiltRequest>& requests) {
  std::vector<uint32_t> w;
  for (const BuiltRequest& r : requests) w.push_back(r.weight);
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
      schedule_(Weights(RequestsOf(options, index))),
      h2_(options.protocol != HttpProtocol::kHttp1),
      script_(HooksOf(options, index)),
      requests_(&RequestsOf(options, index)),
      h2_requests_(options.script != nullptr ? &options.script->thread(index).h2_requests() : &options.h2_requests),
      address_(options.script != nullptr ? &options.script->thread(index).address() : &options.addresses.front()),
      vary_(options.vary.get()),
      timeout_ns_(options.timeout.count()) {
  if (script_ != nullptr) {
    dynamic_ = script_->dynamic();
    capture_ = script_->wants_response();
  }
}

Worker::~Worker() {
  for (Conn& c : conns_) {
    if (c.io.ssl() != nullptr) TlsContext::Release(c.io.ssl());
    if (c.parked != nullptr) TlsContext::Release(c.parked);
    if (c.io.fd() >= 0) ::close(c.io.fd());
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
  if (epoll_ctl(epfd_, EPOLL_CTL_ADD, wakefd_, &ev) != 0)
    return Status::IoError(std::string("epoll_ctl: ") + std::strerror(errno));
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
    if (vary_ != nullptr) c.numbers = VarySequence(vary_->seed, c.id);
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
  const SocketAddress& addr = *address_;
  const int fd = NewTcpSocket(addr.storage.ss_family);
  if (fd < 0) {
    Fail(c, Why::kConnect, now);
    return;
  }
  c.io.Plain(fd);
  c.sent_ns = now;  // connect start, for the connect time
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  ev.data.ptr = &c;
  if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    Fail(c, Why::kConnect, now);
    return;
  }
  const IoResult r = StartTcpConnect(fd, addr);
  switch (r.status) {
    case Io::kDone: OnConnected(c, now); return;
    case Io::kRetry:
      SetState(c, State::kConnecting);
      FifoPush(c, now + timeout_ns_);
      return;
    case Io::kClosed:
    case Io::kError: Fail(c, r.error == EADDRNOTAVAIL ? Why::kPortExhaustion : Why::kConnect, now); return;
  }
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
  SSL* ssl = tls_->NewConnection(c.io.fd(), sessions_.get(), c.parked);
  c.parked = nullptr;
  if (ssl == nullptr) {
    Fail(c, Why::kHandshake, now);
    return;
  }
  c.io.Tls(c.io.fd(), ssl);
  c.sent_ns = now;  // handshake start
  SetState(c, State::kHandshaking);
  FifoPush(c, now + timeout_ns_);
  Handshake(c, now);
}

void Worker::Handshake(Conn& c, int64_t now) {
  const IoResult r = c.io.Handshake();
  if (r.status == Io::kDone) {
    FifoRemove(c);
    if (!draining_) {
      Counters& k = cur_.counters;
      ++k.tls_handshakes;
      k.tls_handshake_time_us += static_cast<uint64_t>((now - c.sent_ns) / 1000);
      if (SSL_session_reused(c.io.ssl())) ++k.tls_resumed;
    }
    OnReady(c, now);
    return;
  }
  if (r.status == Io::kRetry) return;
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
  if (c.io.ssl() != nullptr) {
    TlsContext::Park(c.io.ssl());
    c.parked = c.io.ssl();
  }
  if (c.io.fd() >= 0) ::close(c.io.fd());  // also removes it from the epoll set
  c.io.Reset();
  FifoRemove(c);
  ++c.timer_gen;
  SetState(c, State::kClosed);
  c.pending = 0;
  c.write_off = c.write_len = 0;
  c.delayed = false;
  c.sampled = false;
  c.capture.clear();
  if (c.h2 != nullptr) {
    c.h2.reset();
    c.streams = 0;
    c.h2_timer_ns = 0;
    c.h2_send_ns = 0;
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
  if (draining_ || halted_) return;
  if (after_failure) ++c.failures;
  // The first reconnect after a failure is immediate (as wrk); repeated
  // failures back off exponentially from 0.5–1 ms up to 0.5–1 s, the
  // jitter from a hash of the connection and its failures (no allocation,
  // no shared state) so that thousands of connections do not retry in
  // lockstep.
  static constexpr BackoffPolicy kReconnect{std::chrono::microseconds(500), std::chrono::milliseconds(500), 2.0, 1.0};
  if (c.failures < 2) {
    StartConnect(c, now);
    return;
  }
  const uint64_t h = (uint64_t{c.id} * 0x9E3779B97F4A7C15ull) ^ (uint64_t{c.failures} * 0xC2B2AE3D27D4EB4Full);
  ArmTimer(c, now + BackoffDelay(kReconnect, c.failures - 2, h).count());
}

void Worker::ArmTimer(Conn& c, int64_t at_ns, TimerKind kind) {
  heap_.push_back(Timer{at_ns, &c, c.timer_gen, kind});
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
  if (script_ != nullptr && script_->has_delay()) {
    // delay() before each request (a rate is refused with it).
    if (!c.delayed) {
      int64_t wait = 0;
      if (!script_->Delay(&wait)) {
        Close(c);  // the loop halts the worker
        return;
      }
      if (wait > 0) {
        c.delayed = true;
        ArmTimer(c, now + wait);
        return;
      }
    }
    c.delayed = false;
  }
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
  if (dynamic_) return c.text_head;
  return (*requests_)[opt_.pipeline == 1 ? c.req : c.batch[i]].head;
}

void Worker::Send(Conn& c, int64_t now, int64_t intended) {
  uint32_t depth = opt_.pipeline;
  uint32_t len = 0;
  if (dynamic_) {
    // request()'s text: one request, or several pipelined.
    if (!script_->Request(&c.text, &depth)) {
      Close(c);  // the loop halts the worker
      return;
    }
    len = static_cast<uint32_t>(c.text.size());
    c.text_head = c.text.compare(0, 5, "HEAD ") == 0;
  } else if (depth == 1) {
    c.req = schedule_.Next();
    if (vary_ != nullptr) {
      // The request for the connection's next number, built into the
      // connection's own buffer (grown once, then reused).
      c.n = c.numbers.Next();
      vary_->request.Build(c.n, c.text);
      c.sampled = ++c.varied % vary_->verify_every == 0;
      len = static_cast<uint32_t>(c.text.size());
    } else {
      len = static_cast<uint32_t>((*requests_)[c.req].bytes.size());
    }
  } else {
    for (uint32_t i = 0; i < depth; ++i) {
      c.batch[i] = schedule_.Next();
      len += static_cast<uint32_t>((*requests_)[c.batch[i]].bytes.size());
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
  for (;;) {
    iovec iov[kMaxIov];
    size_t count = 0;
    if (dynamic_ || opt_.pipeline == 1) {
      const std::string& bytes = dynamic_ || vary_ != nullptr ? c.text : (*requests_)[c.req].bytes;
      iov[0].iov_base = const_cast<char*>(bytes.data() + c.write_off);
      iov[0].iov_len = c.write_len - c.write_off;
      count = 1;
    } else {
      uint32_t skip = c.write_off;
      for (uint32_t i = 0; i < opt_.pipeline && count < kMaxIov; ++i) {
        const std::string& bytes = (*requests_)[c.batch[i]].bytes;
        if (skip >= bytes.size()) {
          skip -= static_cast<uint32_t>(bytes.size());
          continue;
        }
        iov[count].iov_base = const_cast<char*>(bytes.data() + skip);
        iov[count].iov_len = bytes.size() - skip;
        skip = 0;
        ++count;
      }
    }
    size_t asked = 0;
    for (size_t i = 0; i < count; ++i) asked += iov[i].iov_len;
    const IoResult r = c.io.WriteV(iov, count, tls_batch_);
    if (r.status == Io::kRetry) return;  // resumes on the next event
    if (r.status != Io::kDone) {
      Fail(c, Why::kWrite, now);
      return;
    }
    c.write_off += static_cast<uint32_t>(r.bytes);
    if (!draining_) cur_.counters.bytes_written += r.bytes;
    if (c.write_off == c.write_len) return;
    // A short plain write resumes on EPOLLOUT; TLS writes record by record.
    if (c.io.kind() == Transport::Kind::kPlain && r.bytes < asked) return;
  }
}

void Worker::OnEvent(Conn& c, uint32_t events) {
  const uint32_t gen = c.timer_gen;
  if (c.state == State::kConnecting) {
    if (events & (EPOLLERR | EPOLLHUP)) {
      const int err = ConnectError(c.io.fd());
      Fail(c, err == EADDRNOTAVAIL ? Why::kPortExhaustion : Why::kConnect, NowNs());
      return;
    }
    if (!(events & EPOLLOUT)) return;
    OnConnected(c, NowNs());
    if (c.timer_gen != gen || c.state == State::kHandshaking) return;
    if (c.io.kind() == Transport::Kind::kTls && !c.io.Buffered()) return;
  } else if (c.state == State::kHandshaking) {
    Handshake(c, NowNs());
    if (c.timer_gen != gen || c.state == State::kHandshaking) return;
    // Bytes OpenSSL read ahead past the handshake get no new edge.
    if (!c.io.Buffered()) return;
  }
  if (c.io.kind() == Transport::Kind::kNone) return;
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

void Worker::Read(Conn& c, uint32_t events) {
  char* const buf = buf_.get();
  const bool tls = c.io.kind() == Transport::Kind::kTls;
  for (;;) {
    const IoResult r = c.io.Read(buf, kBufSize);
    switch (r.status) {
      case Io::kDone: break;
      case Io::kRetry: return;
      case Io::kClosed: OnEof(c); return;
      case Io::kError: Fail(c, Why::kRead, NowNs()); return;
    }
    if (!draining_) cur_.counters.bytes_read += r.bytes;
    if (!OnBytes(c, buf, r.bytes)) return;
    // Edge-triggered: new data brings a new event. A short plain read
    // drained the socket; with TLS, a complete response with nothing left in
    // OpenSSL's buffer. After RDHUP, read on to see the end of the stream.
    const bool more = tls ? c.state != State::kIdle || c.io.Buffered() : r.bytes == kBufSize;
    if (!more && !(events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))) return;
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
    if (capture_ || c.sampled) c.capture.append(data, o == ResponseParser::Outcome::kError ? 0 : used);
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
  if (c.sampled) {
    c.sampled = false;
    if (!draining_) CheckAnswer(c, status, now);
    c.capture.clear();
  }
  if (capture_) {
    // response(): an error in it halts the worker in the loop; the response
    // still counts.
    if (!draining_ && !halted_) script_->ResponseRaw(status, c.capture);
    c.capture.clear();
  }
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
    nap_lat_us_ += static_cast<uint64_t>(latency_us);
    ++nap_lat_n_;
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

void Worker::CheckAnswer(Conn& c, int status, int64_t now) {
  if (status > 399) return;  // an error already, counted as one
  AnswerCounts& a = cur_.counters.answers;
  ++a.verified;
  char digits[24];
  const std::string_view n(digits, FormatVaryNumber(c.n, digits));
  std::string_view date;
  if (!SplitAnswer(c.capture, answer_body_, &date) || !vary_->expect.Matches(answer_body_, n, expected_)) ++a.failed;
  if (date.empty()) {
    ++a.without_date;
    return;
  }
  // HTTP dates change every second: one seen again more than 2 s after it
  // first came is a clock that stopped (or an answer kept from earlier).
  if (date != date_) {
    date_.assign(date);
    date_since_ns_ = now;
  } else if (now - date_since_ns_ > 2'000'000'000) {
    ++a.date_frozen;
  }
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
    const Why why = c.state == State::kConnecting    ? Why::kConnect
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
    if (t.kind == TimerKind::kH2Send) {
      // Superseded unless it is the one armed (one send timer per
      // connection is live).
      if (c.h2 != nullptr && t.at_ns == c.h2_send_ns) {
        c.h2_send_ns = 0;
        H2Pump(c, NowNs());
      }
      continue;
    }
    if (c.h2 != nullptr) H2Expire(c, t.at_ns, NowNs());
    else if (c.state == State::kClosed) StartConnect(c, NowNs());
    else if (c.state == State::kIdle) MaybeSend(c, NowNs());
  }
}

void Worker::SampleRate(int64_t now) {
  if (now < next_sample_ns_) return;
  if (opt_.idle_wait == IdleWait::kNap) SizeNap(now - last_sample_ns_);
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
    if (b.last) cur_.counters.unsent = Unsent(start_ns_ + b.at_ns);
    coordinator_.Deliver(boundary_, index_, std::move(cur_), open_, b.at_ns, b.last);
    cur_ = IntervalStats();
    ++boundary_;
    if (b.last) {
      BeginDrain(now);
      return;
    }
  }
}

void Worker::Halt(int64_t now) {
  (void)now;
  halted_ = true;
  if (script_->failed()) {
    ++cur_.counters.errors.script;
    coordinator_.StopLoad();
  }
  heap_.clear();
  opened_ = conns_.size();
  for (Conn& c : conns_) {
    if (c.h2 != nullptr) abandoned_ += c.streams;
    else if (c.state == State::kBusy && c.write_off == c.write_len) abandoned_ += c.pending;
    Close(c);
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

uint64_t Worker::Unsent(int64_t at) const {
  if (opt_.rate <= 0 || halted_) return 0;
  // A connection's requests are due every conn_period_ns_ from its next
  // one on; those due before `at` have not gone out. When the connection
  // is free and its send timer is set for the first of them, that one is
  // on time (the loop has not run the timer yet), not behind.
  uint64_t n = 0;
  for (const Conn& c : conns_) {
    if (c.next_intended_ns >= at) continue;
    const auto due = static_cast<uint64_t>((at - 1 - c.next_intended_ns) / conn_period_ns_) + 1;
    const bool on_time =
        c.h2 != nullptr ? c.h2_send_ns == c.next_intended_ns && c.h2->CanSubmit() : c.state == State::kIdle;
    n += due - (on_time ? 1 : 0);
  }
  return n;
}

void Worker::BeginDrain(int64_t now) {
  draining_ = true;
  drain_deadline_ns_ = now + timeout_ns_;
  heap_.clear();
  for (Conn& c : conns_) {
    if (c.state != State::kBusy) Close(c);
    else if (c.h2 != nullptr) c.h2_timer_ns = c.h2_send_ns = 0;  // the heap was cleared
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

// ---------------------------------------------------------------------------

void Worker::Run() {
  // Timers as asked (the default slack is 50 us): a nap's length bounds
  // what it adds to latency, and a constant rate's sends keep their time.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
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
        if (started_) cur_.counters.unsent = Unsent(now);
        coordinator_.Deliver(k, index_, std::move(cur_), open_, started_ ? std::max<int64_t>(0, now - start_ns_) : 0,
                             true);
        cur_ = IntervalStats();
        BeginDrain(now);
      } else if (!started_) {
        MaybeStart(now);
      }
      if (started_ && !draining_) {
        // A script's thread:stop() or error.
        if (script_ != nullptr && !halted_ && (script_->failed() || script_->stop_requested())) Halt(now);
        SampleRate(now);
        CrossBoundaries(now);
      }
    }
    ExpireTimeouts(now);
    RunTimers(now);
    if (!draining_ && opened_ < conns_.size()) OpenConnections(now);
    if (draining_ && (in_flight_ == 0 || now >= drain_deadline_ns_)) break;
    // The clock read again: the turn's work (timers, sends) took time that
    // the wait must not add on top of the deadline (a send due at a
    // constant rate would go out that much late).
    Wait(NextDeadline(now), NowNs());
  }
  for (Conn& c : conns_) {
    if (c.h2 != nullptr) abandoned_ += c.streams;
    else if (c.state == State::kBusy && c.write_off == c.write_len) abandoned_ += c.pending;
    Close(c);
  }
}

}  // namespace fairbench::agent
