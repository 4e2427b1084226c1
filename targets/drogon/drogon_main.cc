// fairbench-target-drogon: the study's endpoints on Drogon 1.9.8 (trantor
// 1.5.22), its JSON through jsoncpp as Drogon does.
//
//   GET  /            200 text/plain "Hello, World!"
//   GET  /api/status  200 application/json {"framework":"drogon","status":"running"} (Json::Value)
//   POST /api/echo    200 req->getJsonObject() serialised again by newHttpJsonResponse;
//                     400 if the body is not JSON or the Content-Type is not application/json
//   GET  /users/{id}  200 {"id":<id>,"name":"User <id>"}; 404 unless id is decimal
//                     digits that fit in 64 bits
//   anything else     404
//
// As the study's server: setThreadNum(--threads) event loops, log level
// Warn, Drogon's defaults otherwise (Server and Date headers, idle timeout
// 60 s, at most 100000 connections). Unlike the study's server, the hello
// answer is text/plain (Drogon's default is text/html). jsoncpp keeps
// object keys sorted, so JSON answers come back in key order.
#include <drogon/drogon.h>
#include <drogon/version.h>
#include <json/json.h>
#include <json/version.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>

#include "common/signals.h"
#include "targets/common/target_main.h"

namespace {

using drogon::HttpRequestPtr;
using drogon::HttpResponse;
using drogon::HttpResponsePtr;
using fairbench::targets::CountRequest;
using fairbench::targets::ParseUserId;
using Callback = std::function<void(const HttpResponsePtr&)>;

HttpResponsePtr JsonError(drogon::HttpStatusCode code, const std::string& message) {
  Json::Value body;
  body["error"] = message;
  auto res = HttpResponse::newHttpJsonResponse(body);
  res->setStatusCode(code);
  return res;
}

void AddRoutes(drogon::HttpAppFramework& app) {
  app.registerHandler("/",
                      [](const HttpRequestPtr&, Callback&& callback) {
                        auto res = HttpResponse::newHttpResponse();
                        res->setContentTypeCode(drogon::CT_TEXT_PLAIN);
                        res->setBody("Hello, World!");
                        CountRequest();
                        callback(res);
                      },
                      {drogon::Get});
  app.registerHandler("/api/status",
                      [](const HttpRequestPtr&, Callback&& callback) {
                        Json::Value body;
                        body["status"] = "running";
                        body["framework"] = "drogon";
                        CountRequest();
                        callback(HttpResponse::newHttpJsonResponse(body));
                      },
                      {drogon::Get});
  app.registerHandler("/api/echo",
                      [](const HttpRequestPtr& req, Callback&& callback) {
                        const std::shared_ptr<Json::Value> body = req->getJsonObject();
                        CountRequest();
                        callback(body ? HttpResponse::newHttpJsonResponse(*body)
                                      : JsonError(drogon::k400BadRequest, "invalid JSON: " + req->getJsonError()));
                      },
                      {drogon::Post});
  // Any segment: the handler decides (404 unless digits), as on every target.
  app.registerHandler("/users/{id}",
                      [](const HttpRequestPtr&, Callback&& callback, const std::string& text) {
                        const std::optional<uint64_t> id = ParseUserId(text);
                        CountRequest();
                        if (!id) {
                          callback(JsonError(drogon::k404NotFound, "no such user"));
                          return;
                        }
                        Json::Value body;
                        body["id"] = Json::UInt64(*id);
                        body["name"] = "User " + std::to_string(*id);
                        callback(HttpResponse::newHttpJsonResponse(body));
                      },
                      {drogon::Get});
}

// The fairness facts of this build, from the source and the build itself.
std::string Facts(const fairbench::targets::TargetFlags& flags) {
  const fairbench::targets::BuildFacts build = fairbench::targets::ThisBuild();
  Json::Value facts;
  facts["framework"] = "drogon";
  facts["version"] = DROGON_VERSION;
  facts["versionSource"] = "DROGON_VERSION macro (drogon/version.h)";
  facts["revision"] = build.revision;
  facts["workerModel"] =
      "event loop per thread (trantor, epoll): each of --threads loops has its own SO_REUSEPORT listener and "
      "serves the connections it accepts; the main thread runs one more loop (timers, no connections)";
  facts["threads"] = flags.threads;
  facts["connectionThreads"] = std::to_string(flags.threads);
  facts["concurrentConnections"] = "up to 100000 (Drogon's default max connections; idle timeout 60 s)";
  facts["listenAddress"] = flags.host;
  facts["jsonLibrary"] = "jsoncpp " JSONCPP_VERSION_STRING " (Drogon's Json::Value; object keys sorted)";
  facts["echo"] = "generic: req->getJsonObject() (needs Content-Type: application/json), newHttpJsonResponse";
  facts["allocator"] = build.allocator;
  facts["compiler"] = build.compiler;
  facts["flags"] = build.flags;
  facts["frameworkBuild"] = build.framework_build;
  facts["study"] =
      "as the study: setThreadNum(4), log level Warn, Server and Date headers on; the study's hello answered "
      "text/html, this one text/plain";
  Json::StreamWriterBuilder writer;
  writer["indentation"] = "";
  return Json::writeString(writer, facts);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"fairbench target on Drogon " DROGON_VERSION};
  fairbench::targets::TargetFlags flags;
  if (auto exit = fairbench::targets::ParseTargetCommandLine(cli, argc, argv, &flags, Facts)) return *exit;

  drogon::HttpAppFramework& app = drogon::app();
  // SIGTERM/SIGINT: taken by our watcher thread (Drogon's own handler is
  // off). quit() is ignored until the main loop runs, so wait for it: an
  // early signal is not lost.
  app.disableSigtermHandling();
  const fairbench::SignalWatcher watcher({SIGTERM, SIGINT}, [&app](int) {
    while (!app.getLoop()->isRunning()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    app.quit();
  });

  auto request_log = fairbench::targets::StartServing(flags.request_log);
  if (!request_log.ok()) {
    std::fprintf(stderr, "%s\n", request_log.status().ToString().c_str());
    return 1;
  }

  app.setLogLevel(trantor::Logger::kWarn);
  app.setThreadNum(static_cast<size_t>(flags.threads));
  app.addListener(flags.host, flags.port);
  AddRoutes(app);
  std::printf("fairbench-target-drogon (Drogon %s) listening on %s:%u with %d threads\n", DROGON_VERSION,
              flags.host.c_str(), static_cast<unsigned>(flags.port), flags.threads);
  std::fflush(stdout);
  // The same facts in the log, where the orchestrator reads them back for
  // the report (a pod's log in a cluster, the log file locally).
  fairbench::targets::PrintFacts(Facts(flags));
  app.run();  // returns after quit(); a port in use ends the process inside
  if (*request_log) (*request_log)->Stop();
  return 0;
}
