// fairbench-target-oatpp: the study's endpoints on Oat++ 1.3.0 (its
// "simple", blocking API), JSON through Oat++'s own ObjectMapper.
//
//   GET  /            200 text/plain "Hello, World!"
//   GET  /api/status  200 application/json {"status":"running","framework":"oatpp"} (a DTO)
//   POST /api/echo    200 the body read as oatpp::Any and written again by the ObjectMapper; 400 if invalid
//   GET  /users/{id}  200 {"id":<id>,"name":"User <id>"} (a DTO); 404 unless id is decimal
//                     digits that fit in 64 bits
//   anything else     404
//
// As the study's server: HttpConnectionHandler, which starts one thread per
// connection (10,000 connections, 10,000 threads) and pins each of them to
// CPUs 0..(all CPUs of the machine - 2), whatever CPUs the process was
// started on. --threads does not apply to that model; --describe says so.

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <thread>

#include "common/signals.h"
#include "oatpp/core/base/Environment.hpp"
#include "oatpp/core/concurrency/Thread.hpp"
#include "oatpp/core/macro/codegen.hpp"
#include "oatpp/network/Server.hpp"
#include "oatpp/network/tcp/server/ConnectionProvider.hpp"
#include "oatpp/parser/json/mapping/ObjectMapper.hpp"
#include "oatpp/web/server/HttpConnectionHandler.hpp"
#include "oatpp/web/server/HttpRouter.hpp"
#include "oatpp/web/server/api/ApiController.hpp"
#include "targets/common/target_main.h"

namespace {

using fairbench::targets::CountRequest;
using fairbench::targets::ParseUserId;

#include OATPP_CODEGEN_BEGIN(DTO)

class StatusDto : public oatpp::DTO {
  DTO_INIT(StatusDto, DTO)
  DTO_FIELD(String, status);
  DTO_FIELD(String, framework);
};

class UserDto : public oatpp::DTO {
  DTO_INIT(UserDto, DTO)
  DTO_FIELD(UInt64, id);
  DTO_FIELD(String, name);
};

class ErrorDto : public oatpp::DTO {
  DTO_INIT(ErrorDto, DTO)
  DTO_FIELD(String, error);
};

class FactsDto : public oatpp::DTO {
  DTO_INIT(FactsDto, DTO)
  DTO_FIELD(String, framework);
  DTO_FIELD(String, version);
  DTO_FIELD(String, versionSource);
  DTO_FIELD(String, revision);
  DTO_FIELD(String, workerModel);
  DTO_FIELD(Int32, threads);
  DTO_FIELD(String, connectionThreads);
  DTO_FIELD(String, concurrentConnections);
  DTO_FIELD(String, cpuAffinity);
  DTO_FIELD(String, listenAddress);
  DTO_FIELD(String, jsonLibrary);
  DTO_FIELD(String, echo);
  DTO_FIELD(String, allocator);
  DTO_FIELD(String, compiler);
  DTO_FIELD(String, flags);
  DTO_FIELD(String, frameworkBuild);
  DTO_FIELD(String, study);
};

#include OATPP_CODEGEN_END(DTO)

#include OATPP_CODEGEN_BEGIN(ApiController)

class StudyController : public oatpp::web::server::api::ApiController {
 public:
  explicit StudyController(const std::shared_ptr<ObjectMapper>& mapper) : ApiController(mapper) {}

  ENDPOINT("GET", "/", hello) {
    auto res = createResponse(Status::CODE_200, "Hello, World!");
    res->putHeader(oatpp::web::protocol::http::Header::CONTENT_TYPE, "text/plain");
    CountRequest();
    return res;
  }

  ENDPOINT("GET", "/api/status", status) {
    auto body = StatusDto::createShared();
    body->status = "running";
    body->framework = "oatpp";
    CountRequest();
    return createDtoResponse(Status::CODE_200, body);
  }

