#include "controller/metrics/metrics_server.h"

#include <httplib.h>

#include <charconv>
#include <chrono>

#include "controller/metrics/exposition.h"

namespace fairbench::metrics {

Status SplitHostPort(const std::string& address, std::string* host, uint16_t* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 == address.size()) {
    return Status::InvalidArgument("'" + address + "': expected HOST:PORT");
  }
  std::string h = address.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  if (h.empty())
    return Status::InvalidArgument("'" + address + "': expected HOST:PORT (use 0.0.0.0 for every interface)");
  const std::string p = address.substr(colon + 1);
  unsigned value = 0;
  const auto r = std::from_chars(p.data(), p.data() + p.size(), value);
  if (r.ec != std::errc() || r.ptr != p.data() + p.size() || value > 65535) {
    return Status::InvalidArgument("'" + address + "': the port must be a number from 0 to 65535");
  }
  *host = h;
  *port = static_cast<uint16_t>(value);
  return Status::Ok();
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::Start(MetricsServerOptions options) {
  std::string host;
  uint16_t port = 0;
  if (Status s = SplitHostPort(options.address, &host, &port); !s.ok()) return s;
  if (!options.render) return Status::InvalidArgument("metrics server: nothing to render");

  std::unique_ptr<MetricsServer> self(new MetricsServer());
  self->server_ = std::make_unique<httplib::Server>();
  httplib::Server& svr = *self->server_;
  svr.new_task_queue = [] { return new httplib::ThreadPool(2); };
  svr.set_read_timeout(5, 0);
  svr.set_write_timeout(5, 0);
  svr.set_keep_alive_timeout(30);
  svr.set_payload_max_length(64 * 1024);
  // cpp-httplib's default adds SO_REUSEPORT, which would let a second
  // controller bind the same port and take half of the scrapes.
  svr.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  auto render = options.render;
  auto ready = options.ready;
  svr.Get("/metrics",
          [render](const httplib::Request&, httplib::Response& res) { res.set_content(render(), kTextContentType); });
  svr.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
  svr.Get("/readyz", [ready](const httplib::Request&, httplib::Response& res) {
    if (!ready || ready()) {
      res.set_content("ready\n", "text/plain");
    } else {
      res.status = 503;
      res.set_content("not ready\n", "text/plain");
    }
  });
  auto not_allowed = [](const httplib::Request&, httplib::Response& res) {
    res.status = 405;
    res.set_header("Allow", "GET, HEAD");
    res.set_content("method not allowed\n", "text/plain");
  };
  svr.Post(".*", not_allowed);
  svr.Put(".*", not_allowed);
  svr.Delete(".*", not_allowed);
  svr.Patch(".*", not_allowed);
  svr.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.status == 404) res.set_content("not found: try /metrics, /healthz or /readyz\n", "text/plain");
  });

  int bound = port;
  if (port == 0) {
    bound = svr.bind_to_any_port(host);
    if (bound <= 0) return Status::Unavailable("metrics server: cannot listen on " + options.address);
  } else if (!svr.bind_to_port(host, port)) {
    return Status::Unavailable("metrics server: cannot listen on " + options.address +
                               " (in use, or not a local address)");
  }
  self->host_ = host;
  self->port_ = static_cast<uint16_t>(bound);
  self->thread_ = std::thread([s = &svr] { s->listen_after_bind(); });
  // stop() only reaches a server that is already listening: wait for it, so
  // that a Stop() right after Start() cannot be lost.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!svr.is_running() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return self;
}

void MetricsServer::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

MetricsServer::~MetricsServer() { Stop(); }

}  // namespace fairbench::metrics
