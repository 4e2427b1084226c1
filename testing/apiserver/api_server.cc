#include "testing/apiserver/api_server.h"

#include <algorithm>
#include <sstream>

#include "common/base64.h"
#include "common/mutex.h"
#include "testing/apiserver/discovery.h"
#include "testing/apiserver/rbac_bootstrap.h"
#include "testing/apiserver/request_info.h"
#include "testing/apiserver/request_util.h"
#include "testing/apiserver/table.h"
#include "testing/apiserver/yaml_json.h"

namespace fairbench::apiserver {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

namespace {

std::vector<std::string> Segments(const std::string& path) {
  std::vector<std::string> out;
  std::stringstream ss(path);
  std::string part;
  while (std::getline(ss, part, '/')) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

std::string ContinueToken(uint64_t rv, const std::string& start_key) {
  json t = {{"v", "meta.k8s.io/v1"}, {"rv", rv}, {"start", start_key + std::string(1, '\0')}};
  return Base64Encode(t.dump());
}

bool ParseContinue(const std::string& token, uint64_t* rv, std::string* start_after) {
  auto raw = Base64Decode(token);
  if (!raw.ok()) return false;
  auto t = json::parse(*raw, nullptr, false);
  if (t.is_discarded() || !t.is_object() || !t.contains("rv") || !t["rv"].is_number_unsigned() ||
      !t.contains("start") || !t["start"].is_string()) {
    return false;
  }
  *rv = t["rv"].get<uint64_t>();
  std::string s = t["start"].get<std::string>();
  if (!s.empty() && s.back() == '\0') s.pop_back();
  *start_after = s;
  return true;
}

std::string StoreKeyOf(const json& obj) {
  const json& md = obj["metadata"];
  return md.value("namespace", "") + "/" + md.value("name", "");
}

StatusReply TooLargeResourceVersion(uint64_t asked, uint64_t current) {
  StatusReply r = MakeStatus(504, "Timeout",
                             "Timeout: Too large resource version: " + std::to_string(asked) +
                                 ", current: " + std::to_string(current),
                             {{"causes", json::array({{{"reason", "ResourceVersionTooLarge"},
                                                       {"message", "Too large resource version"}}})},
                              {"retryAfterSeconds", 1}});
  return r;
}

std::string TooOld(uint64_t asked, uint64_t oldest) {
  return "too old resource version: " + std::to_string(asked) + " (" + std::to_string(oldest) + ")";
}

}  // namespace

ApiServer::ApiServer(ApiServerOptions options)
    : options_(std::move(options)), store_(options_.history_limit) {
  MutexLock lock(mu_);
  for (const auto& ns : options_.namespaces) {
    json obj = {{"apiVersion", "v1"},
                {"kind", "Namespace"},
                {"metadata",
                 {{"name", ns}, {"uid", NewUid()}, {"creationTimestamp", NowText()}, {"generation", 1},
                  {"labels", {{"kubernetes.io/metadata.name", ns}}}}},
                {"spec", {{"finalizers", {"kubernetes"}}}},
                {"status", {{"phase", "Active"}}}};
    store_.Create("/namespaces", std::move(obj));
  }
  if (options_.authorization == AuthorizationMode::kRbac) {
    for (auto& [plural, obj] : BootstrapRbacPolicy()) {
      const ResourceInfo* r = registry_.Find("rbac.authorization.k8s.io", "v1", plural);
      obj["metadata"]["uid"] = NewUid();
      obj["metadata"]["creationTimestamp"] = NowText();
      store_.Create(r->StorageKey(), std::move(obj));
    }
  }
  maintenance_ = std::thread([this] { Maintain(); });
}

ApiServer::~ApiServer() { Shutdown(); }

void ApiServer::Shutdown() {
  {
    MutexLock lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    store_.EndWatches("", WatchChannel::End::kClean);
  }
  wake_.notify_all();
  if (maintenance_.joinable()) maintenance_.join();
}

void ApiServer::SetDenyRules(std::vector<DenyRule> rules) {
  MutexLock lock(mu_);
  deny_ = std::move(rules);
}

void ApiServer::DropWatches(bool abrupt) {
  MutexLock lock(mu_);
  store_.EndWatches("", abrupt ? WatchChannel::End::kAbrupt : WatchChannel::End::kClean);
}

void ApiServer::CompactHistory() {
  MutexLock lock(mu_);
  store_.Compact();
}

void ApiServer::set_history_limit(size_t limit) {
  MutexLock lock(mu_);
  store_.set_history_limit(limit);
}

uint64_t ApiServer::current_resource_version() {
  MutexLock lock(mu_);
  return store_.current_rv();
}

size_t ApiServer::open_watches() {
  MutexLock lock(mu_);
  return store_.open_watches();
}

void ApiServer::CollectGarbage() {
  MutexLock lock(mu_);
  GarbageCollectLocked();
}

ApiResponse ApiServer::Handle(const ApiRequest& request) {
  if (IsKubeletRoute(request.path)) {
    try {
      return KubeletRoute(request);
    } catch (const std::exception& e) {
      return Reply(InternalError(std::string("unexpected error in the test API server: ") + e.what()));
    }
  }
  MutexLock lock(mu_);
  if (stopping_) return Reply(ServiceUnavailable("the server is shutting down"));
  // A handler bug must come back as a Status, not escape into the HTTP library.
  try {
    if (auto refused = AuthorizeLocked(request)) return Reply(std::move(*refused));
    return Dispatch(request);
  } catch (const std::exception& e) {
    return Reply(InternalError(std::string("unexpected error in the test API server: ") + e.what()));
  }
}

ApiResponse ApiServer::Reply(int code, const json& body) const {
  ApiResponse r;
  r.code = code;
  r.body = body.dump();
  return r;
}

ApiResponse ApiServer::Reply(StatusReply s) const {
  ApiResponse r = Reply(s.code, s.body);
  r.headers = std::move(s.headers);
  return r;
}

std::string ApiServer::Manager(const ApiRequest& req) const {
  std::string m = QueryValue(req.query, "fieldManager");
  if (!m.empty()) return m;
  // The real server names an unnamed manager after the user agent's product.
  m = req.user_agent.substr(0, req.user_agent.find('/'));
  return m.empty() ? "unknown" : m;
}

json ApiServer::Render(const ResourceInfo& r, json obj, bool for_list) const {
  if (r.custom) {
    if (r.schema) r.schema->ApplyDefaults(obj);
    obj["apiVersion"] = r.ApiVersion();
    obj["kind"] = r.kind;
  } else if (for_list) {
    // Built-in list items carry no kind/apiVersion; clients must not need them.
    obj.erase("apiVersion");
    obj.erase("kind");
  } else {
    obj["apiVersion"] = r.ApiVersion();
    obj["kind"] = r.kind;
  }
  return obj;
}

bool ApiServer::Denied(const ApiRequest& req, const std::string& verb, const Target& t, StatusReply* reply) const {
  for (const auto& rule : deny_) {
    if (!rule.user.empty() && rule.user != req.user) continue;
    if (!rule.verb.empty() && rule.verb != verb) continue;
    if (!rule.resource.empty() && rule.resource != t.resource->plural) continue;
    const ResourceInfo& r = *t.resource;
    std::string who = req.user.empty() ? "system:anonymous" : req.user;
    std::string subject = r.Name(t.name).Qualified() + (t.name.empty() ? "" : " \"" + t.name + "\"");
    std::string scope = t.ns.empty() ? " at the cluster scope" : " in the namespace \"" + t.ns + "\"";
    *reply = MakeStatus(403, "Forbidden",
                        subject + " is forbidden: User \"" + who + "\" cannot " + verb + " resource \"" + r.plural +
                            "\" in API group \"" + r.group + "\"" + scope,
                        {{"name", t.name}, {"group", r.group}, {"kind", r.plural}});
    return true;
  }
  return false;
}

std::optional<StatusReply> ApiServer::AuthorizeLocked(const ApiRequest& req) const {
  if (options_.authorization == AuthorizationMode::kAlwaysAllow) return std::nullopt;
  const UserInfo user = AuthenticatedUser(req.user, req.groups);
  const RequestInfo info = ResolveRequestInfo(req.method, req.path, req.query);
  const Decision d = Authorize(options_.authorization, store_, user, info);
  if (d.allowed) return std::nullopt;
  return ForbiddenReply(info, user.name, d.reason);
}

ApiResponse ApiServer::SelfSubjectAccessReview(const ApiRequest& req) {
  if (req.method != "POST") {
    return Reply(MethodNotAllowed("the server does not allow this method on the requested resource"));
  }
  auto body = ParseObjectBody(req.content_type, req.body,
                              {"authorization.k8s.io", "v1", "SelfSubjectAccessReview", false});
  if (!body.ok()) return Reply(std::move(body.reply()));
  auto review = ReviewSelfSubjectAccess(options_.authorization, store_, AuthenticatedUser(req.user, req.groups),
                                        std::move(body.value()));
  if (!review.ok()) return Reply(std::move(review.reply()));
  return Reply(201, review.value());
}

ApiResponse ApiServer::Discovery(const ApiRequest& req, bool* handled) {
  *handled = true;
  const std::string& p = req.path;
  if (p == "/healthz" || p == "/livez" || p == "/readyz") {
    ApiResponse r;
    r.content_type = "text/plain";
    r.body = "ok";
    return r;
  }
  if (p == "/version") return Reply(200, VersionInfo());
  if (req.method == "GET") {
    auto seg = Segments(p);
    if (p == "/api") return Reply(200, ApiVersions(options_.server_address));
    if (p == "/apis") return Reply(200, ApiGroupList(registry_));
    if (seg.size() == 2 && seg[0] == "api") {
      if (auto l = ApiResourceList(registry_, "", seg[1])) return Reply(200, *l);
      return Reply(PageNotFound(p));
    }
    if (seg.size() == 2 && seg[0] == "apis") {
      if (auto g = ApiGroup(registry_, seg[1])) return Reply(200, *g);
      return Reply(PageNotFound(p));
    }
    if (seg.size() == 3 && seg[0] == "apis") {
      if (auto l = ApiResourceList(registry_, seg[1], seg[2])) return Reply(200, *l);
      return Reply(PageNotFound(p));
    }
    if (p == "/openapi/v3") return Reply(200, OpenApiV3Index(registry_));
    if (p.rfind("/openapi/v3/", 0) == 0) {
      if (auto d = OpenApiV3Document(registry_, p.substr(12))) return Reply(200, *d);
      return Reply(PageNotFound(p));
    }
    if (p.rfind("/openapi/", 0) == 0) return Reply(PageNotFound(p));
  }
  *handled = false;
  return {};
}

Outcome<ApiServer::Target> ApiServer::Route(const ApiRequest& req) {
  auto seg = Segments(req.path);
  std::string group, version;
  size_t i = 0;
  if (seg.size() >= 3 && seg[0] == "api") {
    version = seg[1];
    i = 2;
  } else if (seg.size() >= 4 && seg[0] == "apis") {
    group = seg[1];
    version = seg[2];
    i = 3;
  } else {
    return PageNotFound(req.path);
  }
  std::vector<std::string> rest(seg.begin() + static_cast<long>(i), seg.end());
  Target t;
  std::string plural;
  // "namespaces/{ns}/{plural}/..." unless it is the namespace object itself
  // ("namespaces/{name}", "namespaces/{name}/status").
  bool in_namespace = rest.size() >= 3 && rest[0] == "namespaces" &&
                      !(group.empty() && rest.size() == 3 && (rest[2] == "status" || rest[2] == "finalize"));
  if (in_namespace) {
    t.ns = rest[1];
    rest.erase(rest.begin(), rest.begin() + 2);
  }
  if (rest.empty() || rest.size() > 3) return PageNotFound(req.path);
  plural = rest[0];
  if (rest.size() >= 2) t.name = rest[1];
  if (rest.size() == 3) t.subresource = rest[2];
  t.resource = registry_.Find(group, version, plural);
  if (!t.resource) return PageNotFound(req.path);
  if (!t.resource->namespaced && in_namespace) return PageNotFound(req.path);
  if (t.resource->namespaced && !in_namespace && !t.name.empty()) return PageNotFound(req.path);
  const bool token = t.subresource == "token" && t.resource->group.empty() && t.resource->plural == "serviceaccounts";
  if (!t.subresource.empty() && !(t.subresource == "status" && t.resource->status_subresource) && !token) {
    return PageNotFound(req.path);
  }
  return t;
}

ApiResponse ApiServer::Dispatch(const ApiRequest& req) {
  bool handled = false;
  ApiResponse d = Discovery(req, &handled);
  if (handled) return d;
  if (req.path == kSelfSubjectAccessReviewPath) return SelfSubjectAccessReview(req);
  auto routed = Route(req);
  if (!routed.ok()) return Reply(std::move(routed.reply()));
  const Target& t = routed.value();
  if (t.subresource == "token") return TokenRequest(t, req);

  std::string verb;
  if (req.method == "GET") {
    verb = t.name.empty() ? (IsWatchRequest(req.method, req.query) ? "watch" : "list") : "get";
  } else if (req.method == "POST") {
    if (!t.name.empty()) return Reply(MethodNotAllowed("the server does not allow this method on the requested resource"));
    verb = "create";
  } else if (req.method == "PUT" || req.method == "PATCH") {
    if (t.name.empty()) return Reply(MethodNotAllowed("the server does not allow this method on the requested resource"));
    verb = req.method == "PUT" ? "update" : "patch";
  } else if (req.method == "DELETE") {
    verb = t.name.empty() ? "deletecollection" : "delete";
  } else {
    return Reply(MethodNotAllowed("the server does not allow this method on the requested resource"));
  }
  if ((verb == "create" || verb == "deletecollection") && t.resource->namespaced && t.ns.empty()) {
    return Reply(PageNotFound(req.path));
  }
  StatusReply forbidden;
  if (Denied(req, verb, t, &forbidden)) return Reply(std::move(forbidden));
  if (!req.accept.empty() && req.accept.find("json") == std::string::npos &&
      req.accept.find("*/*") == std::string::npos && req.accept.find("yaml") == std::string::npos) {
    return Reply(NotAcceptable("only the following media types are accepted: application/json, application/yaml"));
  }

  if (verb == "list") return List(t, req);
  if (verb == "watch") return Watch(t, req);
  if (verb == "get") return Get(t, req);
  if (verb == "create") return Create(t, req);
  if (verb == "update") return Update(t, req);
  if (verb == "patch") return Patch(t, req);
  if (verb == "delete") return Delete(t, req);
  return DeleteCollection(t, req);
}

ApiResponse ApiServer::Get(const Target& t, const ApiRequest& req) {
  const ResourceInfo& r = *t.resource;
  const json* obj = store_.Get(r.StorageKey(), t.ns, t.name);
  if (!obj) return Reply(NotFound(r.Name(t.name)));
  json out = Render(r, *obj, false);
  if (WantsTable(req.accept)) {
    json md = {{"resourceVersion", out["metadata"].value("resourceVersion", "")}};
    return Reply(200, BuildTable(r, {out}, md, true, QueryValue(req.query, "includeObject"),
                                 std::chrono::system_clock::now()));
  }
  return Reply(200, out);
}

ApiResponse ApiServer::List(const Target& t, const ApiRequest& req) {
  const ResourceInfo& r = *t.resource;
  auto labels = LabelSelector::Parse(QueryValue(req.query, "labelSelector"));
  if (!labels.ok()) return Reply(BadRequest(labels.status().message()));
  auto fields = FieldSelector::Parse(QueryValue(req.query, "fieldSelector"), r.AllowedFieldSelectors());
  if (!fields.ok()) return Reply(BadRequest(fields.status().message()));
  const std::string rv_text = QueryValue(req.query, "resourceVersion");
  const std::string match = QueryValue(req.query, "resourceVersionMatch");
  const std::string cont = QueryValue(req.query, "continue");
  uint64_t limit = 0;
  if (!QueryValue(req.query, "limit").empty() && !ParseUint(QueryValue(req.query, "limit"), &limit)) {
    return Reply(BadRequest("limit: must be a non-negative integer"));
  }

  std::vector<Cause> errs;
  if (!match.empty()) {
    if (match != "Exact" && match != "NotOlderThan") {
      errs.push_back(FieldNotSupported("resourceVersionMatch", match, {"Exact", "NotOlderThan"}));
    } else if (!cont.empty()) {
      errs.push_back(FieldForbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"));
    } else if (rv_text.empty()) {
      errs.push_back(FieldForbidden("resourceVersionMatch", "resourceVersionMatch is forbidden unless resourceVersion is provided"));
    } else if (match == "Exact" && rv_text == "0") {
      errs.push_back(FieldForbidden("resourceVersionMatch", "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""));
    }
  }
  if (!cont.empty() && !rv_text.empty() && rv_text != "0") {
    errs.push_back(FieldForbidden("resourceVersion", "specifying resource version is not allowed when using continue"));
  }
  if (!errs.empty()) return Reply(Invalid({"meta.k8s.io", "listoptions", "ListOptions", ""}, errs));
  uint64_t asked = 0;
  if (!rv_text.empty() && !ParseUint(rv_text, &asked)) {
    return Reply(BadRequest("invalid resource version \"" + rv_text + "\""));
  }

  const uint64_t current = store_.current_rv();
  uint64_t list_rv = current;
  std::string start_after;
  std::vector<json> items;
  auto current_items = [&]() REQUIRES(mu_) {
    for (const json* o : store_.List(r.StorageKey(), t.ns)) items.push_back(*o);
  };
  if (!cont.empty()) {
    if (!ParseContinue(cont, &list_rv, &start_after)) {
      return Reply(BadRequest("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"));
    }
    if (list_rv == current) {
      current_items();
    } else {
      auto at = store_.ListAt(r.StorageKey(), t.ns, list_rv);
      if (!at) {
        return Reply(Expired(
            "The provided continue parameter is too old to display a consistent list result. You can start a new "
            "list without the continue parameter, or use the continue token in this response to retrieve the "
            "remainder of the results. Continuing with the provided token results in an inconsistent list - "
            "objects that were created, modified, or deleted between the time the first chunk was returned and now "
            "may show up in the list."));
      }
      items = std::move(*at);
    }
  } else if (match == "Exact") {
    if (asked > current) return Reply(TooLargeResourceVersion(asked, current));
    auto at = store_.ListAt(r.StorageKey(), t.ns, asked);
    if (!at) return Reply(Expired(TooOld(asked, store_.compacted_rv() + 1)));
    items = std::move(*at);
    list_rv = asked;
  } else {
    if (asked > current) return Reply(TooLargeResourceVersion(asked, current));
    current_items();
  }

  std::vector<json> selected;
  for (auto& o : items) {
    if (!start_after.empty() && StoreKeyOf(o) <= start_after) continue;
    if (!labels->Matches(o["metadata"].value("labels", json::object())) || !fields->Matches(o)) continue;
    selected.push_back(std::move(o));
  }
  json md = {{"resourceVersion", std::to_string(list_rv)}};
  if (limit > 0 && selected.size() > limit) {
    md["continue"] = ContinueToken(list_rv, StoreKeyOf(selected[limit - 1]));
    md["remainingItemCount"] = selected.size() - limit;
    selected.resize(limit);
  }
  if (WantsTable(req.accept)) {
    std::vector<json> rendered;
    for (auto& o : selected) rendered.push_back(Render(r, std::move(o), false));
    return Reply(200, BuildTable(r, rendered, md, true, QueryValue(req.query, "includeObject"),
                                 std::chrono::system_clock::now()));
  }
  json list = {{"kind", r.list_kind}, {"apiVersion", r.ApiVersion()}, {"metadata", md}, {"items", json::array()}};
  for (auto& o : selected) list["items"].push_back(Render(r, std::move(o), true));
  return Reply(200, list);
}

ApiResponse ApiServer::Watch(const Target& t, const ApiRequest& req) {
  const ResourceInfo& r = *t.resource;
  auto labels = LabelSelector::Parse(QueryValue(req.query, "labelSelector"));
  if (!labels.ok()) return Reply(BadRequest(labels.status().message()));
  auto fields = FieldSelector::Parse(QueryValue(req.query, "fieldSelector"), r.AllowedFieldSelectors());
  if (!fields.ok()) return Reply(BadRequest(fields.status().message()));
  const std::string rv_text = QueryValue(req.query, "resourceVersion");
  std::optional<uint64_t> from;
  if (!rv_text.empty() && rv_text != "0") {
    uint64_t n = 0;
    if (!ParseUint(rv_text, &n)) return Reply(BadRequest("invalid resource version \"" + rv_text + "\""));
    from = n;
  }
  auto timeout = options_.max_watch_timeout;
  uint64_t requested = 0;
  if (ParseUint(QueryValue(req.query, "timeoutSeconds"), &requested) && requested > 0) {
    timeout = std::min(timeout, std::chrono::seconds(requested));
  }
  auto deadline = SteadyClock::now() + timeout;

  WatchSpec spec;
  spec.storage_key = r.StorageKey();
  spec.ns = t.ns;
  spec.labels = std::move(*labels);
  spec.fields = std::move(*fields);
  spec.bookmarks = QueryBool(req.query, "allowWatchBookmarks");
  spec.kind = r.kind;
  spec.api_version = r.ApiVersion();
  const bool table = WantsTable(req.accept);
  const std::string include = QueryValue(req.query, "includeObject");
  auto first = std::make_shared<bool>(true);
  // A copy: the registry may change (a CRD update) while the watch is open.
  auto info = std::make_shared<ResourceInfo>(r);
  spec.render = [this, info, table, include, first](const json& obj) {
    json out = Render(*info, obj, false);
    if (!table) return out;
    json md = {{"resourceVersion", out["metadata"].value("resourceVersion", "")}};
    // Column definitions ride on the first event only, as the real server does.
    json tbl = BuildTable(*info, {out}, md, *first, include, std::chrono::system_clock::now());
    *first = false;
    return tbl;
  };
  auto error_stream = [&](const StatusReply& s) {
    auto ch = std::make_shared<WatchChannel>(4, deadline);
    ch->Push(json{{"type", "ERROR"}, {"object", s.body}}.dump() + "\n");
    ch->Finish(WatchChannel::End::kClean);
    ApiResponse resp;
    resp.watch = ch;
    return resp;
  };
  if (from && *from > store_.current_rv()) {
    return error_stream(TooLargeResourceVersion(*from, store_.current_rv()));
  }
  auto ch = store_.Watch(spec, from, options_.watch_queue_limit, deadline);
  if (!ch) return error_stream(Expired(TooOld(*from, store_.compacted_rv() + 1)));
  ApiResponse resp;
  resp.watch = std::move(ch);
  return resp;
}

void ApiServer::Maintain() {
  MutexLock lock(mu_);
  auto next_bookmark = SteadyClock::now() + options_.bookmark_interval;
  while (!stopping_) {
    auto now = SteadyClock::now();
    auto until = next_bookmark;
    for (const auto& [name, at] : pending_crds_) until = std::min(until, at);
    if (gc_due_) until = std::min(until, now + std::chrono::milliseconds(20));
    if (options_.auto_finish_pod_termination) until = std::min(until, now + std::chrono::milliseconds(100));
    wake_.wait_until(lock, until);
    if (stopping_) break;
    now = SteadyClock::now();
    if (now >= next_bookmark) {
      store_.SendBookmarks();
      next_bookmark = now + options_.bookmark_interval;
    }
    EstablishDueCrdsLocked();
    if (options_.auto_finish_pod_termination) FinishDuePodsLocked();
    if (gc_due_) {
      gc_due_ = false;
      if (options_.garbage_collection) GarbageCollectLocked();
    }
  }
}

}  // namespace fairbench::apiserver
