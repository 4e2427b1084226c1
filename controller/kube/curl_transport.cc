#include "controller/kube/curl_transport.h"
#include "common/mutex.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

namespace fairbench::kube {
namespace {

constexpr size_t kMaxBody = size_t{512} << 20;  // a response larger than this is refused
constexpr size_t kMaxPool = 16;

struct Sink {
  HttpResponse* response = nullptr;
  const std::function<bool(std::string_view)>* on_data = nullptr;  // streaming only
  bool consumer_stopped = false;
  bool too_large = false;
};

bool Success(int status) { return status >= 200 && status < 300; }

size_t OnBody(char* data, size_t size, size_t count, void* user) noexcept {
  auto* sink = static_cast<Sink*>(user);
  size_t n = size * count;
  try {
    if (sink->on_data && Success(sink->response->status)) {
      if (!(*sink->on_data)(std::string_view(data, n))) {
        sink->consumer_stopped = true;
        return 0;
      }
      return n;
    }
    if (sink->response->body.size() + n > kMaxBody) {
      sink->too_large = true;
      return 0;
    }
    sink->response->body.append(data, n);
    return n;
  } catch (...) {
    // Nothing may unwind through libcurl: fail the transfer instead.
    sink->consumer_stopped = true;
    return 0;
  }
}

size_t OnHeader(char* data, size_t size, size_t count, void* user) noexcept {
  auto* sink = static_cast<Sink*>(user);
  size_t n = size * count;
  try {
    std::string line(data, n);
    while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.pop_back();
    if (line.rfind("HTTP/", 0) == 0) {
      // A new status line (after 100 Continue or a redirect) starts over.
      size_t sp = line.find(' ');
      sink->response->status = sp == std::string::npos ? 0 : std::atoi(line.c_str() + sp + 1);
      sink->response->headers.clear();
    } else {
      size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
        size_t v = colon + 1;
        while (v < line.size() && line[v] == ' ') ++v;
        sink->response->headers[name] = line.substr(v);
      }
    }
  } catch (...) {
    return 0;
  }
  return n;
}

struct UrlParts {
  std::string scheme, host, port, path;
};

UrlParts SplitUrl(const std::string& url) {
  UrlParts u;
  size_t s = url.find("://");
  u.scheme = s == std::string::npos ? "https" : url.substr(0, s);
  std::string rest = s == std::string::npos ? url : url.substr(s + 3);
  size_t slash = rest.find('/');
  std::string hostport = rest.substr(0, slash);
  u.path = slash == std::string::npos ? "" : rest.substr(slash);
  while (!u.path.empty() && u.path.back() == '/') u.path.pop_back();
  if (!hostport.empty() && hostport[0] == '[') {
    size_t close = hostport.find(']');
    u.host = hostport.substr(0, close + 1);
    if (close + 1 < hostport.size() && hostport[close + 1] == ':') u.port = hostport.substr(close + 2);
  } else {
    size_t colon = hostport.rfind(':');
    u.host = hostport.substr(0, colon);
    if (colon != std::string::npos) u.port = hostport.substr(colon + 1);
  }
  if (u.port.empty()) u.port = u.scheme == "http" ? "80" : "443";
  return u;
}

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

CurlTransport::CurlTransport(std::string server, TlsOptions tls, std::string user_agent)
    : display_url_(server), tls_(std::move(tls)), user_agent_(std::move(user_agent)) {
  GlobalInit();
  UrlParts u = SplitUrl(server);
  if (!tls_.server_name.empty()) {
    // Connect to the configured address but verify (and send SNI for) the
    // certificate name: the URL carries the name, CONNECT_TO the address.
    connect_to_ = tls_.server_name + ":" + u.port + ":" + u.host + ":" + u.port;
    base_url_ = u.scheme + "://" + tls_.server_name + ":" + u.port + u.path;
  } else {
    base_url_ = u.scheme + "://" + u.host + ":" + u.port + u.path;
  }
  // Loopback never goes through a proxy (tests, port-forwards).
  const char* np = std::getenv("NO_PROXY");
  if (!np) np = std::getenv("no_proxy");
  no_proxy_ = std::string(np ? np : "");
  no_proxy_ += std::string(no_proxy_.empty() ? "" : ",") + "localhost,127.0.0.1,::1";
}

CurlTransport::~CurlTransport() {
  MutexLock lock(mu_);
  for (CURL* h : idle_) curl_easy_cleanup(h);
}

CURL* CurlTransport::Acquire() {
  {
    MutexLock lock(mu_);
    if (!idle_.empty()) {
      CURL* h = idle_.back();
      idle_.pop_back();
      return h;
    }
  }
  return curl_easy_init();
}

void CurlTransport::Release(CURL* handle) {
  // reset keeps the handle's live connections for the next request.
  curl_easy_reset(handle);
  MutexLock lock(mu_);
  if (idle_.size() < kMaxPool) {
    idle_.push_back(handle);
  } else {
    curl_easy_cleanup(handle);
  }
}

curl_slist* CurlTransport::Prepare(CURL* h, const HttpRequest& request, char* error_buffer) const {
  std::string url = base_url_ + request.path_and_query;
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(std::max<int64_t>(1, request.timeout.count())));
  curl_easy_setopt(h, CURLOPT_USERAGENT, user_agent_.c_str());
  curl_easy_setopt(h, CURLOPT_NOPROXY, no_proxy_.c_str());
  if (request.method == "GET") {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT" || request.method == "PATCH") {
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.data());
  }
  if (tls_.insecure) {
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  } else if (!tls_.ca_pem.empty()) {
    curl_blob ca{const_cast<char*>(tls_.ca_pem.data()), tls_.ca_pem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &ca);
    // Only the configured CA is trusted, as client-go does.
    curl_easy_setopt(h, CURLOPT_CAPATH, nullptr);
  }
  const std::string* cert = &tls_.client_cert_pem;
  const std::string* key = &tls_.client_key_pem;
  if (request.client_cert) {
    cert = &request.client_cert->cert_pem;
    key = &request.client_cert->key_pem;
  }
  if (!cert->empty()) {
    curl_blob c{const_cast<char*>(cert->data()), cert->size(), CURL_BLOB_COPY};
    curl_blob k{const_cast<char*>(key->data()), key->size(), CURL_BLOB_COPY};
    curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &c);
    curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &k);
    curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
  }
  curl_slist* headers = nullptr;
  for (const auto& [k, v] : request.headers) headers = curl_slist_append(headers, (k + ": " + v).c_str());
  // No "Expect: 100-continue" round trip for larger bodies.
  headers = curl_slist_append(headers, "Expect:");
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  return headers;
}

