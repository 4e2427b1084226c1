#include "testing/apiserver/yaml_json.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <regex>
#include <string>

#include "common/yaml_input.h"

namespace fairbench::apiserver {
namespace {

using nlohmann::json;

json Scalar(const YAML::Node& node) {
  const std::string& s = node.Scalar();
  // "!" marks a quoted scalar (or an explicit non-specific tag): always a string.
  if (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str") return s;
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  static const std::regex kInt(R"([-+]?[0-9]+)");
  static const std::regex kHex(R"(0x[0-9a-fA-F]+)");
  static const std::regex kOct(R"(0o[0-7]+)");
  static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (std::regex_match(s, kInt)) {
    errno = 0;
    long long v = std::strtoll(s.c_str(), nullptr, 10);
    if (errno == 0) return v;
    return std::strtod(s.c_str(), nullptr);
  }
  if (std::regex_match(s, kHex)) return std::strtoll(s.c_str() + 2, nullptr, 16);
  if (std::regex_match(s, kOct)) return std::strtoll(s.c_str() + 2, nullptr, 8);
  if (std::regex_match(s, kFloat)) return std::strtod(s.c_str(), nullptr);
  return s;
}

json Convert(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return nullptr;
    case YAML::NodeType::Scalar:
      return Scalar(node);
    case YAML::NodeType::Sequence: {
      json a = json::array();
      for (const auto& item : node) a.push_back(Convert(item));
      return a;
    }
    case YAML::NodeType::Map: {
      json o = json::object();
      for (const auto& kv : node) o[kv.first.as<std::string>()] = Convert(kv.second);
      return o;
    }
  }
  return nullptr;
}

}  // namespace

Result<nlohmann::json> YamlToJson(std::string_view text) {
  // JSON needs no YAML parser, and keeps number precision exactly.
  auto j = json::parse(text.begin(), text.end(), nullptr, false);
  if (!j.is_discarded()) return j;
  // yaml-cpp checks neither (and misreads a raw NUL); the API server's YAML
  // reader (go-yaml, through sigs.k8s.io/yaml) refuses both, in these words.
  if (const auto fault = CheckYamlText(text)) {
    const auto b = static_cast<unsigned char>(text[fault->offset]);
    const char* what = b < 0x20                ? "control characters are not allowed"
                       : (b < 0xc2 || b > 0xf4) ? "invalid leading UTF-8 octet"
                                                : "invalid trailing UTF-8 octet";
    return Status::InvalidArgument(std::string("error converting YAML to JSON: yaml: ") + what);
  }
  try {
    YAML::Node node = YAML::Load(std::string(text));
    return Convert(node);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(std::string("invalid YAML: ") + e.what());
  }
}

}  // namespace fairbench::apiserver
