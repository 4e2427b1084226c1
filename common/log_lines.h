// LinesAfter: the rest of each line of a log that begins with a prefix —
// how the controller reads the lines fairbench-nofile and the targets
// print when they start ("fairbench-nofile: nofile 1024",
// "fairbench-cpus: {…}", "fairbench-target-facts: {…}"). A line's
// trailing "\r" is dropped. Header-only, so that common/cpu_view (which
// the static fairbench-nofile links) needs no other library for it.
#pragma once

#include <string_view>
#include <vector>

namespace fairbench {

inline std::vector<std::string_view> LinesAfter(std::string_view log, std::string_view prefix) {
  std::vector<std::string_view> out;
  size_t at = 0;
  while (at < log.size()) {
    size_t end = log.find('\n', at);
    if (end == std::string_view::npos) end = log.size();
    std::string_view line = log.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.substr(0, prefix.size()) == prefix) out.push_back(line.substr(prefix.size()));
    at = end + 1;
  }
  return out;
}

}  // namespace fairbench
