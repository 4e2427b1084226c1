// Encoder: a BenchmarkRun (or any part of it) to a Node, following schema.h.
//
// Canonical output: fields in schema order; durations "30s", quantities
// "1Gi"/"500m", times RFC 3339 UTC; empty strings, lists, maps and unset
// optionals left out, and numbers flagged kOmitZero left out when zero.
// Used by the codecs (codec.h) and by the CRD schema for its defaults
// (openapi.h). Internal to fairbench_api.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "api/benchmark_run.h"
#include "api/cpu_list.h"
#include "api/json_text.h"
#include "api/node.h"
#include "api/quantity.h"
#include "api/schema.h"
#include "api/time_text.h"
#include "common/units.h"

namespace fairbench::api {

class Encoder {
 public:
  template <typename T>
  void Field(std::string_view name, const T& member, unsigned flags = 0) {
    if (Omitted(member, flags)) return;
    Node v = Value(member);
    // An object with nothing to say is left out, like an empty list.
    if (v.is_map() && v.entries().empty() && !std::is_same_v<T, std::optional<nlohmann::json>>) return;
    maps_.back()->Add(std::string(name), std::move(v));
  }

  template <typename T>
  Node Value(const T& m) {
    if constexpr (schema::Described<T>) {
      Node out = Node::Map();
      maps_.push_back(&out);
      schema::Describe(*this, m);
      maps_.pop_back();
      return out;
    } else if constexpr (schema::kIsOptional<T>) {
      return Value(*m);
    } else if constexpr (schema::kIsVector<T>) {
      Node out = Node::Sequence();
      for (const auto& item : m) out.Append(Value(item));
      return out;
    } else if constexpr (std::is_same_v<T, StringMap>) {
      Node out = Node::Map();
      for (const auto& [k, v] : m) out.Add(k, Node::String(v));
      return out;
    } else if constexpr (std::is_same_v<T, std::string>) {
      return Node::String(m);
    } else if constexpr (std::is_same_v<T, bool>) {
      return Node::Bool(m);
    } else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T>) {
      return Node::Uint(m);
    } else if constexpr (std::is_integral_v<T>) {
      return Node::Int(m);
    } else if constexpr (std::is_floating_point_v<T>) {
      return Node::Float(m);
    } else if constexpr (schema::NamedEnum<T>) {
      return Node::String(std::string(schema::NameOf(m)));
    } else if constexpr (std::is_same_v<T, Duration>) {
      return Node::String(FormatDuration(m));
    } else if constexpr (std::is_same_v<T, Time>) {
      return Node::String(FormatTime(m));
    } else if constexpr (std::is_same_v<T, CpuQuantity>) {
      return Node::String(FormatCpu(m));
    } else if constexpr (std::is_same_v<T, MemoryQuantity>) {
      return Node::String(FormatMemory(m));
    } else if constexpr (std::is_same_v<T, CpuList>) {
      return Node::String(FormatCpuList(m));
    } else if constexpr (std::is_same_v<T, RateLevel>) {
      return m.is_share() ? Node::String(FormatRateLevel(m)) : Node::Int(m.per_second);
    } else if constexpr (std::is_same_v<T, Progress>) {
      return Node::String(std::to_string(m.completed) + "/" + std::to_string(m.total));
    } else {
      static_assert(std::is_same_v<T, nlohmann::json>, "no encoding for this type");
      return NodeFromJson(m);
    }
  }

  // Whether a field holding `m` is left out of the output.
  template <typename T>
  static bool Omitted(const T& m, unsigned flags) {
    if constexpr (schema::kIsOptional<T>) {
      return !m.has_value();
    } else if constexpr (schema::kIsVector<T> || std::is_same_v<T, StringMap> || std::is_same_v<T, std::string> ||
                         std::is_same_v<T, CpuList>) {
      return m.empty();
    } else if constexpr (std::is_same_v<T, Progress>) {
      return m.total == 0 && m.completed == 0;
    } else if constexpr (std::is_arithmetic_v<T>) {
      return (flags & schema::kOmitZero) != 0 && m == T{};
    } else {
      return false;
    }
  }

 private:
  std::vector<Node*> maps_;
};

}  // namespace fairbench::api
