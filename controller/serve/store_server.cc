#include "controller/serve/store_server.h"

#include <httplib.h>

#include <chrono>
#include <utility>

#include "controller/serve/store_site.h"

namespace fairbench::serve {
namespace {

constexpr size_t kMaxBody = 64 * 1024;  // bodies are refused anyway: read and dropped

void Write(httplib::Response& res, const Page& page) {
  res.status = page.status;
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Cache-Control", "no-store");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_content(page.body, page.content_type.c_str());
}

void NotAllowed(httplib::Response& res, const std::string& method) {
  Write(res, ErrorPage(405, method + ": this server only reads; GET or HEAD"));
  res.set_header("Allow", "GET, HEAD");
}

}  // namespace

Status ParseListen(const std::string& text, std::string& host, int& port) {
  const Status bad =
      Status::InvalidArgument("--listen: expected HOST:PORT (127.0.0.1:8089, [::1]:0), got '" + text + "'");
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size() || text.size() - colon - 1 > 5) return bad;
  std::string h = text.substr(0, colon);
  if (h.front() == '[') {
    if (h.size() < 3 || h.back() != ']') return bad;
    h = h.substr(1, h.size() - 2);
  } else if (h.find(':') != std::string::npos) {
    return bad;  // an IPv6 address goes in brackets
  }
  int p = 0;
  for (char c : text.substr(colon + 1)) {
    if (c < '0' || c > '9') return bad;
    p = p * 10 + (c - '0');
  }
  if (p > 65535) return bad;
  host = h;
  port = p;
  return Status::Ok();
}

StoreServer::StoreServer(const ServeOptions& options) : options_(options), http_(std::make_unique<httplib::Server>()) {}

StoreServer::~StoreServer() { Stop(); }

Result<results::ResultStore*> StoreServer::Store() {
  if (!store_) {
    results::OpenOptions oo;
    oo.create = false;
    auto opened = results::OpenResultStore(options_.store, oo);
    if (!opened.ok()) return Status::Unavailable(opened.status().message());
    store_ = std::move(*opened);
  }
  return store_.get();
}

Result<std::unique_ptr<StoreServer>> StoreServer::Start(const ServeOptions& options) {
  std::unique_ptr<StoreServer> s(new StoreServer(options));
  httplib::Server& http = *s->http_;
  StoreServer* self = s.get();
  // One request at a time at the store; a store that failed to answer is
  // opened again by the next request.
  auto serve = [self](auto page_of) {
    return [self, page_of](const httplib::Request& req, httplib::Response& res) {
      Page page;
      {
        MutexLock lock(self->mu_);
        auto store = self->Store();
        if (!store.ok()) {
          page = ErrorPage(503, store.status().message());
        } else {
          StoreSite site(**store);
          page = page_of(site, req);
          if (page.status == 503) self->store_.reset();
        }
      }
      Write(res, page);
    };
  };
  http.Get("/", serve([](StoreSite& site, const httplib::Request& req) { return site.Index(req.params); }));
  http.Get(R"(/runs/([^/]+)/results\.json)",
           serve([](StoreSite& site, const httplib::Request& req) { return site.RunJson(req.matches[1]); }));
  http.Get(R"(/runs/([^/]+))",
           serve([](StoreSite& site, const httplib::Request& req) { return site.Run(req.matches[1]); }));
  http.Get("/series", serve([](StoreSite& site, const httplib::Request& req) { return site.SeriesPage(req.params); }));
  http.Get("/compare", serve([](StoreSite& site, const httplib::Request& req) { return site.Compare(req.params); }));

  // Read only. A request with a body has it read (bounded) and is refused
  // by a route, so that the body is not taken for the next request on the
  // connection; one without is refused before routing (cpp-httplib would
  // answer a bodiless POST 400, and has no route for TRACE at all).
  auto refuse = [](const httplib::Request& req, httplib::Response& res) { NotAllowed(res, req.method); };
  http.Post(".*", refuse);
  http.Put(".*", refuse);
  http.Patch(".*", refuse);
  http.Delete(".*", refuse);
  http.Options(".*", refuse);
  http.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
    const bool body = req.has_header("Content-Length") || req.has_header("Transfer-Encoding");
    if (req.method == "GET" || req.method == "HEAD" || (body && req.method != "TRACE" && req.method != "CONNECT")) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    NotAllowed(res, req.method);
    return httplib::Server::HandlerResponse::Handled;
  });
  // Paths that match no route, and cpp-httplib's own failures (a body too
  // large): a page too.
  http.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    const int status = res.status;
    Write(res, ErrorPage(status, status == 404 ? "no page " + req.path + " here" : "the request cannot be served"));
    return httplib::Server::HandlerResponse::Handled;
  }));
  http.set_payload_max_length(kMaxBody);
  // cpp-httplib writes headers and body separately: without TCP_NODELAY,
  // Nagle holds a keep-alive connection's next body for the delayed ACK.
  http.set_tcp_nodelay(true);
  // A pool thread waits this long on an idle keep-alive connection, and
  // Stop() waits for it.
  http.set_keep_alive_timeout(2);

  if (options.port == 0) {
    const int port = http.bind_to_any_port(options.host);
    if (port <= 0) return Status::Unavailable("cannot listen on " + options.host + ": no free port");
    s->port_ = port;
  } else {
    if (!http.bind_to_port(options.host, options.port)) {
      return Status::Unavailable("cannot listen on " + options.host + ":" + std::to_string(options.port) +
                                 " (in use, or not an address of this machine)");
    }
    s->port_ = options.port;
  }
  s->listener_ = std::thread([self] {
    self->http_->listen_after_bind();
    self->listen_returned_ = true;
  });
  return s;
}

void StoreServer::Stop() {
  if (!listener_.joinable()) return;
  // stop() does nothing to a server that is not listening yet.
  while (!http_->is_running() && !listen_returned_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  http_->stop();
  listener_.join();
}

std::string StoreServer::url() const {
  const std::string host = options_.host.find(':') != std::string::npos ? "[" + options_.host + "]" : options_.host;
  return "http://" + host + ":" + std::to_string(port_) + "/";
}

}  // namespace fairbench::serve
