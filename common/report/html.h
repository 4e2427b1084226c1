// HTML report (report.html): the Document as one self-contained page —
// inline CSS, charts as inline SVG (svg.h), no scripts, fonts, images or
// links outside the page. A Content-Security-Policy of default-src 'none'
// makes a browser refuse anything external should it ever creep in. Every
// string that comes from the run (names, messages, wrk output) is escaped.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "common/report/document.h"
#include "common/report/run_record.h"

namespace fairbench::report {

std::string RenderHtml(const RunRecord& record);
std::string RenderHtml(const Document& document);

// & < > " ' → entities; safe in text and in quoted attribute values.
std::string EscapeHtml(std::string_view text);

}  // namespace fairbench::report
