// TcpProxy: a loopback TCP relay in front of a real server, for faults at a
// chosen moment — every connection cut, or new ones refused — without
// touching the server. TLS passes through untouched (the client still
// verifies the server's certificate and presents its own), so a client
// behind the proxy is, to the server, the same client: only the network
// between them fails, the way a dropped connection or an unreachable API
// server fails a real client.
//
// Thread-safe. Each relayed connection runs on a thread of its own until
// either side closes it, it is cut, or the proxy is destroyed.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"

namespace fairbench::testing {

class TcpProxy {
 public:
  // Listens on 127.0.0.1 (a free port) and relays to upstream_port there.
  static Result<std::unique_ptr<TcpProxy>> Start(int upstream_port);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const { return port_; }
  // While refusing, nothing listens on the port (a client's connect is
  // refused, as by a host whose server is down); after, the same port
  // listens again. Returns once the change is in force.
  void SetRefusing(bool refusing);
  // Cuts every open connection at once (both directions); returns how many.
  int CutAll();
  // Connections relayed so far (refused ones not counted).
  int relayed() const { return relayed_; }

 private:
  TcpProxy() = default;
  void AcceptLoop();
  void Relay(int client_fd);

  int listen_fd_ = -1;  // the accept loop's alone, once started
  int upstream_port_ = 0;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> refusing_{false};
  std::atomic<bool> listening_{false};  // the accept loop's state, following refusing_
  std::atomic<int> relayed_{0};
  std::mutex mu_;
  std::set<int> open_fds_;           // guarded by mu_: both ends of every relayed connection
  std::vector<std::thread> relays_;  // guarded by mu_
  std::thread acceptor_;
};

}  // namespace fairbench::testing
