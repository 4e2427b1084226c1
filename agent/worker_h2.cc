// The HTTP/2 half of the Worker (agent/worker.h): a connection's
// H2Connection fed from its Transport, streams submitted and counted.
#include "agent/worker.h"

#include <sys/epoll.h>

#include <algorithm>
#include <climits>

#include "agent/script.h"

namespace fairbench::agent {

void Worker::H2Open(Conn& c, int64_t now) {
  if (c.io.kind() == Transport::Kind::kTls && !TlsContext::NegotiatedH2(c.io.ssl())) {
    Fail(c, Why::kHandshake, now);  // the server speaks HTTP/1.1 only: never fall back silently
    return;
  }
  H2Options options = opt_.h2;
  options.capture = capture_;  // a script's response() gets headers and body
  auto h2 = H2Connection::Create(options);
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
  if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) || c.io.Buffered()) {
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
    const IoResult r = c.io.Read(buf, kBufSize);
    if (r.status == Io::kRetry) break;
    if (r.status != Io::kDone) {
      H2End(c, NowNs(), r.status == Io::kClosed, Why::kRead);
      return;
    }
    const size_t n = r.bytes;
    if (!draining_) cur_.counters.bytes_read += n;
    if (opt_.h2.grpc) h2.set_clock(NowNs());  // when each message arrived
    const bool ok = h2.Receive(reinterpret_cast<const uint8_t*>(buf), n);
    if (!ok) break;
    // A short read drained the socket (edge-triggered: new data brings a new
    // event); after RDHUP, read on to see the end of the stream.
    const bool more = c.io.MoreToRead(n, kBufSize);
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
          if (capture_ && !halted_) script_->Response(o.status, o.headers, o.body);
          if (opt_.h2.grpc && !GrpcCall(o)) break;
          ++k.requests;
          ++sample_requests_;
          const int cls = o.status / 100;
          ++k.status_classes[cls >= 1 && cls <= 5 ? cls : 0];
          if (o.status > 399) ++k.errors.status;
          // cookie: when the stream was submitted; cookie2, at a constant
          // rate: when it was due.
          const int64_t latency_us = (now - static_cast<int64_t>(o.cookie)) / 1000;
          if (opt_.rate > 0) {
            cur_.latency.Record((now - static_cast<int64_t>(o.cookie2)) / 1000);
            cur_.uncorrected.Record(latency_us);
          } else {
            cur_.latency.Record(latency_us);
          }
          nap_lat_us_ += static_cast<uint64_t>(latency_us);
          ++nap_lat_n_;
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
    const bool paced = opt_.rate > 0;
    // Every free slot (at a constant rate, for the requests already due),
    // once per connection per turn of the loop (the streams answered in
    // one batch of events go out in one write).
    while (h2.CanSubmit()) {
      int64_t intended = now;
      if (paced) {
        if (c.next_intended_ns > now) break;  // never ahead of time
        intended = c.next_intended_ns;
      }
      if (dynamic_) {
        if (!H2SubmitScripted(c, now, intended)) break;
      } else {
        const uint32_t r = schedule_.Next();
        if (h2.Submit(*(*h2_requests_)[r], r, static_cast<uint64_t>(now), static_cast<uint64_t>(intended)) == 0) break;
      }
      ++c.streams;
      if (paced) c.next_intended_ns += conn_period_ns_;
    }
    // The next request not yet due: wake for it. One that is due waits for
    // a slot, which a response, a timeout or a new connection frees, each
    // followed by this pump.
    if (paced && !halted_ && c.next_intended_ns > now && c.h2_send_ns != c.next_intended_ns) {
      c.h2_send_ns = c.next_intended_ns;
      ArmTimer(c, c.h2_send_ns, TimerKind::kH2Send);
    }
    if (c.streams > before) {
      if (c.state == State::kIdle) SetState(c, State::kBusy);
      if (c.h2_timer_ns == 0) H2ArmTimer(c, now + timeout_ns_);
    }
  }
  return H2Flush(c, now);
}

bool Worker::H2SubmitScripted(Conn& c, int64_t now, int64_t intended) {
  if (halted_) return false;
  if (h2_next_ == h2_queue_.size()) {
    // request()'s next text: each request in it becomes a stream.
    h2_queue_.clear();
    h2_next_ = 0;
    if (!script_->RequestStreams(&h2_queue_)) return false;  // the loop halts the worker
  }
  if (c.h2->Submit(h2_queue_[h2_next_], 0, static_cast<uint64_t>(now), static_cast<uint64_t>(intended)) == 0) {
    return false;
  }
  ++h2_next_;
  return true;
}

bool Worker::H2Flush(Conn& c, int64_t now) {
  H2Connection& h2 = *c.h2;
  for (;;) {
    const std::span<const uint8_t> out = h2.Output();
    if (out.empty()) {
      if (!h2.outcomes().empty()) H2Outcomes(c, now);  // streams nghttp2 could not send
      return true;
    }
    const IoResult r = c.io.Write(out.data(), out.size());
    if (r.status == Io::kRetry) return true;  // resumes on the next event
    if (r.status != Io::kDone) {
      H2End(c, now, false, Why::kWrite);
      return false;
    }
    h2.Consumed(r.bytes);
    if (!draining_) cur_.counters.bytes_written += r.bytes;
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
  // them first, so that CanSubmit() sees the slots free (when every stream
  // timed out at once, no answer would come to refill them later).
  if (!H2Flush(c, now)) return;
  H2Pump(c, now);  // streams in their place
}

}  // namespace fairbench::agent
