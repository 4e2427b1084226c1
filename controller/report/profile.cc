#include "controller/report/profile.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <utility>

namespace fairbench::report {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

constexpr std::array<std::pair<ProfileState, const char*>, 3> kStateNames{{
    {ProfileState::kRecorded, "Recorded"},
    {ProfileState::kUnavailable, "Unavailable"},
    {ProfileState::kFailed, "Failed"},
}};

// A frame name longer than this is cut (deep template names): it could not
// be read in a flame graph anyway, and it would bloat results.json.
constexpr size_t kMaxFrameName = 240;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// ';' separates frames and a trailing " N" is the count: neither may be
// mistaken inside a name.
std::string CleanName(std::string_view name) {
  std::string out;
  out.reserve(std::min(name.size(), kMaxFrameName));
  for (char c : name) {
    if (out.size() >= kMaxFrameName) {
      out += "…";
      break;
    }
    out += c == ';' ? ':' : (c == '\n' || c == '\t') ? ' ' : c;
  }
  return out;
}

// "ffffffff821ed4e6 do_syscall_64 ([kernel.kallsyms])" → "do_syscall_64_[k]";
// "5278 [unknown] (/usr/bin/yes)" → "[yes]".
std::string FrameName(std::string_view line) {
  line = Trim(line);
  const size_t space = line.find(' ');
  if (space == std::string_view::npos) return "[unknown]";
  std::string_view rest = Trim(line.substr(space + 1));
  std::string_view dso;
  if (!rest.empty() && rest.back() == ')') {
    const size_t open = rest.rfind(" (");
    if (open != std::string_view::npos) {
      dso = rest.substr(open + 2, rest.size() - open - 3);
      rest = Trim(rest.substr(0, open));
    } else if (rest.front() == '(') {
      dso = rest.substr(1, rest.size() - 2);
      rest = {};
    }
  }
  // perf appends "+0x1f" when asked for offsets; a frame is the function.
  if (const size_t plus = rest.rfind("+0x"); plus != std::string_view::npos && plus > 0) rest = rest.substr(0, plus);
  const bool kernel = dso.find("kernel.kallsyms") != std::string_view::npos || dso.rfind("[kernel", 0) == 0;
  std::string name;
  if (!rest.empty() && rest != "[unknown]") {
    name = CleanName(rest);
  } else if (!dso.empty() && dso != "[unknown]") {
    const size_t slash = dso.rfind('/');
    name = "[" + CleanName(slash == std::string_view::npos ? dso : dso.substr(slash + 1)) + "]";
    if (name.rfind("[[", 0) == 0) name = name.substr(1, name.size() - 2);  // "[vdso]" stays as is
  } else {
    name = "[unknown]";
  }
  return kernel && name.rfind("[", 0) != 0 ? name + "_[k]" : name;
}

// "nginx 4711" → "nginx"; the thread id goes, a name with spaces stays.
std::string CommName(std::string_view header) {
  header = Trim(header);
  const size_t last = header.rfind(' ');
  if (last != std::string_view::npos) {
    const std::string_view tail = header.substr(last + 1);
    if (!tail.empty() && tail.find_first_not_of("0123456789/") == std::string_view::npos) {
      header = Trim(header.substr(0, last));
    }
  }
  return header.empty() ? "[unknown]" : CleanName(header);
}

std::string Describe(const Json& j) {
  if (j.is_string()) return api::Quote(j.get<std::string>());
  if (j.is_object()) return "an object";
  if (j.is_array()) return "a list";
  return j.dump();
}

}  // namespace

const char* ProfileStateName(ProfileState state) {
  for (const auto& [s, name] : kStateNames) {
    if (s == state) return name;
  }
  return "Unknown";
}

Folded FoldPerfScript(std::string_view text, size_t max_stacks) {
  std::map<std::string, uint64_t> counts;
  uint64_t samples = 0;
  std::string comm;
  std::vector<std::string> frames;  // leaf first, as perf prints them
  bool in_sample = false;
  auto flush = [&] {
    if (!in_sample) return;
    std::string stack = comm;
    for (auto it = frames.rbegin(); it != frames.rend(); ++it) stack += ";" + *it;
    ++counts[stack];
    ++samples;
    frames.clear();
    in_sample = false;
  };
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (Trim(line).empty()) {
      flush();
      continue;
    }
    if (line.front() == ' ' || line.front() == '\t') {
      if (in_sample) frames.push_back(FrameName(line));
      continue;
    }
    if (line.front() == '#') continue;  // perf's own header comments
    flush();
    comm = CommName(line);
    in_sample = true;
  }
  flush();

  Folded out;
  out.samples = samples;
  std::vector<FoldedStack> stacks;
  stacks.reserve(counts.size());
  for (auto& [frames_text, n] : counts) stacks.push_back(FoldedStack{frames_text, n});
  if (stacks.size() > max_stacks) {
    // Keep the most sampled; ties go to the first in frame order.
    std::stable_sort(stacks.begin(), stacks.end(),
                     [](const FoldedStack& a, const FoldedStack& b) { return a.samples > b.samples; });
    for (size_t i = max_stacks; i < stacks.size(); ++i) out.omitted_samples += stacks[i].samples;
    stacks.resize(max_stacks);
    std::sort(stacks.begin(), stacks.end(),
              [](const FoldedStack& a, const FoldedStack& b) { return a.frames < b.frames; });
  }
  out.stacks = std::move(stacks);
  return out;
}

