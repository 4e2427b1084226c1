#include "api/cpu_list.h"

#include <algorithm>
#include <charconv>

#include "api/node.h"

namespace fairbench::api {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

bool ParseCpu(std::string_view s, int* out) {
  s = Trim(s);
  if (s.empty()) return false;
  const auto res = std::from_chars(s.data(), s.data() + s.size(), *out);
  return res.ec == std::errc() && res.ptr == s.data() + s.size() && *out >= 0;
}

}  // namespace

Result<CpuList> ParseCpuList(std::string_view text) {
  CpuList out;
  const std::string_view all = Trim(text);
  if (all.empty()) return out;
  const auto fail = [&](const std::string& why) {
    return Status::InvalidArgument(Quote(text) + " is not a CPU list (" + why + "; use e.g. \"0-3,8\")");
  };
  size_t start = 0;
  while (start <= all.size()) {
    size_t comma = all.find(',', start);
    if (comma == std::string_view::npos) comma = all.size();
    const std::string_view item = Trim(all.substr(start, comma - start));
    const size_t dash = item.find('-');
    int lo = 0;
    int hi = 0;
    if (dash == std::string_view::npos) {
      if (!ParseCpu(item, &lo))
        return fail(item.empty() ? "empty item" : "\"" + std::string(item) + "\" is not a CPU number");
      hi = lo;
    } else {
      if (!ParseCpu(item.substr(0, dash), &lo) || !ParseCpu(item.substr(dash + 1), &hi)) {
        return fail("\"" + std::string(item) + "\" is not a range");
      }
      if (hi < lo) return fail("range " + std::string(item) + " is reversed");
    }
    if (hi > kMaxCpu) return fail("CPU " + std::to_string(hi) + " is above " + std::to_string(kMaxCpu));
    for (int c = lo; c <= hi; ++c) out.cpus.push_back(c);
    start = comma + 1;
  }
  std::sort(out.cpus.begin(), out.cpus.end());
  out.cpus.erase(std::unique(out.cpus.begin(), out.cpus.end()), out.cpus.end());
  return out;
}

std::string FormatCpuList(const CpuList& list) {
  std::string out;
  const std::vector<int>& c = list.cpus;
  for (size_t i = 0; i < c.size();) {
    size_t j = i;
    while (j + 1 < c.size() && c[j + 1] == c[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(c[i]);
    if (j > i) out += "-" + std::to_string(c[j]);
    i = j + 1;
  }
  return out;
}

CpuList Intersection(const CpuList& a, const CpuList& b) {
  CpuList out;
  std::set_intersection(a.cpus.begin(), a.cpus.end(), b.cpus.begin(), b.cpus.end(), std::back_inserter(out.cpus));
  return out;
}

std::pair<CpuList, CpuList> SplitInHalves(const CpuList& list) {
  if (list.cpus.size() < 2) return {list, list};
  const auto middle = list.cpus.begin() + static_cast<std::ptrdiff_t>(list.cpus.size() / 2);
  return {CpuList{std::vector<int>(list.cpus.begin(), middle)}, CpuList{std::vector<int>(middle, list.cpus.end())}};
}

}  // namespace fairbench::api
