// YAML → JSON for the tests' manifests, charts and CRDs.
//
// Plain scalars resolve as in the YAML 1.2 core schema (null, booleans,
// integers, floats); quoted scalars stay strings. Stateless and thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "common/status.h"

namespace fairbench::kubetest {

// One document. JSON is YAML, so JSON text converts too.
Result<nlohmann::json> YamlToJson(std::string_view text);

}  // namespace fairbench::kubetest