  ENDPOINT("POST", "/api/echo", echo, BODY_STRING(String, text)) {
    CountRequest();
    // The mapper's caret interface, not readFromString: that one cannot
    // report a top-level null, and leaves trailing bytes unchecked.
    oatpp::parser::Caret caret(text);
    oatpp::Void body;
    std::string error;
    try {
      body = getDefaultObjectMapper()->read(caret, oatpp::Any::Class::getType());
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (error.empty() && caret.hasError()) {
      const oatpp::String message = caret.getErrorMessage();
      error = message ? std::string(*message) : "parse error";
    }
    if (error.empty()) {
      caret.skipBlankChars();
      if (caret.canContinue()) error = "bytes after the JSON value";
    }
    if (!error.empty()) return ErrorResponse(Status::CODE_400, "invalid JSON: " + error);
    auto res = createResponse(Status::CODE_200, getDefaultObjectMapper()->writeToString(body));
    res->putHeader(oatpp::web::protocol::http::Header::CONTENT_TYPE, "application/json");
    return res;
  }

  // Any segment: the handler decides (404 unless digits), as on every target.
  ENDPOINT("GET", "/users/{id}", user, PATH(String, text, "id")) {
    CountRequest();
    const std::optional<uint64_t> id = ParseUserId(*text);
    if (!id) return ErrorResponse(Status::CODE_404, "no such user");
    auto body = UserDto::createShared();
    body->id = *id;
    body->name = "User " + std::to_string(*id);
    return createDtoResponse(Status::CODE_200, body);
  }

 private:
  std::shared_ptr<OutgoingResponse> ErrorResponse(const Status& status, const std::string& message) {
    auto body = ErrorDto::createShared();
    body->error = message;
    return createDtoResponse(status, body);
  }
};

#include OATPP_CODEGEN_END(ApiController)

// The CPUs HttpConnectionHandler pins each connection thread to (it counts
// every CPU of the machine, not those the process may use).
std::string AffinityRange() {
  int cpus = oatpp::concurrency::getHardwareConcurrency();
  if (cpus > 1) cpus -= 1;
  return cpus <= 1 ? "CPU 0" : "CPUs 0-" + std::to_string(cpus - 1);
}

// The fairness facts of this build, from the source and the build itself.
std::string Facts(const fairbench::targets::TargetFlags& flags) {
  const fairbench::targets::BuildFacts build = fairbench::targets::ThisBuild();
  auto facts = FactsDto::createShared();
  facts->framework = "oatpp";
  facts->version = OATPP_VERSION;
  facts->versionSource = "OATPP_VERSION macro (oatpp/core/base/Environment.hpp)";
  facts->revision = build.revision;
  facts->workerModel =
      "thread per connection (oatpp::web::server::HttpConnectionHandler, blocking I/O); one thread accepts";
  facts->threads = flags.threads;
  facts->connectionThreads = "one per open connection (--threads " + std::to_string(flags.threads) + " is not used)";
  facts->concurrentConnections = "unbounded: one thread each";
  // (Unless Oat++ itself was built with OATPP_COMPAT_BUILD_NO_SET_AFFINITY;
  // frameworkBuild lists the options it was built with.)
  facts->cpuAffinity = "each connection thread pinned by Oat++ to " + AffinityRange() +
                       " (all CPUs of this machine but the last), overriding the CPUs it was started on";
  facts->listenAddress = flags.host;
  facts->jsonLibrary = "Oat++ ObjectMapper (oatpp::parser::json::mapping, DTOs)";
  facts->echo = "generic: read as oatpp::Any, written again (numbers as float64, printed %.16g)";
  facts->allocator = build.allocator;
  facts->compiler = build.compiler;
  facts->flags = build.flags;
  facts->frameworkBuild = build.framework_build;
  facts->study =
      "as the study: HttpConnectionHandler (thread per connection); the study's echo read a typed DTO "
      "(name, age, email), this one any JSON";
  return oatpp::parser::json::mapping::ObjectMapper::createShared()->writeToString(facts);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"fairbench target on Oat++ " OATPP_VERSION};
  fairbench::targets::TargetFlags flags;
  // Oat++'s environment first: --describe writes the facts with its ObjectMapper.
  oatpp::base::Environment::init();
  if (auto exit = fairbench::targets::ParseTargetCommandLine(cli, argc, argv, &flags, Facts)) {
    oatpp::base::Environment::destroy();
    return *exit;
  }

  // SIGTERM/SIGINT: taken by the wait at the end, blocked before any thread
  // starts.
  const fairbench::BlockedSignals shutdown_signals({SIGTERM, SIGINT});

  auto request_log = fairbench::targets::StartServing(flags.request_log);
  if (!request_log.ok()) {
    std::fprintf(stderr, "%s\n", request_log.status().ToString().c_str());
    return 1;
  }

  {
    auto router = oatpp::web::server::HttpRouter::createShared();
    router->addController(
        std::make_shared<StudyController>(oatpp::parser::json::mapping::ObjectMapper::createShared()));
    auto handler = oatpp::web::server::HttpConnectionHandler::createShared(router);
    std::shared_ptr<oatpp::network::tcp::server::ConnectionProvider> provider;
    try {
      provider = oatpp::network::tcp::server::ConnectionProvider::createShared(
          {flags.host, flags.port, oatpp::network::Address::IP_4});
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cannot listen on %s:%u: %s\n", flags.host.c_str(), static_cast<unsigned>(flags.port),
                   e.what());
      return 1;
    }
    oatpp::network::Server server(provider, handler);
    std::thread serving([&server] { server.run(); });
    std::printf("fairbench-target-oatpp (Oat++ %s) listening on %s:%u, one thread per connection\n", OATPP_VERSION,
                flags.host.c_str(), static_cast<unsigned>(flags.port));
    std::fflush(stdout);
    // The same facts in the log, where the orchestrator reads them back for
    // the report (a pod's log in a cluster, the log file locally).
    std::printf("fairbench-target-facts: %s\n", Facts(flags).c_str());
    std::fflush(stdout);

    shutdown_signals.Wait();
    // Stop accepting, then close every connection; the handler waits for
    // its threads to end.
    server.stop();
    provider->stop();
    handler->stop();
    serving.join();
  }
  if (*request_log) (*request_log)->Stop();
  oatpp::base::Environment::destroy();
  return 0;
}
