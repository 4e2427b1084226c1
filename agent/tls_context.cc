#include "agent/tls_context.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "common/tls_files.h"

namespace fairbench::agent {
namespace {

// Called on the worker's thread, inside SSL_connect or SSL_read.
int OnNewSession(SSL* ssl, SSL_SESSION* session) {
  auto* pool = static_cast<SessionPool*>(SSL_get_ex_data(ssl, 0));
  if (pool == nullptr) return 0;
  pool->Add(session);
  return 1;  // the pool owns the reference now
}

bool IsIpLiteral(const std::string& s) {
  unsigned char buf[16];
  return inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1;
}

}  // namespace

TlsOptions MakeTlsOptions(const std::string& host, const std::string& sni, bool verify, const std::string& ca_file) {
  TlsOptions o;
  o.enabled = true;
  o.server_name = !sni.empty() ? sni : (IsIpLiteral(host) ? std::string() : host);
  o.verify = verify;
  o.ca_file = ca_file;
  o.verify_name = !sni.empty() ? sni : host;
  return o;
}

Result<std::shared_ptr<TlsContext>> TlsContext::Create(const TlsOptions& o) {
  if (!o.ca_file.empty()) {
    auto pem = tls::ReadCertificates(o.ca_file, "CA file");
    if (!pem.ok()) return pem.status();
  }
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) return Status::Internal("SSL_CTX_new: " + TakeErrors());
  std::shared_ptr<TlsContext> out(new TlsContext(ctx, o.server_name));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_read_ahead(ctx, 1);
  SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(ctx, OnNewSession);
  if (o.alpn_h2) {
    static const unsigned char kH2[] = {2, 'h', '2'};
    if (SSL_CTX_set_alpn_protos(ctx, kH2, sizeof kH2) != 0)
      return Status::Internal("SSL_CTX_set_alpn_protos: " + TakeErrors());
  }
  if (o.verify) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    const int loaded = o.ca_file.empty() ? SSL_CTX_set_default_verify_paths(ctx)
                                         : SSL_CTX_load_verify_locations(ctx, o.ca_file.c_str(), nullptr);
    if (loaded != 1) {
      return Status::InvalidArgument("cannot load CA file '" +
                                     (o.ca_file.empty() ? std::string("(system)") : o.ca_file) + "': " + TakeErrors());
    }
    if (!o.verify_name.empty()) {
      X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx);
      const int ok = IsIpLiteral(o.verify_name) ? X509_VERIFY_PARAM_set1_ip_asc(param, o.verify_name.c_str())
                                                : X509_VERIFY_PARAM_set1_host(param, o.verify_name.c_str(), 0);
      if (ok != 1) return Status::InvalidArgument("bad name to verify '" + o.verify_name + "'");
    }
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  }
  return out;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

SessionPool::~SessionPool() {
  for (SSL_SESSION* s : sessions_) SSL_SESSION_free(s);
}

SSL_SESSION* SessionPool::Take() {
  while (!sessions_.empty()) {
    SSL_SESSION* s = sessions_.back();
    if (!SSL_SESSION_is_resumable(s)) {
      sessions_.pop_back();
      SSL_SESSION_free(s);
      continue;
    }
    if (SSL_SESSION_get_protocol_version(s) >= TLS1_3_VERSION) {
      sessions_.pop_back();  // single use
    } else {
      SSL_SESSION_up_ref(s);
    }
    return s;
  }
  return nullptr;
}

void SessionPool::Add(SSL_SESSION* session) {
  if (capacity_ == 0) {
    SSL_SESSION_free(session);
    return;
  }
  if (sessions_.size() == capacity_) {
    SSL_SESSION_free(sessions_.front());
    sessions_.erase(sessions_.begin());
  }
  sessions_.push_back(session);
}

SSL* TlsContext::NewConnection(int fd, SessionPool* pool, SSL* reuse) const {
  SSL* ssl = nullptr;
  if (reuse != nullptr) {
    if (SSL_clear(reuse) == 1) {
      ssl = reuse;
      SSL_set_session(ssl, nullptr);  // SSL_clear keeps the last one; the pool decides
    } else {
      SSL_free(reuse);
    }
  }
  if (ssl == nullptr) ssl = SSL_new(ctx_);
  if (ssl == nullptr) return nullptr;
  if (SSL_set_fd(ssl, fd) != 1 ||
      (!server_name_.empty() && SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                                         const_cast<char*>(server_name_.c_str())) != 1)) {
    SSL_free(ssl);
    return nullptr;
  }
  SSL_set_connect_state(ssl);
  SSL_set_ex_data(ssl, 0, pool);  // SSL_set_app_data without its cast
  if (SSL_SESSION* s = pool != nullptr ? pool->Take() : nullptr) {
    SSL_set_session(ssl, s);  // takes its own reference
    SSL_SESSION_free(s);
  }
  return ssl;
}

bool TlsContext::NegotiatedH2(const SSL* ssl) {
  const unsigned char* proto = nullptr;
  unsigned int len = 0;
  SSL_get0_alpn_selected(ssl, &proto, &len);
  return len == 2 && proto[0] == 'h' && proto[1] == '2';
}

void TlsContext::Park(SSL* ssl) { SSL_set_shutdown(ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN); }

void TlsContext::Release(SSL* ssl) {
  // Marked as shut down so that SSL_free does not flag the session as bad:
  // a connection closed after its last response is not a failed session.
  SSL_set_shutdown(ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
  SSL_free(ssl);
}

std::string TlsContext::TakeErrors() {
  std::string out;
  while (const unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out;
}

}  // namespace fairbench::agent
