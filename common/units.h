// Units: wrk's number formatting and fairbench's duration / count parsing.
//
// The Format* functions reproduce wrk's output exactly (a unit switches at
// 0.85 of the next one, two decimals) so that users can diff fairbench's
// summary against wrk's by eye. Parse* accept what people type on a command
// line or in a BenchmarkRun: "30s", "500ms", "1.5m", "2h", "250us"; "10k".
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace fairbench {

std::string FormatTimeUs(double microseconds);  // 635.91us, 1.23ms, 2.00s, 1.50m
std::string FormatTimeS(double seconds);        // 30s, 1m (no decimals), as in "Running 30s test"
std::string FormatBinary(double bytes);         // 2.76G (append "B" yourself, as wrk does)
std::string FormatMetric(double value);         // 56.20k

// wrk's column printer: right-aligns `text` in `width`, padding units that
// are shorter than two letters so that the numbers line up.
std::string PadUnits(const std::string& text, int width);

// "30s" → 30 s. Units: ns, us, µs, ms, s, m, h; a bare number means seconds.
// Fractions allowed ("1.5s"). Negative or malformed → InvalidArgument.
Result<std::chrono::nanoseconds> ParseDuration(std::string_view text);
// "10k" → 10000; k, M, G (×1000). Malformed → InvalidArgument.
Result<uint64_t> ParseCount(std::string_view text);
// "64k", "1M", "1G", "1024" → bytes, the suffixes powers of 1024 (the
// agent's window and message sizes). Malformed → InvalidArgument.
Result<uint64_t> ParseBinarySize(std::string_view text);
// "1Gi", "512Mi", "1G", "100M", "1024" → bytes (Kubernetes quantity style).
Result<uint64_t> ParseBytes(std::string_view text);

// Canonical text for a duration: the largest unit that divides it ("30s", "1500ms").
std::string FormatDuration(std::chrono::nanoseconds d);

}  // namespace fairbench
