#include "controller/kube/client.h"

#include <spdlog/spdlog.h>

#include "controller/kube/api_fields.h"
#include "controller/kube/curl_transport.h"
#include "controller/kube/line_splitter.h"

namespace fairbench::kube {

namespace f = fields;

namespace {

std::string BuildPath(const std::string& path, const std::vector<std::pair<std::string, std::string>>& query) {
  std::string out = path;
  char sep = '?';
  for (const auto& [k, v] : query) {
    out += sep;
    out += k + "=" + QueryEscape(v);
    sep = '&';
  }
  return out;
}

void AddIf(std::vector<std::pair<std::string, std::string>>* q, const char* key, const std::string& v) {
  if (!v.empty()) q->emplace_back(key, v);
}

void AddWrite(std::vector<std::pair<std::string, std::string>>* q, const std::string& manager,
              const std::string& validation, bool dry_run) {
  AddIf(q, f::kQueryFieldManager, manager);
  AddIf(q, f::kQueryFieldValidation, validation);
  if (dry_run) q->emplace_back(f::kQueryDryRun, "All");
}

ApiError DecodeError(const std::string& what) {
  ApiError e;
  e.reason = Reason::kDecode;
  e.message = what;
  return e;
}

// metadata.<key> when it is a string, else "". (Json::value throws when the
// key holds another type, and a watch event's object is the server's word.)
std::string MetaString(const Json& object, const char* key) {
  if (!object.is_object() || !object.contains(f::kMetadata) || !object[f::kMetadata].is_object()) return "";
  const Json& meta = object[f::kMetadata];
  const auto it = meta.find(key);
  return it != meta.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

std::string RetryCause(const ApiError& e) {
  std::string out = e.http_code != 0 ? std::to_string(e.http_code) + " " : std::string();
  out += ReasonName(e.reason);
  if (!e.message.empty()) out += ": " + (e.message.size() > 160 ? e.message.substr(0, 160) + "…" : e.message);
  return out;
}

std::string WatchEvent::ResourceVersion() const { return MetaString(object, f::kResourceVersion); }

const char* WatchEventTypeName(WatchEvent::Type t) {
  switch (t) {
    case WatchEvent::Type::kAdded: return f::kAdded;
    case WatchEvent::Type::kModified: return f::kModified;
    case WatchEvent::Type::kDeleted: return f::kDeleted;
    case WatchEvent::Type::kBookmark: return f::kBookmark;
    case WatchEvent::Type::kError: return f::kError;
  }
  return "UNKNOWN";
}

Result<std::unique_ptr<Client>> Client::Create(RestConfig config, ClientOptions options) {
  Status s = config.Validate();
  if (!s.ok()) return s;
  auto transport = std::make_unique<CurlTransport>(config.server, config.tls, config.user_agent);
  return std::make_unique<Client>(std::move(config), std::move(transport), options);
}

Client::Client(RestConfig config, std::unique_ptr<HttpTransport> transport, ClientOptions options)
    : config_(std::move(config)),
      transport_(std::move(transport)),
      options_(options),
      clock_(options.clock ? *options.clock : SystemClock::Instance()) {}

std::chrono::milliseconds Client::TimeoutOr(std::chrono::milliseconds t) const {
  return t.count() > 0 ? t : config_.timeout;
}

std::string Client::NamespaceFor(const ResourceType& r, std::string_view ns, const Json* object) const {
  if (!r.namespaced()) return "";
  if (!ns.empty()) return std::string(ns);
  if (object) {
    std::string from_object = MetaString(*object, f::kNamespace);
    if (!from_object.empty()) return from_object;
  }
  return config_.default_namespace;
}

std::optional<ApiError> Client::Authorize(HttpRequest* request, ClientCertificate* cert_storage) {
  if (!config_.credentials) return std::nullopt;
  auto creds = config_.credentials->Get();
  if (!creds.ok()) {
    ApiError e;
    e.reason = Reason::kUnauthorized;
    e.message = "cannot get credentials: " + creds.status().message();
    return e;
  }
  if (!creds->token.empty()) request->headers.emplace_back("Authorization", "Bearer " + creds->token);
  if (!creds->client_cert_pem.empty()) {
    cert_storage->cert_pem = creds->client_cert_pem;
    cert_storage->key_pem = creds->client_key_pem;
    request->client_cert = cert_storage;
  }
  return std::nullopt;
}

ApiResult<HttpResponse> Client::Execute(const Call& call) {
  Backoff backoff(options_.retry_backoff);
  bool refreshed = false;
  // The timeout bounds the whole call, retries and waits included.
  const auto timeout = TimeoutOr(call.timeout);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto remaining = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  };
  for (int attempt = 1;; ++attempt) {
    HttpRequest req;
    req.method = call.method;
    req.path_and_query = BuildPath(call.path, call.query);
    req.body = call.body;
    req.timeout = std::max(remaining(), std::chrono::milliseconds(1));
    req.headers.emplace_back("Accept", f::kJson);
    if (!call.content_type.empty()) req.headers.emplace_back("Content-Type", call.content_type);
    ClientCertificate cert;
    if (auto denied = Authorize(&req, &cert)) return *denied;
    auto resp = transport_->Do(req);
    ApiError err;
    if (!resp.ok()) {
      err = ApiError::FromTransport(resp.status());
    } else if (resp->status >= 200 && resp->status < 300) {
      return std::move(*resp);
    } else {
      err = ApiError::FromResponse(resp->status, resp->body, resp->headers);
    }
    // A rotated token or an expired exec credential: refresh once, at once.
    if (err.reason == Reason::kUnauthorized && config_.credentials && !refreshed) {
      config_.credentials->Invalidate();
      refreshed = true;
      --attempt;
      continue;
    }
    // 429 and 503 mean the request was not processed: safe to resend even
    // when it is not idempotent.
    bool resend_safe =
        call.idempotent || err.reason == Reason::kTooManyRequests || err.reason == Reason::kServiceUnavailable;
    if (!err.Retriable() || !resend_safe || attempt >= options_.max_attempts) return err;
    std::chrono::nanoseconds wait = backoff.Next();
    const bool told = err.retry_after && err.retry_after->count() > 0;
    if (told) wait = std::min<std::chrono::nanoseconds>(*err.retry_after, options_.max_retry_after);
    if (remaining() <= wait) return err;  // no time left for another attempt
    // One line per retry: what failed, how, and how long until the next try.
    spdlog::warn("{} {}: {} (attempt {} of {}); retrying in {} ms{}", call.method, call.path, RetryCause(err), attempt,
                 options_.max_attempts, std::chrono::duration_cast<std::chrono::milliseconds>(wait).count(),
                 told ? " (Retry-After)" : "");
    clock_.SleepFor(wait);
  }
}

ApiResult<Json> Client::ExecuteJson(const Call& call) {
  auto resp = Execute(call);
  if (!resp.ok()) return resp.error();
  auto j = Json::parse(resp->body, nullptr, false);
  if (j.is_discarded()) return DecodeError(call.method + " " + call.path + ": the response is not JSON");
  return j;
}

ApiResult<Json> Client::Get(const ResourceType& r, std::string_view ns, std::string_view name,
                            const GetOptions& options) {
  Call c{"GET", r.Path(NamespaceFor(r, ns, nullptr), name), {}, "", "", options.timeout, true};
  AddIf(&c.query, f::kQueryResourceVersion, options.resource_version);
  return ExecuteJson(c);
}

ApiResult<Json> Client::GetStatus(const ResourceType& r, std::string_view ns, std::string_view name,
                                  const GetOptions& options) {
  Call c{"GET", r.Path(NamespaceFor(r, ns, nullptr), name, f::kStatus), {}, "", "", options.timeout, true};
  AddIf(&c.query, f::kQueryResourceVersion, options.resource_version);
  return ExecuteJson(c);
}

ApiResult<std::string> Client::GetText(const ResourceType& r, std::string_view ns, std::string_view name,
                                       std::string_view subresource,
                                       const std::vector<std::pair<std::string, std::string>>& query,
                                       std::chrono::milliseconds timeout) {
  Call c{"GET", r.Path(NamespaceFor(r, ns, nullptr), name, subresource), query, "", "", timeout, true};
  auto resp = Execute(c);
  if (!resp.ok()) return resp.error();
  return std::move(resp->body);
}

ApiResult<ObjectList> Client::List(const ResourceType& r, std::string_view ns, const ListOptions& options) {
  Call c{"GET", r.Path(r.namespaced() ? ns : "", ""), {}, "", "", options.timeout, true};
  AddIf(&c.query, f::kQueryLabelSelector, options.label_selector);
  AddIf(&c.query, f::kQueryFieldSelector, options.field_selector);
  if (options.limit > 0) c.query.emplace_back(f::kQueryLimit, std::to_string(options.limit));
  AddIf(&c.query, f::kQueryContinue, options.continue_token);
  AddIf(&c.query, f::kQueryResourceVersion, options.resource_version);
  AddIf(&c.query, f::kQueryResourceVersionMatch, options.resource_version_match);
  auto j = ExecuteJson(c);
  if (!j.ok()) return j.error();
  if (!j->is_object()) return DecodeError("list of " + r.plural + ": not an object");
  ObjectList list;
  const Json& md = j->value(f::kMetadata, Json::object());
  list.resource_version = md.value(f::kResourceVersion, "");
  list.continue_token = md.value(f::kContinue, "");
  if (md.contains(f::kRemainingItemCount) && md[f::kRemainingItemCount].is_number_integer()) {
    list.remaining_item_count = md[f::kRemainingItemCount].get<int64_t>();
  }
  if (j->contains(f::kItems) && (*j)[f::kItems].is_array()) {
    for (auto& item : (*j)[f::kItems]) {
      // Built-in list items may lack kind/apiVersion; fill them in once here.
      if (!item.contains(f::kKind)) item[f::kKind] = r.kind;
      if (!item.contains(f::kApiVersion)) item[f::kApiVersion] = r.ApiVersion();
      list.items.push_back(std::move(item));
    }
  }
  return list;
}

ApiResult<ObjectList> Client::ListAll(const ResourceType& r, std::string_view ns, ListOptions options) {
  if (options.limit <= 0) options.limit = 500;
  for (int restart = 0;; ++restart) {
    ObjectList all;
    ListOptions page = options;
    page.continue_token.clear();
    for (;;) {
      auto got = List(r, ns, page);
      if (!got.ok()) {
        // The snapshot behind the continue token is gone: start over.
        if (got.reason() == Reason::kGone && !page.continue_token.empty() && restart < 3) break;
        return got.error();
      }
      if (all.resource_version.empty()) all.resource_version = got->resource_version;
      for (auto& item : got->items) all.items.push_back(std::move(item));
      if (got->continue_token.empty()) return all;
      page.continue_token = got->continue_token;
      page.resource_version.clear();
      page.resource_version_match.clear();
    }
  }
}

ApiResult<Json> Client::Create(const ResourceType& r, std::string_view ns, const Json& object,
                               const WriteOptions& options) {
  Call c{"POST", r.Path(NamespaceFor(r, ns, &object), ""), {}, object.dump(), f::kJson, options.timeout, false};
  AddWrite(&c.query, options.field_manager, options.field_validation, options.dry_run);
  return ExecuteJson(c);
}

ApiResult<Json> Client::CreateSubresource(const ResourceType& r, std::string_view ns, std::string_view name,
                                          std::string_view subresource, const Json& object,
                                          const WriteOptions& options) {
  Call c{"POST", r.Path(NamespaceFor(r, ns, nullptr), name, subresource), {}, object.dump(), f::kJson, options.timeout,
         false};
  AddWrite(&c.query, options.field_manager, options.field_validation, options.dry_run);
  return ExecuteJson(c);
}

ApiResult<Json> Client::Update(const ResourceType& r, const Json& object, const WriteOptions& options) {
  Call c{"PUT",    r.Path(NamespaceFor(r, "", &object), MetaString(object, f::kName)),
         {},       object.dump(),
         f::kJson, options.timeout,
         true};
  AddWrite(&c.query, options.field_manager, options.field_validation, options.dry_run);
  return ExecuteJson(c);
}

ApiResult<Json> Client::UpdateStatus(const ResourceType& r, const Json& object, const WriteOptions& options) {
  Call c{"PUT",    r.Path(NamespaceFor(r, "", &object), MetaString(object, f::kName), f::kStatus),
         {},       object.dump(),
         f::kJson, options.timeout,
         true};
  AddWrite(&c.query, options.field_manager, options.field_validation, options.dry_run);
  return ExecuteJson(c);
}

ApiResult<Json> Client::Patch(const ResourceType& r, std::string_view ns, std::string_view name, PatchType type,
                              std::string_view body, const PatchOptions& options, std::string_view subresource) {
  const char* content_type = f::kMergePatch;
  switch (type) {
    case PatchType::kMerge: content_type = f::kMergePatch; break;
    case PatchType::kJson: content_type = f::kJsonPatch; break;
    case PatchType::kStrategicMerge: content_type = f::kStrategicMergePatch; break;
    case PatchType::kApply: content_type = f::kApplyPatch; break;
  }
  // Apply is declarative and therefore safe to resend; other patches may
  // not be (a JSON patch that appends to a list).
  Call c{"PATCH",
         r.Path(NamespaceFor(r, ns, nullptr), name, subresource),
         {},
         std::string(body),
         content_type,
         options.timeout,
         type == PatchType::kApply};
  AddWrite(&c.query, options.field_manager, options.field_validation, options.dry_run);
  if (options.force) c.query.emplace_back(f::kQueryForce, "true");
  return ExecuteJson(c);
}

ApiResult<Json> Client::Apply(const ResourceType& r, const Json& object, const PatchOptions& options,
                              std::string_view subresource) {
  if (options.field_manager.empty()) {
    ApiError e;
    e.reason = Reason::kInvalid;
    e.message = "server-side apply needs a field manager";
    return e;
  }
  return Patch(r, NamespaceFor(r, "", &object), MetaString(object, f::kName), PatchType::kApply, object.dump(), options,
               subresource);
}

namespace {
Json DeleteBody(const DeleteOptions& options) {
  Json body = {{f::kKind, "DeleteOptions"}, {f::kApiVersion, "v1"}};
  switch (options.propagation) {
    case PropagationPolicy::kDefault: break;
    case PropagationPolicy::kBackground: body[f::kPropagationPolicy] = "Background"; break;
    case PropagationPolicy::kForeground: body[f::kPropagationPolicy] = "Foreground"; break;
    case PropagationPolicy::kOrphan: body[f::kPropagationPolicy] = "Orphan"; break;
  }
  if (options.grace_period_seconds) body[f::kGracePeriodSeconds] = *options.grace_period_seconds;
  if (!options.precondition_uid.empty() || !options.precondition_resource_version.empty()) {
    Json pre = Json::object();
    if (!options.precondition_uid.empty()) pre[f::kUid] = options.precondition_uid;
    if (!options.precondition_resource_version.empty())
      pre[f::kResourceVersion] = options.precondition_resource_version;
    body[f::kPreconditions] = pre;
  }
  if (options.dry_run) body["dryRun"] = Json::array({"All"});
  return body;
}
}  // namespace

ApiResult<Json> Client::Delete(const ResourceType& r, std::string_view ns, std::string_view name,
                               const DeleteOptions& options) {
  Call c{
      "DELETE", r.Path(NamespaceFor(r, ns, nullptr), name), {}, DeleteBody(options).dump(), f::kJson, options.timeout,
      true};
  return ExecuteJson(c);
}

ApiResult<ObjectList> Client::DeleteCollection(const ResourceType& r, std::string_view ns, const ListOptions& selectors,
                                               const DeleteOptions& options) {
  Call c{"DELETE", r.Path(r.namespaced() ? ns : "", ""), {}, DeleteBody(options).dump(), f::kJson, options.timeout,
         true};
  AddIf(&c.query, f::kQueryLabelSelector, selectors.label_selector);
  AddIf(&c.query, f::kQueryFieldSelector, selectors.field_selector);
  auto j = ExecuteJson(c);
  if (!j.ok()) return j.error();
  ObjectList out;
  for (auto& item : j->value(f::kItems, Json::array())) out.items.push_back(std::move(item));
  return out;
}

ApiResult<WatchEnd> Client::Watch(const ResourceType& r, std::string_view ns, const WatchOptions& options,
                                  const std::function<void(WatchEvent&&)>& on_event, std::stop_token stop) {
  std::vector<std::pair<std::string, std::string>> query = {{f::kQueryWatch, "true"}};
  AddIf(&query, f::kQueryLabelSelector, options.label_selector);
  AddIf(&query, f::kQueryFieldSelector, options.field_selector);
  AddIf(&query, f::kQueryResourceVersion, options.resource_version);
  if (options.allow_bookmarks) query.emplace_back(f::kQueryAllowWatchBookmarks, "true");
  if (options.timeout_seconds.count() > 0) {
    query.emplace_back(f::kQueryTimeoutSeconds, std::to_string(options.timeout_seconds.count()));
  }
  HttpRequest req;
  req.method = "GET";
  req.path_and_query = BuildPath(r.Path(r.namespaced() ? ns : "", ""), query);
  req.headers.emplace_back("Accept", f::kJson);
  // The server ends the stream after timeoutSeconds; the transport's own
  // deadline only guards against a server that never does.
  req.timeout =
      options.timeout_seconds.count() > 0
          ? std::chrono::duration_cast<std::chrono::milliseconds>(options.timeout_seconds) + std::chrono::seconds(30)
          : std::chrono::milliseconds(std::chrono::hours(2));
  ClientCertificate cert;
  bool refreshed = false;
  for (;;) {
    req.headers.resize(1);
    req.client_cert = nullptr;
    if (auto denied = Authorize(&req, &cert)) return *denied;
    LineSplitter splitter;
    std::optional<ApiError> decode_error;
    auto on_data = [&](std::string_view chunk) {
      bool fits = splitter.Feed(chunk, [&](std::string_view line) {
        if (decode_error) return;
        auto j = Json::parse(line.begin(), line.end(), nullptr, false);
        if (j.is_discarded() || !j.is_object() || !j.contains(f::kType) || !j[f::kType].is_string()) {
          decode_error = DecodeError("watch " + r.plural + ": undecodable event: " + std::string(line.substr(0, 200)));
          return;
        }
        WatchEvent ev;
        std::string type = j[f::kType].get<std::string>();
        if (type == f::kAdded) {
          ev.type = WatchEvent::Type::kAdded;
        } else if (type == f::kModified) {
          ev.type = WatchEvent::Type::kModified;
        } else if (type == f::kDeleted) {
          ev.type = WatchEvent::Type::kDeleted;
        } else if (type == f::kBookmark) {
          ev.type = WatchEvent::Type::kBookmark;
        } else if (type == f::kError) {
          ev.type = WatchEvent::Type::kError;
        } else {
          decode_error = DecodeError("watch " + r.plural + ": unknown event type " + type);
          return;
        }
        ev.object = j.contains(f::kObject) ? std::move(j[f::kObject]) : Json::object();
        if (ev.type == WatchEvent::Type::kError) ev.error = ApiError::FromStatus(ev.object);
        on_event(std::move(ev));
      });
      if (!fits) decode_error = DecodeError("watch " + r.plural + ": event larger than the limit");
      return !decode_error.has_value();
    };
    auto resp = transport_->Stream(req, on_data, stop);
    if (decode_error) return *decode_error;
    if (!resp.ok()) {
      if (stop.stop_requested()) return WatchEnd::kStopped;
      return ApiError::FromTransport(resp.status());
    }
    if (resp->status >= 200 && resp->status < 300) return WatchEnd::kClosed;
    ApiError err = ApiError::FromResponse(resp->status, resp->body, resp->headers);
    if (err.reason == Reason::kUnauthorized && config_.credentials && !refreshed) {
      config_.credentials->Invalidate();
      refreshed = true;
      continue;
    }
    return err;
  }
}

ApiResult<ResourceType> Client::Discover(std::string_view api_version, std::string_view kind) {
  std::string av(api_version);
  size_t slash = av.find('/');
  ResourceType r;
  r.group = slash == std::string::npos ? "" : av.substr(0, slash);
  r.version = slash == std::string::npos ? av : av.substr(slash + 1);
  auto list = ExecuteJson({"GET", r.GroupVersionPath(), {}, "", "", std::chrono::milliseconds(0), true});
  if (!list.ok()) return list.error();
  for (const auto& res : list->value("resources", Json::array())) {
    std::string name = res.value(f::kName, "");
    if (res.value(f::kKind, "") == kind && name.find('/') == std::string::npos) {
      r.kind = std::string(kind);
      r.plural = name;
      r.scope = res.value("namespaced", false) ? Scope::kNamespaced : Scope::kCluster;
      return r;
    }
  }
  ApiError e;
  e.reason = Reason::kNotFound;
  e.http_code = 404;
  e.message = "no resource of kind " + std::string(kind) + " in " + av;
  return e;
}

}  // namespace fairbench::kube
