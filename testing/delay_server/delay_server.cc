#include "testing/delay_server/delay_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>
#include <string_view>

namespace fairbench::testing {
namespace {

constexpr size_t kBufSize = 64 * 1024;
constexpr size_t kMaxHead = 64 * 1024;
constexpr int kMaxEvents = 256;
constexpr std::string_view kHead = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n";
constexpr std::string_view kBody = "Hello, World!";

int64_t ClockNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

int64_t NowNs() { return ClockNs(CLOCK_MONOTONIC); }

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view Trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

struct Head {
  bool ok = false;
  bool head_method = false;
  bool keep_alive = true;
  size_t content_length = 0;
};

// The request line and headers (without the blank line).
Head ParseHead(std::string_view head) {
  Head h;
  const size_t eol = head.find("\r\n");
  const std::string_view line = head.substr(0, eol);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = line.rfind(' ');
  if (sp1 == std::string_view::npos || sp2 == sp1) return h;
  h.head_method = line.substr(0, sp1) == "HEAD";
  const std::string_view version = line.substr(sp2 + 1);
  if (version == "HTTP/1.0") h.keep_alive = false;
  else if (version != "HTTP/1.1") return h;
  size_t pos = eol == std::string_view::npos ? head.size() : eol + 2;
  while (pos < head.size()) {
    const size_t end = head.find("\r\n", pos);
    const std::string_view field = head.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    pos = end == std::string_view::npos ? head.size() : end + 2;
    const size_t colon = field.find(':');
    if (colon == std::string_view::npos) return h;
    const std::string_view name = field.substr(0, colon);
    const std::string_view value = Trim(field.substr(colon + 1));
    if (IEquals(name, "Content-Length")) {
      const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), h.content_length);
      if (ec != std::errc() || ptr != value.data() + value.size()) return h;
    } else if (IEquals(name, "Transfer-Encoding")) {
      return h;  // chunked request bodies are not needed by any test
    } else if (IEquals(name, "Connection")) {
      if (IEquals(value, "close")) h.keep_alive = false;
      if (IEquals(value, "keep-alive")) h.keep_alive = true;
    }
  }
  h.ok = true;
  return h;
}

// The kernel's receive time of the data just read, on the monotonic clock;
// 0 when the message carries none.
int64_t KernelArrival(msghdr& msg, int64_t mono_now) {
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPNS) continue;
    timespec ts;
    std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
    const int64_t real = static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
    if (real == 0) return 0;
    const int64_t mono = std::min(MonotonicOfRealtime(real, ClockNs), mono_now);
    // Trust it only when it is plausible: recent.
    if (mono < mono_now - 10'000'000'000) return 0;
    return mono;
  }
  return 0;
}

}  // namespace

int64_t MonotonicOfRealtime(int64_t real_ns, int64_t (*read_clock)(clockid_t)) {
  // The offset between the clocks is read realtime first, monotonic
  // second: time lost between the two reads (a preemption) makes the
  // offset smaller and the result later, never earlier. Of a few tries the
  // one whose reads were closest is taken.
  int64_t best_offset = 0;
  int64_t best_gap = INT64_MAX;
  for (int i = 0; i < 4 && best_gap > 20'000; ++i) {
    const int64_t before = read_clock(CLOCK_MONOTONIC);
    const int64_t real = read_clock(CLOCK_REALTIME);
    const int64_t after = read_clock(CLOCK_MONOTONIC);
    if (after - before < best_gap) {
      best_gap = after - before;
      best_offset = real - after;
    }
  }
  return real_ns - best_offset;
}

DelayServer::DelayServer(DelayServerOptions options)
    : options_(std::move(options)), buf_(std::make_unique<char[]>(kBufSize)) {}

DelayServer::~DelayServer() {
  for (auto& c : conns_) {
    if (c) ::close(c->fd);
  }
  for (int fd : {listen_fd_, epoll_fd_, timer_fd_}) {
    if (fd >= 0) ::close(fd);
  }
}

Status DelayServer::Listen() {
  sockaddr_storage addr{};
  socklen_t len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
  if (inet_pton(AF_INET, options_.host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(options_.port);
    len = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, options_.host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(options_.port);
    len = sizeof(sockaddr_in6);
  } else {
    return Status::InvalidArgument("--host must be a numeric address: " + options_.host);
  }
  listen_fd_ = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return Status::IoError(std::string("socket: ") + std::strerror(errno));
  const int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    return Status::Unavailable("bind " + options_.host + ":" + std::to_string(options_.port) + ": " +
                               std::strerror(errno));
  }
  if (::listen(listen_fd_, options_.backlog) != 0)
    return Status::IoError(std::string("listen: ") + std::strerror(errno));
  socklen_t got = sizeof addr;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &got);
  port_ = ntohs(addr.ss_family == AF_INET ? v4->sin_port : v6->sin6_port);

  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (epoll_fd_ < 0 || timer_fd_ < 0) return Status::IoError(std::string("epoll/timerfd: ") + std::strerror(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listen_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  ev.data.fd = timer_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, timer_fd_, &ev);
  // Timers fire when asked, not up to 50 µs later (the default slack).
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  return Status::Ok();
}

