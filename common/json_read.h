// Reading fields of JSON the API server sent, without trusting its shape.
// nlohmann::json::value() throws when the key holds another type (or the
// value is not an object), and a number read as int may not fit: these
// return the fallback instead, so that an odd object is an odd value, not
// an exception out of a watch.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

namespace fairbench::json_read {

// o[key] when o is an object holding a string there, else "".
inline std::string String(const nlohmann::json& o, const char* key) {
  if (!o.is_object()) return "";
  const auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : "";
}

// o[key] when it is an integer within [lo, hi], else `fallback`.
inline int64_t Int(const nlohmann::json& o, const char* key, int64_t fallback = 0,
                   int64_t lo = std::numeric_limits<int64_t>::min(), int64_t hi = std::numeric_limits<int64_t>::max()) {
  if (!o.is_object()) return fallback;
  const auto it = o.find(key);
  if (it == o.end()) return fallback;
  int64_t v = 0;
  if (it->is_number_unsigned()) {
    const auto u = it->get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return fallback;
    v = static_cast<int64_t>(u);
  } else if (it->is_number_integer()) {
    v = it->get<int64_t>();
  } else {
    return fallback;
  }
  return v < lo || v > hi ? fallback : v;
}

inline int32_t Int32(const nlohmann::json& o, const char* key) {
  return static_cast<int32_t>(Int(o, key, 0, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()));
}

// o[key] when it is a boolean, else false.
inline bool Bool(const nlohmann::json& o, const char* key) {
  if (!o.is_object()) return false;
  const auto it = o.find(key);
  return it != o.end() && it->is_boolean() && it->get<bool>();
}

// o[key] when it is an object, else an empty object.
inline const nlohmann::json& Object(const nlohmann::json& o, const char* key) {
  static const nlohmann::json empty = nlohmann::json::object();
  if (!o.is_object()) return empty;
  const auto it = o.find(key);
  return it != o.end() && it->is_object() ? *it : empty;
}

// o[key] when it is a list, else an empty list.
inline const nlohmann::json& Array(const nlohmann::json& o, const char* key) {
  static const nlohmann::json empty = nlohmann::json::array();
  if (!o.is_object()) return empty;
  const auto it = o.find(key);
  return it != o.end() && it->is_array() ? *it : empty;
}

}  // namespace fairbench::json_read
