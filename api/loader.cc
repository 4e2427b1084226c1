#include "api/loader.h"

#include <algorithm>
#include <utility>
#include <vector>

#include <fstream>
#include <sstream>
#include <system_error>
#include <utility>

#include "api/field_path.h"
#include "api/field_paths.h"
#include "api/grpc_calls.h"
#include "api/json_text.h"
#include "api/node.h"
#include "api/yaml_text.h"

namespace fairbench::api {
namespace {

namespace fs = std::filesystem;

// Reads a whole file of at most `limit` bytes; the error is a reason
// without the file's name.
Result<std::string> ReadFile(const fs::path& path, uint64_t limit) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec) return Status::IoError(ec.message());
  if (fs::is_directory(st)) return Status::IoError("is a directory");
  const uintmax_t size = fs::is_regular_file(st) ? fs::file_size(path, ec) : 0;
  if (ec) return Status::IoError(ec.message());
  if (size > limit) {
    return Status::InvalidArgument("is " + std::to_string(size) + " bytes; the limit is " + std::to_string(limit));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IoError(std::error_code(errno, std::generic_category()).message());
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::IoError("read error");
  std::string out = std::move(text).str();
  if (out.size() > limit) return Status::InvalidArgument("is larger than " + std::to_string(limit) + " bytes");
  return out;
}

// Reads every bodyFile into its request and every script file into its
// script; problems become diagnostics on the bodyFile or file field.
void ReadBodyFiles(BenchmarkRun& run, const std::optional<fs::path>& base_dir, Diagnostics* out) {
  const FieldPaths paths(run);
  const auto fail = [&](const std::string& member, std::string message) {
    const FieldPaths::Entry* e = paths.Find(member);
    out->Add(Diagnostic{
        e != nullptr ? e->path : std::string(), std::move(message), {}, e != nullptr ? e->order : std::vector<int>{}});
  };
  const auto read = [&](Request& r) {
    if (!r.body_file.has_value() || r.body_file->empty() || r.body.has_value()) return;  // validation reports those
    if (!base_dir.has_value()) {
      fail(*r.body_file, "cannot be read: this run did not come from a file; use body");
      return;
    }
    const bool absolute = fs::path(*r.body_file).is_absolute();
    const fs::path file = absolute ? fs::path(*r.body_file) : *base_dir / *r.body_file;
    Result<std::string> content = ReadFile(file, kMaxBodyFileBytes);
    if (!content.ok()) {
      fail(*r.body_file, "cannot read " + Quote(*r.body_file) + (absolute ? "" : " (relative to the run file)") + ": " +
                             content.status().message());
      return;
    }
    r.body_file_content = std::move(content).value();
  };
  // A gRPC scenario's messageFile and descriptorSet (binary files).
  const auto read_file = [&](const std::optional<std::string>& name, std::string* into) {
    if (!name.has_value() || name->empty()) return;
    if (!base_dir.has_value()) {
      fail(*name, "cannot be read: this run did not come from a file");
      return;
    }
    const bool absolute = fs::path(*name).is_absolute();
    Result<std::string> content = ReadFile(absolute ? fs::path(*name) : *base_dir / *name, kMaxBodyFileBytes);
    if (!content.ok()) {
      fail(*name, "cannot read " + Quote(*name) + (absolute ? "" : " (relative to the run file)") + ": " +
                      content.status().message());
      return;
    }
    *into = std::move(content).value();
  };
  for (Scenario& s : run.spec.scenarios) {
    if (s.grpc.has_value()) {
      read_file(s.grpc->message_file, &s.grpc->message_file_content);
      read_file(s.grpc->descriptor_set, &s.grpc->descriptor_set_content);
    }
    if (s.request.has_value()) read(*s.request);
    for (WeightedRequest& w : s.requests) read(w.request);
    // A script file is read now, so that a wrong name is an error on its field.
    if (!s.script.has_value() || !s.script->file.has_value() || s.script->file->empty()) continue;
    const std::string& name = *s.script->file;
    if (!base_dir.has_value()) {
      fail(name, "cannot be read: this run did not come from a file; use inline");
      continue;
    }
    const bool absolute = fs::path(name).is_absolute();
    Result<std::string> content = ReadFile(absolute ? fs::path(name) : *base_dir / name, kMaxBodyFileBytes);
    if (!content.ok()) {
      fail(name, "cannot read " + Quote(name) + (absolute ? "" : " (relative to the run file)") + ": " +
                     content.status().message());
      continue;
    }
    s.script->content = std::move(content).value();
  }
}

Result<BenchmarkRun> Finish(const Node& root, std::string_view source, const std::optional<fs::path>& base_dir,
                            UnknownFields unknown_fields, const ValidateOptions& validation) {
  Decoded decoded = DecodeRun(root, DecodeOptions{unknown_fields});
  Diagnostics all = decoded.diagnostics;
  if (root.is_map()) {
    if (validation.platform != Platform::kKubernetes) ReadBodyFiles(decoded.run, base_dir, &all);
    const Diagnostics checks = Validate(decoded.run, validation);
    for (const Diagnostic& d : checks.items()) {
      // A field that failed to decode holds a default; rules about it
      // would only repeat the first error in a confusing way.
      bool repeated = false;
      for (const Diagnostic& first : decoded.diagnostics.items()) repeated = repeated || IsWithin(d.path, first.path);
      if (!repeated) all.Add(d);
    }
    // What each gRPC call sends, once everything it is made of is sound.
    if (all.empty() && validation.platform != Platform::kKubernetes) {
      const Diagnostics calls = ResolveGrpcCalls(decoded.run);
      for (const Diagnostic& d : calls.items()) all.Add(d);
    }
  }
  for (Diagnostic& d : all.items()) {
    if (!d.mark.known()) d.mark = decoded.source_map.Find(d.path);
  }
  all.SortByField();
  if (!all.empty()) return all.ToStatus(source);
  return std::move(decoded.run);
}

}  // namespace

