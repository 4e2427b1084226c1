// NginxFixture: Debian's nginx as a real, well-understood HTTP server for
// tests, on a loopback port, configured from a few knobs, owned by the test.
//
// Start() writes nginx.conf into a fresh temp dir (pid file, error log,
// access log and temp paths all inside it), runs /usr/sbin/nginx in the
// foreground ("daemon off", master process on, so the child we start is the
// master and its workers share our process group) and waits until the port
// accepts. A missing nginx is a failed Status naming the package, never a
// skip. Endpoints:
//   GET /               200 text/plain "Hello, World!" (Content-Length)
//   /status/NNN         status NNN for 200..599 (444 is nginx's "close
//                       without answering"); nginx's default body
//   anything else       200 text/plain "ok"
// With `tls` set the listener speaks HTTPS with that certificate and key;
// the access log then also carries $ssl_protocol and $ssl_session_reused
// ("r" when the handshake resumed a session), so tests can count
// resumptions from the server's side. test_certs.h makes the files.
// Requests with a body (Content-Length or Transfer-Encoding) are answered
// only after the body is read in full (echo module; the answer is then
// chunked), so the access log's request_length always includes the body.
//
// The access log is written by the workers without buffering, one line per
// request, right after the response went out: a client may see a response
// a moment before its line exists. WaitForAccessLog(n) closes that gap;
// after Stop() (graceful: SIGQUIT lets workers finish) every line is there.
// Not thread-safe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"

namespace fairbench::testing {

// NginxOptions::tls (a class of its own: clang cannot default-construct a
// nested class with member initializers inside std::optional).
struct NginxTls {
  std::string certificate;
  std::string certificate_key;
  std::string protocols = "TLSv1.2 TLSv1.3";  // ssl_protocols
  bool session_tickets = true;                // ssl_session_tickets
};

struct NginxOptions {
  std::string nginx_path = "/usr/sbin/nginx";
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0: a free loopback port (retried if taken meanwhile)
  int worker_processes = 1;
  std::string worker_cpu_affinity;  // "" unset; "auto"; or masks "0001 0010"
  int worker_connections = 1024;
  int worker_rlimit_nofile = 0;  // 0: unset (the inherited limit)
  int keepalive_requests = 1000;
  std::chrono::seconds keepalive_timeout{75};
  int listen_backlog = 0;  // 0: nginx's default (511)
  std::chrono::milliseconds start_timeout{10000};
  // HTTPS listener: PEM paths of the certificate (chain) and its key.
  using Tls = NginxTls;
  std::optional<Tls> tls;
  // HTTP/2 on the listener (`listen ... http2`, nginx 1.22): h2c with prior
  // knowledge, or h2 by ALPN with `tls`. nginx's stream limit per
  // connection, and its requests per connection (then GOAWAY) come from
  // keepalive_requests.
  bool http2 = false;
  int http2_max_concurrent_streams = 128;
};

// One access log line; fields as nginx logs them.
struct AccessLogEntry {
  double msec = 0;                   // $msec: request end, seconds since the epoch
  std::string method;                // $request_method ("-" if none)
  std::string uri;                   // $request_uri, as sent
  int status = 0;                    // $status
  uint64_t request_length = 0;       // request line + headers + body
  uint64_t bytes_sent = 0;           // headers + body
  uint64_t connection = 0;           // $connection: serial number of the connection
  uint64_t connection_requests = 0;  // n-th request on that connection
  std::string ssl_protocol;          // $ssl_protocol ("-" over plain HTTP)
  std::string ssl_session_reused;    // $ssl_session_reused: "r" or "."; "-" over plain HTTP
};

// Parses one line of the fixture's log format; InvalidArgument otherwise.
Result<AccessLogEntry> ParseAccessLogLine(const std::string& line);

class NginxFixture {
 public:
  explicit NginxFixture(NginxOptions options = {});
  ~NginxFixture();  // Stop() if still running
  NginxFixture(const NginxFixture&) = delete;
  NginxFixture& operator=(const NginxFixture&) = delete;

  Status Start();
  // SIGQUIT (graceful), then after `grace` SIGTERM, then SIGKILL to the
  // process group. OK when nginx exited 0 from the graceful stop.
  Status Stop(std::chrono::milliseconds grace = std::chrono::seconds(5));

  bool running() const { return process_.has_value() && process_->running(); }
  const std::string& host() const { return options_.host; }
  uint16_t port() const { return port_; }
  pid_t pid() const { return process_ ? process_->pid() : -1; }
  const NginxOptions& options() const { return options_; }

  // The config as written (empty before Start()).
  const std::string& config() const { return config_; }
  std::string access_log_path() const;
  std::string error_log_path() const;
  std::string ErrorLog() const;

  // Every complete line written so far.
  Result<std::vector<AccessLogEntry>> AccessLog() const;
  // Stop() (gracefully: every request in flight is logged), then the whole
  // log; an error if either failed.
  Result<std::vector<AccessLogEntry>> StopAndReadAccessLog();
  // Waits until at least `count` lines are there (DeadlineExceeded otherwise).
  Result<std::vector<AccessLogEntry>> WaitForAccessLog(
      size_t count, std::chrono::milliseconds timeout = std::chrono::seconds(5)) const;

  // The config text for these options and files; exposed for tests.
  static std::string RenderConfig(const NginxOptions& options, uint16_t port, const std::string& dir);

 private:
  NginxOptions options_;
  std::optional<TempDir> dir_;
  std::optional<Subprocess> process_;
  uint16_t port_ = 0;
  std::string config_;
};

}  // namespace fairbench::testing
