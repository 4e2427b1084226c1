#include "testing/apiserver/object_store.h"

#include <algorithm>

namespace fairbench::apiserver {

namespace {
std::string Ns(const json& o) { return o["metadata"].value("namespace", ""); }
std::string Name(const json& o) { return o["metadata"].value("name", ""); }
}  // namespace

const json* ObjectStore::Get(const std::string& key, const std::string& ns, const std::string& name) const {
  auto r = objects_.find(key);
  if (r == objects_.end()) return nullptr;
  auto o = r->second.find(ObjectKey(ns, name));
  return o == r->second.end() ? nullptr : &o->second;
}

std::vector<const json*> ObjectStore::List(const std::string& key, const std::string& ns) const {
  std::vector<const json*> out;
  auto r = objects_.find(key);
  if (r == objects_.end()) return out;
  for (const auto& [k, obj] : r->second) {
    if (ns.empty() || Ns(obj) == ns) out.push_back(&obj);
  }
  return out;
}

std::optional<std::vector<json>> ObjectStore::ListAt(const std::string& key, const std::string& ns,
                                                      uint64_t rv) const {
  if (rv < compacted_rv_ || rv > rv_) return std::nullopt;
  std::map<std::string, json> state;
  auto r = objects_.find(key);
  if (r != objects_.end()) state = r->second;
  // Undo, newest first, every change made after rv.
  for (auto it = history_.rbegin(); it != history_.rend() && it->rv > rv; ++it) {
    if (it->key != key) continue;
    std::string k = ObjectKey(it->ns, it->name);
    if (it->type == EventType::kAdded) {
      state.erase(k);
    } else {
      state[k] = it->prev;
    }
  }
  std::vector<json> out;
  for (auto& [k, obj] : state) {
    if (ns.empty() || Ns(obj) == ns) out.push_back(std::move(obj));
  }
  return out;
}

void ObjectStore::ForEach(const std::function<void(const std::string&, const json&)>& fn) const {
  for (const auto& [key, objs] : objects_) {
    for (const auto& [k, obj] : objs) fn(key, obj);
  }
}

const json& ObjectStore::Create(const std::string& key, json object) {
  object["metadata"]["resourceVersion"] = std::to_string(++rv_);
  std::string k = ObjectKey(Ns(object), Name(object));
  json& slot = objects_[key][k];
  slot = object;
  Record({rv_, key, Ns(object), Name(object), EventType::kAdded, std::move(object), nullptr});
  return slot;
}

const json& ObjectStore::Update(const std::string& key, json object) {
  object["metadata"]["resourceVersion"] = std::to_string(++rv_);
  json& slot = objects_[key][ObjectKey(Ns(object), Name(object))];
  json prev = std::move(slot);
  slot = object;
  Record({rv_, key, Ns(object), Name(object), EventType::kModified, std::move(object), std::move(prev)});
  return slot;
}

json ObjectStore::Remove(const std::string& key, const std::string& ns, const std::string& name, json last_state) {
  auto& objs = objects_[key];
  auto it = objs.find(ObjectKey(ns, name));
  json prev = it == objs.end() ? json(nullptr) : std::move(it->second);
  if (it != objs.end()) objs.erase(it);
  last_state["metadata"]["resourceVersion"] = std::to_string(++rv_);
  Record({rv_, key, ns, name, EventType::kDeleted, last_state, std::move(prev)});
  return last_state;
}

void ObjectStore::Record(Event e) {
  for (auto& w : watchers_) {
    if (w.spec.storage_key == e.key && (w.spec.ns.empty() || w.spec.ns == e.ns)) Deliver(w, e);
  }
  watchers_.erase(std::remove_if(watchers_.begin(), watchers_.end(), [](const Watcher& w) { return w.channel->ended(); }),
                  watchers_.end());
  history_.push_back(std::move(e));
  set_history_limit(history_limit_);
}

void ObjectStore::set_history_limit(size_t limit) {
  history_limit_ = std::max<size_t>(1, limit);
  while (history_.size() > history_limit_) {
    compacted_rv_ = history_.front().rv;
    history_.pop_front();
  }
}

void ObjectStore::Compact() {
  history_.clear();
  compacted_rv_ = rv_;
}

bool ObjectStore::Matches(const WatchSpec& spec, const json& object) {
  return spec.labels.Matches(object["metadata"].value("labels", json::object())) && spec.fields.Matches(object);
}

std::string ObjectStore::Line(const char* type, json object) {
  json ev = {{"type", type}, {"object", std::move(object)}};
  return ev.dump() + "\n";
}

void ObjectStore::Deliver(Watcher& w, const Event& e) {
  bool now = e.type != EventType::kDeleted && Matches(w.spec, e.object);
  bool before = !e.prev.is_null() && Matches(w.spec, e.prev);
  const char* type = nullptr;
  switch (e.type) {
    case EventType::kAdded:
      if (now) type = "ADDED";
      break;
    case EventType::kModified:
      if (now && before) type = "MODIFIED";
      if (now && !before) type = "ADDED";
      if (!now && before) type = "DELETED";
      break;
    case EventType::kDeleted:
      if (before || Matches(w.spec, e.object)) type = "DELETED";
      break;
  }
  if (type) w.channel->Push(Line(type, w.spec.render(e.object)));
}

std::shared_ptr<WatchChannel> ObjectStore::Watch(const WatchSpec& spec, std::optional<uint64_t> from_rv,
                                                 size_t max_queued, std::chrono::steady_clock::time_point deadline) {
  if (from_rv && *from_rv < compacted_rv_) return nullptr;
  Watcher w{spec, std::make_shared<WatchChannel>(max_queued, deadline)};
  if (!from_rv) {
    for (const json* obj : List(spec.storage_key, spec.ns)) {
      if (Matches(spec, *obj)) w.channel->Push(Line("ADDED", spec.render(*obj)));
    }
  } else {
    for (const auto& e : history_) {
      if (e.rv > *from_rv && e.key == spec.storage_key && (spec.ns.empty() || spec.ns == e.ns)) Deliver(w, e);
    }
  }
  watchers_.push_back(w);
  return w.channel;
}

void ObjectStore::SendBookmarks() {
  for (auto& w : watchers_) {
    if (!w.spec.bookmarks) continue;
    json obj = {{"kind", w.spec.kind},
                {"apiVersion", w.spec.api_version},
                {"metadata", {{"resourceVersion", std::to_string(rv_)}}}};
    w.channel->Push(Line("BOOKMARK", std::move(obj)));
  }
}

void ObjectStore::EndWatches(const std::string& key, WatchChannel::End how) {
  for (auto& w : watchers_) {
    if (key.empty() || w.spec.storage_key == key) w.channel->Finish(how);
  }
  watchers_.erase(std::remove_if(watchers_.begin(), watchers_.end(), [](const Watcher& w) { return w.channel->ended(); }),
                  watchers_.end());
}

size_t ObjectStore::open_watches() {
  watchers_.erase(std::remove_if(watchers_.begin(), watchers_.end(), [](const Watcher& w) { return w.channel->ended(); }),
                  watchers_.end());
  return watchers_.size();
}

}  // namespace fairbench::apiserver
