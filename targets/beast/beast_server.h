// BeastServer: the study's endpoints on Boost.Beast over Boost.Asio, as an
// efficient keep-alive HTTP/1.1 server.
//
// N threads each run their own io_context; one acceptor (on the first)
// hands each new connection to the next io_context in turn, and the
// connection lives on that thread for good: no locks, no cross-thread
// hand-offs on the request path. A connection is one C++20 coroutine:
// read a request, answer, repeat while keep-alive.
//
//   GET  /            200 text/plain "Hello, World!"
//   GET  /api/status  200 {"status":"running","framework":"beast"}
//   POST /api/echo    200 the JSON body parsed and serialised again; 400 if invalid
//   GET  /users/{id}  200 {"id":<id>,"name":"User <id>"}; 404 unless id is
//                     decimal digits that fit in 64 bits
//   anything else     404 text/plain "Not Found"
// Routing ignores a query string. Responses carry Content-Type and
// Content-Length only (no Server or Date header).
//
// Start() and Stop() are called from one controlling thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "targets/common/request_counter.h"

namespace fairbench::targets {

struct BeastServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  int threads = 4;
};

class BeastServer {
 public:
  // `counter` (not owned) counts every response written in full.
  BeastServer(BeastServerOptions options, RequestCounter* counter);
  ~BeastServer();  // Stop()
  BeastServer(const BeastServer&) = delete;
  BeastServer& operator=(const BeastServer&) = delete;

  // Binds, listens and starts the threads.
  Status Start();
  // Stops accepting, abandons open connections and joins the threads.
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fairbench::targets
