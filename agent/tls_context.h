// TlsContext: the client side of HTTPS for the load engine — one OpenSSL
// SSL_CTX per engine, shared read-only by its workers (OpenSSL allows
// SSL_new on one context from many threads).
//
// What the context fixes for every connection:
//  - TLS 1.2 and 1.3 only;
//  - certificate verification off unless `verify` (as wrk); with it, the
//    peer must chain to `ca_file` (or the system's trust store when empty)
//    and match `verify_name` (a DNS name, or an IP address literal);
//  - sessions the server issues go to the worker's SessionPool given to
//    NewConnection, which offers one on the worker's next connect; OpenSSL's
//    internal client cache is off, nothing is shared between workers;
//  - read-ahead (one read() fills a record and more, instead of a header
//    read and a body read), partial writes and moving write buffers (the
//    engine retries from its own offset), and an unexpected EOF read as an
//    ordinary end of stream (servers rarely send close_notify);
//  - with `alpn_h2`, ALPN offering "h2" alone (HTTP/2 over TLS).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;
typedef struct ssl_session_st SSL_SESSION;

namespace fairbench::agent {

struct TlsOptions {
  bool enabled = false;     // https://
  std::string server_name;  // SNI; empty: none is sent (as for an IP address)
  bool verify = false;      // check the server's certificate chain and name
  std::string ca_file;      // PEM bundle trusted with `verify`; empty: the system's
  std::string verify_name;  // the name (or IP address) the certificate must match
  bool alpn_h2 = false;     // HTTP/2: offer only "h2" in ALPN (the worker refuses a server that does not pick it)
};

// Options for an https URL's `host`: SNI is `sni`, else the host unless it
// is an IP address literal (RFC 6066 allows only names); the name verified
// is `sni`, else the host.
TlsOptions MakeTlsOptions(const std::string& host, const std::string& sni, bool verify, const std::string& ca_file);

// A worker's sessions to resume, newest last, at most `capacity` (the
// oldest go first). A TLS 1.2 session resumes any number of connections; a
// TLS 1.3 ticket is used once (OpenSSL marks the session not resumable once
// a handshake resumed it, as RFC 8446 advises for privacy), so Take hands
// it out and forgets it — each resumed connection brings new tickets.
// Single-threaded (the worker's).
class SessionPool {
 public:
  explicit SessionPool(size_t capacity) : capacity_(capacity) { sessions_.reserve(capacity); }
  ~SessionPool();
  SessionPool(const SessionPool&) = delete;
  SessionPool& operator=(const SessionPool&) = delete;
  // The newest resumable session (a reference the caller frees), or null.
  SSL_SESSION* Take();
  // Takes ownership of `session`.
  void Add(SSL_SESSION* session);
  size_t size() const { return sessions_.size(); }

 private:
  size_t capacity_;
  std::vector<SSL_SESSION*> sessions_;
};

class TlsContext {
 public:
  // Fails with a message naming the CA file when it cannot be read or holds
  // no certificate.
  static Result<std::shared_ptr<TlsContext>> Create(const TlsOptions& options);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // A client SSL for the connected socket `fd`, with SNI set and a session
  // from `pool` offered for resumption. New sessions the server issues on it
  // go to `pool`, which must outlive the SSL. `reuse`, when not null, is an
  // SSL of this context parked by Park: it is reset and used again (as wrk
  // does), which costs less than a new one. Null when OpenSSL is out of
  // memory.
  SSL* NewConnection(int fd, SessionPool* pool, SSL* reuse = nullptr) const;
  // Ends `ssl`'s connection without a close_notify (the session stays
  // resumable) and keeps the object for NewConnection.
  static void Park(SSL* ssl);
  // Frees `ssl` (parked or not) without a close_notify.
  static void Release(SSL* ssl);
  // True when the handshake of `ssl` chose "h2" by ALPN.
  static bool NegotiatedH2(const SSL* ssl);
  // The OpenSSL error queue as text, emptied ("" when empty).
  static std::string TakeErrors();

 private:
  explicit TlsContext(SSL_CTX* ctx, std::string server_name) : ctx_(ctx), server_name_(std::move(server_name)) {}
  SSL_CTX* ctx_;
  std::string server_name_;
};

}  // namespace fairbench::agent
