// How a worker waits for its sockets between turns of its event loop
// (--idle-wait): blocking in epoll until a socket or a deadline is ready,
// napping on its own timer first while requests are in flight (so that a
// server on the same machine does not pay this thread's wake-up in its
// sends), or spinning on a zero-timeout epoll_wait; then the dispatch of
// the ready sockets and the refill of the connections that were answered.
// The state machine of a connection is in worker.cc (HTTP/1.1) and
// worker_h2.cc (HTTP/2).
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <ctime>

#include "agent/worker.h"

namespace fairbench::agent {

void Worker::SizeNap(int64_t period_ns) {
  // A response that arrives during a nap is read when the nap ends: the nap
  // is what it can add to that response's latency, so it stays a small
  // share of the latency measured. With too few responses to tell, block.
  //
  // Each nap is a sleep and a wake-up, the costliest thing the worker does
  // per turn of its loop. Where at least one response came per long nap
  // (twice the share and the cap), the long one is taken: it collects
  // several responses per wake-up, and their streams or requests go out
  // together. Where fewer came, a long nap would mostly wake to one
  // response or none, so the short one (which then often ends in a block
  // on the sockets) costs less. Under its cap the long nap is 1/25 of the
  // latency, so (Little's law) that is 25 requests or more in flight.
  int64_t nap = 0;
  if (nap_lat_n_ >= 16) {
    const auto mean_ns = static_cast<int64_t>(nap_lat_us_ / nap_lat_n_) * 1000;
    const int64_t long_nap = std::min(2 * kMaxNapNs, 2 * mean_ns / kNapShare);
    const double per_long_nap = static_cast<double>(nap_lat_n_) * static_cast<double>(long_nap) /
                                static_cast<double>(std::max<int64_t>(period_ns, 1));
    nap = per_long_nap >= 1.0 ? long_nap : std::min(kMaxNapNs, mean_ns / kNapShare);
    if (nap < kMinNapNs) nap = 0;
  }
  nap_ns_ = nap;
  nap_lat_us_ = 0;
  nap_lat_n_ = 0;
}

int Worker::Nap(epoll_event* events) {
  int n = epoll_wait(epfd_, events, kMaxEvents, 0);
  if (n != 0) return n;
  const int64_t before = NowNs();
  const timespec nap{0, static_cast<long>(nap_ns_)};
  clock_nanosleep(CLOCK_MONOTONIC, 0, &nap, nullptr);
  const int64_t slept = NowNs() - before;
  ++idle_.naps;
  idle_.nap_seconds += static_cast<double>(slept) / 1e9;
  idle_.max_nap_ns = std::max<uint64_t>(idle_.max_nap_ns, static_cast<uint64_t>(nap_ns_));
  n = epoll_wait(epfd_, events, kMaxEvents, 0);
  if (n > 0) ++idle_.nap_hits;
  return n;
}

int Worker::Block(epoll_event* events, int64_t deadline, int64_t now) {
  if (have_pwait2_) {
    timespec ts{};
    timespec* tsp = nullptr;
    if (deadline != INT64_MAX) {
      const int64_t delta = std::max<int64_t>(0, deadline - now);
      ts.tv_sec = delta / 1'000'000'000;
      ts.tv_nsec = delta % 1'000'000'000;
      tsp = &ts;
    }
    const int n = epoll_pwait2(epfd_, events, kMaxEvents, tsp, nullptr);
    if (n < 0 && errno == ENOSYS) {
      have_pwait2_ = false;  // old kernel or a seccomp profile without it
      return 0;
    }
    return n;
  }
  int ms = -1;
  if (deadline != INT64_MAX) {
    const int64_t delta = std::max<int64_t>(0, deadline - now);
    ms = static_cast<int>(std::min<int64_t>(INT_MAX, (delta + 999'999) / 1'000'000));
  }
  return epoll_wait(epfd_, events, kMaxEvents, ms);
}

void Worker::Wait(int64_t deadline, int64_t now) {
  epoll_event events[kMaxEvents];
  int n = 0;
  const bool loading = started_ && !draining_;
  if (opt_.idle_wait == IdleWait::kPoll && loading) {
    // Spins through the loop: the caller checks its deadlines on each turn.
    n = epoll_wait(epfd_, events, kMaxEvents, 0);
    ++idle_.polls;
    if (n == 0) {
      ++idle_.empty_polls;
      idle_.spin_seconds += static_cast<double>(NowNs() - now) / 1e9;
      return;
    }
  } else {
    if (nap_ns_ > 0 && loading && in_flight_ > 0 && deadline - now > nap_ns_) {
      n = Nap(events);
      if (n == 0) now = NowNs();
    }
    if (n == 0) n = Block(events, deadline, now);
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

}  // namespace fairbench::agent
