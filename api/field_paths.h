// FieldPaths: from a member of a BenchmarkRun to its API path.
//
// Walks one BenchmarkRun with the schema (schema.h) and remembers, for the
// address and type of every field, list item and map value, the path
// ("spec.load.connections[0]") and its field-order key. Validation then
// writes `Fail(spec.load.threads, "must be ≥ 1")` and gets the path right
// without spelling any field name: the names stay in schema.h.
//
// Valid as long as the run it was built from is neither moved nor resized.
// Internal to fairbench_api.
#pragma once

#include <string>
#include <string_view>
#include <typeindex>
#include <typeinfo>
#include <unordered_map>
#include <vector>

#include "api/benchmark_run.h"

namespace fairbench::api {

class FieldPaths {
 public:
  struct Entry {
    std::string path;
    std::vector<int> order;
  };

  explicit FieldPaths(const BenchmarkRun& run);

  // The entry for a member of the run this was built from; nullptr for
  // anything else.
  template <typename T>
  const Entry* Find(const T& member) const {
    const auto it = index_.find(Key{static_cast<const void*>(&member), std::type_index(typeid(T))});
    return it == index_.end() ? nullptr : &it->second;
  }

  // The schema visitor interface (schema.h).
  template <typename T>
  void Field(std::string_view name, const T& member, unsigned flags = 0);

 private:
  struct Key {
    const void* address;
    std::type_index type;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return std::hash<const void*>()(k.address) ^ (k.type.hash_code() * 31); }
  };

  template <typename T>
  void Register(const T& member, std::string path, std::vector<int> order);
  template <typename T>
  void Walk(const T& member, const Entry& at);

  std::unordered_map<Key, Entry, KeyHash> index_;
  std::vector<const Entry*> stack_;  // the enclosing object
  std::vector<int> counters_;        // fields seen so far in each enclosing object
};

}  // namespace fairbench::api
