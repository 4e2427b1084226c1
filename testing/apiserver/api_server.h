// The test API server's request handling, independent of HTTP: a request
// (method, path, query, headers, body, authenticated user) goes in, a reply
// or an open watch comes out. Implements KUBE-API.md §1–§5 and the pod and
// namespace lifecycle parts of §9 for any resource the ResourceRegistry
// serves, including those added by CustomResourceDefinitions.
//
// Request bodies are JSON, YAML or Kubernetes protobuf (kube_protobuf.h:
// client-go's typed clients — helm's release Secrets, kubectl's typed
// `create` commands — send protobuf); responses are JSON, also to clients
// that prefer protobuf but accept JSON.
//
// Simplifications, each a documented gap rather than a silent one: a
// protobuf body of a kind the decoder's catalog does not describe (Pod,
// Node, Deployment, CustomResourceDefinition) gets 415, and a client that
// accepts only protobuf gets 406; a strategic merge patch on a built-in type is applied as a JSON merge patch
// (lists are replaced, not merged by key); server-side apply treats lists as
// atomic; CEL rules are not evaluated; deleting a CRD removes its objects
// without waiting for their finalizers; there is no scheduler (pods are
// bound by spec.nodeName) and no Deployment controller: tests of those
// run on Kubernetes' own control plane (scripts/kube); kubelets are separate (testing/kubelet, or tests
// writing pod status; FinishPodTermination is the kubelet's half of graceful
// deletion). The node proxy and pods/log reach a kubelet over plain HTTP;
// apps/v1 and RBAC objects are validated as the real server validates them
// (builtin_validation.h) and then stored, inert (api_server_control.cc:
// TokenRequest, Pod Security admission).
// Under ApiServerOptions::authorization = kRbac every request is first
// authorized from the stored RBAC objects (authorization.h), before routing,
// as the real server's filter chain does; the default policy
// (rbac_bootstrap.h) is created with the server in that mode.
//
// It is deliberately independent of controller/kube: the client is tested
// against this server, so a misreading of the API shared by both could not
// hide in common code.
//
// Thread-safe: one mutex serialises every request (the store, the registry
// and the GC see a single consistent state); the node proxy and pods/log
// hold it only while they read the store, not while the kubelet answers.
// Only GET is proxied (other verbs on nodes/proxy answer 405). A maintenance thread sends
// bookmarks, runs garbage collection, establishes CRDs after their delay
// and finishes pod terminations that are due.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "testing/apiserver/api_status.h"
#include "testing/apiserver/authorization.h"
#include "testing/apiserver/faults.h"
#include "testing/apiserver/object_store.h"
#include "testing/apiserver/resource_types.h"

namespace fairbench::apiserver {

struct ApiServerOptions {
  // Changes kept for watch/list at an older RV; anything older → 410.
  size_t history_limit = 10000;
  std::chrono::milliseconds bookmark_interval{10000};
  std::chrono::seconds max_watch_timeout{1800};
  size_t watch_queue_limit = 10000;
  // How long a new CRD stays unserved (404) before it is Established.
  std::chrono::milliseconds crd_establish_delay{0};
  bool garbage_collection = true;
  // Pods whose grace period has run out are removed without a kubelet.
  bool auto_finish_pod_termination = false;
  std::vector<std::string> namespaces = {"default", "kube-system", "kube-public", "kube-node-lease"};
  // Shown in /api's serverAddressByClientCIDRs.
  std::string server_address = "127.0.0.1:6443";
  // kube-apiserver's --authorization-mode. AlwaysAllow keeps tests that act
  // without RBAC objects working; RBAC decides from the stored objects.
  AuthorizationMode authorization = AuthorizationMode::kAlwaysAllow;
};

struct ApiRequest {
  std::string method;
  std::string path;
  std::multimap<std::string, std::string> query;
  std::string accept;
  std::string content_type;
  std::string user_agent;
  std::string body;
  std::string user;  // authenticated name, "" when anonymous
  // The groups its credentials carry (a token file's, a client
  // certificate's O); system:authenticated and the rest are implied.
  std::vector<std::string> groups;
};

struct ApiResponse {
  int code = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::shared_ptr<WatchChannel> watch;  // set: stream it instead of body
};

// Authorization for tests of 403: a request matching a rule is forbidden.
struct DenyRule {
  std::string user;      // "" = any
  std::string verb;      // get, list, watch, create, update, patch, delete, deletecollection; "" = any
  std::string resource;  // plural; "" = any
};

class ApiServer {
 public:
  explicit ApiServer(ApiServerOptions options = {});
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  ApiResponse Handle(const ApiRequest& request);

  FaultInjector& faults() { return faults_; }
  void SetDenyRules(std::vector<DenyRule> rules);

  // The test kubelet's side of graceful pod deletion: the pod's containers
  // have stopped, remove it (it stays while finalizers remain).
  Status FinishPodTermination(const std::string& ns, const std::string& name);
  // Ends open watches: abruptly (connection cut) or cleanly.
  void DropWatches(bool abrupt);
  // Forgets the watch history: every older RV now answers 410.
  void CompactHistory();
  void set_history_limit(size_t limit);
  uint64_t current_resource_version();
  size_t open_watches();
  // Runs one garbage-collection pass now (tests that cannot wait).
  void CollectGarbage();
  // A token a TokenRequest issued (serviceaccounts/NAME/token): its service
  // account's user and groups while it holds (unexpired, the account and
  // the pod it is bound to still there); nullopt otherwise.
  std::optional<std::pair<std::string, std::vector<std::string>>> AuthenticateIssuedToken(const std::string& token);
  // Stops background work and ends every watch; Handle may not be called after.
  void Shutdown();

