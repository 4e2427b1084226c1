// StoreServer: `fairbench serve`'s HTTP server — the pages of StoreSite
// (store_site.h) over cpp-httplib (Debian's libcpp-httplib), read only.
//
// GET (and HEAD) only; any other method is 405 with Allow: GET, HEAD. The
// store is opened with OpenOptions{create = false} at the first request
// that needs it, kept open, and opened again after it failed to answer
// (a store that is unavailable now may be back later): requests that
// cannot reach it get 503 with the store's message. The store is used by
// one request at a time (a ResultStore is single-threaded), under mu_.
//
// Binds loopback by default: the pages hold whatever the runs recorded
// (commands, hostnames, labels) and nothing guards them.
//
// Start() binds before it returns, so url() is reachable at once; requests
// are served on cpp-httplib's pool threads. Stop() (or destruction) stops
// listening and waits for requests in flight. Start/Stop/url are for one
// thread.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "common/mutex.h"
#include "common/status.h"
#include "controller/results/result_store.h"

namespace httplib {
class Server;
}

namespace fairbench::serve {

struct ServeOptions {
  std::string store;  // a result store location, as OpenResultStore takes it
  std::string host = "127.0.0.1";
  int port = 8089;  // 0: a free one (url() says which)
};

// "HOST:PORT", "[::1]:PORT" or ":PORT" (loopback) into host and port.
Status ParseListen(const std::string& text, std::string& host, int& port);

class StoreServer {
 public:
  // Unavailable when the address cannot be bound.
  static Result<std::unique_ptr<StoreServer>> Start(const ServeOptions& options);
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  void Stop();
  int port() const { return port_; }
  // "http://127.0.0.1:8089/"
  std::string url() const;

 private:
  explicit StoreServer(const ServeOptions& options);
  // The open store, opening it when there is none; under mu_.
  Result<results::ResultStore*> Store() REQUIRES(mu_);

  ServeOptions options_;
  int port_ = 0;
  std::unique_ptr<httplib::Server> http_;
  std::thread listener_;
  std::atomic<bool> listen_returned_{false};
  Mutex mu_;
  std::unique_ptr<results::ResultStore> store_ GUARDED_BY(mu_);
};

}  // namespace fairbench::serve
