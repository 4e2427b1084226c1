// Transport: the bytes of one connection, over a plain TCP socket or over
// TLS on it, behind one interface with wrk's outcomes (src/net.h): done,
// retry (EAGAIN, SSL_ERROR_WANT_READ/WANT_WRITE: wait for the next edge),
// error — plus, for a read, the peer's end of stream (closed), which the
// worker counts apart from an error. Every errno and SSL_get_error mapping
// of the load engine lives here; EINTR is retried inside.
//
// The kind is chosen once per connection (Plain after the TCP connect, Tls
// once an SSL is attached). A Transport owns neither the socket nor the
// SSL: the worker closes the one and parks or frees the other, then calls
// Reset. Not thread-safe (one connection belongs to one worker thread).
//
// TLS: before each call the thread's OpenSSL error queue is emptied when
// not empty (SSL_get_error needs it empty; peeking costs less than
// ERR_clear_error, which walks every slot); after a failure it is cleared.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "agent/url.h"

typedef struct ssl_st SSL;

namespace fairbench::agent {

enum class Io : uint8_t {
  kDone,    // `bytes` moved (a write may be partial), or the connect/handshake finished
  kRetry,   // nothing now: wait for the socket's next readiness event
  kClosed,  // read: the peer ended the stream (EOF, or TLS close_notify / EOF)
  kError,   // the transport failed; `error` is errno (0 for a TLS failure)
};

struct IoResult {
  Io status;
  size_t bytes = 0;
  int error = 0;
};

// A non-blocking TCP socket for `family` with TCP_NODELAY, close-on-exec;
// -1 with errno set on failure.
int NewTcpSocket(int family);
// Starts connecting `fd` to `addr`: kDone (connected already), kRetry (in
// progress: writable when done, then ConnectError), kError with errno.
IoResult StartTcpConnect(int fd, const SocketAddress& addr);
// After a non-blocking connect reported: its SO_ERROR (0 when connected).
int ConnectError(int fd);

class Transport {
 public:
  enum class Kind : uint8_t { kNone, kPlain, kTls };

  void Plain(int fd) {
    kind_ = Kind::kPlain;
    fd_ = fd;
    ssl_ = nullptr;
  }
  // `ssl` is bound to `fd` already (TlsContext::NewConnection).
  void Tls(int fd, SSL* ssl) {
    kind_ = Kind::kTls;
    fd_ = fd;
    ssl_ = ssl;
  }
  void Reset() {
    kind_ = Kind::kNone;
    fd_ = -1;
    ssl_ = nullptr;
  }

  Kind kind() const { return kind_; }
  int fd() const { return fd_; }
  SSL* ssl() const { return ssl_; }  // null unless kTls

  // TLS: advances the client handshake (kDone once finished, kRetry while
  // it waits for the socket, kError when it failed). Plain: kDone.
  IoResult Handshake();
  // Up to `cap` bytes into `buf`.
  IoResult Read(char* buf, size_t cap);
  // Up to `len` bytes of `data`; a partial write is kDone with fewer bytes.
  IoResult Write(const void* data, size_t len);
  // The `count` buffers in order: one sendmsg; with TLS, gathered into
  // `scratch` (its capacity kept) for one SSL_write.
  IoResult WriteV(const iovec* iov, size_t count, std::string& scratch);
  // Bytes already inside the transport (TLS read-ahead) that no new
  // readiness event will announce.
  bool Buffered() const;
  // After a read of `n` bytes into a buffer of `cap`: whether reading on
  // may find more without a new edge (plain: the read filled the buffer;
  // TLS: OpenSSL holds bytes read ahead).
  bool MoreToRead(size_t n, size_t cap) const { return kind_ == Kind::kTls ? Buffered() : n == cap; }

 private:
  Kind kind_ = Kind::kNone;
  int fd_ = -1;
  SSL* ssl_ = nullptr;
};

}  // namespace fairbench::agent
