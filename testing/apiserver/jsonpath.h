// The JSONPath subset of additionalPrinterColumns: `.a.b`, `['a']`, `[0]`,
// `[*]`, `[?(@.type=="Ready")]` (== or !=, also `@.a.b`). Stateless.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace fairbench::apiserver {

// Values selected by `path` in `object`, in document order. A path that
// cannot be parsed yields InvalidArgument; one that selects nothing, {}.
Result<std::vector<nlohmann::json>> EvalJsonPath(const nlohmann::json& object, std::string_view path);

}  // namespace fairbench::apiserver
