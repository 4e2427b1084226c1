#include "controller/kube/informer.h"

#include "common/mutex.h"
#include "controller/kube/api_fields.h"
#include "common/json_read.h"

namespace fairbench::kube {

namespace {
std::string Rv(const Json& o) {
  return json_read::String(json_read::Object(o, fields::kMetadata), fields::kResourceVersion);
}
}  // namespace

Informer::Informer(Client& client, ResourceType resource, std::string ns, ReflectorOptions options, Clock* clock)
    : reflector_(client, std::move(resource), std::move(ns), std::move(options), *this,
                 clock ? *clock : SystemClock::Instance()) {}

Informer::~Informer() { Stop(); }

void Informer::AddHandlers(InformerHandlers handlers) { handlers_.push_back(std::move(handlers)); }

void Informer::Start() {
  if (thread_.joinable()) return;
  thread_ = std::jthread([this](std::stop_token stop) { reflector_.Run(stop); });
}

void Informer::Stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
}

bool Informer::HasSynced() const {
  MutexLock lock(mu_);
  return synced_;
}

bool Informer::WaitForSync(std::chrono::milliseconds timeout) const {
  MutexLock lock(mu_);
  return synced_cv_.wait_for(lock, timeout, [this]() REQUIRES(mu_) { return synced_; });
}

std::optional<Json> Informer::Get(const std::string& key) const {
  MutexLock lock(mu_);
  auto it = cache_.find(key);
  if (it == cache_.end()) return std::nullopt;
  return it->second;
}

std::vector<Json> Informer::List() const {
  MutexLock lock(mu_);
  std::vector<Json> out;
  out.reserve(cache_.size());
  for (const auto& [k, v] : cache_) out.push_back(v);
  return out;
}

void Informer::ForEach(const std::function<void(const Json& object)>& visit) const {
  MutexLock lock(mu_);
  for (const auto& [k, v] : cache_) visit(v);
}

size_t Informer::size() const {
  MutexLock lock(mu_);
  return cache_.size();
}

void Informer::Replace(std::vector<Json> objects, const std::string&) {
  struct Change {
    enum { kAdd, kUpdate, kDelete } kind;
    Json old_object;
    Json new_object;
  };
  std::vector<Change> changes;
  {
    MutexLock lock(mu_);
    std::map<std::string, Json> next;
    for (auto& o : objects) {
      // The key first: json's by-value assignment would move `o` before it.
      std::string key = ObjectKey(o);
      next[key] = std::move(o);
    }
    for (auto& [key, old] : cache_) {
      auto it = next.find(key);
      if (it == next.end()) {
        changes.push_back({Change::kDelete, old, nullptr});
      } else if (Rv(it->second) != Rv(old)) {
        changes.push_back({Change::kUpdate, old, it->second});
      }
    }
    for (const auto& [key, obj] : next) {
      if (!cache_.count(key)) changes.push_back({Change::kAdd, nullptr, obj});
    }
    cache_ = std::move(next);
    synced_ = true;
  }
  synced_cv_.notify_all();
  for (const auto& c : changes) {
    for (const auto& h : handlers_) {
      if (c.kind == Change::kAdd && h.on_add) h.on_add(c.new_object);
      if (c.kind == Change::kUpdate && h.on_update) h.on_update(c.old_object, c.new_object);
      if (c.kind == Change::kDelete && h.on_delete) h.on_delete(c.old_object);
    }
  }
}

void Informer::Apply(const WatchEvent& event) {
  const std::string key = ObjectKey(event.object);
  std::optional<Json> old;
  {
    MutexLock lock(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) old = it->second;
    if (event.type == WatchEvent::Type::kDeleted) {
      cache_.erase(key);
    } else {
      cache_[key] = event.object;
    }
  }
  for (const auto& h : handlers_) {
    if (event.type == WatchEvent::Type::kDeleted) {
      if (h.on_delete) h.on_delete(event.object);
    } else if (old) {
      if (h.on_update) h.on_update(*old, event.object);
    } else if (h.on_add) {
      h.on_add(event.object);
    }
  }
}

}  // namespace fairbench::kube
