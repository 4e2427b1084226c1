#include "testing/kubetest/yaml_json.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <regex>
#include <string>

namespace fairbench::kubetest {
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
    case YAML::NodeType::Null: return nullptr;
    case YAML::NodeType::Scalar: return Scalar(node);
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

// The fault the API server's YAML reader (go-yaml's port of libyaml's
// reader, through sigs.k8s.io/yaml) finds first in UTF-8 text, in its words,
// or nullptr. Its checks, in its order, for the sequence at each offset:
// a leading octet that starts no sequence; a sequence longer than what is
// left of the text; a trailing octet that is not 10xxxxxx; an overlong form;
// a surrogate or a value past U+10FFFF; a character outside YAML's printable
// set (TAB, LF, CR, U+0020-U+007E, NEL, U+00A0-U+D7FF, U+E000-U+FFFD,
// U+10000 and up): so DEL, the C1 controls but NEL, U+FFFE and U+FFFF are
// "control characters" too. (A UTF-16 byte-order mark, which it would
// decode, is not taken here: kubectl and the operator send JSON.)
const char* ReaderFault(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    size_t width = 0;
    uint32_t value = 0;
    if ((c & 0x80) == 0x00) {
      width = 1, value = c;
    } else if ((c & 0xe0) == 0xc0) {
      width = 2, value = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      width = 3, value = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      width = 4, value = c & 0x07;
    } else {
      return "invalid leading UTF-8 octet";
    }
    if (width > text.size() - i) return "incomplete UTF-8 octet sequence";
    for (size_t k = 1; k < width; ++k) {
      const auto b = static_cast<unsigned char>(text[i + k]);
      if ((b & 0xc0) != 0x80) return "invalid trailing UTF-8 octet";
      value = (value << 6) | (b & 0x3f);
    }
    if ((width == 2 && value < 0x80) || (width == 3 && value < 0x800) || (width == 4 && value < 0x10000)) {
      return "invalid length of a UTF-8 sequence";
    }
    if ((value >= 0xd800 && value <= 0xdfff) || value > 0x10ffff) return "invalid Unicode character";
    const bool printable = value == 0x09 || value == 0x0a || value == 0x0d || (value >= 0x20 && value <= 0x7e) ||
                           value == 0x85 || (value >= 0xa0 && value <= 0xd7ff) ||
                           (value >= 0xe000 && value <= 0xfffd) || value >= 0x10000;
    if (!printable) return "control characters are not allowed";
    i += width;
  }
  return nullptr;
}

}  // namespace

Result<nlohmann::json> YamlToJson(std::string_view text) {
  // JSON needs no YAML parser, and keeps number precision exactly.
  auto j = json::parse(text.begin(), text.end(), nullptr, false);
  if (!j.is_discarded()) return j;
  // yaml-cpp checks none of what the API server's reader refuses (and
  // misreads a raw NUL): that reader's verdict comes first.
  if (const char* fault = ReaderFault(text)) {
    return Status::InvalidArgument(std::string("error converting YAML to JSON: yaml: ") + fault);
  }
  try {
    YAML::Node node = YAML::Load(std::string(text));
    return Convert(node);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(std::string("invalid YAML: ") + e.what());
  }
}

}  // namespace fairbench::kubetest
