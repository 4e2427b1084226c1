#include "testing/kubelet/pod_spec.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "common/units.h"
#include "testing/kubetest/yaml_json.h"

namespace fairbench::kubelet {

std::string Expand(std::string_view input,
                   const std::function<std::optional<std::string>(const std::string&)>& lookup) {
  std::string out;
  out.reserve(input.size());
  size_t i = 0;
  while (i < input.size()) {
    if (input[i] != '$' || i + 1 >= input.size()) {
      out.push_back(input[i++]);
      continue;
    }
    const char next = input[i + 1];
    if (next == '$') {
      out.push_back('$');
      i += 2;
      continue;
    }
    if (next == '(') {
      const size_t close = input.find(')', i + 2);
      if (close == std::string_view::npos) {
        out += "$(";
        i += 2;
        continue;
      }
      const std::string name(input.substr(i + 2, close - i - 2));
      auto value = lookup(name);
      out += value ? *value : "$(" + name + ")";
      i = close + 1;
      continue;
    }
    out.push_back('$');
    out.push_back(next);
    i += 2;
  }
  return out;
}

std::string ExpandWith(std::string_view input, const std::vector<std::pair<std::string, std::string>>& env) {
  return Expand(input, [&env](const std::string& name) -> std::optional<std::string> {
    for (auto it = env.rbegin(); it != env.rend(); ++it) {
      if (it->first == name) return it->second;
    }
    return std::nullopt;
  });
}

const char* QosClassName(QosClass q) {
  switch (q) {
    case QosClass::kGuaranteed: return "Guaranteed";
    case QosClass::kBurstable: return "Burstable";
    case QosClass::kBestEffort: return "BestEffort";
  }
  return "BestEffort";
}

Result<int64_t> ParseCpuMillis(std::string_view quantity) {
  std::string q(quantity);
  if (q.empty()) return Status::InvalidArgument("empty cpu quantity");
  double scale = 1000.0;
  if (q.back() == 'm') {
    scale = 1.0;
    q.pop_back();
  }
  char* end = nullptr;
  const double v = std::strtod(q.c_str(), &end);
  if (q.empty() || end != q.c_str() + q.size() || !std::isfinite(v) || v < 0) {
    return Status::InvalidArgument("invalid cpu quantity \"" + std::string(quantity) + "\"");
  }
  return static_cast<int64_t>(std::ceil(v * scale));
}

Result<int64_t> ParseMemoryBytes(std::string_view quantity) {
  auto b = ParseBytes(quantity);
  if (!b.ok()) return b.status();
  return static_cast<int64_t>(*b);
}

namespace {

struct Amounts {
  std::optional<int64_t> cpu;
  std::optional<int64_t> memory;
};

Amounts Read(const Json& resources, const char* which) {
  Amounts a;
  if (!resources.is_object() || !resources.contains(which) || !resources[which].is_object()) return a;
  const Json& m = resources[which];
  auto text = [](const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
  if (m.contains("cpu")) {
    auto c = ParseCpuMillis(text(m["cpu"]));
    if (c.ok()) a.cpu = *c;
  }
  if (m.contains("memory")) {
    auto b = ParseMemoryBytes(text(m["memory"]));
    if (b.ok()) a.memory = *b;
  }
  return a;
}

// Requests with API defaulting applied: a missing request is the limit.
Amounts EffectiveRequests(const Json& container) {
  const Json resources = container.value("resources", Json::object());
  Amounts req = Read(resources, "requests");
  Amounts lim = Read(resources, "limits");
  if (!req.cpu) req.cpu = lim.cpu;
  if (!req.memory) req.memory = lim.memory;
  return req;
}

std::vector<Json> AllContainers(const Json& spec) {
  std::vector<Json> all;
  for (const char* list : {"initContainers", "containers"}) {
    if (spec.contains(list) && spec[list].is_array()) {
      for (const Json& c : spec[list]) all.push_back(c);
    }
  }
  return all;
}

}  // namespace

QosClass ComputeQos(const Json& pod_spec) {
  std::map<std::string, int64_t> requests;
  std::map<std::string, int64_t> limits;
  bool guaranteed = true;
  for (const Json& c : AllContainers(pod_spec)) {
    const Json resources = c.value("resources", Json::object());
    Amounts req = EffectiveRequests(c);
    Amounts lim = Read(resources, "limits");
    if (req.cpu && *req.cpu > 0) requests["cpu"] += *req.cpu;
    if (req.memory && *req.memory > 0) requests["memory"] += *req.memory;
    if (lim.cpu && *lim.cpu > 0) limits["cpu"] += *lim.cpu;
    if (lim.memory && *lim.memory > 0) limits["memory"] += *lim.memory;
    if (!(lim.cpu && *lim.cpu > 0) || !(lim.memory && *lim.memory > 0)) guaranteed = false;
  }
  if (requests.empty() && limits.empty()) return QosClass::kBestEffort;
  if (guaranteed && requests == limits) return QosClass::kGuaranteed;
  return QosClass::kBurstable;
}

PodRequests ComputeRequests(const Json& pod_spec) {
  PodRequests sum;
  if (pod_spec.contains("containers") && pod_spec["containers"].is_array()) {
    for (const Json& c : pod_spec["containers"]) {
      Amounts r = EffectiveRequests(c);
      sum.cpu_millis += r.cpu.value_or(0);
      sum.memory_bytes += r.memory.value_or(0);
    }
  }
  if (pod_spec.contains("initContainers") && pod_spec["initContainers"].is_array()) {
    for (const Json& c : pod_spec["initContainers"]) {
      Amounts r = EffectiveRequests(c);
      sum.cpu_millis = std::max(sum.cpu_millis, r.cpu.value_or(0));
      sum.memory_bytes = std::max(sum.memory_bytes, r.memory.value_or(0));
    }
  }
  return sum;
}

namespace {

Result<std::vector<std::string>> Strings(const Json& v, const std::string& where) {
  if (!v.is_array()) return Status::InvalidArgument(where + ": must be a list of strings");
  std::vector<std::string> out;
  for (const Json& s : v) {
    if (!s.is_string()) return Status::InvalidArgument(where + ": must be a list of strings");
    out.push_back(s.get<std::string>());
  }
  return out;
}

}  // namespace

Result<ImageMap> ParseImageMap(std::string_view text) {
  auto parsed = kubetest::YamlToJson(text);
  if (!parsed.ok()) return parsed.status();
  if (!parsed->is_object()) return Status::InvalidArgument("the image map must be a map of image to argv");
  ImageMap images;
  for (const auto& [image, value] : parsed->items()) {
    ImageEntry e;
    if (value.is_array()) {
      auto argv = Strings(value, image);
      if (!argv.ok()) return argv.status();
      e.entrypoint = std::move(*argv);
    } else if (value.is_object()) {
      if (value.contains("entrypoint")) {
        auto argv = Strings(value["entrypoint"], image + ".entrypoint");
        if (!argv.ok()) return argv.status();
        e.entrypoint = std::move(*argv);
      }
      if (value.contains("cmd")) {
        auto argv = Strings(value["cmd"], image + ".cmd");
        if (!argv.ok()) return argv.status();
        e.cmd = std::move(*argv);
      }
    } else {
      return Status::InvalidArgument(image + ": must be a list of strings or {entrypoint, cmd}");
    }
    if (e.entrypoint.empty() && e.cmd.empty()) return Status::InvalidArgument(image + ": empty argv");
    images[image] = std::move(e);
  }
  return images;
}

Result<ImageMap> LoadImageMap(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::IoError("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto m = ParseImageMap(ss.str());
  if (!m.ok()) return Status::InvalidArgument(path + ": " + m.status().message());
  return m;
}

std::vector<std::string> ComposeArgv(const ImageEntry& image, const Json& container) {
  std::vector<std::string> command;
  std::vector<std::string> args;
  const bool has_command =
      container.contains("command") && container["command"].is_array() && !container["command"].empty();
  const bool has_args = container.contains("args") && container["args"].is_array() && !container["args"].empty();
  if (has_command) {
    for (const Json& s : container["command"]) command.push_back(s.is_string() ? s.get<std::string>() : s.dump());
  }
  if (has_args) {
    for (const Json& s : container["args"]) args.push_back(s.is_string() ? s.get<std::string>() : s.dump());
  }
  std::vector<std::string> argv = has_command ? command : image.entrypoint;
  const std::vector<std::string>& tail = has_args ? args : (has_command ? args : image.cmd);
  argv.insert(argv.end(), tail.begin(), tail.end());
  return argv;
}

namespace {

bool PathChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'; }

}  // namespace

std::string SubstituteMounts(const std::string& text, const std::vector<std::pair<std::string, std::string>>& mounts) {
  std::string out = text;
  for (const auto& [mount, host] : mounts) {
    std::string m = mount;
    while (m.size() > 1 && m.back() == '/') m.pop_back();
    if (m.empty() || m == "/") continue;
    std::string next;
    size_t i = 0;
    while (i < out.size()) {
      const size_t at = out.find(m, i);
      if (at == std::string::npos) break;
      const size_t after = at + m.size();
      const bool starts = at == 0 || !(PathChar(out[at - 1]) || out[at - 1] == '/');
      const bool ends = after == out.size() || out[after] == '/' || !PathChar(out[after]);
      next.append(out, i, at - i);
      if (starts && ends) {
        next += host;
      } else {
        next += m;
      }
      i = after;
    }
    next.append(out, i, std::string::npos);
    out = std::move(next);
  }
  return out;
}

}  // namespace fairbench::kubelet
