#include "agent/request_mix.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/yaml_input.h"

namespace fairbench::agent {
namespace {

std::string At(const std::string& file, const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  if (m.line < 0) return file + ": ";
  return file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1) + ": ";
}

Result<std::string> ScalarString(const std::string& file, const YAML::Node& node, const std::string& field) {
  if (!node.IsScalar()) return Status::InvalidArgument(At(file, node) + field + ": must be a string");
  return node.Scalar();
}

}  // namespace

Result<std::vector<RequestSpec>> LoadRequestMix(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return Status::InvalidArgument("cannot read request mix '" + path + "'");
  std::ostringstream text;
  text << file.rdbuf();
  if (const auto fault = CheckYamlText(text.str())) {
    return Status::InvalidArgument(path + ":" + std::to_string(fault->line) + ":" + std::to_string(fault->column) +
                                   ": " + fault->what);
  }
  YAML::Node root;
  try {
    root = YAML::Load(text.str());
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(path + ":" + std::to_string(e.mark.line + 1) + ":" +
                                   std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  YAML::Node list = root;
  if (root.IsMap()) {
    for (auto it = root.begin(); it != root.end(); ++it) {
      if (it->first.Scalar() != "requests") {
        return Status::InvalidArgument(At(path, it->first) + "unknown field '" + it->first.Scalar() +
                                       "' (expected 'requests')");
      }
    }
    list = root["requests"];
  }
  if (!list || !list.IsSequence() || list.size() == 0) {
    return Status::InvalidArgument(At(path, root) + "requests: must be a non-empty list");
  }
  const std::filesystem::path base = std::filesystem::path(path).parent_path();
  std::vector<RequestSpec> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node item = list[i];
    const std::string field = "requests[" + std::to_string(i) + "]";
    if (!item.IsMap()) return Status::InvalidArgument(At(path, item) + field + ": must be a mapping");
    RequestSpec spec;
    bool has_path = false, has_body = false;
    for (auto it = item.begin(); it != item.end(); ++it) {
      const std::string key = it->first.Scalar();
      const YAML::Node value = it->second;
      const std::string f = field + "." + key;
      if (key == "name" || key == "method" || key == "path" || key == "body" || key == "bodyFile") {
        auto s = ScalarString(path, value, f);
        if (!s.ok()) return s.status();
        if (key == "name") spec.name = *s;
        if (key == "method") spec.method = *s;
        if (key == "path") {
          spec.target = *s;
          has_path = true;
        }
        if (key == "body") {
          spec.body = *s;
          has_body = true;
        }
        if (key == "bodyFile") {
          if (has_body)
            return Status::InvalidArgument(At(path, value) + f + ": give either body or bodyFile, not both");
          const std::filesystem::path p =
              std::filesystem::path(*s).is_absolute() ? std::filesystem::path(*s) : base / *s;
          std::ifstream in(p, std::ios::binary);
          if (!in) return Status::InvalidArgument(At(path, value) + f + ": cannot read '" + p.string() + "'");
          std::ostringstream ss;
          ss << in.rdbuf();
          spec.body = ss.str();
          has_body = true;
        }
      } else if (key == "weight") {
        uint32_t w = 0;
        try {
          const int64_t v = value.as<int64_t>();
          if (v < 1 || v > 1000000)
            return Status::InvalidArgument(At(path, value) + f + ": must be between 1 and 1000000");
          w = static_cast<uint32_t>(v);
        } catch (const YAML::Exception&) {
          return Status::InvalidArgument(At(path, value) + f + ": must be an integer");
        }
        spec.weight = w;
      } else if (key == "headers") {
        if (!value.IsMap()) return Status::InvalidArgument(At(path, value) + f + ": must be a mapping of name: value");
        for (auto h = value.begin(); h != value.end(); ++h) {
          if (!h->second.IsScalar())
            return Status::InvalidArgument(At(path, h->second) + f + "." + h->first.Scalar() + ": must be a string");
          spec.headers.emplace_back(h->first.Scalar(), h->second.Scalar());
        }
      } else {
        return Status::InvalidArgument(At(path, it->first) + f +
                                       ": unknown field (known: name, method, path, headers, body, bodyFile, weight)");
      }
    }
    if (!has_path) return Status::InvalidArgument(At(path, item) + field + ".path: required");
    if (Status s = ValidateRequest(spec, At(path, item) + field + ": "); !s.ok()) return s;
    out.push_back(std::move(spec));
  }
  return out;
}

}  // namespace fairbench::agent
