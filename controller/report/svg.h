// SVG: draws a Chart (chart.h) as one inline <svg> element, for the HTML
// report. No scripts, no external fonts or styles: colours and sizes are
// attributes, so the picture is the same in any browser and offline. Every
// mark carries a <title> (a tooltip with the exact value) and the chart a
// <title>/<desc>, so the numbers are reachable without seeing the picture.
// All text is escaped for XML.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "controller/report/chart.h"

namespace fairbench::report {

// `id` must be unique in the page: the chart's title and description
// elements are named after it for screen readers.
std::string RenderSvg(const Chart& chart, std::string_view id);

// The colour of a series slot (colour-blind-safe palette, repeating).
std::string_view SlotColour(int slot);

// & < > " ' → entities.
std::string EscapeXml(std::string_view text);

}  // namespace fairbench::report
