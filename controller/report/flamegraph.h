// Flame graph: a CellProfile's folded stacks drawn as one inline <svg> for
// the HTML report. Each frame is a rectangle whose width is its share of
// the samples, stacked on its caller (the process at the bottom, leaves at
// the top); siblings are in name order, so the same code sits in the same
// place in every graph. Every frame carries a <title> with its name,
// samples and share, so the numbers are reachable without the picture.
//
// Interaction comes from one small script (FlameGraphScript), included once
// per page: clicking a frame zooms to it (its callers stay, full width and
// faded; everything else hides), clicking the bottom frame resets, and the
// line under the graph names the frame under the pointer. Without the
// script the graph is complete, just static.
//
// Frames narrower than kMinFrameShare of the samples are left out (the
// description says how many samples they hold). All text is escaped.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "controller/report/profile.h"

namespace fairbench::report {

inline constexpr double kMinFrameShare = 0.0002;

// `id` must be unique in the page. Empty when the profile has no samples.
std::string RenderFlameGraph(const CellProfile& profile, std::string_view title, std::string_view id);

// The script that makes every flame graph of a page interactive: plain
// JavaScript, no dependencies, nothing fetched.
std::string_view FlameGraphScript();

}  // namespace fairbench::report
