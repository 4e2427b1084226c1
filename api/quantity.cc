#include "api/quantity.h"

#include <charconv>
#include <cstdint>
#include <limits>

#include "api/node.h"
#include "common/units.h"

namespace fairbench::api {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

Result<CpuQuantity> ParseCpu(std::string_view text) {
  const auto fail = [&] {
    return Status::InvalidArgument(Quote(text) + " is not a CPU quantity (use e.g. \"4\", \"0.5\", \"500m\")");
  };
  std::string_view t = text;
  bool milli = false;
  if (!t.empty() && t.back() == 'm') {
    milli = true;
    t.remove_suffix(1);
  }
  // Integer arithmetic on the digits: 0.1 + 0.2 must not become 299m.
  int64_t whole = 0;
  int64_t frac = 0;  // in thousandths
  int frac_digits = 0;
  size_t i = 0;
  size_t digits = 0;
  for (; i < t.size() && IsDigit(t[i]); ++i, ++digits) {
    if (whole > std::numeric_limits<int64_t>::max() / 10'000) return fail();
    whole = whole * 10 + (t[i] - '0');
  }
  if (i < t.size() && t[i] == '.') {
    ++i;
    for (; i < t.size() && IsDigit(t[i]); ++i, ++digits) {
      if (t[i] != '0' && frac_digits >= (milli ? 0 : 3)) {
        return Status::InvalidArgument(Quote(text) + " is finer than the smallest CPU unit, 1m");
      }
      if (frac_digits < 3) frac = frac * 10 + (t[i] - '0');
      ++frac_digits;
    }
  }
  if (digits == 0 || i != t.size()) return fail();
  while (frac_digits < 3) {
    frac *= 10;
    ++frac_digits;
  }
  if (milli) {
    if (frac != 0) return Status::InvalidArgument(Quote(text) + " is finer than the smallest CPU unit, 1m");
    return CpuQuantity{whole};
  }
  return CpuQuantity{whole * 1000 + frac};
}

std::string FormatCpu(CpuQuantity cpu) {
  if (cpu.millicores % 1000 == 0) return std::to_string(cpu.millicores / 1000);
  return std::to_string(cpu.millicores) + "m";
}

Result<MemoryQuantity> ParseMemory(std::string_view text) {
  Result<uint64_t> bytes = ParseBytes(text);
  if (!bytes.ok() || *bytes > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return Status::InvalidArgument(Quote(text) + " is not a memory quantity (use e.g. \"1Gi\", \"512Mi\", \"1G\")");
  }
  return MemoryQuantity{static_cast<int64_t>(*bytes)};
}

std::string FormatMemory(MemoryQuantity memory) {
  const int64_t b = memory.bytes;
  if (b == 0) return "0";
  struct Unit {
    int64_t size;
    const char* suffix;
  };
  constexpr Unit kBinary[] = {
      {int64_t{1} << 40, "Ti"}, {int64_t{1} << 30, "Gi"}, {int64_t{1} << 20, "Mi"}, {int64_t{1} << 10, "Ki"}};
  constexpr Unit kDecimal[] = {{1'000'000'000'000, "T"}, {1'000'000'000, "G"}, {1'000'000, "M"}, {1'000, "k"}};
  for (const Unit& u : kBinary) {
    if (b % u.size == 0) return std::to_string(b / u.size) + u.suffix;
  }
  for (const Unit& u : kDecimal) {
    if (b % u.size == 0) return std::to_string(b / u.size) + u.suffix;
  }
  return std::to_string(b);
}

Result<RateLevel> ParseRateLevel(std::string_view text) {
  RateLevel level;
  if (!text.empty() && text.back() == '%') {
    const std::string_view digits = text.substr(0, text.size() - 1);
    int32_t percent = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), percent);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || percent < 1 || percent > 100) {
      return Status::InvalidArgument("\"" + std::string(text) +
                                     "\" is not a share of capacity: a whole percentage from 1% to 100%");
    }
    level.percent = percent;
    return level;
  }
  Result<uint64_t> n = ParseCount(text);
  if (!n.ok() || *n == 0 || *n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return Status::InvalidArgument(
        "\"" + std::string(text) +
        "\" is not a rate: requests/s such as 2000 or \"2k\", or a share of capacity such as \"50%\"");
  }
  level.per_second = static_cast<int64_t>(*n);
  return level;
}

std::string FormatRateLevel(const RateLevel& level) {
  return level.is_share() ? std::to_string(level.percent) + "%" : std::to_string(level.per_second);
}

}  // namespace fairbench::api
