// Exposition: the Prometheus text format, version 0.0.4.
//
// One "# HELP" and one "# TYPE" line per family, then one line per sample:
// name, labels in the family's declared order (a histogram's "le" last),
// value. Help text escapes backslash and newline; label values escape
// backslash, double quote and newline. Values are written in the shortest
// form that reads back to the same double ("+Inf", "-Inf", "NaN" for the
// special values). A histogram writes cumulative name_bucket lines ending in
// le="+Inf" (equal to name_count), then name_sum and name_count. Families
// without series are left out. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "controller/metrics/metric_family.h"

namespace fairbench::metrics {

// The Content-Type a scraper expects for this format.
inline constexpr const char* kTextContentType = "text/plain; version=0.0.4; charset=utf-8";

std::string RenderText(const std::vector<MetricFamily>& families);

std::string FormatValue(double value);
std::string EscapeLabelValue(std::string_view value);
std::string EscapeHelp(std::string_view help);

}  // namespace fairbench::metrics
