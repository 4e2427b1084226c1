#include "testing/apiserver/managed_fields.h"

#include <algorithm>

namespace fairbench::apiserver {
namespace {

using nlohmann::json;

void Leaves(const json& v, FieldPath& path, FieldSet* out) {
  if (v.is_object() && !v.empty()) {
    for (const auto& [k, sub] : v.items()) {
      path.push_back(k);
      Leaves(sub, path, out);
      path.pop_back();
    }
  } else {
    out->insert(path);
  }
}

const json* At(const json& v, const FieldPath& p) {
  const json* cur = &v;
  for (const auto& k : p) {
    if (!cur->is_object() || !cur->contains(k)) return nullptr;
    cur = &(*cur)[k];
  }
  return cur;
}

void Erase(json& v, const FieldPath& p) {
  if (p.empty()) return;
  std::vector<json*> chain = {&v};
  for (size_t i = 0; i + 1 < p.size(); ++i) {
    json* cur = chain.back();
    if (!cur->is_object() || !cur->contains(p[i])) return;
    chain.push_back(&(*cur)[p[i]]);
  }
  if (!chain.back()->is_object()) return;
  chain.back()->erase(p.back());
  // Parents left empty by the removal go too (but keep top-level fields).
  for (size_t i = chain.size() - 1; i >= 2; --i) {
    if (chain[i]->is_object() && chain[i]->empty()) chain[i - 1]->erase(p[i - 1]);
  }
}

void Merge(json& target, const json& patch) {
  for (const auto& [k, v] : patch.items()) {
    if (v.is_null()) {
      target.erase(k);
    } else if (v.is_object() && target.contains(k) && target[k].is_object()) {
      Merge(target[k], v);
    } else {
      target[k] = v;
    }
  }
}

json ToFieldsV1(const FieldSet& set) {
  json root = json::object();
  for (const auto& p : set) {
    json* cur = &root;
    for (const auto& k : p) cur = &(*cur)["f:" + k];
    if (cur->is_null()) *cur = json::object();
  }
  return root;
}

void FromFieldsV1(const json& v, FieldPath& path, FieldSet* out) {
  if (!v.is_object()) return;
  if (v.empty() && !path.empty()) {
    out->insert(path);
    return;
  }
  for (const auto& [k, sub] : v.items()) {
    if (k.rfind("f:", 0) != 0) continue;
    path.push_back(k.substr(2));
    FromFieldsV1(sub, path, out);
    path.pop_back();
  }
}

void DropEmpty(std::vector<ManagerEntry>& entries) {
  entries.erase(std::remove_if(entries.begin(), entries.end(), [](const ManagerEntry& e) { return e.fields.empty(); }),
                entries.end());
}

ManagerEntry& EntryFor(std::vector<ManagerEntry>& entries, const ManagerEntry& who) {
  for (auto& e : entries) {
    if (e.manager == who.manager && e.operation == who.operation && e.subresource == who.subresource) {
      e.api_version = who.api_version;
      e.time = who.time;
      return e;
    }
  }
  entries.push_back(who);
  entries.back().fields.clear();
  return entries.back();
}

}  // namespace

FieldSet LeafFields(const json& object) {
  FieldSet out;
  FieldPath path;
  for (const auto& [k, v] : object.items()) {
    if (k == "apiVersion" || k == "kind") continue;
    if (k == "metadata") {
      for (const char* m : {"labels", "annotations"}) {
        if (v.contains(m) && v[m].is_object()) {
          for (const auto& [lk, lv] : v[m].items()) out.insert({"metadata", m, lk});
        }
      }
      for (const char* m : {"finalizers", "ownerReferences"}) {
        if (v.contains(m) && !v[m].is_null()) out.insert({"metadata", m});
      }
      continue;
    }
    path = {k};
    Leaves(v, path, &out);
  }
  return out;
}

std::string FieldPathText(const FieldPath& p) {
  std::string s;
  for (const auto& k : p) s += "." + k;
  return s;
}

std::vector<ManagerEntry> ReadManagedFields(const json& object) {
  std::vector<ManagerEntry> out;
  const json& md = object.value("metadata", json::object());
  for (const auto& e : md.value("managedFields", json::array())) {
    ManagerEntry m;
    m.manager = e.value("manager", "");
    m.operation = e.value("operation", "Update");
    m.api_version = e.value("apiVersion", "");
    m.time = e.value("time", "");
    m.subresource = e.value("subresource", "");
    FieldPath path;
    FromFieldsV1(e.value("fieldsV1", json::object()), path, &m.fields);
    out.push_back(std::move(m));
  }
  return out;
}

void WriteManagedFields(json& object, const std::vector<ManagerEntry>& entries) {
  json arr = json::array();
  for (const auto& e : entries) {
    if (e.fields.empty()) continue;
    json j = {{"manager", e.manager},      {"operation", e.operation}, {"apiVersion", e.api_version},
              {"time", e.time},            {"fieldsType", "FieldsV1"}, {"fieldsV1", ToFieldsV1(e.fields)}};
    if (!e.subresource.empty()) j["subresource"] = e.subresource;
    arr.push_back(std::move(j));
  }
  if (arr.empty()) {
    object["metadata"].erase("managedFields");
  } else {
    object["metadata"]["managedFields"] = std::move(arr);
  }
}

void RecordUpdate(std::vector<ManagerEntry>& entries, const json& old_object, const json& new_object,
                  const ManagerEntry& who) {
  FieldSet before = old_object.is_null() ? FieldSet{} : LeafFields(old_object);
  FieldSet after = LeafFields(new_object);
  FieldSet changed;
  for (const auto& p : after) {
    const json* a = At(new_object, p);
    const json* b = old_object.is_null() ? nullptr : At(old_object, p);
    if (!b || *a != *b) changed.insert(p);
  }
  for (auto& e : entries) {
    for (auto it = e.fields.begin(); it != e.fields.end();) {
      if (changed.count(*it) || !after.count(*it)) {
        it = e.fields.erase(it);
      } else {
        ++it;
      }
    }
  }
  if (!changed.empty()) {
    ManagerEntry& mine = EntryFor(entries, who);
    mine.fields.insert(changed.begin(), changed.end());
  }
  DropEmpty(entries);
}

std::vector<ApplyConflict> ApplyConfig(json& live, const json& config, const ManagerEntry& who, bool force,
                                       std::vector<ManagerEntry>& entries) {
  FieldSet wanted = LeafFields(config);
  std::vector<ApplyConflict> conflicts;
  for (const auto& p : wanted) {
    const json* cur = At(live, p);
    const json* mine = At(config, p);
    if (!cur || (mine && *cur == *mine)) continue;
    for (const auto& e : entries) {
      bool same = e.manager == who.manager && e.operation == "Apply";
      if (!same && e.fields.count(p)) conflicts.push_back({e.manager, FieldPathText(p)});
    }
  }
  if (!conflicts.empty() && !force) return conflicts;
  conflicts.clear();
  if (force) {
    for (auto& e : entries) {
      if (e.manager == who.manager && e.operation == "Apply") continue;
      for (const auto& p : wanted) e.fields.erase(p);
    }
  }
  ManagerEntry& mine = EntryFor(entries, who);
  for (const auto& p : mine.fields) {
    if (wanted.count(p)) continue;
    bool others = false;
    for (const auto& e : entries) {
      if (&e != &mine && e.fields.count(p)) others = true;
    }
    if (!others) Erase(live, p);
  }
  json body = config;
  if (body.contains("metadata")) {
    // Identity metadata comes from the live object, never from the config.
    json md = json::object();
    for (const char* k : {"labels", "annotations", "finalizers", "ownerReferences"}) {
      if (body["metadata"].contains(k)) md[k] = body["metadata"][k];
    }
    body["metadata"] = md;
  }
  body.erase("apiVersion");
  body.erase("kind");
  Merge(live, body);
  mine.fields = wanted;
  DropEmpty(entries);
  return conflicts;
}

}  // namespace fairbench::apiserver