nlohmann::ordered_json ToJson(const CellProfile& p) {
  OrderedJson j;
  j["state"] = ProfileStateName(p.state);
  if (!p.message.empty()) j["message"] = p.message;
  if (!p.command.empty()) j["command"] = p.command;
  j["frequencyHz"] = p.frequency_hz;
  j["seconds"] = p.seconds;
  j["samples"] = p.samples;
  j["omittedSamples"] = p.omitted_samples;
  OrderedJson folded = OrderedJson::array();
  for (const FoldedStack& s : p.stacks) folded.push_back(s.frames + " " + std::to_string(s.samples));
  j["folded"] = std::move(folded);
  return j;
}

void ReadProfile(const nlohmann::json& j, const std::string& path, api::Diagnostics& d, CellProfile& out) {
  if (!j.is_object()) return d.Add(path, "must be an object, got " + Describe(j));
  const auto at = [&path](std::string_view name) { return path + "." + std::string(name); };
  for (auto it = j.begin(); it != j.end(); ++it) {
    static constexpr std::array<std::string_view, 8> kKnown{"state",   "message", "command",        "frequencyHz",
                                                            "seconds", "samples", "omittedSamples", "folded"};
    if (std::find(kKnown.begin(), kKnown.end(), it.key()) == kKnown.end()) d.Add(at(it.key()), "unknown field");
  }
  const auto text = [&](std::string_view name, std::string& field) {
    const auto it = j.find(std::string(name));
    if (it == j.end()) return;
    if (!it->is_string()) return d.Add(at(name), "must be a string, got " + Describe(*it));
    field = it->get<std::string>();
  };
  const auto count = [&](std::string_view name, uint64_t& field) {
    const auto it = j.find(std::string(name));
    if (it == j.end()) return;
    if (!it->is_number_unsigned()) return d.Add(at(name), "must be a whole number ≥ 0, got " + Describe(*it));
    field = it->get<uint64_t>();
  };
  std::string state;
  text("state", state);
  bool known = false;
  for (const auto& [s, name] : kStateNames) {
    if (state == name) {
      out.state = s;
      known = true;
    }
  }
  if (!known) d.Add(at("state"), "must be Recorded, Unavailable or Failed, got " + api::Quote(state));
  text("message", out.message);
  text("command", out.command);
  uint64_t hz = 0;
  count("frequencyHz", hz);
  if (hz > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) d.Add(at("frequencyHz"), "is too large");
  out.frequency_hz = static_cast<int32_t>(std::min<uint64_t>(hz, std::numeric_limits<int32_t>::max()));
  if (const auto it = j.find("seconds"); it != j.end()) {
    if (!it->is_number()) d.Add(at("seconds"), "must be a number, got " + Describe(*it));
    else out.seconds = it->get<double>();
  }
  count("samples", out.samples);
  count("omittedSamples", out.omitted_samples);
  const auto folded = j.find("folded");
  if (folded == j.end()) return;
  if (!folded->is_array()) return d.Add(at("folded"), "must be a list, got " + Describe(*folded));
  out.stacks.clear();
  for (size_t i = 0; i < folded->size(); ++i) {
    const Json& line = (*folded)[i];
    const std::string where = at("folded") + "[" + std::to_string(i) + "]";
    const size_t space = line.is_string() ? line.get_ref<const std::string&>().rfind(' ') : std::string::npos;
    const std::string& s = line.is_string() ? line.get_ref<const std::string&>() : std::string();
    uint64_t n = 0;
    bool ok = space != std::string::npos && space > 0 && space + 1 < s.size();
    for (size_t k = space + 1; ok && k < s.size(); ++k) {
      ok = s[k] >= '0' && s[k] <= '9' && n <= (std::numeric_limits<uint64_t>::max() - 9) / 10;
      n = ok ? n * 10 + static_cast<uint64_t>(s[k] - '0') : n;
    }
    if (!ok) {
      d.Add(where, "must be \"frame;frame;… COUNT\", got " + Describe(line));
      continue;
    }
    out.stacks.push_back(FoldedStack{s.substr(0, space), n});
  }
}

}  // namespace fairbench::report
