#include "testing/apiserver/http_frontend.h"

#include <httplib.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <chrono>

#include "common/mutex.h"
#include "testing/apiserver/request_info.h"
#include "testing/apiserver/request_util.h"

namespace fairbench::apiserver {
namespace {

// The peer's certificate CN (the user) and O entries (its groups), as
// kube-apiserver's x509 authenticator reads them, if it presented one that
// verified.
std::string ClientCertUser(const httplib::Request& req, std::vector<std::string>* groups) {
  if (!req.ssl) return "";
  X509* peer = SSL_get1_peer_certificate(req.ssl);
  if (!peer) return "";
  std::string user;
  if (SSL_get_verify_result(req.ssl) == X509_V_OK) {
    X509_NAME* subject = X509_get_subject_name(peer);
    char cn[256] = {0};
    if (X509_NAME_get_text_by_NID(subject, NID_commonName, cn, sizeof cn) > 0) user = cn;
    for (int i = X509_NAME_get_index_by_NID(subject, NID_organizationName, -1); i >= 0;
         i = X509_NAME_get_index_by_NID(subject, NID_organizationName, i)) {
      const ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, i));
      groups->emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(data)),
                           static_cast<size_t>(ASN1_STRING_length(data)));
    }
  }
  X509_free(peer);
  return user;
}

bool ConfigureTls(SSL_CTX& ctx, const TlsMaterial& tls) {
  BIO* cert_bio = BIO_new_mem_buf(tls.server.cert_pem.data(), static_cast<int>(tls.server.cert_pem.size()));
  X509* cert = PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr);
  BIO_free(cert_bio);
  BIO* key_bio = BIO_new_mem_buf(tls.server.key_pem.data(), static_cast<int>(tls.server.key_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio, nullptr, nullptr, nullptr);
  BIO_free(key_bio);
  BIO* ca_bio = BIO_new_mem_buf(tls.ca.cert_pem.data(), static_cast<int>(tls.ca.cert_pem.size()));
  X509* ca = PEM_read_bio_X509(ca_bio, nullptr, nullptr, nullptr);
  BIO_free(ca_bio);
  bool ok = cert && key && ca && SSL_CTX_use_certificate(&ctx, cert) == 1 && SSL_CTX_use_PrivateKey(&ctx, key) == 1 &&
            SSL_CTX_check_private_key(&ctx) == 1;
  if (ok) {
    SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
    X509_STORE_add_cert(SSL_CTX_get_cert_store(&ctx), ca);
    STACK_OF(X509_NAME)* names = sk_X509_NAME_new_null();
    sk_X509_NAME_push(names, X509_NAME_dup(X509_get_subject_name(ca)));
    SSL_CTX_set_client_CA_list(&ctx, names);
    // Ask for a client certificate but do not require one: bearer tokens
    // authenticate too. A certificate that is sent must verify.
    SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER, nullptr);
    // Clients resume TLS sessions (libcurl does, for its second connection:
    // a watch next to a list). With peer verification on, OpenSSL refuses
    // to resume a session without a session id context and ends the
    // handshake with an "internal error" alert.
    static const unsigned char kSessionContext[] = "fairbench-test-apiserver";
    SSL_CTX_set_session_id_context(&ctx, kSessionContext, sizeof kSessionContext - 1);
  }
  X509_free(cert);
  EVP_PKEY_free(key);
  X509_free(ca);
  return ok;
}

}  // namespace

HttpFrontend::HttpFrontend(ApiServer& api, const HttpFrontendOptions& options)
    : api_(api),
      tls_(options.tls != nullptr),
      anonymous_(options.anonymous),
      tokens_(options.tokens),
      groups_(options.groups),
      audit_(options.audit) {}

