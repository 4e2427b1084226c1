// Markdown report (report.md): the Document laid out as GitHub-flavoured
// Markdown — headings, bullet lists and pipe tables, numbers right-aligned.
// Charts and raw per-cell output are left out (they are in report.html and
// in the cells' own files). Text from the run is escaped so that it cannot
// break a table or start markup: "|", "*", "_", "`", "<", "[" and friends
// are backslash-escaped, line breaks become spaces.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "controller/report/document.h"
#include "controller/report/run_record.h"

namespace fairbench::report {

std::string RenderMarkdown(const RunRecord& record);
std::string RenderMarkdown(const Document& document);

// Escapes `text` for use as Markdown inline text (also inside a table cell).
std::string EscapeMarkdown(std::string_view text);

}  // namespace fairbench::report
