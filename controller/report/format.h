// Format: numbers as a person reads them in a report.
//
// Unlike wrk's units (common/units.h), which switch early and drop the
// space so that columns diff against wrk's output, these are for prose and
// tables: thousands separators ("605,123"), a space before the unit
// ("149.52 µs", "97.79 MiB", "−6.3 %"), a real minus sign (U+2212), units
// that switch at 1000 µs / 1000 ms and 1024 bytes. Rounding is to nearest.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace fairbench::report {

// "605,123"; "−1,234". Rounds to an integer.
std::string FormatCount(double value);
// Requests/s: FormatCount from 100 up and for whole numbers, else one decimal ("12.5").
std::string FormatRate(double requests_per_second);
// Microseconds in: "149.52 µs", "12.22 ms", "2.00 s".
std::string FormatLatency(double microseconds);
// "175 B", "1.89 MiB", "97.79 MiB", "16.00 GiB".
std::string FormatBytes(double bytes);
// "61.25 MiB/s".
std::string FormatByteRate(double bytes_per_second);
// A relative change given as a fraction: −0.0629 → "−6.3 %", 0.1 → "+10.0 %", "0.0 %".
std::string FormatChange(double fraction);
// A share given as a fraction: 0.93 → "93.0 %".
std::string FormatShare(double fraction, int decimals = 1);
// A ratio: 26.1 → "26.1×".
std::string FormatFactor(double factor);
// Fixed decimals with thousands separators: (3.8249, 2) → "3.82".
std::string FormatDecimal(double value, int decimals);

}  // namespace fairbench::report
