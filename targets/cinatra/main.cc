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
#include <gnu/libc-version.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <asio/version.hpp>
#include <charconv>
#include <cinatra/coro_http_server.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iguana/json_reader.hpp>
#include <iguana/json_writer.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/signals.h"
#include "targets/common/request_counter.h"
#include "targets/common/request_log.h"
#include "targets/common/target_flags.h"

#ifndef FAIRBENCH_FRAMEWORK_VERSION
#define FAIRBENCH_FRAMEWORK_VERSION "unknown"
#endif
#ifndef FAIRBENCH_FRAMEWORK_REVISION
#define FAIRBENCH_FRAMEWORK_REVISION "unknown"
#endif
#ifndef FAIRBENCH_FRAMEWORK_BUILD
#define FAIRBENCH_FRAMEWORK_BUILD "unknown"
#endif
#ifndef FAIRBENCH_CXX_FLAGS
#define FAIRBENCH_CXX_FLAGS "unknown"
#endif

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
using fairbench::targets::RequestCounter;
namespace body = fairbench_cinatra;

// Set before the server starts (when --request-log is given), read only after.
RequestCounter* g_counter = nullptr;

void Count() {
  if (g_counter != nullptr) g_counter->Increment();
}

// Decimal digits that fit in 64 bits ("007" is 7); anything else is no id.
std::optional<uint64_t> ParseUserId(std::string_view text) {
  if (text.empty() || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  uint64_t id = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return id;
}

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
    Count();
  });
  server.set_http_handler<cinatra::GET>("/api/status", [](coro_http_request&, coro_http_response& res) {
    SendJson(res, status_type::ok, body::StatusBody{"running", "cinatra"});
    Count();
  });
  server.set_http_handler<cinatra::POST>("/api/echo", [](coro_http_request& req, coro_http_response& res) {
    body::EchoBody echo{};
    try {
      iguana::from_json(echo, req.get_body());
      SendJson(res, status_type::ok, echo);
    } catch (const std::exception& e) {
      SendJson(res, status_type::bad_request, body::ErrorBody{std::string("invalid JSON: ") + e.what()});
    }
    Count();
  });
  // Any segment: the handler decides (404 unless digits), as on every target.
  server.set_http_handler<cinatra::GET>("/users/:id", [](coro_http_request& req, coro_http_response& res) {
    const std::optional<uint64_t> id = ParseUserId(req.params_["id"]);
    if (!id) {
      SendJson(res, status_type::not_found, body::ErrorBody{"no such user"});
    } else {
      SendJson(res, status_type::ok, body::UserBody{*id, "User " + std::to_string(*id)});
    }
    Count();
  });
}

std::string Compiler() {
#if defined(__clang__)
  return "clang " __clang_version__;
#else
  return "gcc " __VERSION__;
#endif
}

std::string Allocator() {
  const char* preload = std::getenv("LD_PRELOAD");
  std::string glibc = std::string("glibc malloc (glibc ") + gnu_get_libc_version() + ")";
  if (preload == nullptr || *preload == '\0') return glibc;
  return std::string("LD_PRELOAD=") + preload + " (replaces " + glibc + " where it defines malloc)";
}

// The fairness facts of this build, from the source and the build itself.
std::string DescribeFacts(const fairbench::targets::TargetFlags& flags) {
  const std::string asio = std::to_string(ASIO_VERSION / 100000) + "." + std::to_string(ASIO_VERSION / 100 % 1000) +
                           "." + std::to_string(ASIO_VERSION % 100);
  body::Facts facts;
  facts.framework = "cinatra";
  facts.version = FAIRBENCH_FRAMEWORK_VERSION;
  facts.versionSource =
      "pinned yalantinglibs tag of the build (Cinatra has no version macro; yalantinglibs' CMake project at that "
      "tag says 0.2.9)";
  facts.revision = FAIRBENCH_FRAMEWORK_REVISION;
  facts.workerModel = "C++20 coroutines (async_simple) on an io_context pool: one io_context per thread, "
                      "connections handed round-robin; the acceptor runs on the first; bundled Asio " +
                      asio;
  facts.threads = flags.threads;
  facts.connectionThreads = std::to_string(flags.threads);
  facts.concurrentConnections = "unbounded";
  facts.listenAddress = "0.0.0.0 (every IPv4 address; Cinatra has no address option, --host " + flags.host +
                        " is not used)";
  facts.jsonLibrary = "iguana (yalantinglibs' struct_json, reflection-based, bundled)";
  facts.echo = "typed: read into a struct {name, age, email} and written again; other fields are dropped";
  facts.allocator = Allocator();
  facts.compiler = Compiler();
  facts.flags = FAIRBENCH_CXX_FLAGS;
  facts.frameworkBuild = FAIRBENCH_FRAMEWORK_BUILD;
  facts.study =
      "as the study: coro_http_server(4, port), iguana structs; the study's /users/{id} handler read a query value "
      "and answered an empty id, this one reads the path parameter";
  std::string text;
  iguana::to_json(facts, text);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  const bool describe =
      std::any_of(argv + 1, argv + argc, [](const char* arg) { return std::string_view(arg) == "--describe"; });
  CLI::App cli{"fairbench target on Cinatra (yalantinglibs " FAIRBENCH_FRAMEWORK_VERSION ")"};
  fairbench::targets::TargetFlags flags;
  fairbench::targets::AddTargetFlags(cli, &flags);
  bool describe_flag = false;
  cli.add_flag("--describe", describe_flag, "print this build's fairness facts as one JSON object and exit");
  if (describe) cli.get_option("--port")->required(false);
  CLI11_PARSE(cli, argc, argv);
  if (describe) {
    std::printf("%s\n", DescribeFacts(flags).c_str());
    return 0;
  }

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
  if (*request_log) g_counter = &counter;

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
