#include "testing/kubetest/fault_proxy.h"

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>

namespace fairbench::kubetest {
namespace {

using namespace std::chrono_literals;

// Headers that belong to one hop, not to the request or its answer.
bool HopByHop(const std::string& name) {
  static const std::set<std::string> kHop = {"host",
                                             "connection",
                                             "keep-alive",
                                             "content-length",
                                             "transfer-encoding",
                                             "accept-encoding",
                                             "content-encoding",
                                             "remote_addr",
                                             "remote_port",
                                             "local_addr",
                                             "local_port",
                                             "upgrade"};
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return kHop.count(lower) > 0;
}

std::string Base64UrlDecode(std::string in) {
  for (char& c : in) {
    if (c == '-') c = '+';
    if (c == '_') c = '/';
  }
  static const std::string kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    size_t v = kAlphabet.find(c);
    if (v == std::string::npos) break;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

bool IsWatch(const httplib::Request& req) {
  if (req.method != "GET") return false;
  auto w = req.params.find("watch");
  if (w != req.params.end() && (w->second == "true" || w->second == "1")) return true;
  return req.path.find("/watch/") != std::string::npos;
}

std::string Param(const httplib::Request& req, const std::string& key) {
  auto it = req.params.find(key);
  return it == req.params.end() ? "" : it->second;
}

// The end of the next whole event in `buf`: a JSON line, or a
// length-prefixed protobuf frame; 0 while the event is incomplete.
size_t NextEvent(const std::string& buf, bool protobuf) {
  if (protobuf) {
    if (buf.size() < 4) return 0;
    const auto* p = reinterpret_cast<const unsigned char*>(buf.data());
    const size_t n = (size_t{p[0]} << 24) | (size_t{p[1]} << 16) | (size_t{p[2]} << 8) | size_t{p[3]};
    return buf.size() >= 4 + n ? 4 + n : 0;
  }
  const size_t nl = buf.find('\n');
  return nl == std::string::npos ? 0 : nl + 1;
}

}  // namespace

// One request on its way to the API server. A watch streams through it:
// the upstream thread appends what arrives, the server thread passes it on
// event by event.
struct FaultProxy::Watch {
  std::unique_ptr<httplib::ClientImpl> client;
  std::thread thread;
  std::mutex mu;
  std::condition_variable cv;
  int status = 0;  // the API server's status code, once its headers came
  httplib::Headers headers;
  std::string buffer;
  bool done = false;    // the API server's answer ended (or failed)
  bool broken = false;  // ... without its end: a cut connection
  bool cut = false;     // the proxy cut it

