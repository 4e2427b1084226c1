// H2Connection over a real socket against Debian's nginx with an h2c
// listener (`listen ... http2` without TLS: HTTP/2 with prior knowledge),
// and once over TLS (h2 chosen by ALPN; the test's own OpenSSL client, a
// certificate made by openssl(1)), driven by a simple blocking loop.
// nginx's access log is the truth.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include <openssl/ssl.h>

#include "agent/h2_connection.h"
#include "testing/support/nginx_fixture.h"
#include "testing/support/ports.h"
#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"

namespace fairbench::agent {
namespace {

using testing::AccessLogEntry;
using testing::NginxFixture;
using testing::NginxOptions;
using testing::Subprocess;
using testing::SubprocessOptions;
using testing::TempDir;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// NginxFixture's configuration (its endpoints and access log format) with
// the listener switched to HTTP/2 and nginx's stream limit set.
class H2cNginx {
 public:
  // With `tls`, the listener is h2 over TLS (ALPN) with a self-signed
  // certificate made here by openssl(1).
  Status Start(uint32_t max_concurrent_streams, bool tls = false, int keepalive_requests = 1000000) {
    auto dir = TempDir::Create("fairbench-h2-nginx");
    if (!dir.ok()) return dir.status();
    chmod(dir->path().c_str(), 0755);
    std::string tls_conf;
    if (tls) {
      SubprocessOptions cert;
      cert.argv = {"openssl",
                   "req",
                   "-x509",
                   "-newkey",
                   "ec",
                   "-pkeyopt",
                   "ec_paramgen_curve:prime256v1",
                   "-nodes",
                   "-keyout",
                   dir->File("key.pem"),
                   "-out",
                   dir->File("cert.pem"),
                   "-days",
                   "2",
                   "-subj",
                   "/CN=localhost"};
      cert.stdout_to = testing::Redirect::Null();
      cert.stderr_to = testing::Redirect::File(dir->File("openssl.log"));
      auto p = Subprocess::Start(std::move(cert));
      if (!p.ok()) return p.status();
      auto r = p->Wait(std::chrono::seconds(20));
      if (!r.ok()) return r.status();
      if (!r->success()) return Status::Internal("openssl req failed: " + ReadFile(dir->File("openssl.log")));
      tls_conf =
          "\n    ssl_certificate " + dir->File("cert.pem") + ";\n    ssl_certificate_key " + dir->File("key.pem") + ";";
    }
    auto port = testing::FreeLoopbackPort();
    if (!port.ok()) return port.status();
    port_ = *port;
    NginxOptions options;
    // For HTTP/2 too: nginx sends GOAWAY after this many requests.
    options.keepalive_requests = keepalive_requests;
    std::string conf = NginxFixture::RenderConfig(options, port_, dir->path().string());
    const std::string listen = "listen 127.0.0.1:" + std::to_string(port_) + ";";
    const size_t at = conf.find(listen);
    if (at == std::string::npos) return Status::Internal("no listen line in the fixture's config");
    conf.replace(at, listen.size(),
                 "listen 127.0.0.1:" + std::to_string(port_) + (tls ? " ssl" : "") +
                     " http2;\n    http2_max_concurrent_streams " + std::to_string(max_concurrent_streams) + ";" +
                     tls_conf);
    {
      std::ofstream out(dir->File("nginx.conf"));
      out << conf;
    }
    SubprocessOptions sp;
    sp.argv = {"/usr/sbin/nginx",       "-p", dir->path().string(),  "-c",
               dir->File("nginx.conf"), "-e", dir->File("error.log")};
    sp.stdout_to = testing::Redirect::File(dir->File("stdout.log"));
    sp.stderr_to = testing::Redirect::File(dir->File("stderr.log"));
    auto process = Subprocess::Start(std::move(sp));
    if (!process.ok()) return process.status();
    dir_ = std::move(*dir);
    process_ = std::move(*process);
    return testing::WaitForPort("127.0.0.1", port_, std::chrono::seconds(10));
  }
  // Graceful stop (every log line written), then the log.
  Result<std::vector<AccessLogEntry>> StopAndLog() {
    if (Status s = process_->Kill(SIGQUIT); !s.ok()) return s;
    auto r = process_->Wait(std::chrono::seconds(10));
    if (!r.ok()) return r.status();
    std::vector<AccessLogEntry> log;
    std::istringstream text(ReadFile(dir_->File("access.log")));
    for (std::string line; std::getline(text, line);) {
      auto e = testing::ParseAccessLogLine(line);
      if (!e.ok()) return e.status();
      log.push_back(*e);
    }
    return log;
  }
  uint16_t port() const { return port_; }
  std::string ErrorLog() const { return ReadFile(dir_->File("error.log")); }

