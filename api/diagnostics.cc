#include "api/diagnostics.h"

#include <algorithm>
#include <cctype>

namespace fairbench::api {

std::string Diagnostic::ToString(std::string_view source) const {
  std::string out(source);
  if (mark.known()) {
    if (out.empty()) out = "<input>";
    out += ":" + std::to_string(mark.line) + ":" + std::to_string(mark.column);
  }
  if (!out.empty()) out += ": ";
  if (!path.empty()) out += path + ": ";
  return out + message;
}

void Diagnostics::Append(const Diagnostics& other) {
  items_.insert(items_.end(), other.items_.begin(), other.items_.end());
}

void Diagnostics::SortByField() {
  std::stable_sort(items_.begin(), items_.end(),
                   [](const Diagnostic& a, const Diagnostic& b) { return a.order < b.order; });
}

std::vector<std::string> Diagnostics::Lines(std::string_view source) const {
  std::vector<std::string> out;
  out.reserve(items_.size());
  for (const Diagnostic& d : items_) out.push_back(d.ToString(source));
  return out;
}

std::string Diagnostics::Format(std::string_view source) const {
  std::string out;
  for (const std::string& line : Lines(source)) {
    if (!out.empty()) out += '\n';
    out += line;
  }
  return out;
}

Status Diagnostics::ToStatus(std::string_view source) const {
  if (items_.empty()) return Status::Ok();
  return Status::InvalidArgument(Format(source));
}

namespace {

size_t EditDistance(std::string_view a, std::string_view b) {
  // Optimal string alignment: a swapped pair of letters costs one edit.
  const size_t n = a.size();
  const size_t m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  const auto lower = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) && lower(a[i - 2]) == lower(b[j - 1])) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

}  // namespace

std::string_view ClosestMatch(std::string_view word, const std::vector<std::string_view>& candidates) {
  if (word.size() > 64) return {};
  std::string_view best;
  size_t best_distance = SIZE_MAX;
  for (const std::string_view c : candidates) {
    const size_t d = EditDistance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  // A third of the word may be wrong ("conections", "keepalive",
  // "treads"); beyond that a suggestion is noise.
  const size_t allowed = std::max<size_t>(1, std::min<size_t>(3, word.size() / 3));
  return best_distance <= allowed ? best : std::string_view();
}

}  // namespace fairbench::api
