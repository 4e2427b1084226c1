// Transport over a socketpair: plain reads and writes, and TLS against an
// in-test OpenSSL server on the other end. Each case names the change in
// transport.cc it would catch.
#include "agent/transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "agent/tls_context.h"
#include "testing/support/test_certs.h"

namespace fairbench::agent {
namespace {

struct Pair {
  int client = -1;  // non-blocking, the transport's
  int server = -1;  // blocking, the test's
  Pair() {
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    client = fds[0];
    server = fds[1];
    fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK);
  }
  ~Pair() {
    if (client >= 0) close(client);
    if (server >= 0) close(server);
  }
  void CloseServer() {
    close(server);
    server = -1;
  }
};

void WaitFor(int fd, short events) {
  pollfd p{fd, events, 0};
  ASSERT_EQ(poll(&p, 1, 5000), 1);
}

// Catches: EAGAIN mapped to an error, or a partial send reported as all of
// it (the worker's write offset would skip bytes).
TEST(TransportTest, PlainPartialWritesAreDoneThenRetryThenDoneAgain) {
  Pair p;
  const int small = 4096;
  setsockopt(p.client, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  Transport t;
  t.Plain(p.client);
  const std::string big(1 << 20, 'x');
  size_t sent = 0;
  IoResult r{Io::kDone};
  for (int i = 0; i < 1000 && r.status == Io::kDone; ++i) {
    r = t.Write(big.data() + sent, big.size() - sent);
    if (r.status == Io::kDone) {
      EXPECT_GT(r.bytes, 0u);
      EXPECT_LT(r.bytes, big.size());  // the buffer is far smaller: partial
      sent += r.bytes;
    }
  }
  ASSERT_EQ(r.status, Io::kRetry);
  ASSERT_GT(sent, 0u);
  // The peer reads some: the socket takes bytes again.
  std::vector<char> sink(1 << 16);
  ASSERT_GT(read(p.server, sink.data(), sink.size()), 0);
  WaitFor(p.client, POLLOUT);
  r = t.Write(big.data() + sent, big.size() - sent);
  EXPECT_EQ(r.status, Io::kDone);
  EXPECT_GT(r.bytes, 0u);
}

// Catches: a read of 0 bytes (the peer's FIN) reported as an error or a
// retry — the worker counts a server's close of an idle keep-alive
// connection as a close, not a read error, and a retry would wait forever.
TEST(TransportTest, PlainPeerCloseIsClosedAndNothingYetIsRetry) {
  Pair p;
  Transport t;
  t.Plain(p.client);
  char buf[64];
  EXPECT_EQ(t.Read(buf, sizeof buf).status, Io::kRetry);
  ASSERT_EQ(write(p.server, "hello", 5), 5);
  IoResult r = t.Read(buf, sizeof buf);
  ASSERT_EQ(r.status, Io::kDone);
  EXPECT_EQ(std::string(buf, r.bytes), "hello");
  EXPECT_FALSE(t.MoreToRead(r.bytes, sizeof buf));  // a short plain read drained the socket
  EXPECT_TRUE(t.MoreToRead(sizeof buf, sizeof buf));
  p.CloseServer();
  EXPECT_EQ(t.Read(buf, sizeof buf).status, Io::kClosed);
}

// Catches: a write to a closed peer without MSG_NOSIGNAL (SIGPIPE ends the
// process), or EPIPE mapped to retry.
TEST(TransportTest, PlainWriteToAClosedPeerIsAnErrorWithItsErrno) {
  Pair p;
  Transport t;
  t.Plain(p.client);
  p.CloseServer();
  const IoResult r = t.Write("x", 1);
  EXPECT_EQ(r.status, Io::kError);
  EXPECT_EQ(r.error, EPIPE);
}

// Catches: the gathered write losing a buffer or its order (pipelined
// requests would go out wrong).
TEST(TransportTest, PlainWriteVSendsTheBuffersInOrder) {
  Pair p;
  Transport t;
  t.Plain(p.client);
  std::string scratch;
  iovec iov[3] = {{const_cast<char*>("GET /a "), 7}, {const_cast<char*>("GET /b "), 7}, {const_cast<char*>("end"), 3}};
  const IoResult r = t.WriteV(iov, 3, scratch);
  ASSERT_EQ(r.status, Io::kDone);
  EXPECT_EQ(r.bytes, 17u);
  char buf[32];
  ASSERT_EQ(read(p.server, buf, sizeof buf), 17);
  EXPECT_EQ(std::string(buf, 17), "GET /a GET /b end");
}

// Catches: a refused connect reported as anything but an error with
// ECONNREFUSED (the worker counts it as a connect error, EADDRNOTAVAIL as
// port exhaustion).
TEST(TransportTest, ARefusedConnectIsAnErrorWithItsErrno) {
  // A port that was just free: bind, read it, close.
  const int probe = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(probe, reinterpret_cast<sockaddr*>(&sin), sizeof sin), 0);
  socklen_t len = sizeof sin;
  getsockname(probe, reinterpret_cast<sockaddr*>(&sin), &len);
  close(probe);
  SocketAddress addr;
  std::memcpy(&addr.storage, &sin, sizeof sin);
  addr.length = sizeof sin;
  const int fd = NewTcpSocket(AF_INET);
  ASSERT_GE(fd, 0);
  const IoResult r = StartTcpConnect(fd, addr);
  if (r.status == Io::kRetry) {
    WaitFor(fd, POLLOUT);
    EXPECT_EQ(ConnectError(fd), ECONNREFUSED);
  } else {
    EXPECT_EQ(r.status, Io::kError);
    EXPECT_EQ(r.error, ECONNREFUSED);
  }
  close(fd);
}

// TLS: the test's blocking OpenSSL server on the pair's other end.
class TlsTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto certs = testing::SharedTestCertificates();
    ASSERT_TRUE(certs.ok()) << certs.status().message();
    server_ctx_ = SSL_CTX_new(TLS_server_method());
    ASSERT_EQ(SSL_CTX_use_certificate_file(server_ctx_, (*certs)->self_cert.c_str(), SSL_FILETYPE_PEM), 1);
    ASSERT_EQ(SSL_CTX_use_PrivateKey_file(server_ctx_, (*certs)->self_key.c_str(), SSL_FILETYPE_PEM), 1);
    TlsOptions o;
    o.enabled = true;
    auto ctx = TlsContext::Create(o);
    ASSERT_TRUE(ctx.ok()) << ctx.status().message();
    client_ctx_ = std::move(*ctx);
    pool_ = std::make_unique<SessionPool>(4);
  }
  void TearDown() override {
    ReleaseServer();
    if (server_.joinable()) server_.join();
    if (server_ssl_ != nullptr) SSL_free(server_ssl_);
    if (ssl_ != nullptr) TlsContext::Release(ssl_);
    SSL_CTX_free(server_ctx_);
  }

  // Runs `serve` on the server's accepted SSL in a thread. A held server
  // starts its side of the handshake only after the client's first
  // Handshake() call has returned, so that call must find nothing to read.
  void Serve(std::function<void(SSL*)> serve, bool held = false) {
    server_ssl_ = SSL_new(server_ctx_);
    SSL_set_fd(server_ssl_, pair_.server);
    std::shared_future<void> go = release_.get_future().share();
    if (!held) ReleaseServer();
    server_ = std::thread([this, serve, go] {
      go.wait();
      if (SSL_accept(server_ssl_) == 1) serve(server_ssl_);
    });
  }
  void ReleaseServer() {
    if (!released_) release_.set_value();
    released_ = true;
  }

  // Attaches TLS to the client end and completes the handshake, waiting on
  // each retry. Returns how many retries it took.
  int Handshake(Transport& t) {
    ssl_ = client_ctx_->NewConnection(pair_.client, pool_.get());
    EXPECT_NE(ssl_, nullptr);
    t.Tls(pair_.client, ssl_);
    int retries = 0;
    for (;;) {
      const IoResult r = t.Handshake();
      ReleaseServer();
      if (r.status != Io::kRetry) {
        EXPECT_EQ(r.status, Io::kDone);
        return retries;
      }
      ++retries;
      WaitFor(pair_.client, POLLIN);
      if (retries > 100) return retries;
    }
  }

  IoResult ReadWaiting(Transport& t, char* buf, size_t cap) {
    for (int i = 0; i < 100; ++i) {
      const IoResult r = t.Read(buf, cap);
      if (r.status != Io::kRetry) return r;
      pollfd p{pair_.client, POLLIN, 0};
      poll(&p, 1, 5000);
    }
    return IoResult{Io::kRetry};
  }

  Pair pair_;
  SSL_CTX* server_ctx_ = nullptr;
  SSL* server_ssl_ = nullptr;
  std::shared_ptr<TlsContext> client_ctx_;
  std::unique_ptr<SessionPool> pool_;
  SSL* ssl_ = nullptr;
  std::promise<void> release_;
  bool released_ = false;
  std::thread server_;
};

