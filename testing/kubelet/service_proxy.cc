#include "testing/kubelet/service_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <list>
#include <optional>
#include <thread>

namespace fairbench::kubelet {

namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kForgetAfter = std::chrono::minutes(1);
constexpr int kPollMillis = 200;

bool Loopback(const std::string& ip) { return ip.rfind("127.", 0) == 0; }

std::optional<sockaddr_in> Address(const std::string& ip, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1) return std::nullopt;
  return a;
}

// A connection to ip:port within 2 s, or -1.
int Dial(const std::string& ip, int port) {
  auto addr = Address(ip, port);
  if (!addr || !Loopback(ip)) return -1;
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, reinterpret_cast<sockaddr*>(&*addr), sizeof *addr) != 0) {
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof err;
    if (errno != EINPROGRESS || poll(&p, 1, 2000) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 ||
        err != 0) {
      close(fd);
      return -1;
    }
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

// Copies both ways until both sides have closed (a half-close passed on
// as shutdown), or a stop is asked for.
void Splice(std::stop_token stop, int a, int b) {
  bool open[2] = {true, true};  // a→b, b→a
  const int from[2] = {a, b};
  const int to[2] = {b, a};
  char buf[65536];
  while (!stop.stop_requested() && (open[0] || open[1])) {
    pollfd p[2];
    int n = 0;
    int which[2];
    for (int i = 0; i < 2; ++i) {
      if (!open[i]) continue;
      p[n] = {from[i], POLLIN, 0};
      which[n++] = i;
    }
    const int ready = poll(p, static_cast<nfds_t>(n), kPollMillis);
    if (ready < 0 && errno != EINTR) break;
    for (int k = 0; k < n; ++k) {
      if ((p[k].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const int i = which[k];
      const ssize_t got = read(from[i], buf, sizeof buf);
      if (got <= 0) {
        open[i] = false;
        shutdown(to[i], SHUT_WR);
        continue;
      }
      ssize_t sent = 0;
      while (sent < got) {
        const ssize_t w = send(to[i], buf + sent, static_cast<size_t>(got - sent), MSG_NOSIGNAL);
        if (w <= 0) break;
        sent += w;
      }
      if (sent < got) open[0] = open[1] = false;  // the other side is gone
    }
  }
  close(a);
  close(b);
}

}  // namespace

// One listening port of a Service: accepts on its own thread, a thread per
// connection.
class ServiceProxy::Forwarder {
 public:
  static Result<std::unique_ptr<Forwarder>> Listen(const std::string& ip, int port) {
    auto addr = Address(ip, port);
    if (!addr || !Loopback(ip)) return Status::InvalidArgument("not a loopback address: " + ip);
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return Status::IoError(std::string("socket: ") + std::strerror(errno));
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, reinterpret_cast<sockaddr*>(&*addr), sizeof *addr) != 0 || listen(fd, 128) != 0) {
      const std::string why = std::strerror(errno);
      close(fd);
      return Status::Unavailable("cannot listen on " + ip + ":" + std::to_string(port) + ": " + why);
    }
    return std::unique_ptr<Forwarder>(new Forwarder(fd));
  }
  ~Forwarder() {
    accept_.request_stop();
    if (accept_.joinable()) accept_.join();
    conns_.clear();  // each jthread: stop asked, joined
    close(fd_);
  }
  void SetTarget(const std::string& ip, int port) {
    MutexLock lock(mu_);
    target_ip_ = ip;
    target_port_ = port;
  }

 private:
  struct Conn {
    std::shared_ptr<std::atomic<bool>> done;
    std::jthread thread;
  };
  explicit Forwarder(int fd) : fd_(fd) {
    accept_ = std::jthread([this](std::stop_token stop) { AcceptLoop(stop); });
  }
  void AcceptLoop(std::stop_token stop) {
    while (!stop.stop_requested()) {
      conns_.remove_if([](const Conn& c) { return c.done->load(); });
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, kPollMillis) != 1) continue;
      const int client = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      std::string ip;
      int port = 0;
      {
        MutexLock lock(mu_);
        ip = target_ip_;
        port = target_port_;
      }
      const int upstream = conns_.size() < kMaxConnections ? Dial(ip, port) : -1;
      if (upstream < 0) {
        close(client);  // as kube-proxy without a reachable endpoint: refused
        continue;
      }
      auto done = std::make_shared<std::atomic<bool>>(false);
      conns_.push_back({done, std::jthread([client, upstream, done](std::stop_token s) {
                          Splice(s, client, upstream);
                          done->store(true);
                        })});
    }
  }

  const int fd_;
  Mutex mu_;
  std::string target_ip_ GUARDED_BY(mu_);
  int target_port_ GUARDED_BY(mu_) = 0;
  std::list<Conn> conns_;  // the accept thread's, then the destructor's
  std::jthread accept_;
};

ServiceProxy::ServiceProxy(std::shared_ptr<AddressPool> pool) : pool_(std::move(pool)) {}

ServiceProxy::~ServiceProxy() { Stop(); }

void ServiceProxy::Stop() {
  std::map<std::string, Service> services;
  {
    MutexLock lock(mu_);
    services.swap(services_);
  }
  for (const auto& [key, s] : services) pool_->Release("service/" + key);
  services.clear();
}

Result<std::string> ServiceProxy::Route(const std::string& ns, const std::string& name,
                                        const std::vector<ServicePortRoute>& ports) {
  const std::string key = ns + "/" + name;
  const auto now = Clock::now();
  std::vector<Service> forgotten;
  MutexLock lock(mu_);
  for (auto it = services_.begin(); it != services_.end();) {
    if (it->first != key && now - it->second.last_routed > kForgetAfter) {
      pool_->Release("service/" + it->first);
      forgotten.push_back(std::move(it->second));
      it = services_.erase(it);
    } else {
      ++it;
    }
  }
  Service& svc = services_[key];
  svc.last_routed = now;
  if (svc.address.empty()) {
    svc.address = pool_->Allocate("service/" + key);
    if (svc.address.empty()) return Status::Unavailable("no loopback address left for service " + key);
  }
  std::map<int, std::unique_ptr<Forwarder>> kept;
  for (const ServicePortRoute& p : ports) {
    if (!Loopback(p.target_ip)) return Status::InvalidArgument("not a loopback address: " + p.target_ip);
    auto it = svc.ports.find(p.port);
    if (it != svc.ports.end()) {
      kept[p.port] = std::move(it->second);
      svc.ports.erase(it);
    } else {
      auto f = Forwarder::Listen(svc.address, p.port);
      if (!f.ok()) return f.status();
      kept[p.port] = std::move(*f);
    }
    kept[p.port]->SetTarget(p.target_ip, p.target_port);
  }
  svc.ports.swap(kept);  // ports no longer listed close with `kept`
  return svc.address;
}

}  // namespace fairbench::kubelet
