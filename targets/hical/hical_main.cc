// fairbench-target-hical: the study's endpoints on Hical (main after 2.7.0,
// the study's commit), JSON through Boost.JSON as Hical does.
//
//   GET  /            200 text/plain "Hello, World!"
//   GET  /api/status  200 application/json {"status":"running","framework":"hical"} (boost::json)
//   POST /api/echo    200 the body parsed by boost::json and serialised again; 400 if invalid
//   GET  /users/{id}  200 {"id":<id>,"name":"User <id>"}; 404 unless id is decimal
//                     digits that fit in 64 bits
//   anything else     404 (Hical may answer 405 to a known path with another method)
//
// Hical needs GCC 14 (or Clang 22) and Boost >= 1.82, and so does this
// server: it is built against an installed Hical (targets/README.md).
//
// As the study's server: HttpServer(port, --threads), idle-connection
// timeout off; the study's image preloaded mimalloc (the only framework
// with another allocator) — --describe reports what the process actually
// runs with. Hical always listens on every IPv4 address (it has no
// address option): --host is reported, not used.

#include <CLI/CLI.hpp>
#include <boost/json.hpp>
#include <boost/version.hpp>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/signals.h"
#include "core/HttpServer.h"
#include "core/Version.h"
#include "targets/common/target_main.h"

namespace {

using fairbench::targets::CountRequest;
using fairbench::targets::ParseUserId;
using hical::HttpRequest;
using hical::HttpResponse;
using hical::HttpStatusCode;

HttpResponse Json(HttpStatusCode status, const boost::json::value& body) {
  HttpResponse res;
  res.setStatus(status);
  res.setJsonBody(body);
  return res;
}

HttpResponse JsonError(HttpStatusCode status, const std::string& message) {
  boost::json::object body;
  body["error"] = message;
  return Json(status, boost::json::value(std::move(body)));
}

void AddRoutes(hical::Router& router) {
  router.get("/", [](const HttpRequest&) -> HttpResponse {
    HttpResponse res;
    res.setBody(std::string("Hello, World!"), std::string("text/plain"));
    CountRequest();
    return res;
  });
  router.get("/api/status", [](const HttpRequest&) -> HttpResponse {
    boost::json::object body;
    body["status"] = "running";
    body["framework"] = "hical";
    CountRequest();
    return Json(HttpStatusCode::hOk, boost::json::value(std::move(body)));
  });
  router.post("/api/echo", [](const HttpRequest& req) -> HttpResponse {
    CountRequest();
    boost::system::error_code ec;
    boost::json::value body = boost::json::parse(req.body(), ec);
    if (ec) return JsonError(HttpStatusCode::hBadRequest, "invalid JSON: " + ec.message());
    return Json(HttpStatusCode::hOk, body);
  });
  // Any segment: the handler decides (404 unless digits), as on every target.
  router.get("/users/{id}", [](const HttpRequest& req) -> HttpResponse {
    CountRequest();
    const std::optional<uint64_t> id = ParseUserId(req.param("id"));
    if (!id) return JsonError(HttpStatusCode::hNotFound, "no such user");
    boost::json::object body;
    body["id"] = *id;
    body["name"] = "User " + std::to_string(*id);
    return Json(HttpStatusCode::hOk, boost::json::value(std::move(body)));
  });
}

// The fairness facts of this build, from the source and the build itself.
std::string Facts(const fairbench::targets::TargetFlags& flags) {
  const fairbench::targets::BuildFacts build = fairbench::targets::ThisBuild();
  boost::json::object facts;
  facts["framework"] = "hical";
  facts["version"] = std::to_string(HICAL_VERSION_MAJOR) + "." + std::to_string(HICAL_VERSION_MINOR) + "." +
                     std::to_string(HICAL_VERSION_PATCH);
  facts["versionSource"] = "HICAL_VERSION_* macros (core/Version.h, generated from Hical's CMake project)";
  facts["revision"] = build.revision;
  facts["workerModel"] =
      "C++20 coroutines on Boost.Asio, one io_context per thread: the main thread's loop plus --threads - 1 worker "
      "loops, each with its own SO_REUSEPORT acceptor";
  facts["threads"] = flags.threads;
  facts["connectionThreads"] = std::to_string(flags.threads);
  facts["concurrentConnections"] =
      "at most 10000 (HttpServer's default maximum; further connections are closed at accept); no idle timeout";
  facts["listenAddress"] =
      "0.0.0.0 (every IPv4 address; Hical has no address option, --host " + flags.host + " is not used)";
  facts["jsonLibrary"] = std::string("Boost.JSON ") + BOOST_LIB_VERSION + " (Hical's JSON)";
  facts["echo"] = "generic: boost::json::parse, then serialised again";
  facts["allocator"] = build.allocator;
  facts["compiler"] = build.compiler;
  facts["flags"] = build.flags;
  facts["frameworkBuild"] = build.framework_build;
  facts["study"] =
      "as the study: HttpServer(port, 4), idle timeout 0, GCC 14, static libstdc++ and Boost, mimalloc preloaded by "
      "the image (the only framework with another allocator); the study's /users/{id} answered "
      "{\"userId\":\"<id>\",...} and its echo read a typed DTO, this one any JSON";
  return boost::json::serialize(facts);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"fairbench target on Hical (" HICAL_VERSION_STRING ")"};
  fairbench::targets::TargetFlags flags;
  if (auto exit = fairbench::targets::ParseTargetCommandLine(cli, argc, argv, &flags, Facts)) return *exit;