Status DelayServer::Run(const std::vector<int>& signals, const std::function<bool(int)>& on_signal) {
  sigset_t set;
  sigemptyset(&set);
  for (int s : signals) sigaddset(&set, s);
  const int sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sig_fd < 0) return Status::IoError(std::string("signalfd: ") + std::strerror(errno));
  epoll_event sev{};
  sev.events = EPOLLIN;
  sev.data.fd = sig_fd;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, sig_fd, &sev);

  epoll_event events[kMaxEvents];
  for (;;) {
    const int n = epoll_wait(epoll_fd_, events, kMaxEvents, -1);
    if (n < 0 && errno != EINTR) {
      ::close(sig_fd);
      return Status::IoError(std::string("epoll_wait: ") + std::strerror(errno));
    }
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == listen_fd_) {
        Accept();
      } else if (fd == timer_fd_) {
        uint64_t expirations;
        [[maybe_unused]] const ssize_t r = ::read(timer_fd_, &expirations, sizeof expirations);
        armed_ns_ = 0;
      } else if (fd == sig_fd) {
        signalfd_siginfo info;
        while (::read(sig_fd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
          if (!on_signal(static_cast<int>(info.ssi_signo))) {
            ::close(sig_fd);
            return Status::Ok();
          }
        }
      } else if (static_cast<size_t>(fd) < conns_.size() && conns_[static_cast<size_t>(fd)]) {
        Conn& c = *conns_[static_cast<size_t>(fd)];
        const uint32_t id = c.id;
        if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP)) OnReadable(c, events[i].events);
        if ((events[i].events & EPOLLOUT) && Find(fd, id) != nullptr) Flush(c);
      }
    }
    RunDue(NowNs());
    ArmTimer();
  }
}

DelayRecords DelayServer::Snapshot() {
  DelayRecords r;
  r.snapshot = ++snapshot_;
  r.connections = next_conn_id_;
  r.requests = requests_;
  r.served = served_;
  r.abandoned = abandoned_;
  r.dropped = dropped_;
  r.records = records_;
  return r;
}

void DelayServer::Accept() {
  for (;;) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN, or a connection that went away meanwhile
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
    if (conns_.size() <= static_cast<size_t>(fd)) conns_.resize(static_cast<size_t>(fd) + 1);
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    c->id = next_conn_id_++;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = fd;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
    conns_[static_cast<size_t>(fd)] = std::move(c);
  }
}

void DelayServer::UpdateEvents(Conn& c) {
  const bool reading = !c.closing;
  epoll_event ev{};
  ev.events = (reading ? static_cast<uint32_t>(EPOLLIN | EPOLLRDHUP) : 0u) |
              (c.want_out ? static_cast<uint32_t>(EPOLLOUT) : 0u);
  ev.data.fd = c.fd;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
}

void DelayServer::OnReadable(Conn& c, uint32_t events) {
  if (c.closing) {
    // Nothing more is read; a hang-up or an error means the client is gone.
    if (events & (EPOLLHUP | EPOLLERR)) Close(c);
    return;
  }
  char control[CMSG_SPACE(sizeof(timespec))];
  iovec iov{buf_.get(), kBufSize};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  const ssize_t n = ::recvmsg(c.fd, &msg, 0);
  const int64_t mono = NowNs();
  if (n > 0) {
    const int64_t kernel = KernelArrival(msg, mono);
    c.in.append(buf_.get(), static_cast<size_t>(n));
    if (ParseRequests(c, kernel != 0 ? kernel : mono) && c.closing) UpdateEvents(c);
    return;
  }
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  // End of file: the client is gone (HTTP clients do not half-close); what
  // it asked for and did not get is abandoned.
  Close(c);
}

