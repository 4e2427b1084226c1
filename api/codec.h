// Codec: BenchmarkRun ⇄ Node, and through Node to YAML and JSON text.
//
// Decoding starts from a default BenchmarkRun, so every field the document
// leaves out (or sets to null) keeps its default. It checks types and
// syntax of values (an integer where an integer belongs, "30s" a duration,
// "1Gi" a quantity) and unknown fields, collecting every problem; it does
// not check rules between fields (validate.h does). Encoding writes every
// spec field (defaults included, as the API server would store them), in
// schema order, with canonical text: "30s", "1Gi", "500m", RFC 3339 UTC.
// Empty strings, lists, maps and unset optionals are left out, and so are
// zero counters in status.
//
// Unknown fields: strict for local files (a typo must not silently become a
// default), ignored for objects read from Kubernetes, where the API server
// has pruned them already and newer controllers may add fields.
//
// Thread-safe: no shared state.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <unordered_map>

#include "api/benchmark_run.h"
#include "api/diagnostics.h"
#include "api/node.h"

namespace fairbench::api {

enum class UnknownFields { kReject, kIgnore };

struct DecodeOptions {
  UnknownFields unknown_fields = UnknownFields::kReject;
};

// Where each decoded value sits in the source, by field path.
class SourceMap {
 public:
  void Set(std::string path, Mark mark);
  // The mark of `path`, else of its nearest ancestor that has one.
  Mark Find(std::string_view path) const;

 private:
  std::unordered_map<std::string, Mark> marks_;
};

struct Decoded {
  BenchmarkRun run;         // meaningful when diagnostics is empty
  Diagnostics diagnostics;  // type errors, unknown fields, duplicate keys
  SourceMap source_map;
};

Decoded DecodeRun(const Node& root, const DecodeOptions& options = {});

Node EncodeRun(const BenchmarkRun& run);
std::string ToYaml(const BenchmarkRun& run);
nlohmann::ordered_json ToJson(const BenchmarkRun& run);
// Parts, for a status patch and for report files.
nlohmann::ordered_json ToJson(const BenchmarkRunStatus& status);
nlohmann::ordered_json ToJson(const CellResult& result);

}  // namespace fairbench::api
