#include "controller/kube/event_recorder.h"

#include <cstdio>

#include "api/time_text.h"
#include "common/mutex.h"
#include "controller/kube/api_fields.h"

namespace fairbench::kube {

EventRecorder::EventRecorder(Client& client, Clock& clock, EventRecorderOptions options)
    : client_(client), clock_(clock), options_(std::move(options)) {}

ApiStatus EventRecorder::Record(const Json& object, EventType type, const std::string& reason,
                                const std::string& message) {
  ObjectReference ref = ObjectReference::Of(object);
  const std::string type_text = type == EventType::kNormal ? "Normal" : "Warning";
  // The Event API caps messages; keep them readable rather than rejected.
  const std::string text = message.size() > 1024 ? message.substr(0, 1021) + "..." : message;
  const std::string key = ref.uid + "/" + ref.name + "/" + type_text + "/" + reason + "/" + text;
  const auto wall = clock_.WallNow();
  const auto now = clock_.Now();

  MutexLock lock(mu_);
  auto it = seen_.find(key);
  if (it != seen_.end() && now - it->second.last_seen < options_.aggregate_window) {
    Seen& s = it->second;
    s.count += 1;
    s.last_seen = now;
    lru_.splice(lru_.begin(), lru_, s.lru);
    std::string ns = s.ns, name = s.name;
    int32_t count = s.count;
    lock.unlock();
    Json patch = {{fields::kCount, count}, {fields::kLastTimestamp, api::FormatTimeSeconds(wall)}};
    auto patched = client_.Patch(resources::Events(), ns, name, PatchType::kMerge, patch.dump());
    if (patched.ok()) return ApiOk();
    if (patched.reason() != Reason::kNotFound) return patched.error();
    // The event expired on the server: record a fresh one below.
    lock.lock();
    it = seen_.find(key);
    if (it != seen_.end()) {
      lru_.erase(it->second.lru);
      seen_.erase(it);
    }
  }
  lock.unlock();

  Event ev;
  ev.metadata.namespace_ = ref.namespace_.empty() ? "default" : ref.namespace_;
  ev.involved_object = ref;
  ev.reason = reason;
  ev.message = text;
  ev.type = type_text;
  ev.source_component = options_.component;
  ev.source_host = options_.host;
  ev.first_timestamp = wall;
  ev.last_timestamp = wall;
  ev.count = 1;
  ev.reporting_component = options_.component;
  ev.reporting_instance = options_.reporting_instance;
  auto nanos = static_cast<unsigned long long>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(wall.time_since_epoch()).count());
  ApiResult<Json> created = ApiError{};
  // Two events about one object in the same nanosecond would share a name.
  for (int attempt = 0; attempt < 3; ++attempt) {
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, ".%llx", nanos + static_cast<unsigned long long>(attempt));
    ev.metadata.name = ref.name + suffix;
    created = client_.Create(resources::Events(), ev.metadata.namespace_, ev.ToJson());
    if (created.reason() != Reason::kAlreadyExists) break;
  }
  if (!created.ok()) return created.error();

  lock.lock();
  if (auto dup = seen_.find(key); dup != seen_.end()) {
    lru_.erase(dup->second.lru);
    seen_.erase(dup);
  }
  lru_.push_front(key);
  seen_[key] = Seen{ev.metadata.namespace_, ev.metadata.name, 1, wall, now, lru_.begin()};
  while (seen_.size() > options_.cache_size) {
    seen_.erase(lru_.back());
    lru_.pop_back();
  }
  return ApiOk();
}

}  // namespace fairbench::kube
