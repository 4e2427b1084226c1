// fairbench-target-cinatra: the study's endpoints on Cinatra as shipped in
// yalantinglibs 0.3.0 (header-only; C++20 coroutines on async_simple and
// the bundled Asio), JSON through iguana, yalantinglibs' reflection-based
// JSON (struct_json).
//
//   GET  /            200 text/plain "Hello, World!"
//   GET  /api/status  200 application/json {"status":"running","framework":"cinatra"}
//   POST /api/echo    200 the body read into a reflected struct {name, age, email} and written
//                     again (iguana has no generic JSON writer); 400 if invalid
//   GET  /users/{id}  200 {"id":<id>,"name":"User <id>"}; 404 unless id is decimal
//                     digits that fit in 64 bits
//   anything else     404
//
// As the study's server: coro_http_server(--threads, port), one io_context
// per thread, the acceptor on the first. Cinatra always listens on every
// IPv4 address (it has no address option): --host is reported, not used.
// The study's /users/{id} handler read a query value instead of the path
// parameter and answered an empty id; this one reads the path parameter.

#include <CLI/CLI.hpp>
#include <asio/version.hpp>
#include <cinatra/coro_http_server.hpp>
#include <csignal>
#include <cstdio>
#include <exception>
#include <iguana/json_reader.hpp>
#include <iguana/json_writer.hpp>
#include <optional>
#include <string>

#include "common/signals.h"
#include "targets/common/target_main.h"

// iguana reflects structs at namespace scope.
namespace fairbench_cinatra {

struct StatusBody {
  std::string status;
  std::string framework;
};
REFLECTION(StatusBody, status, framework);

struct UserBody {
  uint64_t id;
  std::string name;
};
REFLECTION(UserBody, id, name);

struct EchoBody {
  std::string name;
  int64_t age;
  std::string email;
};
REFLECTION(EchoBody, name, age, email);

struct ErrorBody {
  std::string error;
};
REFLECTION(ErrorBody, error);

struct Facts {
  std::string framework;
  std::string version;
  std::string versionSource;
  std::string revision;
  std::string workerModel;
  int threads;
  std::string connectionThreads;
  std::string concurrentConnections;
  std::string listenAddress;
  std::string jsonLibrary;
  std::string echo;
  std::string allocator;
  std::string compiler;
  std::string flags;
  std::string frameworkBuild;
  std::string study;
};
REFLECTION(Facts, framework, version, versionSource, revision, workerModel, threads, connectionThreads,
           concurrentConnections, listenAddress, jsonLibrary, echo, allocator, compiler, flags, frameworkBuild, study);

}  // namespace fairbench_cinatra