fs::path BaseDirectory(const fs::path& run_file) {
  const fs::path parent = run_file.parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

Result<BenchmarkRun> LoadRunFile(const fs::path& path, const LoadOptions& options) {
  const std::string source = options.display_name.empty() ? path.string() : options.display_name;
  Result<std::string> text = ReadFile(path, kMaxRunFileBytes);
  if (!text.ok()) {
    const Status& st = text.status();
    const std::string msg = source + ": cannot read: " + st.message();
    return st.code() == Status::Code::kInvalidArgument ? Status::InvalidArgument(msg) : Status::IoError(msg);
  }
  ParseOptions parse;
  parse.format = options.format;
  if (parse.format == Format::kAuto) parse.format = path.extension() == ".json" ? Format::kJson : Format::kYaml;
  parse.source = source;
  parse.base_dir = BaseDirectory(path);
  parse.unknown_fields = options.unknown_fields;
  parse.validation = options.validation;
  return ParseRun(*text, parse);
}

Result<BenchmarkRun> ParseRun(std::string_view text, const ParseOptions& options) {
  const std::string source = options.source.empty() ? "<input>" : options.source;
  Result<Node> root = options.format == Format::kJson ? ParseJson(text, source) : ParseYaml(text, source);
  if (!root.ok()) return root.status();
  return Finish(*root, options.source, options.base_dir, options.unknown_fields, options.validation);
}

namespace {

// How deep objects and arrays nest, counted without recursion.
int JsonDepth(const nlohmann::json& root) {
  int deepest = 0;
  std::vector<std::pair<const nlohmann::json*, int>> todo = {{&root, 0}};
  while (!todo.empty()) {
    auto [j, depth] = todo.back();
    todo.pop_back();
    if (!j->is_structured()) continue;
    deepest = std::max(deepest, depth + 1);
    if (deepest > kMaxJsonDepth) return deepest;
    for (const auto& child : *j) todo.emplace_back(&child, depth + 1);
  }
  return deepest;
}

}  // namespace

Result<BenchmarkRun> FromKubernetesObject(const nlohmann::json& object) {
  if (JsonDepth(object) > kMaxJsonDepth) {
    return Status::InvalidArgument("invalid object: nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  return Finish(NodeFromJson(object), "", std::nullopt, UnknownFields::kIgnore, ValidateOptions{Platform::kKubernetes});
}

}  // namespace fairbench::api
