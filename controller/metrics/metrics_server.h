// MetricsServer: the controller's HTTP endpoint for Prometheus —
// GET /metrics (text format 0.0.4), /healthz (alive) and /readyz (ready to
// serve its purpose; 503 otherwise). Anything else is 404, any other method
// 405.
//
// Built on Debian's cpp-httplib with a fixed pool of two worker threads
// (scrapes are rare and cheap; a slow client cannot hold more than one of
// them for longer than the read timeout) plus one listening thread. Handlers
// run on those threads, never on the orchestrator's or the agents'. Start()
// binds before it returns, so a bad address is an error at once and port 0
// yields the chosen port. Stop() (or the destructor) closes the listener and
// joins the threads. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/status.h"

namespace httplib {
class Server;
}

namespace fairbench::metrics {

struct MetricsServerOptions {
  std::string address;                  // HOST:PORT; [v6]:PORT for IPv6; port 0 picks one
  std::function<std::string()> render;  // the /metrics body
  std::function<bool()> ready;          // /readyz; null: always ready
};

class MetricsServer {
 public:
  static Result<std::unique_ptr<MetricsServer>> Start(MetricsServerOptions options);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  const std::string& host() const { return host_; }
  uint16_t port() const { return port_; }
  void Stop();

 private:
  MetricsServer() = default;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::string host_;
  uint16_t port_ = 0;
};

// "HOST:PORT" → host, port; "[::1]:9100" → "::1", 9100. InvalidArgument
// when malformed.
Status SplitHostPort(const std::string& address, std::string* host, uint16_t* port);

}  // namespace fairbench::metrics
