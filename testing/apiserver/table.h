// Server-side Table output (meta.k8s.io/v1 Table), what `kubectl get` asks
// for with `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`: the Name
// column, then the resource's columns (a CRD's additionalPrinterColumns).
// Stateless.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "testing/apiserver/resource_types.h"

namespace fairbench::apiserver {

// includeObject: "Metadata" (default: rows carry PartialObjectMetadata),
// "Object" (the whole object) or "None".
nlohmann::json BuildTable(const ResourceInfo& resource, const std::vector<nlohmann::json>& objects,
                          nlohmann::json list_metadata, bool with_column_definitions,
                          const std::string& include_object, std::chrono::system_clock::time_point now);

}  // namespace fairbench::apiserver
