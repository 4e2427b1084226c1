// JSON text ⇄ Node, with nlohmann-json behind the seam.
//
// JSON is what the Kubernetes API speaks. Objects keep their key order so
// that errors come out in the order of the document. JSON carries no
// positions per value, so Nodes parsed here have unknown marks; syntax
// errors still name line and column: "SOURCE:LINE:COL: invalid JSON: REASON".
// nlohmann exceptions never escape.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "api/node.h"
#include "common/status.h"

namespace fairbench::api {

// Objects and arrays nest at most this deep (a BenchmarkRun needs under
// ten levels); deeper is InvalidArgument "SOURCE: invalid JSON: nested
// deeper than 1000 levels".
inline constexpr int kMaxJsonDepth = 1000;
Result<Node> ParseJson(std::string_view text, std::string_view source);
Node NodeFromJson(const nlohmann::ordered_json& j);
Node NodeFromJson(const nlohmann::json& j);

nlohmann::ordered_json NodeToJson(const Node& node);
// The same value with keys sorted (nlohmann::json compares objects by content).
nlohmann::json NodeToSortedJson(const Node& node);
// indent < 0: one line.
std::string EmitJson(const Node& node, int indent = 2);

}  // namespace fairbench::api
