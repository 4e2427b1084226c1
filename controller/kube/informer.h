// Informer: a local cache of one resource kept in step by a Reflector on
// its own thread (list + watch), plus change notifications — the read side
// of a level-based reconciler. Handlers should be quick (typically: put the
// object's key into a WorkQueue); periodic requeues belong to the queue
// (AddAfter), not to the informer.
//
// Thread-safe: the cache can be read from any thread. Handlers run on the
// informer's thread, after the cache has been updated and outside its lock.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "controller/kube/client.h"
#include "controller/kube/clock.h"
#include "controller/kube/reflector.h"

namespace fairbench::kube {

struct InformerHandlers {
  std::function<void(const Json& object)> on_add;
  std::function<void(const Json& old_object, const Json& new_object)> on_update;
  std::function<void(const Json& last_state)> on_delete;
};

class Informer final : private ReflectorSink {
 public:
  // ns "" = all namespaces (namespaced resources).
  Informer(Client& client, ResourceType resource, std::string ns, ReflectorOptions options = {},
           Clock* clock = nullptr);
  ~Informer() override;
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Before Start().
  void AddHandlers(InformerHandlers handlers);
  void Start();
  void Stop();

  // True once the first list has been applied.
  bool HasSynced() const;
  bool WaitForSync(std::chrono::milliseconds timeout) const;
  // Keys are "ns/name" ("name" when cluster-scoped).
  std::optional<Json> Get(const std::string& key) const;
  std::vector<Json> List() const;
  // Calls `visit` on each cached object without copying it, with the cache
  // locked: `visit` must be quick and must not call back into the informer.
  void ForEach(const std::function<void(const Json& object)>& visit) const;
  size_t size() const;
  std::string LastSyncResourceVersion() const { return reflector_.last_resource_version(); }
  Reflector::Stats stats() const { return reflector_.stats(); }

 private:
  void Replace(std::vector<Json> objects, const std::string& resource_version) override;
  void Apply(const WatchEvent& event) override;

  Reflector reflector_;
  std::vector<InformerHandlers> handlers_;  // fixed after Start
  mutable Mutex mu_;
  mutable CondVar synced_cv_;
  std::map<std::string, Json> cache_ GUARDED_BY(mu_);
  bool synced_ GUARDED_BY(mu_) = false;
  std::jthread thread_;
};

}  // namespace fairbench::kube
