// Loader: a BenchmarkRun from a file, a string or a Kubernetes object —
// parsed, defaulted, bodies read, validated — or every error at once.
//
// This is the entry point for the CLI (`fairbench run FILE`) and the
// controller. On failure the Status is InvalidArgument and its message holds
// one line per problem, in field order, each naming where and what:
//   run.yaml:12:5: invalid YAML: end of map not found
//   run.yaml:9:5: spec.load.conections: unknown field (did you mean "connections"?)
//   run.yaml:8:14: spec.load.threads: must be an integer, got "four"
//   run.yaml:4:3: spec.targets: must not be empty
// A syntax error stops parsing, so it comes alone. Validation problems
// inside a field that already failed to decode are not repeated.
//
// bodyFile and script.file paths are relative to the run file's directory;
// their content is read once here (Request::body_file_content,
// Script::content). A script.configMapRef is read by the controller. Relative local.workingDir
// paths are left as written: the platform resolves them against
// BaseDirectory(path).
//
// Thread-safe; reads the files it is given and nothing else.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "api/benchmark_run.h"
#include "api/codec.h"
#include "api/validate.h"
#include "common/status.h"

namespace fairbench::api {

enum class Format { kAuto, kYaml, kJson };  // kAuto: ".json" is JSON, anything else YAML

// Beyond these a file is not a run file (or a body) but a mistake.
inline constexpr uint64_t kMaxRunFileBytes = 4 << 20;
inline constexpr uint64_t kMaxBodyFileBytes = 16 << 20;

struct LoadOptions {
  Format format = Format::kAuto;
  UnknownFields unknown_fields = UnknownFields::kReject;
  ValidateOptions validation;
  std::string display_name;  // how messages name the file; empty: the path as given
};

Result<BenchmarkRun> LoadRunFile(const std::filesystem::path& path, const LoadOptions& options = {});

struct ParseOptions {
  Format format = Format::kYaml;
  std::string source;  // names the text in messages ("run.yaml"); may be empty
  // Where relative bodyFile paths start. Unset: a bodyFile is an error.
  std::optional<std::filesystem::path> base_dir;
  UnknownFields unknown_fields = UnknownFields::kReject;
  ValidateOptions validation;
};

Result<BenchmarkRun> ParseRun(std::string_view text, const ParseOptions& options);

// An object as the Kubernetes API returns it: unknown fields ignored (the
// API server prunes them; a newer CRD may add some), validated for the
// Kubernetes platform. Messages carry field paths but no source name.
Result<BenchmarkRun> FromKubernetesObject(const nlohmann::json& object);

// The directory relative paths in the run file start from.
std::filesystem::path BaseDirectory(const std::filesystem::path& run_file);

}  // namespace fairbench::api
