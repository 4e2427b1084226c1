#include "agent/request.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fairbench::agent {
namespace {

bool IEquals(const std::string& a, const char* b) {
  const size_t n = std::char_traits<char>::length(b);
  if (a.size() != n) return false;
  for (size_t i = 0; i < n; ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

bool IsTokenChar(char c) {
  if (std::isalnum(static_cast<unsigned char>(c))) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool HasCrLf(const std::string& s) { return s.find_first_of("\r\n") != std::string::npos; }

}  // namespace

BuiltRequest BuildRequest(const RequestSpec& spec, const std::string& host_header, bool keep_alive) {
  bool user_host = false, user_length = false, user_connection = false;
  for (const auto& [name, value] : spec.headers) {
    user_host |= IEquals(name, "host");
    user_length |= IEquals(name, "content-length");
    user_connection |= IEquals(name, "connection");
  }
  std::string out;
  out.reserve(64 + spec.target.size() + spec.body.size() + spec.headers.size() * 32);
  out += spec.method;
  out += ' ';
  out += spec.target;
  out += " HTTP/1.1\r\n";
  if (!user_host) {
    out += "Host: ";
    out += host_header;
    out += "\r\n";
  }
  for (const auto& [name, value] : spec.headers) {
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
  }
  if (!spec.body.empty() && !user_length) {
    out += "Content-Length: ";
    out += std::to_string(spec.body.size());
    out += "\r\n";
  }
  if (!keep_alive && !user_connection) out += "Connection: close\r\n";
  out += "\r\n";
  out += spec.body;
  BuiltRequest built;
  built.name = spec.name.empty() ? spec.method + " " + spec.target : spec.name;
  built.bytes = std::move(out);
  built.head = spec.method == "HEAD";
  built.weight = spec.weight;
  return built;
}

Result<std::pair<std::string, std::string>> ParseHeader(const std::string& text) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return Status::InvalidArgument("header '" + text + "' must look like 'Name: value'");
  std::string name = text.substr(0, colon);
  std::string value = text.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.erase(value.begin());
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.pop_back();
  if (name.empty() || !std::all_of(name.begin(), name.end(), IsTokenChar)) {
    return Status::InvalidArgument("header '" + text + "' has an invalid name");
  }
  if (HasCrLf(value)) return Status::InvalidArgument("header '" + name + "' contains a line break");
  return std::make_pair(std::move(name), std::move(value));
}

Status ValidateRequest(const RequestSpec& spec, const std::string& where) {
  if (spec.method.empty() || !std::all_of(spec.method.begin(), spec.method.end(), IsTokenChar)) {
    return Status::InvalidArgument(where + "method '" + spec.method + "' is not an HTTP method token");
  }
  if (spec.target.empty() || (spec.target.front() != '/' && spec.target != "*")) {
    return Status::InvalidArgument(where + "path '" + spec.target + "' must start with '/'");
  }
  for (char c : spec.target) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return Status::InvalidArgument(where + "path '" + spec.target + "' contains spaces or control characters");
    }
  }
  for (const auto& [name, value] : spec.headers) {
    if (name.empty() || !std::all_of(name.begin(), name.end(), IsTokenChar)) {
      return Status::InvalidArgument(where + "header name '" + name + "' is not a token");
    }
    if (HasCrLf(value)) return Status::InvalidArgument(where + "header '" + name + "' contains a line break");
  }
  if (spec.weight == 0) return Status::InvalidArgument(where + "weight must be ≥ 1");
  return Status::Ok();
}

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
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return Status::InvalidArgument("cannot read request mix '" + path + "'");
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(path + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                                   ": " + e.msg);
  }
  YAML::Node list = root;
  if (root.IsMap()) {
    for (auto it = root.begin(); it != root.end(); ++it) {
      if (it->first.Scalar() != "requests") {
        return Status::InvalidArgument(At(path, it->first) + "unknown field '" + it->first.Scalar() + "' (expected 'requests')");
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
        if (key == "path") { spec.target = *s; has_path = true; }
        if (key == "body") { spec.body = *s; has_body = true; }
        if (key == "bodyFile") {
          if (has_body) return Status::InvalidArgument(At(path, value) + f + ": give either body or bodyFile, not both");
          const std::filesystem::path p = std::filesystem::path(*s).is_absolute() ? std::filesystem::path(*s) : base / *s;
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
          if (v < 1 || v > 1000000) return Status::InvalidArgument(At(path, value) + f + ": must be between 1 and 1000000");
          w = static_cast<uint32_t>(v);
        } catch (const YAML::Exception&) {
          return Status::InvalidArgument(At(path, value) + f + ": must be an integer");
        }
        spec.weight = w;
      } else if (key == "headers") {
        if (!value.IsMap()) return Status::InvalidArgument(At(path, value) + f + ": must be a mapping of name: value");
        for (auto h = value.begin(); h != value.end(); ++h) {
          if (!h->second.IsScalar()) return Status::InvalidArgument(At(path, h->second) + f + "." + h->first.Scalar() + ": must be a string");
          spec.headers.emplace_back(h->first.Scalar(), h->second.Scalar());
        }
      } else {
        return Status::InvalidArgument(At(path, it->first) + f + ": unknown field (known: name, method, path, headers, body, bodyFile, weight)");
      }
    }
    if (!has_path) return Status::InvalidArgument(At(path, item) + field + ".path: required");
    if (Status s = ValidateRequest(spec, At(path, item) + field + ": "); !s.ok()) return s;
    out.push_back(std::move(spec));
  }
  return out;
}

RequestSchedule::RequestSchedule(const std::vector<uint32_t>& weights) {
  for (uint32_t w : weights) {
    weights_.push_back(w);
    current_.push_back(0);
    total_ += w;
  }
}

uint32_t RequestSchedule::NextWeighted() {
  size_t best = 0;
  for (size_t i = 0; i < weights_.size(); ++i) {
    current_[i] += weights_[i];
    if (current_[i] > current_[best]) best = i;
  }
  current_[best] -= total_;
  return static_cast<uint32_t>(best);
}

}  // namespace fairbench::agent