 private:
  struct Committed {
    nlohmann::json object;
    bool removed = false;
  };
  struct Target {
    const ResourceInfo* resource = nullptr;
    std::string ns;
    std::string name;
    std::string subresource;
  };

  ApiResponse Dispatch(const ApiRequest& req) REQUIRES(mu_);
  // The 403 for a request the authorizer refuses; nullopt when allowed.
  std::optional<StatusReply> AuthorizeLocked(const ApiRequest& req) const REQUIRES(mu_);
  ApiResponse SelfSubjectAccessReview(const ApiRequest& req) REQUIRES(mu_);
  // The node proxy and pods/log (kubelet_proxy.cc): the store is read under
  // mu_, the kubelet is called without it.
  static bool IsKubeletRoute(const std::string& path);
  ApiResponse KubeletRoute(const ApiRequest& req);
  ApiResponse Discovery(const ApiRequest& req, bool* handled) REQUIRES(mu_);
  Outcome<Target> Route(const ApiRequest& req) REQUIRES(mu_);

  ApiResponse List(const Target& t, const ApiRequest& req) REQUIRES(mu_);
  ApiResponse Watch(const Target& t, const ApiRequest& req) REQUIRES(mu_);
  ApiResponse Get(const Target& t, const ApiRequest& req) REQUIRES(mu_);
  ApiResponse Create(const Target& t, const ApiRequest& req) REQUIRES(mu_);
  static void KeepStatusRules(const Target& t, const ResourceInfo& r, const json& old, json& obj);
  ApiResponse Update(const Target& t, const ApiRequest& req) REQUIRES(mu_);
  ApiResponse Patch(const Target& t, const ApiRequest& req) REQUIRES(mu_);
  ApiResponse Apply(const Target& t, const ApiRequest& req, const nlohmann::json* current) REQUIRES(mu_);
  ApiResponse Delete(const Target& t, const ApiRequest& req) REQUIRES(mu_);
  ApiResponse DeleteCollection(const Target& t, const ApiRequest& req) REQUIRES(mu_);

  // The write pipeline shared by create, update and patch.
  Outcome<nlohmann::json> Admit(const Target& t, nlohmann::json obj, const nlohmann::json* old,
                                const ApiRequest& req, std::vector<std::string>* warnings);
  ApiResponse StoreCreate(const Target& t, nlohmann::json obj, const ApiRequest& req, const std::string& manager,
                          const std::string& operation) REQUIRES(mu_);
  ApiResponse StoreUpdate(const Target& t, nlohmann::json obj, const nlohmann::json& old, const ApiRequest& req,
                          const std::string& manager, bool managed_fields_done) REQUIRES(mu_);
  Outcome<Committed> DeleteObject(const ResourceInfo& r, const std::string& ns, const std::string& name,
                                  const nlohmann::json& options) REQUIRES(mu_);
  // Stores an update; removes the object instead when it is terminating and
  // nothing holds it any more (no finalizers, grace period over).
  Committed CommitUpdate(const ResourceInfo& r, nlohmann::json obj) REQUIRES(mu_);
  void PrepareForCreate(const ResourceInfo& r, nlohmann::json& obj) REQUIRES(mu_);
  std::vector<Cause> ValidateType(const ResourceInfo& r, nlohmann::json& obj, const nlohmann::json* old);
  const ResourceInfo* ByStorageKey(const std::string& key) const REQUIRES(mu_);
  void AfterStoredChange(const ResourceInfo& r, const nlohmann::json& obj, bool deleted) REQUIRES(mu_);

  nlohmann::json Render(const ResourceInfo& r, nlohmann::json obj, bool for_list) const;
  ApiResponse Reply(int code, const nlohmann::json& body) const;
  ApiResponse Reply(StatusReply s) const;
  bool Denied(const ApiRequest& req, const std::string& verb, const Target& t, StatusReply* reply) const REQUIRES(mu_);
  std::string Manager(const ApiRequest& req) const;

  // api_server_control.cc: TokenRequest, Pod Security admission.
  ApiResponse TokenRequest(const Target& t, const ApiRequest& req) REQUIRES(mu_);
  // A pod (or a workload's pod template) against its namespace's Pod
  // Security labels: the 403 when enforce refuses it; warnings for warn.
  std::optional<StatusReply> PodSecurityLocked(const Target& t, const nlohmann::json& obj,
                                               std::vector<std::string>* warnings) REQUIRES(mu_);
  void RecordEventLocked(const nlohmann::json& object, bool warning, const std::string& reason,
                         const std::string& message, const std::string& component) REQUIRES(mu_);
  void Maintain();
  void GarbageCollectLocked() REQUIRES(mu_);
  void EstablishDueCrdsLocked() REQUIRES(mu_);
  void FinishDuePodsLocked() REQUIRES(mu_);

  const ApiServerOptions options_;
  FaultInjector faults_;

  Mutex mu_;
  ObjectStore store_ GUARDED_BY(mu_);
  ResourceRegistry registry_ GUARDED_BY(mu_);
  std::vector<DenyRule> deny_ GUARDED_BY(mu_);
  std::map<std::string, std::chrono::steady_clock::time_point> pending_crds_ GUARDED_BY(mu_);
  bool gc_due_ GUARDED_BY(mu_) = false;
  bool stopping_ GUARDED_BY(mu_) = false;
  uint64_t next_cluster_ip_ GUARDED_BY(mu_) = 10;
  struct IssuedToken {
    std::string ns;
    std::string service_account;
    std::string service_account_uid;
    std::string pod;      // bound pod name, "" = unbound
    std::string pod_uid;
    std::chrono::system_clock::time_point expires;
  };
  std::map<std::string, IssuedToken> issued_tokens_ GUARDED_BY(mu_);
  CondVar wake_;
  std::thread maintenance_;
};

}  // namespace fairbench::apiserver