bool DelayServer::ParseRequests(Conn& c, int64_t arrived_ns) {
  const bool was_idle = c.pending.empty();
  size_t used = 0;
  while (!c.closing) {
    const std::string_view rest = std::string_view(c.in).substr(used);
    const size_t end = rest.find("\r\n\r\n");
    if (end == std::string_view::npos) {
      if (rest.size() > kMaxHead) {
        Close(c);
        return false;
      }
      break;
    }
    const Head h = ParseHead(rest.substr(0, end));
    if (!h.ok) {
      Close(c);
      return false;
    }
    const size_t total = end + 4 + h.content_length;
    if (rest.size() < total) break;
    used += total;
    ++requests_;
    const bool stall = options_.stall_every > 0 && requests_ % options_.stall_every == 0;
    size_t record = kNoRecord;
    if (records_.size() < options_.max_records) {
      record = records_.size();
      records_.push_back(DelayRecord{c.id, c.requests, requests_, stall, arrived_ns, 0, {}});
      if (options_.record_requests) records_.back().request.assign(rest.substr(0, total));
    } else {
      ++dropped_;
    }
    ++c.requests;
    const int64_t due = arrived_ns + options_.delay.count() + (stall ? options_.stall.count() : 0);
    c.pending.push_back(Pending{due, record, h.head_method, !h.keep_alive, requests_});
    if (!h.keep_alive) c.closing = true;
  }
  c.in.erase(0, used);
  if (was_idle && !c.pending.empty()) Schedule(c);
  return true;
}

void DelayServer::Schedule(Conn& c) {
  if (c.in_heap || c.pending.empty()) return;
  heap_.push_back(Due{c.pending.front().due_ns, c.fd, c.id});
  std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
  c.in_heap = true;
}

DelayServer::Conn* DelayServer::Find(int fd, uint32_t id) {
  if (fd < 0 || static_cast<size_t>(fd) >= conns_.size()) return nullptr;
  Conn* c = conns_[static_cast<size_t>(fd)].get();
  return c != nullptr && c->id == id ? c : nullptr;
}

void DelayServer::RunDue(int64_t now_ns) {
  while (!heap_.empty() && heap_.front().at_ns <= now_ns) {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    const Due d = heap_.back();
    heap_.pop_back();
    Conn* c = Find(d.fd, d.id);
    if (c == nullptr) continue;
    c->in_heap = false;
    Respond(*c, now_ns);
    if ((c = Find(d.fd, d.id)) != nullptr) Schedule(*c);
  }
}

void DelayServer::Respond(Conn& c, int64_t now_ns) {
  while (!c.pending.empty() && c.pending.front().due_ns <= now_ns) {
    const Pending p = c.pending.front();
    c.pending.pop_front();
    const size_t before = c.out.size();
    c.out.append(kHead);
    if (p.close) c.out.append("Connection: close\r\n");
    if (options_.index_header) c.out.append("X-Request-Index: " + std::to_string(p.index) + "\r\n");
    c.out.append("\r\n");
    if (!p.head) c.out.append(kBody);
    const uint64_t first = c.appended;
    c.appended += c.out.size() - before;
    c.marks.push_back(Mark{first, c.appended, p.record});
    if (p.close) {
      c.pending.clear();  // nothing after it was read (c.closing)
      break;
    }
  }
  Flush(c);
}

void DelayServer::Flush(Conn& c) {
  while (c.out_off < c.out.size()) {
    const int64_t t = NowNs();
    const ssize_t n = ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        if (!c.want_out) {
          c.want_out = true;
          UpdateEvents(c);
        }
        return;
      }
      Close(c);
      return;
    }
    c.out_off += static_cast<size_t>(n);
    const uint64_t before = c.written;
    c.written += static_cast<uint64_t>(n);
    for (Mark& m : c.marks) {
      if (m.first >= c.written) break;
      if (m.first >= before && m.record != kNoRecord) records_[m.record].sent_ns = t;
    }
    while (!c.marks.empty() && c.marks.front().end <= c.written) {
      ++served_;
      c.marks.pop_front();
    }
  }
  c.out.clear();
  c.out_off = 0;
  if (c.want_out) {
    c.want_out = false;
    UpdateEvents(c);
  }
  if (c.closing && c.pending.empty()) Close(c);
}

void DelayServer::Close(Conn& c) {
  abandoned_ += c.pending.size() + c.marks.size();
  ::close(c.fd);                              // also leaves the epoll set
  conns_[static_cast<size_t>(c.fd)].reset();  // stale heap entries are skipped by id
}

void DelayServer::ArmTimer() {
  // Drop entries of closed connections from the top so the timer is not
  // armed for nothing.
  while (!heap_.empty() && Find(heap_.front().fd, heap_.front().id) == nullptr) {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    heap_.pop_back();
  }
  const int64_t want = heap_.empty() ? 0 : heap_.front().at_ns;
  if (want == armed_ns_) return;
  itimerspec spec{};
  if (want != 0) {
    spec.it_value.tv_sec = want / 1'000'000'000;
    spec.it_value.tv_nsec = want % 1'000'000'000;
  }
  timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &spec, nullptr);
  armed_ns_ = want;
}

}  // namespace fairbench::testing
