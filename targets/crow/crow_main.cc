// fairbench-target-crow: the study's endpoints on Crow 1.2.0 (header-only,
// on standalone Asio).
//
//   GET  /            200 text/plain "Hello, World!"
//   GET  /api/status  200 application/json {"status":"running","framework":"crow"} (crow::json::wvalue)
//   POST /api/echo    200 the JSON body read by crow::json::load and dumped from a wvalue; 400 if invalid
//   GET  /users/{id}  200 {"id":<id>,"name":"User <id>"}; 404 unless id is decimal
//                     digits that fit in 64 bits
//   anything else     404
//
// As the study's server: concurrency(--threads). Crow gives one of those
// threads to the acceptor (its main io_context) and the others to
// connections (concurrency 4 = 3 connection threads; at least 2 in all);
// --describe says so. Unlike the study's server, every answer carries its
// Content-Type (the study's had none, JSON included).
//
// TCP_NODELAY: Crow 1.2 hands a response to Asio as 4 buffers per header
// plus about a dozen, and Asio's async_write sends at most 16 buffers per
// write: any response with a header of its own goes out in two writes.
// Crow sets no TCP_NODELAY, so the second write waits for the client's
// delayed ACK — 40 ms for every keep-alive request (the study's server
// dodged it by setting no header at all). This server sets TCP_NODELAY on
// Crow's listening socket, which accepted connections inherit — what the
// study did for cpp-httplib, for the same reason. --describe says so.
#include <asio/version.hpp>
#include <crow.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>

#include "common/signals.h"
#include "targets/common/target_main.h"

namespace {

using fairbench::targets::CountRequest;
using fairbench::targets::ParseUserId;

crow::response JsonError(int code, const std::string& message) {
  crow::json::wvalue body;
  body["error"] = message;
  return crow::response(code, body);
}

void AddRoutes(crow::SimpleApp& app) {
  CROW_ROUTE(app, "/")
  ([] {
    CountRequest();
    return crow::response(200, "text/plain", "Hello, World!");
  });
  CROW_ROUTE(app, "/api/status")
  ([] {
    crow::json::wvalue body;
    body["status"] = "running";
    body["framework"] = "crow";
    CountRequest();
    return crow::response(200, body);
  });
  CROW_ROUTE(app, "/api/echo").methods(crow::HTTPMethod::Post)([](const crow::request& req) {
    CountRequest();
    const crow::json::rvalue parsed = crow::json::load(req.body);
    if (!parsed) return JsonError(400, "invalid JSON");
    crow::json::wvalue body(parsed);
    return crow::response(200, body);
  });
  // Any segment: the handler decides (404 unless digits), as on every target.
  CROW_ROUTE(app, "/users/<string>")
  ([](const std::string& text) {
    CountRequest();
    const std::optional<uint64_t> id = ParseUserId(text);
    if (!id) return JsonError(404, "no such user");
    crow::json::wvalue body;
    body["id"] = *id;
    body["name"] = "User " + std::to_string(*id);
    return crow::response(200, body);
  });
}

// Sets TCP_NODELAY on this process's socket listening on `port` (Crow keeps
// its acceptor to itself), which connections accepted afterwards inherit,
// and on the connections on that port accepted before (a client quick
// enough to connect as Crow started).
bool SetNoDelayOnListener(uint16_t port) {
  std::error_code ec;
  bool listener = false;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    int fd = -1;
    const std::string name = entry.path().filename().string();
    if (std::from_chars(name.data(), name.data() + name.size(), fd).ec != std::errc()) continue;
    int listening = 0;
    socklen_t size = sizeof listening;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) != 0) continue;
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) continue;
    uint16_t bound = 0;
    if (address.ss_family == AF_INET) bound = ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
    if (address.ss_family == AF_INET6) bound = ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port);
    if (bound != port) continue;
    const int on = 1;
    const bool set = setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on) == 0;
    if (listening != 0) listener = set;
  }
  return listener;
}

// Crow runs at least 2 threads and gives one to its acceptor.
int CrowConcurrency(int threads) { return std::max(threads, 2); }

