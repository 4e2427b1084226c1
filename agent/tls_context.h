// TlsContext: the client side of HTTPS for the load engine — one OpenSSL
// SSL_CTX per engine, shared read-only by its workers (OpenSSL allows
// SSL_new on one context from many threads).
//
// What the context fixes for every connection:
//  - TLS 1.2 and 1.3 only;
//  - certificate verification off unless `verify` (as wrk); with it, the
//    peer must chain to `ca_file` (or the system's trust store when empty)
//    and match `verify_name` (a DNS name, or an IP address literal);
//  - sessions for resumption are handed to a per-connection slot set with
//    NewConnection (the worker keeps the last one and offers it on the next
//    connect); OpenSSL's internal client cache is off, nothing is shared;
//  - read-ahead (one read() fills a record and more, instead of a header
//    read and a body read), partial writes and moving write buffers (the
//    engine retries from its own offset), and an unexpected EOF read as an
//    ordinary end of stream (servers rarely send close_notify).
#pragma once

#include <memory>
#include <string>

#include "common/status.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;
typedef struct ssl_session_st SSL_SESSION;

namespace fairbench::agent {

struct TlsOptions {
  bool enabled = false;      // https://
  std::string server_name;   // SNI; empty: none is sent (as for an IP address)
  bool verify = false;       // check the server's certificate chain and name
  std::string ca_file;       // PEM bundle trusted with `verify`; empty: the system's
  std::string verify_name;   // the name (or IP address) the certificate must match
};

// Options for an https URL's `host`: SNI is `sni`, else the host unless it
// is an IP address literal (RFC 6066 allows only names); the name verified
// is `sni`, else the host.
TlsOptions MakeTlsOptions(const std::string& host, const std::string& sni, bool verify, const std::string& ca_file);

class TlsContext {
 public:
  // Fails with a message naming the CA file when it cannot be read or holds
  // no certificate.
  static Result<std::shared_ptr<TlsContext>> Create(const TlsOptions& options);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // A client SSL for the connected socket `fd`, with SNI set and `*session`
  // offered for resumption when not null. New sessions the server issues on
  // it replace `*session` (the previous one is freed); `session` must
  // outlive the SSL. Null when OpenSSL is out of memory.
  SSL* NewConnection(int fd, SSL_SESSION** session) const;
  // Frees `ssl` without a close_notify; the session stays resumable.
  static void Release(SSL* ssl);
  // The OpenSSL error queue as text, emptied ("" when empty).
  static std::string TakeErrors();

 private:
  explicit TlsContext(SSL_CTX* ctx, std::string server_name) : ctx_(ctx), server_name_(std::move(server_name)) {}
  SSL_CTX* ctx_;
  std::string server_name_;
};

}  // namespace fairbench::agent
