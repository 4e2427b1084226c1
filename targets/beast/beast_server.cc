#include "targets/beast/beast_server.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <string_view>

namespace fairbench::targets {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

constexpr uint64_t kBodyLimit = 1 << 20;

Response MakeResponse(const Request& req, http::status status, std::string_view content_type, std::string body) {
  Response res{status, req.version()};
  res.set(http::field::content_type, boost::beast::string_view(content_type.data(), content_type.size()));
  res.body() = std::move(body);
  res.keep_alive(req.keep_alive());
  res.prepare_payload();
  return res;
}

Response NotFound(const Request& req) { return MakeResponse(req, http::status::not_found, "text/plain", "Not Found"); }

// The endpoints. Pure: request in, response out.
Response Handle(const Request& req) {
  std::string_view target(req.target().data(), req.target().size());
  target = target.substr(0, target.find('?'));
  const http::verb method = req.method();

  if (method == http::verb::get && target == "/") {
    return MakeResponse(req, http::status::ok, "text/plain", "Hello, World!");
  }
  if (method == http::verb::get && target == "/api/status") {
    nlohmann::ordered_json body = {{"status", "running"}, {"framework", "beast"}};
    return MakeResponse(req, http::status::ok, "application/json", body.dump());
  }
  if (method == http::verb::post && target == "/api/echo") {
    auto body = nlohmann::ordered_json::parse(req.body(), nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded()) {
      return MakeResponse(req, http::status::bad_request, "application/json", R"({"error":"invalid JSON"})");
    }
    return MakeResponse(req, http::status::ok, "application/json", body.dump());
  }
  constexpr std::string_view kUsers = "/users/";
  if (method == http::verb::get && target.substr(0, kUsers.size()) == kUsers) {
    std::string_view digits = target.substr(kUsers.size());
    uint64_t id = 0;
    // from_chars stops at the first non-digit: the whole rest must be consumed.
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), id);
    if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size()) return NotFound(req);
    nlohmann::ordered_json body = {{"id", id}, {"name", "User " + std::to_string(id)}};
    return MakeResponse(req, http::status::ok, "application/json", body.dump());
  }
  return NotFound(req);
}

asio::awaitable<void> Session(tcp::socket socket, RequestCounter* counter) {
  boost::beast::flat_buffer buffer;
  boost::system::error_code ec;
  while (true) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(kBodyLimit);
    co_await http::async_read(socket, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) break;  // end of stream, reset, or a request we cannot parse
    Response res = Handle(parser.get());
    const bool keep_alive = res.keep_alive();
    co_await http::async_write(socket, res, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) break;
    counter->Increment();
    if (!keep_alive) break;
  }
  socket.shutdown(tcp::socket::shutdown_send, ec);
  socket.close(ec);
}

}  // namespace

struct BeastServer::Impl {
  BeastServerOptions options;
  RequestCounter* counter;
  std::vector<std::unique_ptr<asio::io_context>> contexts;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards;
  std::unique_ptr<tcp::acceptor> acceptor;
  std::vector<std::thread> threads;
  size_t next_context = 0;  // only the acceptor's coroutine touches it
  bool stopped = false;

  asio::awaitable<void> AcceptLoop() {
    boost::system::error_code ec;
    asio::steady_timer backoff(acceptor->get_executor());
    while (true) {
      asio::io_context& target = *contexts[next_context];
      next_context = (next_context + 1) % contexts.size();
      tcp::socket socket(target);
      co_await acceptor->async_accept(socket, asio::redirect_error(asio::use_awaitable, ec));
      if (ec == asio::error::operation_aborted || !acceptor->is_open()) co_return;
      if (ec) {
        // Out of descriptors and the like: wait for connections to end
        // rather than spinning on accept.
        backoff.expires_after(std::chrono::milliseconds(10));
        co_await backoff.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        continue;
      }
      socket.set_option(tcp::no_delay(true), ec);
      asio::co_spawn(target, Session(std::move(socket), counter), asio::detached);
    }
  }
};

BeastServer::BeastServer(BeastServerOptions options, RequestCounter* counter) : impl_(new Impl) {
  impl_->options = std::move(options);
  impl_->counter = counter;
}

BeastServer::~BeastServer() { Stop(); }

Status BeastServer::Start() {
  Impl& s = *impl_;
  const int n = std::max(1, s.options.threads);
  for (int i = 0; i < n; ++i) {
    // Concurrency hint 1: each context is run by exactly one thread.
    s.contexts.push_back(std::make_unique<asio::io_context>(1));
    s.guards.push_back(asio::make_work_guard(*s.contexts.back()));
  }
  boost::system::error_code ec;
  auto address = asio::ip::make_address(s.options.host, ec);
  if (ec) return Status::InvalidArgument("--host " + s.options.host + ": " + ec.message());
  const tcp::endpoint endpoint(address, s.options.port);
  const std::string where = s.options.host + ":" + std::to_string(s.options.port);
  s.acceptor = std::make_unique<tcp::acceptor>(*s.contexts[0]);
  s.acceptor->open(endpoint.protocol(), ec);
  if (!ec) s.acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor->bind(endpoint, ec);
  if (!ec) s.acceptor->listen(4096, ec);
  if (ec) return Status::Unavailable("listen " + where + ": " + ec.message());

  asio::co_spawn(*s.contexts[0], s.AcceptLoop(), asio::detached);
  for (auto& ctx : s.contexts) {
    s.threads.emplace_back([c = ctx.get()] { c->run(); });
  }
  return Status::Ok();
}

void BeastServer::Stop() {
  Impl& s = *impl_;
  if (s.stopped) return;
  s.stopped = true;
  for (auto& ctx : s.contexts) ctx->stop();
  for (auto& t : s.threads) t.join();
  s.threads.clear();
  s.guards.clear();
  // With every thread gone, the acceptor and the contexts are torn down
  // here; destroying a context destroys its suspended connection
  // coroutines and so closes their sockets.
  s.acceptor.reset();
  s.contexts.clear();
}

}  // namespace fairbench::targets
