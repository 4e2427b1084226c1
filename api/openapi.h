// OpenAPI v3 schema of BenchmarkRun, generated from schema.h, for the CRD's
// openAPIV3Schema.
//
// The CRD must accept exactly what the codecs accept and default exactly as
// decoding does; deriving it from the same field list keeps the two from
// drifting (write it into the CRD with a generator, or compare in a test).
// The schema is structural (every node typed, or int-or-string, or
// preserve-unknown-fields) and carries: types and formats, enums, defaults
// for spec fields (taken from a default-constructed spec, with `default: {}`
// on nested objects so the API server descends into them), int-or-string
// for quantities and connection counts, and `required: [spec]`. Value rules
// (ranges, names, rules between fields) stay in validate.h: the controller
// reports them on the object's conditions with the same messages as the CLI.
// A rule between fields that a run must never break wherever it runs (load
// rate with pipelining) is also a CEL rule (x-kubernetes-validations) with
// validate.h's message, so that the API server refuses the object itself.
#pragma once

#include <nlohmann/json.hpp>

namespace fairbench::api {

nlohmann::ordered_json OpenApiV3Schema();

}  // namespace fairbench::api
