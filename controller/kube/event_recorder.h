// EventRecorder: core/v1 Events about any object, custom resources
// included (KUBE-API.md §7) — what `kubectl describe` and `kubectl get
// events` show. The event lives in the object's namespace ("default" for a
// cluster-scoped object) and is named `<object>.<hex unix nanoseconds>`.
// A repeat of the same (object, type, reason, message) within the window
// bumps count and lastTimestamp of the existing Event instead of creating
// another, as client-go's correlator does. Bounded memory (an LRU of
// recent events).
//
// Thread-safe. Record blocks on the API: call it from worker threads.
#pragma once

#include <chrono>
#include <list>
#include <map>
#include <mutex>
#include <string>

#include "common/mutex.h"
#include "controller/kube/client.h"
#include "common/clock.h"

namespace fairbench::kube {

enum class EventType { kNormal, kWarning };

struct EventRecorderOptions {
  std::string component = "fairbench-controller";
  std::string host;                // source.host, e.g. the pod's node
  std::string reporting_instance;  // e.g. the controller pod's name
  size_t cache_size = 256;
  std::chrono::minutes aggregate_window{10};
};

class EventRecorder {
 public:
  EventRecorder(Client& client, Clock& clock, EventRecorderOptions options = {});

  // `object`: its apiVersion, kind and metadata (name, namespace, uid, RV).
  ApiStatus Record(const Json& object, EventType type, const std::string& reason, const std::string& message);
  ApiStatus Normal(const Json& object, const std::string& reason, const std::string& message) {
    return Record(object, EventType::kNormal, reason, message);
  }
  ApiStatus Warning(const Json& object, const std::string& reason, const std::string& message) {
    return Record(object, EventType::kWarning, reason, message);
  }

 private:
  struct Seen {
    std::string ns;
    std::string name;  // the Event object's name
    int32_t count = 0;
    WallTime first;
    Clock::Steady last_seen{};
    std::list<std::string>::iterator lru;
  };

  Client& client_;
  Clock& clock_;
  const EventRecorderOptions options_;
  Mutex mu_;
  std::map<std::string, Seen> seen_ GUARDED_BY(mu_);  // key: uid/type/reason/message
  std::list<std::string> lru_ GUARDED_BY(mu_);        // most recent first
};

}  // namespace fairbench::kube
