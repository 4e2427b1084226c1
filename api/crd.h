// The BenchmarkRun CustomResourceDefinition (apiextensions.k8s.io/v1),
// generated from the API model: its schema is OpenApiV3Schema(), so the CRD
// accepts and defaults exactly what the codecs do. manifests/ and the Helm
// chart carry this document; a test fails when their copy drifts from it.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace fairbench::api {

nlohmann::ordered_json BenchmarkRunCrd();
// The CRD as YAML, with a header saying it is generated and by what.
std::string BenchmarkRunCrdYaml();

}  // namespace fairbench::api