  hical::HttpServer server(flags.port, static_cast<size_t>(flags.threads));
  std::mutex mu;
  std::condition_variable cv;
  bool served = false;                                          // start() returned; guarded by mu
  fairbench::targets::SampledRequestLog* log_to_end = nullptr;  // set before the server starts
  // SIGTERM/SIGINT: blocked in every thread, so Hical's own signal_set never
  // sees them; our watcher stops the server instead, once it has started
  // (stop() before start() would be forgotten). With the idle timeout off,
  // as on the study's server, Hical keeps no list of open connections to
  // close, and an idle keep-alive connection would hold start() for ever:
  // requests in flight get a second, then the process leaves without them.
  const fairbench::SignalWatcher watcher({SIGTERM, SIGINT}, [&](int) {
    while (!server.isRunning()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    server.stop();
    std::unique_lock lock(mu);
    if (!cv.wait_for(lock, std::chrono::seconds(1), [&] { return served; })) {
      if (log_to_end != nullptr) log_to_end->Stop();
      std::fflush(nullptr);
      std::_Exit(0);
    }
  });

  auto request_log = fairbench::targets::StartServing(flags.request_log);
  if (!request_log.ok()) {
    std::fprintf(stderr, "%s\n", request_log.status().ToString().c_str());
    return 1;
  }
  log_to_end = request_log->get();

  if (flags.host != "0.0.0.0" && flags.host != "127.0.0.1") {
    std::fprintf(stderr, "note: Hical listens on every IPv4 address; --host %s is not used\n", flags.host.c_str());
  }
  server.setIdleTimeout(0);  // as the study's server
  AddRoutes(server.router());
  std::printf("fairbench-target-hical (%s) listening on 0.0.0.0:%u with %d threads\n", HICAL_VERSION_STRING,
              static_cast<unsigned>(flags.port), flags.threads);
  std::fflush(stdout);
  // The same facts in the log, where the orchestrator reads them back for
  // the report (a pod's log in a cluster, the log file locally).
  fairbench::targets::PrintFacts(Facts(flags));
  try {
    server.start();  // blocks until stop()
  } catch (const std::exception& e) {
    // The watcher may be waiting for a start that never comes: leave
    // without joining it.
    std::fprintf(stderr, "cannot serve on port %u: %s\n", static_cast<unsigned>(flags.port), e.what());
    std::fflush(nullptr);
    std::_Exit(1);
  }
  {
    std::lock_guard lock(mu);
    served = true;
  }
  cv.notify_all();
  if (*request_log) (*request_log)->Stop();
  return 0;
}
