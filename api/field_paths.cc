#include "api/field_paths.h"

#include <optional>
#include <type_traits>

#include "api/field_path.h"
#include "api/schema.h"

namespace fairbench::api {
FieldPaths::FieldPaths(const BenchmarkRun& run) { Register(run, "", {}); }

template <typename T>
void FieldPaths::Field(std::string_view name, const T& member, unsigned /*flags*/) {
  const Entry& parent = *stack_.back();
  std::vector<int> order = parent.order;
  order.push_back(counters_.back()++);
  Register(member, JoinField(parent.path, name), std::move(order));
}

template <typename T>
void FieldPaths::Register(const T& member, std::string path, std::vector<int> order) {
  auto [it, inserted] = index_.emplace(Key{static_cast<const void*>(&member), std::type_index(typeid(T))},
                                       Entry{std::move(path), std::move(order)});
  // Nodes of an unordered_map are stable: the reference outlives rehashing.
  Walk(member, it->second);
}

template <typename T>
void FieldPaths::Walk(const T& member, const Entry& at) {
  if constexpr (schema::Described<T>) {
    stack_.push_back(&at);
    counters_.push_back(0);
    schema::Describe(*this, member);
    counters_.pop_back();
    stack_.pop_back();
  } else if constexpr (schema::kIsOptional<T>) {
    if (member.has_value()) Register(*member, at.path, at.order);
  } else if constexpr (schema::kIsVector<T>) {
    for (size_t i = 0; i < member.size(); ++i) {
      std::vector<int> order = at.order;
      order.push_back(static_cast<int>(i));
      Register(member[i], JoinIndex(at.path, i), std::move(order));
    }
  } else if constexpr (std::is_same_v<T, StringMap>) {
    int i = 0;
    for (const auto& [key, value] : member) {
      std::vector<int> order = at.order;
      order.push_back(i++);
      Register(value, JoinKey(at.path, key), std::move(order));
    }
  }
}

}  // namespace fairbench::api
