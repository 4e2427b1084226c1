// fairbench-target-cpp-httplib: the study's endpoints on cpp-httplib 0.18.3
// built from its upstream single header (not Debian's 0.11.4: that one
// closes a keep-alive connection after 5 requests, this one after 100).
//
//   GET  /            200 text/plain "Hello, World!"
//   GET  /api/status  200 application/json {"status":"running","framework":"cpp-httplib"}
//   POST /api/echo    200 the JSON body parsed and serialised again (nlohmann-json); 400 if invalid
//   GET  /users/{id}  200 {"id":<id>,"name":"User <id>"}; 404 unless id is decimal
//                     digits that fit in 64 bits
//   anything else     404
//
// As the study's server: a pool of --threads threads (httplib::ThreadPool),
// TCP_NODELAY on, everything else cpp-httplib's defaults. cpp-httplib is
// blocking: a pool thread serves one connection from accept until it closes
// (or has served 100 requests, or stayed idle 5 s), so only --threads
// keep-alive connections are served at a time and the others wait, first in
// the pool's queue, then in the listen backlog of 5. --describe says so.
#include <httplib.h>

#include <CLI/CLI.hpp>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "common/signals.h"
#include "targets/common/target_main.h"

namespace {

using fairbench::targets::CountRequest;
using fairbench::targets::ParseUserId;

void AddRoutes(httplib::Server& server) {
  server.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("Hello, World!", "text/plain");
    CountRequest();
  });
  server.Get("/api/status", [](const httplib::Request&, httplib::Response& res) {
    const nlohmann::json body = {{"status", "running"}, {"framework", "cpp-httplib"}};
    res.set_content(body.dump(), "application/json");
    CountRequest();
  });
  server.Post("/api/echo", [](const httplib::Request& req, httplib::Response& res) {
    const nlohmann::json body = nlohmann::json::parse(req.body, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded()) {
      res.status = 400;
      res.set_content(nlohmann::json{{"error", "invalid JSON"}}.dump(), "application/json");
    } else {
      res.set_content(body.dump(), "application/json");
    }
    CountRequest();
  });
  // Any segment: the handler decides (404 unless digits), as on every target.
  server.Get(R"(/users/([^/]+))", [](const httplib::Request& req, httplib::Response& res) {
    const std::optional<uint64_t> id = ParseUserId(req.matches[1].str());
    if (!id) {
      res.status = 404;
      res.set_content(nlohmann::json{{"error", "no such user"}}.dump(), "application/json");
    } else {
      const nlohmann::json body = {{"id", *id}, {"name", "User " + std::to_string(*id)}};
      res.set_content(body.dump(), "application/json");
    }
    CountRequest();
  });
}

// The fairness facts of this build, from the source and the build itself.
std::string Facts(const fairbench::targets::TargetFlags& flags) {
  const fairbench::targets::BuildFacts build = fairbench::targets::ThisBuild();
  const nlohmann::ordered_json facts = {
      {"framework", "cpp-httplib"},
      {"version", CPPHTTPLIB_VERSION},
      {"versionSource", "CPPHTTPLIB_VERSION macro"},
      {"revision", build.revision},
      {"workerModel",
       "blocking thread pool (httplib::ThreadPool): a pool thread serves one connection from accept until it "
       "closes; further connections wait in the pool's queue"},
      {"threads", flags.threads},
      {"connectionThreads", std::to_string(flags.threads)},
      {"concurrentConnections", std::to_string(flags.threads) + " (one per pool thread; keep-alive max " +
                                    std::to_string(CPPHTTPLIB_KEEPALIVE_MAX_COUNT) + " requests, idle timeout " +
                                    std::to_string(CPPHTTPLIB_KEEPALIVE_TIMEOUT_SECOND) + " s)"},
      {"listenBacklog", std::to_string(CPPHTTPLIB_LISTEN_BACKLOG)},
      {"listenAddress", flags.host},
      {"jsonLibrary", "nlohmann-json " + std::to_string(NLOHMANN_JSON_VERSION_MAJOR) + "." +
                          std::to_string(NLOHMANN_JSON_VERSION_MINOR) + "." +
                          std::to_string(NLOHMANN_JSON_VERSION_PATCH) + " (the study's choice; cpp-httplib has none)"},
      {"echo", "generic: any JSON value parsed and dumped again"},
      {"allocator", build.allocator},
      {"compiler", build.compiler},
      {"flags", build.flags},
      {"frameworkBuild", build.framework_build},
      {"study",
       "as the study: ThreadPool of 4, TCP_NODELAY on, listen backlog 5; the study's /users/{id} answered "
       "{\"userId\":\"<id>\",...} for any word, this one 404s unless the id is a number"},
  };
  return facts.dump();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fairbench target on cpp-httplib " CPPHTTPLIB_VERSION};
  fairbench::targets::TargetFlags flags;
  if (auto exit = fairbench::targets::ParseTargetCommandLine(app, argc, argv, &flags, Facts)) return *exit;

  // SIGTERM/SIGINT: taken by the wait at the end, blocked before any thread
  // starts.
  const fairbench::BlockedSignals shutdown_signals({SIGTERM, SIGINT});

  auto request_log = fairbench::targets::StartServing(flags.request_log);
  if (!request_log.ok()) {
    std::fprintf(stderr, "%s\n", request_log.status().ToString().c_str());
    return 1;
  }

  httplib::Server server;
  const size_t threads = static_cast<size_t>(flags.threads);
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // cpp-httplib writes headers and body separately; without TCP_NODELAY,
  // Nagle holds the body until the client's delayed ACK (40 ms).
  server.set_tcp_nodelay(true);
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
  std::printf("fairbench-target-cpp-httplib (cpp-httplib %s) listening on %s:%u with %d threads\n", CPPHTTPLIB_VERSION,
              flags.host.c_str(), static_cast<unsigned>(flags.port), flags.threads);
  std::fflush(stdout);
  // The same facts in the log, where the orchestrator reads them back for
  // the report (a pod's log in a cluster, the log file locally).
  fairbench::targets::PrintFacts(Facts(flags));

  shutdown_signals.Wait();
  server.stop();
  // stop() closes the listener, but a pool thread waiting on an idle
  // keep-alive connection notices only after the keep-alive timeout (5 s).
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
