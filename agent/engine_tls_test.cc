// The engine over HTTPS against a real nginx (Debian's, with a certificate
// made by `openssl req -x509`): nothing lost, nothing invented, whatever
// the TLS version, however the records are cut; session resumption seen
// from nginx's side ($ssl_session_reused); handshake failures counted as
// their own kind against a server that counts what it did.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <set>
#include <thread>

#include "agent/engine_test_util.h"
#include "testing/support/nginx_fixture.h"
#include "testing/support/temp_dir.h"
#include "testing/support/test_certs.h"

namespace fairbench::agent {
namespace {

using testing::AccessLogEntry;
using testing::NginxFixture;
using testing::NginxOptions;

// A listening socket on 127.0.0.1 with a kernel-chosen port.
int Listen(uint16_t* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(fd, 128) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  *port = ntohs(a.sin_port);
  return fd;
}

bool Readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) > 0;
}

bool WriteAll(int fd, const char* data, size_t len) {
  while (len > 0) {
    const ssize_t n = ::send(fd, data, len, MSG_NOSIGNAL);
    if (n <= 0) return false;
    data += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

// Accepts connections, reads the ClientHello's first bytes, closes: every
// connection is a handshake cut short. Counts them.
class HandshakeCutter {
 public:
  HandshakeCutter() {
    fd_ = Listen(&port_);
    thread_ = std::thread([this] { Loop(); });
  }
  ~HandshakeCutter() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  uint16_t port() const { return port_; }
  uint64_t cut() const { return cut_; }

 private:
  void Loop() {
    while (!stop_) {
      if (!Readable(fd_, 20)) continue;
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      char buf[5];
      if (Readable(c, 1000) && ::recv(c, buf, sizeof buf, 0) == 5 && buf[0] == 0x16) ++cut_;  // a handshake record
      ::close(c);
    }
  }
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> cut_{0};
  std::thread thread_;
};

// A loopback relay between the engine and nginx, one connection at a time,
// that cuts the byte streams: `chunk(connection, direction, offset)` is how
// many bytes to forward from `offset` of that direction's stream before a
// pause, so the reader sees the records split there.
class SplittingRelay {
 public:
  using Chunk = std::function<size_t(uint64_t connection, int direction, uint64_t offset)>;
  SplittingRelay(uint16_t upstream, Chunk chunk, std::chrono::microseconds pause)
      : upstream_(upstream), chunk_(std::move(chunk)), pause_(pause) {
    fd_ = Listen(&port_);
    thread_ = std::thread([this] { Loop(); });
  }
  ~SplittingRelay() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) ::close(fd_);
  }
  uint16_t port() const { return port_; }
  uint64_t connections() const { return connections_; }

 private:
  void Loop() {
    while (!stop_) {
      if (!Readable(fd_, 20)) continue;
      const int client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(upstream_);
      if (::connect(server, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
        const int one = 1;
        setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        Pump(client, server, connections_++);
      }
      ::close(server);
      ::close(client);
    }
  }
  void Pump(int client, int server, uint64_t connection) {
    uint64_t offset[2] = {0, 0};  // 0: client → server, 1: server → client
    char buf[16384];
    while (!stop_) {
      pollfd p[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
      if (::poll(p, 2, 20) <= 0) continue;
      for (int d = 0; d < 2; ++d) {
        if (!(p[d].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const ssize_t n = ::recv(p[d].fd, buf, sizeof buf, 0);
        if (n <= 0) return;
        const int to = d == 0 ? server : client;
        size_t done = 0;
        while (done < static_cast<size_t>(n)) {
          const size_t piece = std::clamp<size_t>(chunk_(connection, d, offset[d]), 1, static_cast<size_t>(n) - done);
          if (!WriteAll(to, buf + done, piece)) return;
          done += piece;
          offset[d] += piece;
          if (done < static_cast<size_t>(n)) std::this_thread::sleep_for(pause_);
        }
      }
    }
  }
  uint16_t upstream_;
  Chunk chunk_;
  std::chrono::microseconds pause_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> connections_{0};
  std::thread thread_;
};

class EngineTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto c = testing::SharedTestCertificates();
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    certs_ = *c;
  }

  // nginx over HTTPS with the self-signed certificate, or the CA-signed one.
  void StartNginx(NginxOptions options = {}, bool ca_signed = false) {
    ASSERT_NE(certs_, nullptr);
    options.worker_connections = std::max(options.worker_connections, 4096);
    if (!options.tls) options.tls.emplace();
    options.tls->certificate = ca_signed ? certs_->server_cert : certs_->self_cert;
    options.tls->certificate_key = ca_signed ? certs_->server_key : certs_->self_key;
    nginx_ = std::make_unique<NginxFixture>(options);
    const Status s = nginx_->Start();
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  std::vector<AccessLogEntry> FinalLog() {
    auto log = nginx_->StopAndReadAccessLog();
    EXPECT_TRUE(log.ok()) << log.status().ToString();
    return log.ok() ? std::move(*log) : std::vector<AccessLogEntry>{};
  }
  static EngineOptions HttpsOptions(uint16_t port, bool keep_alive = true, bool verify = false,
                                    const std::string& ca_file = "", const std::string& sni = "") {
    EngineOptions o = TestOptions("127.0.0.1", port, {}, keep_alive);
    o.tls = MakeTlsOptions("127.0.0.1", sni, verify, ca_file);
    o.timeout = std::chrono::seconds(2);
    return o;
  }
  // Every request the engine saw answered is in the log; nothing else but
  // requests it wrote and gave up on.
  static void ExpectLogMatches(const std::vector<AccessLogEntry>& log, const EngineRun& run) {
    const uint64_t answered = run.all.requests + run.end.drained;
    EXPECT_GE(log.size(), answered) << "nginx served fewer requests than the engine counted";
    EXPECT_LE(log.size(), answered + run.end.abandoned) << "nginx served requests the engine never accounted for";
  }

  static const testing::TestCertificates* certs_;
  std::unique_ptr<NginxFixture> nginx_;
};

const testing::TestCertificates* EngineTlsTest::certs_ = nullptr;

TEST_F(EngineTlsTest, KeepAliveCountsEqualTheAccessLogOverTls13) {
  NginxOptions n;
  n.keepalive_requests = 1000000000;
  StartNginx(n);
  EngineOptions o = HttpsOptions(nginx_->port());
  o.timeout = std::chrono::seconds(5);
  const EngineRun run = RunEngine(o);
  const auto log = FinalLog();
  ASSERT_GT(run.measure.requests, 100u);
  EXPECT_EQ(run.all.errors, ErrorCounts{});
  EXPECT_EQ(run.end.abandoned, 0u);
  EXPECT_EQ(log.size(), run.all.requests + run.end.drained);
  std::set<uint64_t> connections;
  for (const AccessLogEntry& e : log) {
    ASSERT_EQ(e.ssl_protocol, "TLSv1.3");
    ASSERT_EQ(e.status, 200);
    ASSERT_EQ(e.request_length, o.requests[0].bytes.size());
    connections.insert(e.connection);
  }
  EXPECT_EQ(connections.size(), 8u);
  EXPECT_EQ(run.all.tls_handshakes, 8u);
  EXPECT_EQ(run.all.connects, 8u);
  EXPECT_GT(run.all.tls_handshake_time_us, 0u);
  // Plaintext bytes: the requests written, as nginx measured them.
  EXPECT_EQ(run.all.bytes_written, (run.all.requests + run.end.drained) * o.requests[0].bytes.size());
}

TEST_F(EngineTlsTest, KeepAliveOverTls12) {
  NginxOptions n;
  n.keepalive_requests = 1000000000;
  n.tls.emplace();
  n.tls->protocols = "TLSv1.2";
  StartNginx(n);
  const EngineRun run = RunEngine(HttpsOptions(nginx_->port()));
  const auto log = FinalLog();
  ASSERT_GT(run.measure.requests, 100u);
  EXPECT_EQ(run.all.errors, ErrorCounts{});
  ExpectLogMatches(log, run);
  for (const AccessLogEntry& e : log) ASSERT_EQ(e.ssl_protocol, "TLSv1.2");
  EXPECT_EQ(run.all.tls_handshakes, 8u);
}

// Short connections: a handshake per request, each resuming the worker's
// last session — nginx says so for every connection but the first few.
void CheckShortConnections(const std::vector<AccessLogEntry>& log, const EngineRun& run, const std::string& protocol) {
  ASSERT_GT(run.all.requests, 50u);
  EXPECT_EQ(run.all.errors, ErrorCounts{});
  uint64_t reused = 0, fresh = 0;
  std::set<uint64_t> connections;
  for (const AccessLogEntry& e : log) {
    EXPECT_EQ(e.connection_requests, 1u);
    EXPECT_EQ(e.ssl_protocol, protocol);
    connections.insert(e.connection);
    if (e.ssl_session_reused == "r") ++reused;
    else if (e.ssl_session_reused == ".") ++fresh;
  }
  EXPECT_EQ(connections.size(), log.size());
  EXPECT_EQ(reused + fresh, log.size());
  // Only connections that began before their worker had any session are new.
  EXPECT_LE(fresh, 8u) << reused << " resumed";
  EXPECT_GE(run.all.tls_handshakes, run.all.requests);
  EXPECT_LE(run.all.tls_handshakes - run.all.tls_resumed, 8u);
  // The engine's view of resumption agrees with nginx's, up to the
  // handshakes whose request was still in flight at the end.
  EXPECT_LE(run.all.tls_resumed, reused + 8);
  EXPECT_GE(run.all.tls_resumed + 8, reused);
}

TEST_F(EngineTlsTest, ShortConnectionsResumeSessionsTls13) {
  StartNginx();
  const EngineRun run = RunEngine(HttpsOptions(nginx_->port(), /*keep_alive=*/false));
  const auto log = FinalLog();
  ExpectLogMatches(log, run);
  CheckShortConnections(log, run, "TLSv1.3");
}

TEST_F(EngineTlsTest, ShortConnectionsResumeSessionsTls12WithTickets) {
  NginxOptions n;
  n.tls.emplace();
  n.tls->protocols = "TLSv1.2";
  StartNginx(n);
  const EngineRun run = RunEngine(HttpsOptions(nginx_->port(), /*keep_alive=*/false));
  const auto log = FinalLog();
  ExpectLogMatches(log, run);
  CheckShortConnections(log, run, "TLSv1.2");
}

TEST_F(EngineTlsTest, ShortConnectionsResumeSessionsTls12WithSessionIds) {
  NginxOptions n;
  n.tls.emplace();
  n.tls->protocols = "TLSv1.2";
  n.tls->session_tickets = false;  // resumption from nginx's session cache
  StartNginx(n);
  const EngineRun run = RunEngine(HttpsOptions(nginx_->port(), /*keep_alive=*/false));
  const auto log = FinalLog();
  ExpectLogMatches(log, run);
  CheckShortConnections(log, run, "TLSv1.2");
}

// Keep-alive connections nginx closes every 10 requests: each reconnect
// resumes (nginx logs "r" on every request of a resumed connection).
TEST_F(EngineTlsTest, KeepAliveReconnectsResumeSessions) {
  NginxOptions n;
  n.keepalive_requests = 10;
  StartNginx(n);
  const EngineRun run = RunEngine(HttpsOptions(nginx_->port()));
  const auto log = FinalLog();
  ASSERT_GT(run.all.requests, 200u);
  EXPECT_EQ(run.all.errors, ErrorCounts{});
  ExpectLogMatches(log, run);
  std::set<uint64_t> fresh, reused;
  for (const AccessLogEntry& e : log) (e.ssl_session_reused == "r" ? reused : fresh).insert(e.connection);
  EXPECT_LE(fresh.size(), 8u) << "only the first connections may be new";
  EXPECT_GE(reused.size(), run.all.requests / 10 - 8);
  // Connections still handshaking when the load ended are not counted.
  EXPECT_LE(run.all.tls_handshakes, run.all.connects);
  EXPECT_GE(run.all.tls_handshakes + 8, run.all.connects);
  EXPECT_EQ(run.all.tls_handshakes - run.all.tls_resumed, fresh.size());
}

TEST_F(EngineTlsTest, ServerClosingMidHandshakeCountsHandshakeErrors) {
  HandshakeCutter cutter;
  EngineOptions o = HttpsOptions(cutter.port());
  o.connections = 4;
  const EngineRun run = RunEngine(o);
  cutter.Stop();
  const ErrorCounts& e = run.all.errors;
  ASSERT_GT(cutter.cut(), 4u);
  EXPECT_EQ(run.all.requests, 0u);
  EXPECT_EQ(e.connect + e.read + e.write + e.timeout + e.port_exhaustion, 0u);
  // Each cut handshake is one error, except those cut after the engine
  // stopped counting (at most one per connection).
  EXPECT_LE(e.handshake, cutter.cut());
  EXPECT_GE(e.handshake + o.connections, cutter.cut());
  EXPECT_EQ(run.all.tls_handshakes, 0u);
  EXPECT_EQ(run.end.connections_peak, 0u);
}

TEST_F(EngineTlsTest, VerificationRejectsASelfSignedCertificate) {
  StartNginx();
  EngineOptions o = HttpsOptions(nginx_->port(), true, /*verify=*/true);
  o.connections = 2;
  const EngineRun run = RunEngine(o);
  const auto log = FinalLog();
  EXPECT_EQ(run.all.requests, 0u);
  EXPECT_GT(run.all.errors.handshake, 0u);
  EXPECT_EQ(run.all.errors.SocketErrors(), run.all.errors.handshake);
  EXPECT_EQ(log.size(), 0u);
}

TEST_F(EngineTlsTest, WithoutVerificationASelfSignedCertificateIsFine) {
  StartNginx();
  const EngineRun run = RunEngine(HttpsOptions(nginx_->port()));
  const auto log = FinalLog();
  EXPECT_GT(run.all.requests, 50u);
  EXPECT_EQ(run.all.errors, ErrorCounts{});
  ExpectLogMatches(log, run);
}

TEST_F(EngineTlsTest, VerificationAcceptsACertificateFromTheGivenCa) {
  StartNginx({}, /*ca_signed=*/true);
  const EngineRun run = RunEngine(HttpsOptions(nginx_->port(), true, true, certs_->ca_cert));
  const auto log = FinalLog();
  EXPECT_GT(run.all.requests, 50u);
  EXPECT_EQ(run.all.errors, ErrorCounts{});
  ExpectLogMatches(log, run);
}

TEST_F(EngineTlsTest, VerificationChecksTheName) {
  StartNginx({}, /*ca_signed=*/true);
  EngineOptions o = HttpsOptions(nginx_->port(), true, true, certs_->ca_cert, "other.example");
  o.connections = 2;
  const EngineRun run = RunEngine(o);
  FinalLog();
  EXPECT_EQ(run.all.requests, 0u);
  EXPECT_GT(run.all.errors.handshake, 0u);
  // The certificate's DNS name passes.
  StartNginx({}, /*ca_signed=*/true);
  const EngineRun ok = RunEngine(HttpsOptions(nginx_->port(), true, true, certs_->ca_cert, "localhost"));
  FinalLog();
  EXPECT_GT(ok.all.requests, 50u);
  EXPECT_EQ(ok.all.errors, ErrorCounts{});
}

TEST_F(EngineTlsTest, BadCaFileFailsToStart) {
  EngineOptions o = HttpsOptions(1, true, true, "/nonexistent/ca.pem");
  Engine engine(o);
  const Status s = engine.Start();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/nonexistent/ca.pem"), std::string::npos) << s.message();
}

// Every split point: a relay cuts the streams one byte at a time, so every
// record (handshake, then requests and responses) arrives in pieces.
TEST_F(EngineTlsTest, RecordsCutIntoSingleBytes) {
  for (const char* protocols : {"TLSv1.3", "TLSv1.2"}) {
    NginxOptions n;
    n.keepalive_requests = 1000000000;
    n.tls.emplace();
    n.tls->protocols = protocols;
    StartNginx(n);
    EngineRun run;
    {
      SplittingRelay relay(
          nginx_->port(), [](uint64_t, int, uint64_t) { return size_t{1}; }, std::chrono::microseconds(20));
      EngineOptions o = HttpsOptions(relay.port());
      o.threads = 1;
      o.connections = 1;
      o.duration = std::chrono::milliseconds(1500);
      o.interval = std::chrono::milliseconds(500);
      o.timeout = std::chrono::seconds(5);
      run = RunEngine(o);
    }
    const auto log = FinalLog();
    EXPECT_GT(run.all.requests, 3u) << protocols;
    EXPECT_EQ(run.all.errors, ErrorCounts{}) << protocols;
    EXPECT_EQ(run.all.tls_handshakes, 1u) << protocols;
    ExpectLogMatches(log, run);
  }
}

// Every split point of the first records: connection k has both streams
// cut once at byte k, with a pause there (short connections, one at a time).
TEST_F(EngineTlsTest, RecordsCutAtEverySplitPoint) {
  StartNginx();
  EngineRun run;
  uint64_t connections = 0;
  {
    SplittingRelay relay(
        nginx_->port(),
        [](uint64_t connection, int, uint64_t offset) {
          const uint64_t at = connection + 1;
          return offset < at ? static_cast<size_t>(at - offset) : size_t{1} << 20;
        },
        std::chrono::microseconds(300));
    EngineOptions o = HttpsOptions(relay.port(), /*keep_alive=*/false);
    o.threads = 1;
    o.connections = 1;
    o.duration = std::chrono::seconds(3);
    o.interval = std::chrono::milliseconds(500);
    o.timeout = std::chrono::seconds(5);
    run = RunEngine(o);
    connections = relay.connections();
  }
  const auto log = FinalLog();
  // The first server flight of a full handshake with this certificate is
  // about 1 KB, a resumed one a few hundred bytes; the request ~60 bytes.
  EXPECT_GT(connections, 400u);
  EXPECT_EQ(run.all.errors, ErrorCounts{});
  ExpectLogMatches(log, run);
  EXPECT_GE(run.all.tls_handshakes, run.all.requests);
}

}  // namespace
}  // namespace fairbench::agent