// Catches: SSL_ERROR_WANT_READ during the handshake mapped to a failure
// (every HTTPS connect would be a handshake error), and SSL_ERROR_ZERO_RETURN
// (close_notify) mapped to an error instead of the end of the stream.
TEST_F(TlsTransportTest, HandshakeRetriesThenDataThenCloseNotifyIsClosed) {
  Serve(
      [](SSL* s) {
        char buf[16];
        const int n = SSL_read(s, buf, sizeof buf);
        if (n == 4 && std::memcmp(buf, "ping", 4) == 0) SSL_write(s, "pong", 4);
        SSL_shutdown(s);
      },
      /*held=*/true);
  Transport t;
  EXPECT_GT(Handshake(t), 0);  // the server's flight had to be waited for
  ASSERT_EQ(t.kind(), Transport::Kind::kTls);
  const IoResult w = t.Write("ping", 4);
  ASSERT_EQ(w.status, Io::kDone);
  EXPECT_EQ(w.bytes, 4u);
  char buf[64];
  IoResult r = ReadWaiting(t, buf, sizeof buf);
  // TLS 1.3: the session tickets come first (consumed inside OpenSSL).
  ASSERT_EQ(r.status, Io::kDone);
  EXPECT_EQ(std::string(buf, r.bytes), "pong");
  r = ReadWaiting(t, buf, sizeof buf);
  EXPECT_EQ(r.status, Io::kClosed);
  EXPECT_EQ(ERR_peek_error(), 0u);
}

