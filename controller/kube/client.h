// Client: the Kubernetes API client of fairbench, on libcurl (OpenSSL).
// Generic operations on any resource — get, list (selectors, limit/continue),
// create, update, merge/JSON/strategic patch, server-side apply (fieldManager,
// force), delete (propagationPolicy, preconditions), the status subresource,
// watch, discovery — with errors as values (ApiError), a timeout on every
// call (covering its retries), bounded retries with backoff for retriable
// failures (429 honours Retry-After), and one credential refresh after a 401
// (token file re-read, exec plugin re-run). Each retry is logged (spdlog,
// warn): method, path, code, reason, and the wait (and whether Retry-After
// set it). TypedClient (typed_client.h)
// adds typed objects.
//
// Namespaces: for object operations an empty `ns` means the configured
// default namespace; for List and Watch it means all namespaces.
// Cluster-scoped resources ignore `ns`.
//
// Thread-safe. Every call blocks its thread (libcurl runs on it): never call
// from an event-loop thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "controller/kube/api_error.h"
#include "common/backoff.h"
#include "common/clock.h"
#include "controller/kube/http_transport.h"
#include "controller/kube/objects.h"
#include "controller/kube/request_options.h"
#include "controller/kube/resource.h"
#include "controller/kube/rest_config.h"

namespace fairbench::kube {

struct ObjectList {
  std::vector<Json> items;
  std::string resource_version;
  std::string continue_token;  // non-empty: more pages
  std::optional<int64_t> remaining_item_count;
};

struct WatchEvent {
  enum class Type { kAdded, kModified, kDeleted, kBookmark, kError };
  Type type = Type::kAdded;
  Json object;     // the object (for kBookmark only metadata.resourceVersion matters)
  ApiError error;  // kError only: the Status the server sent (410 Expired, ...)
  std::string ResourceVersion() const;
};
const char* WatchEventTypeName(WatchEvent::Type t);
// How a failure is named in a retry log line: "429 TooManyRequests: Too
// many requests…" (code, reason, the message cut at 160 characters).
std::string RetryCause(const ApiError& e);

// How a watch stream ended without an error.
enum class WatchEnd {
  kClosed,   // the server closed it cleanly (timeoutSeconds, or its own limit)
  kStopped,  // the caller's stop token
};

struct ClientOptions {
  int max_attempts = 5;  // per call, retries included
  BackoffPolicy retry_backoff{std::chrono::milliseconds(100), std::chrono::milliseconds(5000), 2.0, 0.2};
  std::chrono::seconds max_retry_after{30};  // a longer Retry-After is capped
  Clock* clock = nullptr;                    // null = system clock
};

class Client {
 public:
  // Validates the config and connects through a CurlTransport.
  static Result<std::unique_ptr<Client>> Create(RestConfig config, ClientOptions options = {});
  Client(RestConfig config, std::unique_ptr<HttpTransport> transport, ClientOptions options = {});

  const RestConfig& config() const { return config_; }
  const std::string& default_namespace() const { return config_.default_namespace; }

  ApiResult<Json> Get(const ResourceType& r, std::string_view ns, std::string_view name,
                      const GetOptions& options = {});
  ApiResult<Json> GetStatus(const ResourceType& r, std::string_view ns, std::string_view name,
                            const GetOptions& options = {});
  // The body of a GET of a subresource that answers text, e.g. pods/log
  // with query {{"container", "c"}, {"limitBytes", "4096"}}.
  ApiResult<std::string> GetText(const ResourceType& r, std::string_view ns, std::string_view name,
                                 std::string_view subresource,
                                 const std::vector<std::pair<std::string, std::string>>& query = {},
                                 std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  // One page (options.limit/continue_token); see ListAll for every page.
  ApiResult<ObjectList> List(const ResourceType& r, std::string_view ns, const ListOptions& options = {});
  // Every page, all at one list RV; restarts (bounded) if a continue token expires.
  ApiResult<ObjectList> ListAll(const ResourceType& r, std::string_view ns, ListOptions options = {});

  // ns empty: the object's metadata.namespace, else the default namespace.
  ApiResult<Json> Create(const ResourceType& r, std::string_view ns, const Json& object,
                         const WriteOptions& options = {});
  // POST to a subresource of an object (serviceaccounts/NAME/token: a
  // TokenRequest).
  ApiResult<Json> CreateSubresource(const ResourceType& r, std::string_view ns, std::string_view name,
                                    std::string_view subresource, const Json& object, const WriteOptions& options = {});
  // PUT of the whole object; its metadata.resourceVersion is the precondition.
  ApiResult<Json> Update(const ResourceType& r, const Json& object, const WriteOptions& options = {});
  ApiResult<Json> UpdateStatus(const ResourceType& r, const Json& object, const WriteOptions& options = {});
  ApiResult<Json> Patch(const ResourceType& r, std::string_view ns, std::string_view name, PatchType type,
                        std::string_view body, const PatchOptions& options = {}, std::string_view subresource = {});
  // Server-side apply of `object` (its apiVersion, kind, metadata.name and
  // namespace identify it); options.field_manager is required.
  ApiResult<Json> Apply(const ResourceType& r, const Json& object, const PatchOptions& options,
                        std::string_view subresource = {});
  // The object with deletionTimestamp while finalizers or a grace period
  // hold it, or the server's Success Status once it is gone.
  ApiResult<Json> Delete(const ResourceType& r, std::string_view ns, std::string_view name,
                         const DeleteOptions& options = {});

  // Deletes every object the selectors match (empty ns: all namespaces);
  // returns what the server deleted or marked for deletion.
  ApiResult<ObjectList> DeleteCollection(const ResourceType& r, std::string_view ns, const ListOptions& selectors,
                                         const DeleteOptions& options = {});

  // Streams events to `on_event` (on this thread) until the server closes
  // the stream (kClosed), `stop` is requested (kStopped), or a failure: an
  // error status before streaming (410, 429, 403, ...), a cut connection,
  // an undecodable event. ERROR events are delivered, not returned.
  ApiResult<WatchEnd> Watch(const ResourceType& r, std::string_view ns, const WatchOptions& options,
                            const std::function<void(WatchEvent&&)>& on_event, std::stop_token stop = {});

  // Resolves a kind through discovery ("fairbench.dev/v1alpha1", "BenchmarkRun").
  ApiResult<ResourceType> Discover(std::string_view api_version, std::string_view kind);

 private:
  struct Call {
    std::string method;
    std::string path;
    std::vector<std::pair<std::string, std::string>> query;
    std::string body;
    std::string content_type;
    std::chrono::milliseconds timeout{0};
    bool idempotent = true;
  };
  ApiResult<HttpResponse> Execute(const Call& call);
  ApiResult<Json> ExecuteJson(const Call& call);
  // Adds credentials to a request; an error if the source fails.
  std::optional<ApiError> Authorize(HttpRequest* request, ClientCertificate* cert_storage);
  std::string NamespaceFor(const ResourceType& r, std::string_view ns, const Json* object) const;
  std::chrono::milliseconds TimeoutOr(std::chrono::milliseconds t) const;

  const RestConfig config_;
  std::unique_ptr<HttpTransport> transport_;
  const ClientOptions options_;
  Clock& clock_;
};

}  // namespace fairbench::kube
