// HTML report (report.html): the Document as one self-contained page —
// inline CSS, charts and flame graphs as inline SVG (svg.h, flamegraph.h),
// no fonts, images or links outside the page, and no script but the flame
// graphs' own (only when there is one). A Content-Security-Policy of
// default-src 'none', with script-src naming that script's hash, makes a
// browser refuse anything else should it ever creep in. Every
// string that comes from the run (names, messages, wrk output) is escaped.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "controller/report/document.h"
#include "controller/report/run_record.h"

namespace fairbench::report {

std::string RenderHtml(const RunRecord& record);
std::string RenderHtml(const Document& document);

// & < > " ' → entities; safe in text and in quoted attribute values.
std::string EscapeHtml(std::string_view text);

}  // namespace fairbench::report