Status CurlTransport::TransportError(CURLcode code, const char* error_buffer, const HttpRequest& request) const {
  std::string detail = error_buffer && *error_buffer ? error_buffer : curl_easy_strerror(code);
  std::string what =
      request.method + " " + display_url_ + request.path_and_query.substr(0, request.path_and_query.find('?'));
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
      return Status::DeadlineExceeded(what + ": timed out after " + std::to_string(request.timeout.count()) + "ms (" +
                                      detail + ")");
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
      return Status::FailedPrecondition("TLS with " + display_url_ + " failed: " + detail +
                                        " (check certificate-authority, tls-server-name and the client certificate)");
    case CURLE_ABORTED_BY_CALLBACK: return Status::Cancelled(what + ": stopped");
    default: return Status::Unavailable(what + ": " + detail);
  }
}

Result<HttpResponse> CurlTransport::Do(const HttpRequest& request) {
  CURL* h = Acquire();
  if (!h) return Status::Internal("curl_easy_init failed");
  char error_buffer[CURL_ERROR_SIZE] = {0};
  curl_slist* headers = Prepare(h, request, error_buffer);
  curl_slist* connect_to = connect_to_.empty() ? nullptr : curl_slist_append(nullptr, connect_to_.c_str());
  if (connect_to) curl_easy_setopt(h, CURLOPT_CONNECT_TO, connect_to);
  // Ordinary responses may be compressed; watch streams never are.
  curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
  HttpResponse response;
  Sink sink{&response, nullptr, false, false};
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &sink);
  CURLcode rc = curl_easy_perform(h);
  curl_slist_free_all(headers);
  curl_slist_free_all(connect_to);
  Release(h);
  if (sink.too_large) return Status::Unavailable("response larger than " + std::to_string(kMaxBody) + " bytes");
  // kube-apiserver refuses a request with a body (401, 403, 429, …) without
  // reading the body, then resets the HTTP/2 stream: libcurl may report the
  // reset ("Transferred a partial file") after the refusal's status line, and
  // the body may be cut. The refusal is the answer: a client that saw only a
  // transport error would neither refresh its credentials nor wait its
  // Retry-After, and could not retry a create at all.
  const bool reset_after_status = rc == CURLE_PARTIAL_FILE || rc == CURLE_HTTP2_STREAM || rc == CURLE_HTTP2 ||
                                  rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR;
  if (rc != CURLE_OK && reset_after_status && response.status >= 400) return response;
  if (rc != CURLE_OK) return TransportError(rc, error_buffer, request);
  return response;
}

Result<HttpResponse> CurlTransport::Stream(const HttpRequest& request,
                                           const std::function<bool(std::string_view)>& on_data, std::stop_token stop) {
  CURL* h = Acquire();
  if (!h) return Status::Internal("curl_easy_init failed");
  char error_buffer[CURL_ERROR_SIZE] = {0};
  curl_slist* headers = Prepare(h, request, error_buffer);
  curl_slist* connect_to = connect_to_.empty() ? nullptr : curl_slist_append(nullptr, connect_to_.c_str());
  if (connect_to) curl_easy_setopt(h, CURLOPT_CONNECT_TO, connect_to);
  HttpResponse response;
  Sink sink{&response, &on_data, false, false};
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &sink);

  CURLM* multi = curl_multi_init();
  curl_multi_add_handle(multi, h);
  bool stopped = false;
  {
    // A stop request wakes the poll below at once.
    std::stop_callback wake(stop, [multi] { curl_multi_wakeup(multi); });
    int running = 1;
    while (running) {
      if (curl_multi_perform(multi, &running) != CURLM_OK) break;
      if (!running) break;
      if (stop.stop_requested()) {
        stopped = true;
        break;
      }
      curl_multi_poll(multi, nullptr, 0, 1000, nullptr);
    }
  }
  CURLcode rc = CURLE_OK;
  int queued = 0;
  while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
    if (msg->msg == CURLMSG_DONE) rc = msg->data.result;
  }
  curl_multi_remove_handle(multi, h);
  curl_multi_cleanup(multi);
  curl_slist_free_all(headers);
  curl_slist_free_all(connect_to);
  // A stopped transfer may leave its connection half-read: do not reuse it.
  if (stopped || sink.consumer_stopped || rc != CURLE_OK) {
    curl_easy_cleanup(h);
  } else {
    Release(h);
  }
  if (stopped || (sink.consumer_stopped && stop.stop_requested())) return Status::Cancelled("watch stopped");
  if (sink.consumer_stopped) return Status::Cancelled("watch ended by its consumer");
  if (rc != CURLE_OK) return TransportError(rc, error_buffer, request);
  return response;
}

}  // namespace fairbench::kube
