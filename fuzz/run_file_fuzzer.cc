// The run-file loader: what `fairbench run FILE` and the operator read from
// users, as YAML or as JSON (first byte: 'j' JSON, anything else YAML; the
// rest is the text). Beyond not crashing, a run that loads must load again,
// unchanged, from its own canonical YAML and JSON encodings — the operator
// stores what the CLI read, and reads it back.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/codec.h"
#include "api/loader.h"

namespace {

using namespace fairbench::api;

[[noreturn]] void Die(const char* what, const std::string& detail) {
  std::fprintf(stderr, "run_file_fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool json = data[0] == 'j';
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  ParseOptions options;
  options.format = json ? Format::kJson : Format::kYaml;
  options.source = json ? "run.json" : "run.yaml";
  auto run = ParseRun(text, options);
  if (json) {
    // The operator's path: an object from the API server.
    auto object = nlohmann::json::parse(text, nullptr, false);
    if (!object.is_discarded()) (void)FromKubernetesObject(object);
  }
  if (!run.ok()) {
    if (run.status().message().empty()) Die("an error without a message", "");
    return 0;
  }
  const std::string yaml = ToYaml(*run);
  ParseOptions again;
  again.format = Format::kYaml;
  auto from_yaml = ParseRun(yaml, again);
  if (!from_yaml.ok()) Die("its canonical YAML does not load", yaml + "\n" + from_yaml.status().message());
  if (ToYaml(*from_yaml) != yaml) Die("its canonical YAML loads differently", yaml + "\n---\n" + ToYaml(*from_yaml));
  const std::string json_text = ToJson(*run).dump();
  again.format = Format::kJson;
  auto from_json = ParseRun(json_text, again);
  if (!from_json.ok()) Die("its canonical JSON does not load", json_text + "\n" + from_json.status().message());
  if (ToYaml(*from_json) != yaml)
    Die("its canonical JSON loads differently", json_text + "\n---\n" + ToYaml(*from_json));
  return 0;
}