 private:
  std::optional<TempDir> dir_;
  std::optional<Subprocess> process_;
  uint16_t port_ = 0;
};

int Connect(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

// The byte pipe under the codec: a plain socket (h2c) or TLS on it (h2).
class Transport {
 public:
  virtual ~Transport() = default;
  // > 0 bytes moved; 0 nothing to read within a second; < 0 closed or failed.
  virtual ssize_t Write(const uint8_t* p, size_t n) = 0;
  virtual ssize_t Read(uint8_t* p, size_t n) = 0;
};

class PlainTransport : public Transport {
 public:
  explicit PlainTransport(int fd) : fd_(fd) {}
  ~PlainTransport() override { close(fd_); }
  ssize_t Write(const uint8_t* p, size_t n) override {
    const ssize_t w = send(fd_, p, n, MSG_NOSIGNAL);
    return w > 0 ? w : -1;
  }
  ssize_t Read(uint8_t* p, size_t n) override {
    pollfd pf{fd_, POLLIN, 0};
    if (poll(&pf, 1, 1000) <= 0) return 0;
    const ssize_t r = recv(fd_, p, n, 0);
    return r > 0 ? r : -1;
  }

 private:
  int fd_;
};

class TlsTransport : public Transport {
 public:
  static std::unique_ptr<TlsTransport> Connect(int fd, std::string* alpn) {
    std::unique_ptr<TlsTransport> t(new TlsTransport(fd));
    t->ctx_ = SSL_CTX_new(TLS_client_method());
    static const unsigned char kH2[] = {2, 'h', '2'};
    SSL_CTX_set_alpn_protos(t->ctx_, kH2, sizeof(kH2));
    t->ssl_ = SSL_new(t->ctx_);
    SSL_set_fd(t->ssl_, fd);
    if (SSL_connect(t->ssl_) != 1) return nullptr;
    const unsigned char* proto = nullptr;
    unsigned int len = 0;
    SSL_get0_alpn_selected(t->ssl_, &proto, &len);
    alpn->assign(reinterpret_cast<const char*>(proto), len);
    return t;
  }
  ~TlsTransport() override {
    if (ssl_ != nullptr) {
      SSL_shutdown(ssl_);
      SSL_free(ssl_);
    }
    if (ctx_ != nullptr) SSL_CTX_free(ctx_);
    close(fd_);
  }
  ssize_t Write(const uint8_t* p, size_t n) override {
    const int w = SSL_write(ssl_, p, static_cast<int>(std::min<size_t>(n, 1 << 30)));
    return w > 0 ? w : -1;
  }
  ssize_t Read(uint8_t* p, size_t n) override {
    if (SSL_pending(ssl_) == 0) {
      pollfd pf{fd_, POLLIN, 0};
      if (poll(&pf, 1, 1000) <= 0) return 0;
    }
    const int r = SSL_read(ssl_, p, static_cast<int>(std::min<size_t>(n, 1 << 30)));
    if (r > 0) return r;
    return SSL_get_error(ssl_, r) == SSL_ERROR_WANT_READ ? 0 : -1;
  }

 private:
  explicit TlsTransport(int fd) : fd_(fd) {}
  int fd_;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
};

struct LoadRun {
  uint64_t submitted = 0;
  std::map<H2Error, uint64_t> by_kind;
  std::map<uint16_t, uint64_t> by_status;
  uint64_t body_bytes = 0;
  uint32_t stream_limit = 0;
  uint32_t peak_open = 0;
  uint64_t rst = 0, goaway = 0;
  uint64_t done = 0;
  uint32_t connections = 0;
  bool finished = false;
  std::string alpn;
};

// The blocking loop: submit what the connection allows, write everything,
// wait for bytes, feed them; when the connection is done (after a GOAWAY,
// or closed) open another. Bounded by `total` outcomes and a deadline.
LoadRun Load(uint16_t port, const H2Request& req, uint64_t total, H2Options options, bool tls = false) {
  LoadRun run;
  std::unique_ptr<Transport> t;
  std::unique_ptr<H2Connection> c;
  auto open = [&]() {
    t.reset();
    const int fd = Connect(port);
    EXPECT_GE(fd, 0);
    if (fd < 0) return false;
    if (tls) {
      t = TlsTransport::Connect(fd, &run.alpn);
      EXPECT_NE(t, nullptr) << "TLS handshake failed";
      if (t == nullptr) return false;
    } else {
      t = std::make_unique<PlainTransport>(fd);
    }
    auto created = H2Connection::Create(options);
    EXPECT_TRUE(created.ok());
    c = std::move(created).value();
    ++run.connections;
    return true;
  };
  auto write_all = [&]() {
    for (auto out = c->Output(); !out.empty(); out = c->Output()) {
      const ssize_t n = t->Write(out.data(), out.size());
      if (n <= 0) return false;
      c->Consumed(static_cast<size_t>(n));
    }
    return true;
  };
  auto collect = [&]() {
    for (const H2Outcome& o : c->outcomes()) {
      ++run.by_kind[o.error];
      ++run.by_status[o.status];
      run.body_bytes += o.body_bytes;
    }
    run.done += c->outcomes().size();
    c->outcomes().clear();
  };
  if (!open()) return run;
  std::vector<uint8_t> buf(64 * 1024);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    while (run.submitted < total && c->CanSubmit()) {
      c->Submit(req, 0, run.submitted);
      ++run.submitted;
    }
    run.peak_open = std::max(run.peak_open, c->open_streams());
    if (!write_all()) c->Fail(H2Error::kClosed);
    collect();
    if (run.done == total) {
      run.finished = true;
      break;
    }
    if (!c->Alive()) {
      run.rst += c->rst_streams_received();
      run.goaway += c->goaways_received();
      if (!open()) break;
      continue;
    }
    const ssize_t n = t->Read(buf.data(), buf.size());
    if (n < 0) {
      c->Fail(H2Error::kClosed);
    } else if (n > 0) {
      c->Receive(buf.data(), static_cast<size_t>(n));
    }
  }
  run.stream_limit = c->stream_limit();
  run.rst += c->rst_streams_received();
  run.goaway += c->goaways_received();
  c->Shutdown();
  (void)write_all();
  return run;
}

TEST(H2NginxTest, RequestsCountedEqualTheAccessLog) {
  H2cNginx nginx;
  ASSERT_TRUE(nginx.Start(128).ok());
  RequestSpec spec;
  spec.target = "/";
  auto req = H2Request::Build(spec, "http", "127.0.0.1:" + std::to_string(nginx.port()));
  ASSERT_TRUE(req.ok());
  const LoadRun run = Load(nginx.port(), **req, 3000, {.max_streams = 10});
  auto log = nginx.StopAndLog();
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ASSERT_TRUE(run.finished) << nginx.ErrorLog();
  EXPECT_EQ(run.by_kind.at(H2Error::kNone), 3000u);
  EXPECT_EQ(run.by_status.at(200), 3000u);
  EXPECT_EQ(run.body_bytes, 3000u * 13u) << "\"Hello, World!\" each";
  EXPECT_EQ(run.peak_open, 10u);
  ASSERT_EQ(log->size(), 3000u);
  for (const AccessLogEntry& e : *log) {
    EXPECT_EQ(e.method, "GET");
    EXPECT_EQ(e.uri, "/");
    EXPECT_EQ(e.status, 200);
    EXPECT_EQ(e.connection, (*log)[0].connection) << "one connection";
  }
}

TEST(H2NginxTest, NginxsStreamLimitIsRespected) {
  H2cNginx nginx;
  ASSERT_TRUE(nginx.Start(16).ok());
  RequestSpec spec;
  spec.target = "/limited";
  auto req = H2Request::Build(spec, "http", "127.0.0.1");
  ASSERT_TRUE(req.ok());
  const LoadRun run = Load(nginx.port(), **req, 2000, {.max_streams = 100});
  auto log = nginx.StopAndLog();
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ASSERT_TRUE(run.finished) << nginx.ErrorLog();
  EXPECT_EQ(run.stream_limit, 16u);
  EXPECT_EQ(run.peak_open, 16u);
  EXPECT_EQ(run.rst, 0u) << "nginx refuses streams over its limit with RST_STREAM";
  EXPECT_EQ(run.by_kind.at(H2Error::kNone), 2000u);
  EXPECT_EQ(log->size(), 2000u);
}

TEST(H2NginxTest, PostBodiesLargerThanNginxsWindowArriveWhole) {
  H2cNginx nginx;
  ASSERT_TRUE(nginx.Start(128).ok());
  RequestSpec spec;
  spec.method = "POST";
  spec.target = "/api/echo";
  spec.headers = {{"Content-Type", "application/octet-stream"}};
  spec.body.assign(200'000, 'q');  // nginx's window for a request body: 64 KiB (http2_body_preread_size)
  auto req = H2Request::Build(spec, "http", "127.0.0.1");
  ASSERT_TRUE(req.ok());
  const LoadRun run = Load(nginx.port(), **req, 200, {.max_streams = 8, .stream_window = 1 << 20});
  auto log = nginx.StopAndLog();
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ASSERT_TRUE(run.finished) << nginx.ErrorLog();
  EXPECT_EQ(run.by_kind.at(H2Error::kNone), 200u);
  ASSERT_EQ(log->size(), 200u);
  for (const AccessLogEntry& e : *log) {
    EXPECT_EQ(e.method, "POST");
    EXPECT_EQ(e.status, 200);
    EXPECT_GE(e.request_length, 200'000u) << "the whole body was read";
  }
}

TEST(H2NginxTest, OverTlsWithAlpnH2CountsEqualTheAccessLog) {
  H2cNginx nginx;
  const Status started = nginx.Start(128, /*tls=*/true);
  ASSERT_TRUE(started.ok()) << started.ToString();
  RequestSpec spec;
  spec.target = "/tls";
  auto req = H2Request::Build(spec, "https", "localhost:" + std::to_string(nginx.port()));
  ASSERT_TRUE(req.ok());
  const LoadRun run = Load(nginx.port(), **req, 2000, {.max_streams = 10}, /*tls=*/true);
  auto log = nginx.StopAndLog();
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(run.alpn, "h2") << "nginx chose HTTP/2 by ALPN";
  ASSERT_TRUE(run.finished) << nginx.ErrorLog();
  EXPECT_EQ(run.by_kind.at(H2Error::kNone), 2000u);
  EXPECT_EQ(run.by_status.at(200), 2000u);
  ASSERT_EQ(log->size(), 2000u);
  for (const AccessLogEntry& e : *log) {
    EXPECT_EQ(e.uri, "/tls");
    EXPECT_EQ(e.status, 200);
  }
}

TEST(H2NginxTest, NginxsGoawayAfterKeepaliveRequestsCountedExactly) {
  // After 100 requests on a connection nginx sends GOAWAY: the streams
  // above its last-stream-id were never processed. Every request the
  // client submitted is either in the access log or a GOAWAY error.
  H2cNginx nginx;
  ASSERT_TRUE(nginx.Start(128, false, 100).ok());
  RequestSpec spec;
  spec.target = "/goaway";
  auto req = H2Request::Build(spec, "http", "127.0.0.1");
  ASSERT_TRUE(req.ok());
  const LoadRun run = Load(nginx.port(), **req, 1000, {.max_streams = 10});
  auto log = nginx.StopAndLog();
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ASSERT_TRUE(run.finished) << nginx.ErrorLog();
  const uint64_t ok = run.by_kind.count(H2Error::kNone) ? run.by_kind.at(H2Error::kNone) : 0;
  const uint64_t goaway = run.by_kind.count(H2Error::kGoaway) ? run.by_kind.at(H2Error::kGoaway) : 0;
  EXPECT_EQ(ok, log->size());
  EXPECT_EQ(ok + goaway, 1000u);
  EXPECT_GT(goaway, 0u) << "streams were in flight when nginx said GOAWAY";
  EXPECT_EQ(run.by_kind.size(), goaway > 0 ? 2u : 1u) << "no other kind of error";
  std::map<uint64_t, uint64_t> per_connection;
  for (const AccessLogEntry& e : *log) ++per_connection[e.connection];
  for (const auto& [conn, n] : per_connection) EXPECT_LE(n, 100u) << conn;
  EXPECT_EQ(per_connection.size(), run.connections);
  EXPECT_GE(run.goaway, run.connections - 1) << "every connection but the last ended by GOAWAY";
}

}  // namespace
}  // namespace fairbench::agent