// The fairness facts of this build, from the source and the build itself.
std::string Facts(const fairbench::targets::TargetFlags& flags) {
  const fairbench::targets::BuildFacts build = fairbench::targets::ThisBuild();
  const int concurrency = CrowConcurrency(flags.threads);
  const std::string asio = std::to_string(ASIO_VERSION / 100000) + "." + std::to_string(ASIO_VERSION / 100 % 1000) +
                           "." + std::to_string(ASIO_VERSION % 100);
  crow::json::wvalue facts;
  facts["framework"] = "crow";
  facts["version"] = build.version;
  facts["versionSource"] =
      std::string("the build's FAIRBENCH_CROW_VERSION (Crow's crow::VERSION says \"") + crow::VERSION + "\")";
  facts["revision"] = build.revision;
  facts["workerModel"] =
      "asio event loops: one io_context per thread, connections handed round-robin (least "
      "busy) by the acceptor's own io_context thread; standalone Asio " +
      asio;
  facts["threads"] = flags.threads;
  facts["connectionThreads"] = std::to_string(concurrency - 1) + " (concurrency(" + std::to_string(concurrency) +
                               "): one more thread only accepts)";
  facts["concurrentConnections"] = "unbounded (keep-alive idle timeout 5 s)";
  facts["tcpNoDelay"] =
      "set by this server on Crow's listening socket (Crow sets none): Crow writes a response with a header of "
      "its own in two writes (Asio sends at most 16 buffers at a time, Crow uses 4 per header), and without "
      "TCP_NODELAY every keep-alive request would wait 40 ms for the client's delayed ACK";
  facts["listenAddress"] = flags.host;
  facts["jsonLibrary"] = "crow::json (Crow's own)";
  facts["echo"] = "generic: crow::json::load, then a wvalue dumped (object keys come back in hash order)";
  facts["allocator"] = build.allocator;
  facts["compiler"] = build.compiler;
  facts["flags"] = build.flags;
  facts["frameworkBuild"] = build.framework_build;
  facts["study"] =
      "as the study: concurrency(4), log level Warning; the study's image used crow_all.h with Boost.Asio "
      "(CROW_USE_BOOST) and set no header (no Content-Type, JSON included), which kept its responses in one "
      "write without TCP_NODELAY; this one includes Crow's headers on standalone Asio, sends Content-Type and "
      "sets TCP_NODELAY";
  return facts.dump();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"fairbench target on Crow " FAIRBENCH_FRAMEWORK_VERSION};
  fairbench::targets::TargetFlags flags;
  if (auto exit = fairbench::targets::ParseTargetCommandLine(cli, argc, argv, &flags, Facts)) return *exit;

  crow::SimpleApp app;
  // SIGTERM/SIGINT: taken by our watcher thread, not by Crow's signal_set.
  // It waits until Crow has started before stopping it, so an early signal
  // cannot be lost in the middle of Crow's start.
  app.signal_clear();
  const fairbench::SignalWatcher watcher({SIGTERM, SIGINT}, [&app](int) {
    app.wait_for_server_start();
    app.stop();
  });

  auto request_log = fairbench::targets::StartServing(flags.request_log);
  if (!request_log.ok()) {
    std::fprintf(stderr, "%s\n", request_log.status().ToString().c_str());
    return 1;
  }

  app.loglevel(crow::LogLevel::Warning);
  AddRoutes(app);
  app.bindaddr(flags.host).port(flags.port).concurrency(static_cast<uint16_t>(CrowConcurrency(flags.threads)));
  std::printf("fairbench-target-crow (Crow %s) listening on %s:%u with %d threads\n", FAIRBENCH_FRAMEWORK_VERSION,
              flags.host.c_str(), static_cast<unsigned>(flags.port), CrowConcurrency(flags.threads));
  std::fflush(stdout);
  // The same facts in the log, where the orchestrator reads them back for
  // the report (a pod's log in a cluster, the log file locally).
  fairbench::targets::PrintFacts(Facts(flags));
  // Once Crow listens, TCP_NODELAY on its socket (see the top of this file).
  // Not joined: if Crow cannot listen, it waits for ever and the process
  // leaves without it.
  std::thread([&app, port = flags.port] {
    app.wait_for_server_start();
    if (!SetNoDelayOnListener(port)) {
      std::fprintf(stderr, "warning: could not set TCP_NODELAY on Crow's listening socket (port %u)\n",
                   static_cast<unsigned>(port));
    }
  }).detach();
  try {
    app.run();
  } catch (const std::exception& e) {
    // Crow binds in its server's constructor; the watcher may be waiting
    // for a start that never comes, so leave without joining it.
    std::fprintf(stderr, "cannot listen on %s:%u: %s\n", flags.host.c_str(), static_cast<unsigned>(flags.port),
                 e.what());
    std::fflush(nullptr);
    std::_Exit(1);
  }
  if (*request_log) (*request_log)->Stop();
  return 0;
}
