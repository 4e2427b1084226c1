#include "agent/transport.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cerrno>
#include <climits>

namespace fairbench::agent {
namespace {

inline void ClearTlsErrors() {
  if (ERR_peek_error() != 0) ERR_clear_error();
}

inline int TlsLength(size_t len) { return static_cast<int>(len < INT_MAX ? len : INT_MAX); }

IoResult Failed(int error) { return IoResult{Io::kError, 0, error}; }

// An SSL call returned r <= 0: what it means.
IoResult TlsOutcome(SSL* ssl, int r, bool reading) {
  const int err = SSL_get_error(ssl, r);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) return IoResult{Io::kRetry};
  const int saved = errno;
  ERR_clear_error();
  if (reading && err == SSL_ERROR_ZERO_RETURN) return IoResult{Io::kClosed};
  return Failed(err == SSL_ERROR_SYSCALL ? saved : 0);
}

}  // namespace

int NewTcpSocket(int family) {
  const int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
  if (fd < 0) return -1;
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

IoResult StartTcpConnect(int fd, const SocketAddress& addr) {
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr.storage), addr.length) == 0) return IoResult{Io::kDone};
  if (errno == EINPROGRESS) return IoResult{Io::kRetry};
  return Failed(errno);
}

int ConnectError(int fd) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
  return err;
}

IoResult Transport::Handshake() {
  if (kind_ != Kind::kTls) return IoResult{Io::kDone};
  ERR_clear_error();
  const int r = SSL_connect(ssl_);
  if (r == 1) return IoResult{Io::kDone};
  return TlsOutcome(ssl_, r, false);
}

IoResult Transport::Read(char* buf, size_t cap) {
  if (kind_ == Kind::kTls) {
    for (;;) {
      ClearTlsErrors();
      const int r = SSL_read(ssl_, buf, TlsLength(cap));
      if (r > 0) return IoResult{Io::kDone, static_cast<size_t>(r)};
      IoResult o = TlsOutcome(ssl_, r, true);
      if (o.status == Io::kError && o.error == EINTR) continue;
      return o;
    }
  }
  for (;;) {
    const ssize_t n = ::recv(fd_, buf, cap, 0);
    if (n > 0) return IoResult{Io::kDone, static_cast<size_t>(n)};
    if (n == 0) return IoResult{Io::kClosed};
    if (errno == EAGAIN || errno == EWOULDBLOCK) return IoResult{Io::kRetry};
    if (errno != EINTR) return Failed(errno);
  }
}

IoResult Transport::Write(const void* data, size_t len) {
  if (kind_ == Kind::kTls) {
    for (;;) {
      ClearTlsErrors();
      const int r = SSL_write(ssl_, data, TlsLength(len));
      if (r > 0) return IoResult{Io::kDone, static_cast<size_t>(r)};
      IoResult o = TlsOutcome(ssl_, r, false);
      if (o.status == Io::kError && o.error == EINTR) continue;
      return o;
    }
  }
  for (;;) {
    const ssize_t n = ::send(fd_, data, len, MSG_NOSIGNAL);
    if (n >= 0) return IoResult{Io::kDone, static_cast<size_t>(n)};
    if (errno == EAGAIN || errno == EWOULDBLOCK) return IoResult{Io::kRetry};
    if (errno != EINTR) return Failed(errno);
  }
}

IoResult Transport::WriteV(const iovec* iov, size_t count, std::string& scratch) {
  if (count == 1) return Write(iov[0].iov_base, iov[0].iov_len);
  if (kind_ == Kind::kTls) {
    // SSL_write takes one buffer. The rest is rebuilt on each try (the same
    // bytes; the context accepts a moved buffer).
    scratch.clear();
    for (size_t i = 0; i < count; ++i) scratch.append(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len);
    return Write(scratch.data(), scratch.size());
  }
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = count;
  for (;;) {
    const ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (n >= 0) return IoResult{Io::kDone, static_cast<size_t>(n)};
    if (errno == EAGAIN || errno == EWOULDBLOCK) return IoResult{Io::kRetry};
    if (errno != EINTR) return Failed(errno);
  }
}

bool Transport::Buffered() const { return kind_ == Kind::kTls && SSL_has_pending(ssl_) != 0; }

}  // namespace fairbench::agent
