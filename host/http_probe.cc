#include "host/http_probe.h"

#include <curl/curl.h>

#include <mutex>

namespace fairbench::host {
namespace {

size_t Append(char* data, size_t size, size_t n, void* out) {
  auto* body = static_cast<std::string*>(out);
  if (body->size() > (16u << 20)) return 0;  // a probe never needs more
  body->append(data, size * n);
  return size * n;
}

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

Result<ProbeResponse> HttpProbe(const ProbeRequest& r) {
  GlobalInit();
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return Status::Internal("curl_easy_init failed");
  const bool v6 = r.host.find(':') != std::string::npos;
  const std::string url = std::string(ToString(r.scheme)) + "://" + (v6 ? "[" + r.host + "]" : r.host) + ":" +
                          std::to_string(r.port) + r.path;
  ProbeResponse out;
  curl_slist* headers = nullptr;
  for (const auto& [k, v] : r.headers) headers = curl_slist_append(headers, (k + ": " + v).c_str());
  headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, r.method.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_NOPROXY, "*");
  if (r.scheme == Scheme::kHttps) {
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  // A gRPC target's port speaks HTTP/2 as its scheme says.
  switch (WireProtocol(r.protocol, r.scheme)) {
    case Protocol::kGrpc:  // not after WireProtocol
    case Protocol::kH2c:
      curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE));
      break;
    case Protocol::kH2: curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS)); break;
    case Protocol::kHttp1:
      curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
      break;
  }
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(r.timeout.count()));
  const auto connect_timeout = r.connect_timeout.count() > 0 ? r.connect_timeout : r.timeout;
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(connect_timeout.count()));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &out.body);
  if (r.method == "HEAD") curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  if (!r.body.empty()) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, r.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
  }
  const CURLcode rc = curl_easy_perform(curl);
  Status status;
  if (rc != CURLE_OK) {
    status = Status::Unavailable(std::string(r.method + " " + url + ": ") + curl_easy_strerror(rc));
  } else {
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &out.status);
    char* ct = nullptr;
    curl_easy_getinfo(curl, CURLINFO_CONTENT_TYPE, &ct);
    if (ct != nullptr) out.content_type = ct;
    long version = 0;
    curl_easy_getinfo(curl, CURLINFO_HTTP_VERSION, &version);
    if (WireProtocol(r.protocol, r.scheme) == Protocol::kH2 && version != CURL_HTTP_VERSION_2_0) {
      // libcurl falls back to HTTP/1.1 when ALPN does not choose h2; the
      // agents would not.
      status =
          Status::FailedPrecondition(r.method + " " + url + ": protocol h2, but the server did not choose h2 by ALPN");
    }
  }
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  if (!status.ok()) return status;
  return out;
}

}  // namespace fairbench::host