// Catches: an unexpected EOF (servers rarely send close_notify) reported
// as a read error rather than the end of the stream.
TEST_F(TlsTransportTest, APeerThatClosesWithoutCloseNotifyIsClosed) {
  Serve([this](SSL*) { shutdown(pair_.server, SHUT_RDWR); });
  Transport t;
  Handshake(t);
  char buf[64];
  EXPECT_EQ(ReadWaiting(t, buf, sizeof buf).status, Io::kClosed);
}

// Catches: a failed handshake not reported as an error, or OpenSSL's error
// queue left full after it (SSL_get_error on the thread's next connection
// would then see a stale error and fail it).
TEST_F(TlsTransportTest, AServerThatIsNotTlsFailsTheHandshakeAndLeavesNoQueuedError) {
  Transport t;
  ssl_ = client_ctx_->NewConnection(pair_.client, pool_.get());
  ASSERT_NE(ssl_, nullptr);
  t.Tls(pair_.client, ssl_);
  ASSERT_EQ(write(pair_.server, "HTTP/1.1 400 Bad Request\r\n\r\n", 28), 28);
  IoResult r{Io::kRetry};
  for (int i = 0; i < 100 && r.status == Io::kRetry; ++i) {
    r = t.Handshake();
    if (r.status == Io::kRetry) WaitFor(pair_.client, POLLIN);
  }
  EXPECT_EQ(r.status, Io::kError);
  EXPECT_EQ(ERR_peek_error(), 0u);
}

// Catches: Buffered()/MoreToRead ignoring OpenSSL's read-ahead — records
// already taken from the socket get no new edge, and the worker would stall.
TEST_F(TlsTransportTest, RecordsReadAheadAreBuffered) {
  std::atomic<bool> written{false};
  Serve([&written](SSL* s) {
    char buf[4];
    if (SSL_read(s, buf, 1) != 1) return;
    SSL_write(s, "one", 3);
    SSL_write(s, "two", 3);
    written = true;
    SSL_read(s, buf, 1);  // until the client is done
  });
  Transport t;
  Handshake(t);
  ASSERT_EQ(t.Write("?", 1).status, Io::kDone);
  for (int i = 0; i < 500 && !written; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(written);
  // Both records are in the socket (AF_UNIX: once written, queued): one
  // read takes them all into OpenSSL and returns the first.
  char buf[64];
  IoResult r = ReadWaiting(t, buf, sizeof buf);
  ASSERT_EQ(r.status, Io::kDone);
  ASSERT_EQ(std::string(buf, r.bytes), "one");
  pollfd p{pair_.client, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 0), 0);  // the socket is empty...
  EXPECT_TRUE(t.Buffered());     // ...but the second record is inside
  EXPECT_TRUE(t.MoreToRead(r.bytes, sizeof buf));
  r = t.Read(buf, sizeof buf);
  ASSERT_EQ(r.status, Io::kDone);
  EXPECT_EQ(std::string(buf, r.bytes), "two");
  EXPECT_FALSE(t.Buffered());
  t.Write("!", 1);
}

}  // namespace
}  // namespace fairbench::agent
