// EngineOptions: what one run of the load engine does (see engine.h).
// Plain value; ValidateOptions (engine.h) checks it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "agent/h2_connection.h"
#include "agent/h2_request.h"
#include "agent/request.h"
#include "agent/tls_context.h"
#include "agent/url.h"
#include "agent/vary.h"
#include "common/metrics.h"

namespace fairbench::agent {

class Script;

// What a connection speaks: HTTP/1.1 (over TCP, or TLS when `tls` is
// enabled), HTTP/2 with prior knowledge over TCP (h2c), or HTTP/2 over TLS
// chosen by ALPN (h2; `tls` must be enabled).
enum class HttpProtocol : uint8_t { kHttp1, kH2c, kH2 };
const char* HttpProtocolName(HttpProtocol p);

struct EngineOptions {
  std::vector<SocketAddress> addresses;  // the target; connections use the first address
  std::vector<BuiltRequest> requests;    // one or a weighted mix
  uint32_t threads = 2;
  uint32_t connections = 10;
  std::chrono::nanoseconds warmup{0};
  std::chrono::nanoseconds duration = std::chrono::seconds(10);
  std::chrono::nanoseconds timeout = std::chrono::seconds(2);
  std::chrono::nanoseconds interval = std::chrono::seconds(1);
  bool keep_alive = true;
  uint32_t pipeline = 1;  // requests written back to back per connection
  double rate = 0;        // total requests/s over all connections; 0 = as fast as possible
  std::vector<int> cpus;  // pin worker i to cpus[i % size]; empty = no pinning
  // What a worker does when nothing is ready while the load runs (warm-up
  // and measure, not while connecting or draining) and requests are in
  // flight: block on its sockets, nap on its own timer, or poll without
  // sleeping (IdleWait, common/metrics.h). kNap and kPoll are for a server
  // on the same machine, whose sends would otherwise pay the wake-up of a
  // sleeping generator. What they did is in Finish()'s EndReport::idle.
  IdleWait idle_wait = IdleWait::kBlock;
  // With several agents sharing a load: this engine's first connection
  // among all of them, and their total. A constant rate is then staggered
  // over every connection of every agent.
  uint32_t connection_offset = 0;
  uint32_t total_connections = 0;  // 0: just this engine's
  // Wall-clock start of the load (so that several agents start together).
  // Connections are opened before it. Unset: the load starts as soon as
  // every connection is established (or after `timeout`, whichever comes
  // first), so that the measurement does not include opening them.
  std::optional<std::chrono::system_clock::time_point> start_at;
  // HTTPS. Engine::Start creates the context from `tls` when it is enabled
  // and none is given.
  TlsOptions tls;
  std::shared_ptr<const TlsContext> tls_context;
  // HTTP/2: the codec's options (h2.max_streams is --streams) and one
  // request per entry of `requests`, in the same order (BuildH2Requests).
  // Shared and immutable: nghttp2 reads their header arrays in place.
  HttpProtocol protocol = HttpProtocol::kHttp1;
  H2Options h2;
  std::vector<std::shared_ptr<const H2Request>> h2_requests;
  // gRPC (h2.grpc set; agent/grpc_call.h builds the request): each stream
  // is a call, counted by its grpc-status (Counters::grpc). A unary call
  // answered OK must carry exactly one message.
  bool grpc_unary = false;
  // A wrk script (agent/script.h), set up before the engine starts, with
  // one state per thread: worker i sends what script->thread(i) gives (its
  // static request, or request()'s texts) to its thread.addr. Not owned;
  // must outlive the engine. `requests` may then be empty.
  Script* script = nullptr;
  // Answers that cannot be cached (agent/vary.h): set, the one request of
  // `requests` (HTTP/1.1, pipeline 1, no script) is built anew for each
  // number of its connection's sequence, and every verify_every-th answer
  // of a connection is checked (Counters::answers). `requests` keeps the
  // request with "{n}" as it is, for its name. Unset: requests are sent as
  // built, at no cost.
  std::shared_ptr<const VaryPlan> vary;
};

// Builds h2_requests from the specs `requests` were built from, with the
// scheme of `protocol` and `authority` (the Host header's value).
Status BuildH2Requests(EngineOptions& options, const std::vector<RequestSpec>& specs, const std::string& authority);

}  // namespace fairbench::agent
