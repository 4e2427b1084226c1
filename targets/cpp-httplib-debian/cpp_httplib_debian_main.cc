// fairbench-target-cpp-httplib-debian: the study's endpoints on Debian's
// cpp-httplib 0.11.4 (libcpp-httplib, the compiled "split" build: httplib.h
// declares, the shared library implements). Not the study's pinned 0.18.3:
// that one is targets/cpp-httplib/, built outside this build.
//
//   GET  /            200 text/plain "Hello, World!"
//   GET  /api/status  200 {"status":"running","framework":"cpp-httplib"}
//   POST /api/echo    200 the JSON body parsed and serialised again; 400 if invalid
//   GET  /users/{id}  200 {"id":<id>,"name":"User <id>"}; 404 unless id is
//                     decimal digits that fit in 64 bits
//   anything else     404
//
// cpp-httplib serves each connection on one pool thread until it closes or
// has served --keep-alive-max requests (then closes it): with more
// connections than --threads, connections wait for a free thread. That is
// the framework's model and part of what a benchmark of it measures.
#include <httplib.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/signals.h"
#include "targets/common/request_counter.h"
#include "targets/common/request_log.h"
#include "targets/common/target_flags.h"

namespace {

using fairbench::targets::RequestCounter;

void AddRoutes(httplib::Server& server) {
  server.Get("/",
             [](const httplib::Request&, httplib::Response& res) { res.set_content("Hello, World!", "text/plain"); });
  server.Get("/api/status", [](const httplib::Request&, httplib::Response& res) {
    nlohmann::ordered_json body = {{"status", "running"}, {"framework", "cpp-httplib"}};
    res.set_content(body.dump(), "application/json");
  });
  server.Post("/api/echo", [](const httplib::Request& req, httplib::Response& res) {
    auto body = nlohmann::ordered_json::parse(req.body, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded()) {
      res.status = 400;
      res.set_content(R"({"error":"invalid JSON"})", "application/json");
      return;
    }
    res.set_content(body.dump(), "application/json");
  });
  server.Get(R"(/users/(\d+))", [](const httplib::Request& req, httplib::Response& res) {
    const std::string digits = req.matches[1].str();
    uint64_t id = 0;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), id);
    if (ec != std::errc() || ptr != digits.data() + digits.size()) {
      res.status = 404;
      return;
    }
    nlohmann::ordered_json body = {{"id", id}, {"name", "User " + std::to_string(id)}};
    res.set_content(body.dump(), "application/json");
  });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fairbench reference target on cpp-httplib"};
  fairbench::targets::TargetFlags flags;
  fairbench::targets::AddTargetFlags(app, &flags);
  size_t keep_alive_max = 100;
  app.add_option("--keep-alive-max", keep_alive_max,
                 "requests per connection before the server closes it (cpp-httplib >= 0.12 default)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  // SIGTERM/SIGINT: taken by the wait at the end, blocked before any thread
  // starts. A client that goes away costs an EPIPE, not the process.
  std::signal(SIGPIPE, SIG_IGN);
  const fairbench::BlockedSignals shutdown_signals({SIGTERM, SIGINT});

  RequestCounter counter;
  auto request_log = fairbench::targets::SampledRequestLog::Start(flags.request_log, &counter);
  if (!request_log.ok()) {
    std::fprintf(stderr, "%s\n", request_log.status().ToString().c_str());
    return 1;
  }

  httplib::Server server;
  const size_t threads = static_cast<size_t>(flags.threads);
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server.set_keep_alive_max_count(keep_alive_max);
  // cpp-httplib writes headers and body separately; without TCP_NODELAY,
  // Nagle holds the body until the client's delayed ACK (40 ms).
  server.set_tcp_nodelay(true);
  // The logger runs after the response was written: count served requests there.
  server.set_logger([&counter](const httplib::Request&, const httplib::Response&) { counter.Increment(); });
  AddRoutes(server);

  if (!server.bind_to_port(flags.host, flags.port)) {
    std::fprintf(stderr, "cannot listen on %s:%u\n", flags.host.c_str(), static_cast<unsigned>(flags.port));
    return 1;
  }
  std::mutex mu;
  std::condition_variable cv;
  bool serving_done = false;
  std::thread serving([&] {
    server.listen_after_bind();
    std::lock_guard lock(mu);
    serving_done = true;
    cv.notify_all();
  });
  std::printf("fairbench-target-cpp-httplib-debian listening on %s:%u with %d threads\n", flags.host.c_str(),
              static_cast<unsigned>(flags.port), flags.threads);
  std::fflush(stdout);

  shutdown_signals.Wait();
  server.stop();
  // stop() closes the listener, but a pool thread waiting on an idle
  // keep-alive connection only notices after the keep-alive timeout (5 s).
  // Requests in flight get a second to finish; then we leave without them.
  bool joined;
  {
    std::unique_lock lock(mu);
    joined = cv.wait_for(lock, std::chrono::seconds(1), [&] { return serving_done; });
  }
  if (*request_log) (*request_log)->Stop();
  std::fflush(nullptr);
  if (!joined) std::_Exit(0);
  serving.join();
  return 0;
}
