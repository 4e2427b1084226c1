#include "common/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>

namespace fairbench {
namespace {

struct UnitScale {
  double scale;
  const char* base;
  const char* units[6];  // nullptr-terminated
};

constexpr UnitScale kTimeUs{1000, "us", {"ms", "s", nullptr}};
constexpr UnitScale kTimeS{60, "s", {"m", "h", nullptr}};
constexpr UnitScale kBinary{1024, "", {"K", "M", "G", "T", "P", nullptr}};
constexpr UnitScale kMetric{1000, "", {"k", "M", "G", "T", "P", nullptr}};

std::string FormatUnits(double n, const UnitScale& m, int precision) {
  double amount = n;
  const char* unit = m.base;
  const double threshold = m.scale * 0.85;
  for (int i = 0; m.units[i + 1] != nullptr && amount >= threshold; ++i) {
    amount /= m.scale;
    unit = m.units[i];
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f%s", precision, amount, unit);
  return buf;
}

}  // namespace

std::string FormatTimeUs(double us) {
  if (us >= 1000000.0) return FormatUnits(us / 1000000.0, kTimeS, 2);
  return FormatUnits(us, kTimeUs, 2);
}
std::string FormatTimeS(double s) { return FormatUnits(s, kTimeS, 0); }
std::string FormatBinary(double bytes) { return FormatUnits(bytes, kBinary, 2); }
std::string FormatMetric(double value) { return FormatUnits(value, kMetric, 2); }

std::string PadUnits(const std::string& text, int width) {
  int pad = 2;
  const size_t len = text.size();
  if (len >= 1 && std::isalpha(static_cast<unsigned char>(text[len - 1]))) --pad;
  if (len >= 2 && std::isalpha(static_cast<unsigned char>(text[len - 2]))) --pad;
  const int w = width - pad;
  std::string out;
  if (static_cast<int>(len) < w) out.append(static_cast<size_t>(w) - len, ' ');
  out += text.substr(0, static_cast<size_t>(w > 0 ? w : 0));
  out.append(static_cast<size_t>(pad), ' ');
  return out;
}

namespace {

// Splits "1.5ms" into 1.5 and "ms". False when there is no leading number.
bool SplitNumber(std::string_view text, double* number, std::string_view* suffix) {
  size_t i = 0;
  bool digits = false;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    ++i;
    digits = true;
  }
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      ++i;
      digits = true;
    }
  }
  if (!digits) return false;
  try {
    *number = std::stod(std::string(text.substr(0, i)));
  } catch (...) {
    return false;
  }
  *suffix = text.substr(i);
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

Result<std::chrono::nanoseconds> ParseDuration(std::string_view raw) {
  const std::string_view text = Trim(raw);
  double number = 0;
  std::string_view unit;
  if (!SplitNumber(text, &number, &unit)) {
    return Status::InvalidArgument("'" + std::string(raw) + "' is not a duration (use e.g. 30s, 500ms, 2m)");
  }
  double ns_per_unit = 0;
  if (unit.empty() || unit == "s") ns_per_unit = 1e9;
  else if (unit == "ms") ns_per_unit = 1e6;
  else if (unit == "us" || unit == "\xC2\xB5s") ns_per_unit = 1e3;
  else if (unit == "ns") ns_per_unit = 1;
  else if (unit == "m") ns_per_unit = 60e9;
  else if (unit == "h") ns_per_unit = 3600e9;
  else
    return Status::InvalidArgument("'" + std::string(raw) + "' has an unknown time unit '" + std::string(unit) +
                                   "' (use ns, us, ms, s, m, h)");
  const double ns = number * ns_per_unit;
  if (ns > 1e18) return Status::InvalidArgument("'" + std::string(raw) + "' is too long");
  return std::chrono::nanoseconds(static_cast<int64_t>(std::llround(ns)));
}

Result<uint64_t> ParseBinarySize(std::string_view text) {
  uint64_t mult = 1;
  std::string_view digits = text;
  if (!digits.empty()) {
    const char last = digits.back();
    if (last == 'k' || last == 'K') mult = 1024;
    else if (last == 'm' || last == 'M') mult = 1024 * 1024;
    else if (last == 'g' || last == 'G') mult = 1024 * 1024 * 1024;
    if (mult != 1) digits.remove_suffix(1);
  }
  auto n = ParseCount(digits);
  if (!n.ok() || *n > (uint64_t{1} << 40)) {
    return Status::InvalidArgument("'" + std::string(text) + "' is not a size in bytes");
  }
  return *n * mult;
}

Result<uint64_t> ParseCount(std::string_view raw) {
  const std::string_view text = Trim(raw);
  double number = 0;
  std::string_view unit;
  if (!SplitNumber(text, &number, &unit)) return Status::InvalidArgument("'" + std::string(raw) + "' is not a number");
  double scale = 1;
  if (unit.empty()) scale = 1;
  else if (unit == "k" || unit == "K") scale = 1e3;
  else if (unit == "M") scale = 1e6;
  else if (unit == "G") scale = 1e9;
  else
    return Status::InvalidArgument("'" + std::string(raw) + "' has an unknown suffix '" + std::string(unit) +
                                   "' (use k, M, G)");
  const double v = number * scale;
  if (v > 1e18) return Status::InvalidArgument("'" + std::string(raw) + "' is too large");
  if (v != std::floor(v)) return Status::InvalidArgument("'" + std::string(raw) + "' is not a whole number");
  return static_cast<uint64_t>(v);
}

Result<uint64_t> ParseBytes(std::string_view raw) {
  const std::string_view text = Trim(raw);
  double number = 0;
  std::string_view unit;
  if (!SplitNumber(text, &number, &unit))
    return Status::InvalidArgument("'" + std::string(raw) + "' is not a size (use e.g. 1Gi, 512Mi)");
  double scale = 0;
  if (unit.empty()) scale = 1;
  else if (unit == "k" || unit == "K") scale = 1e3;
  else if (unit == "M") scale = 1e6;
  else if (unit == "G") scale = 1e9;
  else if (unit == "T") scale = 1e12;
  else if (unit == "Ki") scale = 1024.0;
  else if (unit == "Mi") scale = 1024.0 * 1024;
  else if (unit == "Gi") scale = 1024.0 * 1024 * 1024;
  else if (unit == "Ti") scale = 1024.0 * 1024 * 1024 * 1024;
  else
    return Status::InvalidArgument("'" + std::string(raw) + "' has an unknown size unit '" + std::string(unit) +
                                   "' (use Ki, Mi, Gi, K, M, G)");
  const double v = number * scale;
  if (v > 1e18) return Status::InvalidArgument("'" + std::string(raw) + "' is too large");
  return static_cast<uint64_t>(std::llround(v));
}

std::string FormatDuration(std::chrono::nanoseconds d) {
  const int64_t ns = d.count();
  if (ns == 0) return "0s";
  struct U {
    int64_t ns;
    const char* name;
  };
  constexpr U kUnits[] = {{3600'000'000'000, "h"}, {60'000'000'000, "m"}, {1'000'000'000, "s"},
                          {1'000'000, "ms"},       {1'000, "us"},         {1, "ns"}};
  for (const U& u : kUnits) {
    if (ns % u.ns == 0) return std::to_string(ns / u.ns) + u.name;
  }
  return std::to_string(ns) + "ns";
}

}  // namespace fairbench