Result<std::unique_ptr<HttpFrontend>> HttpFrontend::Start(ApiServer& api, const HttpFrontendOptions& options) {
  std::unique_ptr<HttpFrontend> f(new HttpFrontend(api, options));
  if (options.tls) {
    const TlsMaterial* tls = options.tls;
    f->server_ = std::make_unique<httplib::SSLServer>([tls](SSL_CTX& ctx) { return ConfigureTls(ctx, *tls); });
    if (!f->server_->is_valid()) return Status::InvalidArgument("the TLS certificate or key is not usable");
  } else {
    f->server_ = std::make_unique<httplib::Server>();
  }
  size_t threads = options.threads;
  f->server_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  f->server_->set_keep_alive_max_count(1000);
  f->server_->set_keep_alive_timeout(2);
  f->server_->set_read_timeout(10);
  f->server_->set_write_timeout(10);
  f->server_->set_tcp_nodelay(true);
  HttpFrontend* self = f.get();
  auto handler = [self](const httplib::Request& req, httplib::Response& res) {
    const auto received = std::chrono::system_clock::now();
    ApiRequest ar;
    ar.method = req.method;
    ar.path = req.path;
    for (const auto& [k, v] : req.params) ar.query.emplace(k, v);
    ar.accept = req.get_header_value("Accept");
    ar.content_type = req.get_header_value("Content-Type");
    ar.user_agent = req.get_header_value("User-Agent");
    ar.body = req.body;

    bool auth_required;
    bool bad_token = false;  // a token no one has: 401 even where anonymous requests are served
    {
      MutexLock lock(self->mu_);
      auth_required = (self->tls_ || !self->tokens_.empty()) && !self->anonymous_;
      ar.user = ClientCertUser(req, &ar.groups);
      std::string auth = req.get_header_value("Authorization");
      if (ar.user.empty() && auth.rfind("Bearer ", 0) == 0) {
        ar.groups.clear();
        auto it = self->tokens_.find(auth.substr(7));
        if (it != self->tokens_.end()) {
          ar.user = it->second;
          if (auto g = self->groups_.find(ar.user); g != self->groups_.end()) ar.groups = g->second;
        } else {
          bad_token = !self->tokens_.empty();
        }
      }
    }
    if (const std::string auth = req.get_header_value("Authorization");
        ar.user.empty() && auth.rfind("Bearer ", 0) == 0) {
      // A token a TokenRequest issued (a pod's service-account token).
      if (auto sa = self->api_.AuthenticateIssuedToken(auth.substr(7))) {
        ar.user = sa->first;
        ar.groups = sa->second;
        bad_token = false;
      }
    }
    bool open_path = req.path == "/healthz" || req.path == "/livez" || req.path == "/readyz";
    auto audit = [&](int code, bool watch_started) {
      if (self->audit_ == nullptr) return;
      AuditRecord a;
      a.info = ResolveRequestInfo(ar.method, ar.path, ar.query);
      a.request_uri = req.target.empty() ? req.path : req.target;
      a.user = ar.user;
      if (auto g = self->groups_.find(ar.user); g != self->groups_.end()) {
        a.groups = g->second;
      } else {
        a.groups = ar.groups;
      }
      a.user_agent = ar.user_agent;
      a.source_ip = req.remote_addr;
      a.code = code;
      a.watch_started = watch_started;
      a.received = received;
      self->audit_->Write(a);
    };
    auto send = [&res, &audit](const ApiResponse& r) {
      res.status = r.code;
      for (const auto& [k, v] : r.headers) res.set_header(k, v);
      res.set_content(r.body, r.content_type);
      audit(r.code, false);
    };
    if (((auth_required && ar.user.empty()) || bad_token) && !open_path) {
      ApiResponse r;
      r.code = 401;
      r.body = Unauthorized().body.dump();
      send(r);
      return;
    }
    const bool watch = IsWatchRequest(ar.method, ar.query);
    FaultInjector& faults = self->api_.faults();
    const std::string from_rv = QueryValue(ar.query, "resourceVersion");
    const bool continued = !QueryValue(ar.query, "continue").empty();
    const bool resumes = (watch && !from_rv.empty() && from_rv != "0") || continued;
    const FaultPlan plan = faults.Plan(ar.method, ar.path, ar.user, watch, resumes);
    if (plan.delay.count() > 0) std::this_thread::sleep_for(plan.delay);
    if (plan.reply) {
      ApiResponse r;
      r.code = plan.reply->code;
      r.body = plan.reply->body.dump();
      r.headers = plan.reply->headers;
      send(r);
      return;
    }
    if (plan.compact_history) {
      // etcd compacted meanwhile: a watch from an RV before now starts with
      // an ERROR 410, a continued list answers 410.
      uint64_t rv = 0;
      const bool bites = watch ? ParseUint(from_rv, &rv) && rv < self->api_.current_resource_version() : true;
      self->api_.CompactHistory();
      if (bites && watch) faults.CountExpired();
    }
    ApiResponse r = self->api_.Handle(ar);
    if (plan.compact_history && continued && r.code == 410) faults.CountExpired();
    if (plan.lose_reply && !r.watch) {
      // Handled (a write took effect), but the client hears a timeout.
      const StatusReply lost = FaultInjector::TimeoutReply();
      r.code = lost.code;
      r.body = lost.body.dump();
      r.headers = lost.headers;
      r.content_type = "application/json";
    }
    if (!r.watch) {
      send(r);
      return;
    }
    // httplib gzips a compressible response body when asked to, buffering a
    // stream until it ends; a watch must reach the client event by event.
    const_cast<httplib::Request&>(req).headers.erase("Accept-Encoding");
    res.status = 200;
    audit(200, true);
    auto ch = r.watch;
    // Only a watch the faults apply to may be cut.
    FaultInjector* drops = faults.Applies(ar.method, ar.path, ar.user) ? &faults : nullptr;
    res.set_chunked_content_provider(
        "application/json",
        [ch, drops](size_t, httplib::DataSink& sink) {
          auto item = ch->Next(std::chrono::milliseconds(250));
          switch (item.kind) {
            case WatchChannel::Item::Kind::kLine:
              if (!sink.write(item.line.data(), item.line.size())) {
                ch->Cancel();
                return false;
              }
              // A cut: the connection closes without the terminating
              // chunk, which the client reads as a broken stream.
              if (drops != nullptr && drops->DropWatchNow()) {
                ch->Cancel();
                return false;
              }
              return true;
            case WatchChannel::Item::Kind::kIdle:
              return true;
            case WatchChannel::Item::Kind::kClean:
              sink.done();
              return true;
            case WatchChannel::Item::Kind::kAbrupt:
              return false;
          }
          return false;
        },
        [ch](bool) { ch->Cancel(); });
  };
  f->server_->Get(".*", handler);
  f->server_->Post(".*", handler);
  f->server_->Put(".*", handler);
  f->server_->Patch(".*", handler);
  f->server_->Delete(".*", handler);

  if (options.port == 0) {
    f->port_ = f->server_->bind_to_any_port(options.host);
    if (f->port_ <= 0) return Status::Unavailable("cannot listen on " + options.host);
  } else {
    if (!f->server_->bind_to_port(options.host, options.port)) {
      return Status::Unavailable("cannot listen on " + options.host + ":" + std::to_string(options.port));
    }
    f->port_ = options.port;
  }
  std::string host = options.host.find(':') != std::string::npos ? "[" + options.host + "]" : options.host;
  f->url_ = std::string(options.tls ? "https://" : "http://") + host + ":" + std::to_string(f->port_);
  f->thread_ = std::thread([self] { self->server_->listen_after_bind(); });
  for (int i = 0; i < 500 && !f->server_->is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  return f;
}

HttpFrontend::~HttpFrontend() { Stop(); }

void HttpFrontend::SetTokens(std::map<std::string, std::string> tokens) {
  MutexLock lock(mu_);
  tokens_ = std::move(tokens);
}

void HttpFrontend::Stop() {
  if (stopped_.exchange(true)) return;
  api_.DropWatches(false);
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace fairbench::apiserver
