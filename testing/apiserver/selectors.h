// Label and field selectors as the API server parses them (KUBE-API.md §1).
//
// Label selector: `a=b,c!=d,e in (x,y),f notin (z),g,!h` (comma = AND; also
// `==`, and `>`/`<` on integers). Field selector: `f=v`, `f==v`, `f!=v`.
// Parsed values are immutable and safe to share between threads.
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace fairbench::apiserver {

class LabelSelector {
 public:
  enum class Op { kEquals, kNotEquals, kIn, kNotIn, kExists, kDoesNotExist, kGreater, kLess };
  struct Requirement {
    std::string key;
    Op op;
    std::set<std::string> values;
  };

  static Result<LabelSelector> Parse(std::string_view text);
  // `labels` is metadata.labels (an object, or null).
  bool Matches(const nlohmann::json& labels) const;
  bool empty() const { return reqs_.empty(); }

 private:
  std::vector<Requirement> reqs_;
};

class FieldSelector {
 public:
  struct Requirement {
    std::string field;  // "metadata.name"
    bool equals;
    std::string value;
  };

  // `allowed` lists the field paths the resource supports; anything else is
  // rejected as the real server does (400).
  static Result<FieldSelector> Parse(std::string_view text, const std::vector<std::string>& allowed);
  bool Matches(const nlohmann::json& object) const;
  bool empty() const { return reqs_.empty(); }

 private:
  std::vector<Requirement> reqs_;
};

// The text of a dotted field path ("status.phase") in an object; "" if absent.
std::string FieldText(const nlohmann::json& object, const std::string& dotted);

}  // namespace fairbench::apiserver