  void Cut() {
    {
      std::lock_guard<std::mutex> lock(mu);
      cut = true;
    }
    cv.notify_all();
    if (client) client->stop();
  }
  void Join() {
    Cut();
    if (thread.joinable()) thread.join();
  }
  static void Send(const std::shared_ptr<Watch>& w, httplib::Request up);
  // Passes the watch's events on to `res` one by one as they arrive;
  // `forget` runs once the client's stream has ended.
  static void PassOnStream(const std::shared_ptr<Watch>& w, const std::string& content_type, FaultInjector& faults,
                           FaultInjector* drops, bool expiring, const std::function<void()>& forget,
                           httplib::Response& res);
};

namespace {

void Reply(const StatusReply& reply, httplib::Response& res) {
  res.status = reply.code;
  for (const auto& [k, v] : reply.headers) res.set_header(k, v);
  res.set_content(reply.body.dump(), "application/json");
}

// A client of the API server for one request: as the proxy's own user (the
// client certificate) when the request has no credentials of its own.
std::unique_ptr<httplib::SSLClient> UpstreamClient(const FaultProxyOptions& options, bool anonymous, bool watch) {
  const std::string hostport = options.upstream.substr(std::string("https://").size());
  const size_t colon = hostport.rfind(':');
  const std::string host = hostport.substr(0, colon);
  const int port = std::stoi(hostport.substr(colon + 1));
  std::unique_ptr<httplib::SSLClient> client;
  if (anonymous) {
    client = std::make_unique<httplib::SSLClient>(host, port, options.client_cert_file, options.client_key_file);
  } else {
    client = std::make_unique<httplib::SSLClient>(host, port);
  }
  client->set_ca_cert_path(options.ca_file.c_str());
  client->enable_server_certificate_verification(true);
  client->set_connection_timeout(5, 0);
  client->set_read_timeout(watch ? 3600 : 120, 0);
  client->set_write_timeout(30, 0);
  client->set_keep_alive(false);
  return client;
}

// The request as the API server is to see it.
httplib::Request UpstreamRequest(const httplib::Request& req) {
  httplib::Request up;
  up.method = req.method;
  up.path = req.target;
  for (const auto& [k, v] : req.headers) {
    if (!HopByHop(k)) up.headers.emplace(k, v);
  }
  up.headers.emplace("Accept-Encoding", "identity");
  up.body = req.body;
  return up;
}

// Copies the API server's end-to-end headers into `res`; returns its
// Content-Type (JSON when it gave none).
std::string PassOnHeaders(const httplib::Headers& headers, httplib::Response& res) {
  std::string content_type = "application/json";
  for (const auto& [k, v] : headers) {
    if (HopByHop(k)) continue;
    if (k == "Content-Type") {
      content_type = v;
      continue;
    }
    res.headers.emplace(k, v);
  }
  return content_type;
}

// The API server's answer, once whole; `broken` when it never came.
struct WholeAnswer {
  int status = 0;
  bool broken = false;
  httplib::Headers headers;
  std::string body;
};

// Passes on an answer that is not a stream, or what a fault makes of it.
void PassOnWhole(const WholeAnswer& answer, const FaultPlan& plan, bool watch, FaultInjector& faults,
                 httplib::Response& res) {
  if (answer.broken && watch) {
    // Cut before the API server answered (DropWatches, a lost connection):
    // the client's stream breaks, as a real cut breaks it.
    res.status = 200;
    res.set_chunked_content_provider("application/json", [](size_t, httplib::DataSink&) { return false; });
    return;
  }
  if (answer.broken) {
    res.status = 502;
    res.set_content("the API server did not answer", "text/plain");
    return;
  }
  if (plan.compact_history && answer.status == 410) faults.CountExpired();
  if (plan.compact_history && watch && answer.body.find("\"code\":410") != std::string::npos) faults.CountExpired();
  if (plan.lose_reply) {
    // The API server handled it (a write took effect); the client hears
    // that its request timed out.
    Reply(FaultInjector::TimeoutReply(), res);
    return;
  }
  res.status = answer.status;
  const std::string content_type = PassOnHeaders(answer.headers, res);
  res.set_content(answer.body, content_type);
}

}  // namespace

// Sends `up` on the watch's thread; what arrives goes into the watch.
void FaultProxy::Watch::Send(const std::shared_ptr<Watch>& w, httplib::Request up) {
  up.response_handler = [w](const httplib::Response& r) {
    {
      std::lock_guard<std::mutex> lock(w->mu);
      w->status = r.status;
      w->headers = r.headers;
    }
    w->cv.notify_all();
    return true;
  };
  up.content_receiver = [w](const char* data, size_t n, uint64_t, uint64_t) {
    {
      std::lock_guard<std::mutex> lock(w->mu);
      if (w->cut) return false;
      w->buffer.append(data, n);
    }
    w->cv.notify_all();
    return true;
  };
  w->thread = std::thread([w, up = std::move(up)]() mutable {
    httplib::Response r;
    httplib::Error error = httplib::Error::Success;
    const bool ok = w->client->send(up, r, error);
    {
      std::lock_guard<std::mutex> lock(w->mu);
      w->done = true;
      w->broken = !ok;
      if (w->status == 0 && ok) {
        w->status = r.status;
        w->headers = r.headers;
      }
    }
    w->cv.notify_all();
  });
}

Result<std::unique_ptr<FaultProxy>> FaultProxy::Start(FaultProxyOptions options) {
  std::unique_ptr<FaultProxy> p(new FaultProxy());
  p->options_ = std::move(options);
  const std::string prefix = "https://";
  if (p->options_.upstream.rfind(prefix, 0) != 0) {
    return Status::InvalidArgument("FaultProxy: the API server's address must be https://HOST:PORT, not " +
                                   p->options_.upstream);
  }
  p->server_ = std::make_unique<httplib::Server>();
  // Watches hold a thread each for as long as they stream.
  p->server_->new_task_queue = [] { return new httplib::ThreadPool(64); };
  p->server_->set_read_timeout(300, 0);
  p->server_->set_write_timeout(30, 0);
  FaultProxy* self = p.get();
  auto handler = [self](const httplib::Request& req, httplib::Response& res) { self->Handle(&req, &res); };
  p->server_->Get(".*", handler);
  p->server_->Post(".*", handler);
  p->server_->Put(".*", handler);
  p->server_->Patch(".*", handler);
  p->server_->Delete(".*", handler);
  p->port_ = p->server_->bind_to_any_port("127.0.0.1");
  if (p->port_ <= 0) return Status::Unavailable("FaultProxy: cannot listen on 127.0.0.1");
  p->url_ = "http://127.0.0.1:" + std::to_string(p->port_);
  p->thread_ = std::thread([self] { self->server_->listen_after_bind(); });
  for (int i = 0; i < 500 && !p->server_->is_running(); ++i) std::this_thread::sleep_for(2ms);
  return p;
}

FaultProxy::~FaultProxy() { Stop(); }

void FaultProxy::Stop() {
  if (stopped_.exchange(true)) return;
  DropWatches();
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

void FaultProxy::DropWatches() {
  std::set<std::shared_ptr<Watch>> open;
  {
    MutexLock lock(mu_);
    open = watches_;
  }
  for (const auto& w : open) w->Cut();
}

int FaultProxy::open_watches() const {
  MutexLock lock(mu_);
  int streaming = 0;
  for (const auto& w : watches_) {
    std::lock_guard<std::mutex> l(w->mu);
    streaming += w->status == 200 && !w->done && !w->cut ? 1 : 0;
  }
  return streaming;
}

std::string FaultProxy::UserOf(const std::string& authorization) const {
  if (authorization.empty()) return options_.admin_user;
  // A ServiceAccount token is a JWT: its subject names the user. The API
  // server checks the token; the proxy only reads whom the faults apply to.
  const std::string bearer = "Bearer ";
  if (authorization.rfind(bearer, 0) != 0) return "";
  const std::string token = authorization.substr(bearer.size());
  const size_t a = token.find('.');
  const size_t b = a == std::string::npos ? a : token.find('.', a + 1);
  if (b == std::string::npos) return "";
  auto claims = nlohmann::json::parse(Base64UrlDecode(token.substr(a + 1, b - a - 1)), nullptr, false);
  if (!claims.is_object() || !claims.contains("sub") || !claims["sub"].is_string()) return "";
  return claims["sub"].get<std::string>();
}

void FaultProxy::Handle(const void* request, void* response) {
  const auto& req = *static_cast<const httplib::Request*>(request);
  auto& res = *static_cast<httplib::Response*>(response);
  const std::string authorization = req.get_header_value("Authorization");
  const std::string user = UserOf(authorization);
  const bool watch = IsWatch(req);
  const std::string from_rv = Param(req, "resourceVersion");
  const bool continued = !Param(req, "continue").empty();
  const bool resumes = (watch && !from_rv.empty() && from_rv != "0") || continued;
  FaultPlan plan = faults_.Plan(req.method, req.path, user, watch, resumes);
  if (plan.delay.count() > 0) std::this_thread::sleep_for(plan.delay);
  if (plan.reply) {
    Reply(*plan.reply, res);
    return;
  }
  if (plan.compact_history && options_.compact) (void)options_.compact();

  auto w = std::make_shared<Watch>();
  w->client = UpstreamClient(options_, authorization.empty(), watch);
  httplib::Request up = UpstreamRequest(req);
  forwarded_.fetch_add(1);
  if (watch) {
    MutexLock lock(mu_);
    watches_.insert(w);
  }
  Watch::Send(w, std::move(up));
  auto forget = [this, w] {
    w->Join();
    MutexLock lock(mu_);
    watches_.erase(w);
  };

  std::unique_lock<std::mutex> lock(w->mu);
  // A streaming answer is passed on as it comes; any other once it is whole.
  w->cv.wait_for(lock, 150s, [&] { return w->done || (watch && w->status != 0); });
  if (!watch || w->status != 200 || w->done) {
    w->cv.wait_for(lock, 150s, [&] { return w->done; });
    WholeAnswer answer{w->status, w->broken && w->status == 0, w->headers, std::move(w->buffer)};
    lock.unlock();
    forget();
    PassOnWhole(answer, plan, watch, faults_, res);
    return;
  }
  const std::string content_type = PassOnHeaders(w->headers, res);
  lock.unlock();
  // A watch streams event by event; httplib would gzip a stream whole.
  const_cast<httplib::Request&>(req).headers.erase("Accept-Encoding");
  FaultInjector* drops = faults_.Applies(req.method, req.path, user) ? &faults_ : nullptr;
  Watch::PassOnStream(w, content_type, faults_, drops, plan.compact_history, forget, res);
}

void FaultProxy::Watch::PassOnStream(const std::shared_ptr<Watch>& w, const std::string& content_type,
                                     FaultInjector& faults, FaultInjector* drops, bool expiring,
                                     const std::function<void()>& forget, httplib::Response& res) {
  const bool protobuf = content_type.find("protobuf") != std::string::npos;
  res.status = 200;
  res.set_chunked_content_provider(
      content_type,
      [&faults, w, drops, protobuf, expiring, first = true](size_t, httplib::DataSink& sink) mutable {
        std::unique_lock<std::mutex> l(w->mu);
        w->cv.wait_for(l, 250ms, [&] { return w->cut || w->done || NextEvent(w->buffer, protobuf) > 0; });
        if (w->cut) return false;
        for (size_t n; (n = NextEvent(w->buffer, protobuf)) > 0;) {
          std::string event = w->buffer.substr(0, n);
          w->buffer.erase(0, n);
          if (first && expiring && event.find("\"code\":410") != std::string::npos) faults.CountExpired();
          first = false;
          l.unlock();
          if (!sink.write(event.data(), event.size())) return false;
          // A cut: the connection closes without the terminating chunk,
          // which the client reads as a broken stream.
          if (drops != nullptr && drops->DropWatchNow()) return false;
          l.lock();
          if (w->cut) return false;
        }
        if (w->done) {
          if (w->broken) return false;
          sink.done();
        }
        return true;
      },
      [forget](bool) { forget(); });
}

}  // namespace fairbench::kubetest
