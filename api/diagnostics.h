// Diagnostics: the errors found in one BenchmarkRun, all of them, each one
// line, in field order.
//
// A Diagnostic names a field path and a reason ("spec.load.threads" / "must
// be ≥ 1"), optionally where the field sits in the source file. Decoding,
// validation and the loader all add to one list; the loader sorts it by the
// schema's field order (not alphabetically, not by severity) and prints
//   run.yaml:12:5: spec.load.threads: must be ≥ 1
// one diagnostic per line. The ordering key is a list of ordinals (field
// number within its struct, element index, …) filled in by whoever knows it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/node.h"
#include "common/status.h"

namespace fairbench::api {

struct Diagnostic {
  std::string path;     // empty: the document as a whole
  std::string message;  // the reason, no trailing period
  Mark mark;            // where in the source, when known
  std::vector<int> order;

  // "SOURCE:LINE:COL: PATH: MESSAGE", leaving out what is unknown.
  std::string ToString(std::string_view source) const;
};

class Diagnostics {
 public:
  void Add(Diagnostic d) { items_.push_back(std::move(d)); }
  void Add(std::string path, std::string message) { items_.push_back({std::move(path), std::move(message), {}, {}}); }
  void Append(const Diagnostics& other);

  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }
  const std::vector<Diagnostic>& items() const { return items_; }
  std::vector<Diagnostic>& items() { return items_; }

  // Stable sort by the ordering key: a parent before its fields, fields in
  // schema order, list items by index.
  void SortByField();

  std::vector<std::string> Lines(std::string_view source) const;
  // Lines joined with '\n'.
  std::string Format(std::string_view source) const;
  // OK when empty, else InvalidArgument with Format(source).
  Status ToStatus(std::string_view source) const;

 private:
  std::vector<Diagnostic> items_;
};

// The candidate nearest to `word` (edit distance, case-insensitive), or ""
// when none is near enough to be a plausible typo.
std::string_view ClosestMatch(std::string_view word, const std::vector<std::string_view>& candidates);

}  // namespace fairbench::api
