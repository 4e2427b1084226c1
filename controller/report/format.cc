#include "controller/report/format.h"

#include <cmath>
#include <cstdio>

namespace fairbench::report {
namespace {

constexpr const char* kMinus = "\xE2\x88\x92";  // U+2212, as typeset numbers use

// Digits of |value| with `decimals` places and thousands separators in the
// integer part; the sign is left to the caller.
std::string Grouped(double magnitude, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, magnitude);
  std::string digits(buf);
  const size_t dot = digits.find('.');
  const size_t int_len = dot == std::string::npos ? digits.size() : dot;
  std::string out;
  for (size_t i = 0; i < int_len; ++i) {
    if (i > 0 && (int_len - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  out += digits.substr(int_len);
  return out;
}

// Rounds first so that a value that prints as zero has no sign.
std::string Signed(double value, int decimals, bool plus) {
  const double scale = std::pow(10.0, decimals);
  const double rounded = std::round(value * scale) / scale;
  std::string sign;
  if (rounded < 0) sign = kMinus;
  if (rounded > 0 && plus) sign = "+";
  return sign + Grouped(std::fabs(rounded), decimals);
}

}  // namespace

std::string FormatDecimal(double value, int decimals) { return Signed(value, decimals, false); }

std::string FormatCount(double value) { return Signed(value, 0, false); }

std::string FormatRate(double requests_per_second) {
  const bool whole = requests_per_second == std::round(requests_per_second);
  return whole || std::fabs(requests_per_second) >= 99.95 ? FormatCount(requests_per_second)
                                                          : FormatDecimal(requests_per_second, 1);
}

std::string FormatLatency(double us) {
  // Switch units where the rounded text would reach 1000.
  if (std::fabs(us) < 999.995) return FormatDecimal(us, 2) + " µs";
  if (std::fabs(us) < 999'995.0) return FormatDecimal(us / 1e3, 2) + " ms";
  return FormatDecimal(us / 1e6, 2) + " s";
}

std::string FormatBytes(double bytes) {
  if (std::fabs(bytes) < 1023.5) return FormatCount(bytes) + " B";
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = bytes / 1024;
  size_t u = 0;
  while (std::fabs(v) >= 1023.995 && u + 1 < std::size(kUnits)) {
    v /= 1024;
    ++u;
  }
  return FormatDecimal(v, 2) + " " + kUnits[u];
}

std::string FormatByteRate(double bytes_per_second) { return FormatBytes(bytes_per_second) + "/s"; }

std::string FormatChange(double fraction) { return Signed(fraction * 100, 1, true) + " %"; }

std::string FormatShare(double fraction, int decimals) { return FormatDecimal(fraction * 100, decimals) + " %"; }

std::string FormatFactor(double factor) { return FormatDecimal(factor, 1) + "×"; }

}  // namespace fairbench::report