namespace {

using cinatra::coro_http_request;
using cinatra::coro_http_response;
using cinatra::status_type;
using fairbench::targets::CountRequest;
using fairbench::targets::ParseUserId;
namespace body = fairbench_cinatra;

template <typename T>
void SendJson(coro_http_response& res, status_type status, const T& value) {
  std::string text;
  iguana::to_json(value, text);
  res.add_header("Content-Type", "application/json");
  res.set_status_and_content(status, std::move(text));
}

void AddRoutes(cinatra::coro_http_server& server) {
  server.set_http_handler<cinatra::GET>("/", [](coro_http_request&, coro_http_response& res) {
    res.add_header("Content-Type", "text/plain");
    res.set_status_and_content(status_type::ok, "Hello, World!");
    CountRequest();
  });
  server.set_http_handler<cinatra::GET>("/api/status", [](coro_http_request&, coro_http_response& res) {
    SendJson(res, status_type::ok, body::StatusBody{"running", "cinatra"});
    CountRequest();
  });
  server.set_http_handler<cinatra::POST>("/api/echo", [](coro_http_request& req, coro_http_response& res) {
    body::EchoBody echo{};
    try {
      iguana::from_json(echo, req.get_body());
      SendJson(res, status_type::ok, echo);
    } catch (const std::exception& e) {
      SendJson(res, status_type::bad_request, body::ErrorBody{std::string("invalid JSON: ") + e.what()});
    }
    CountRequest();
  });
  // Any segment: the handler decides (404 unless digits), as on every target.
  server.set_http_handler<cinatra::GET>("/users/:id", [](coro_http_request& req, coro_http_response& res) {
    const std::optional<uint64_t> id = ParseUserId(req.params_["id"]);
    if (!id) {
      SendJson(res, status_type::not_found, body::ErrorBody{"no such user"});
    } else {
      SendJson(res, status_type::ok, body::UserBody{*id, "User " + std::to_string(*id)});
    }
    CountRequest();
  });
}

// The fairness facts of this build, from the source and the build itself.
std::string DescribeFacts(const fairbench::targets::TargetFlags& flags) {
  const fairbench::targets::BuildFacts build = fairbench::targets::ThisBuild();
  const std::string asio = std::to_string(ASIO_VERSION / 100000) + "." + std::to_string(ASIO_VERSION / 100 % 1000) +
                           "." + std::to_string(ASIO_VERSION % 100);
  body::Facts facts;
  facts.framework = "cinatra";
  facts.version = build.version;
  facts.versionSource =
      "the build's FAIRBENCH_YLT_VERSION, of yalantinglibs (Cinatra has no version macro; yalantinglibs' CMake "
      "project at tag v0.3.0 says 0.2.9)";
  facts.revision = build.revision;
  facts.workerModel =
      "C++20 coroutines (async_simple) on an io_context pool: one io_context per thread, "
      "connections handed round-robin; the acceptor runs on the first; bundled Asio " +
      asio;
  facts.threads = flags.threads;
  facts.connectionThreads = std::to_string(flags.threads);
  facts.concurrentConnections = "unbounded";
  facts.listenAddress =
      "0.0.0.0 (every IPv4 address; Cinatra has no address option, --host " + flags.host + " is not used)";
  facts.jsonLibrary = "iguana (yalantinglibs' struct_json, reflection-based, bundled)";
  facts.echo = "typed: read into a struct {name, age, email} and written again; other fields are dropped";
  facts.allocator = build.allocator;
  facts.compiler = build.compiler;
  facts.flags = build.flags;
  facts.frameworkBuild = build.framework_build;
  facts.study =
      "as the study: coro_http_server(4, port), iguana structs; the study's /users/{id} handler read a query value "
      "and answered an empty id, this one reads the path parameter";
  std::string text;
  iguana::to_json(facts, text);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"fairbench target on Cinatra (yalantinglibs " FAIRBENCH_FRAMEWORK_VERSION ")"};
  fairbench::targets::TargetFlags flags;
  if (auto exit = fairbench::targets::ParseTargetCommandLine(cli, argc, argv, &flags, DescribeFacts)) return *exit;

  // SIGTERM/SIGINT: taken by the wait at the end, blocked before any thread
  // starts.
  const fairbench::BlockedSignals shutdown_signals({SIGTERM, SIGINT});

  auto request_log = fairbench::targets::StartServing(flags.request_log);
  if (!request_log.ok()) {
    std::fprintf(stderr, "%s\n", request_log.status().ToString().c_str());
    return 1;
  }

  if (flags.host != "0.0.0.0" && flags.host != "127.0.0.1") {
    std::fprintf(stderr, "note: Cinatra listens on every IPv4 address; --host %s is not used\n", flags.host.c_str());
  }
  cinatra::coro_http_server server(static_cast<size_t>(flags.threads), flags.port);
  AddRoutes(server);
  auto started = server.async_start();
  // A listen error settles the future at once; success leaves it pending
  // until the server stops.
  if (started.hasResult() && started.value() != std::errc{}) {
    std::fprintf(stderr, "cannot listen on port %u: %s\n", static_cast<unsigned>(flags.port),
                 std::make_error_code(started.value()).message().c_str());
    return 1;
  }
  std::printf("fairbench-target-cinatra (yalantinglibs %s) listening on 0.0.0.0:%u with %d threads\n",
              FAIRBENCH_FRAMEWORK_VERSION, static_cast<unsigned>(flags.port), flags.threads);
  std::fflush(stdout);
  // The same facts in the log, where the orchestrator reads them back for
  // the report (a pod's log in a cluster, the log file locally).
  std::printf("fairbench-target-facts: %s\n", DescribeFacts(flags).c_str());
  std::fflush(stdout);

  shutdown_signals.Wait();
  server.stop();  // closes the acceptor and every connection, joins the pool
  if (*request_log) (*request_log)->Stop();
  return 0;
}
