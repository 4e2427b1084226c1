// Document: the report's content — sections of paragraphs, lists, tables
// and charts — independent of the output format. BuildDocument computes it
// from a RunRecord; markdown.h and html.h only lay it out, so the two
// reports always hold the same tables in the same order.
//
// What it contains, in order: the run's state; environment and method
// (targets, resources, scenarios, load, what "latency" means here); results
// at a glance; per scenario and connection level a ranking; the drop of each
// scenario versus the hello-world baseline; scaling across connection
// levels; why not double (each cell's limiter verdict, also a column of
// each ranking); errors; memory and CPU; bytes per response and transfer/s; flags
// that need a second look; repetitions and their spread; failed and skipped
// cells; the profiled cells (where the target spent its CPU; flame graphs in
// HTML); and, for the HTML report only, charts (requests/s per scenario and
// target, each ranking's latency statistics and percentile spectrum, scaling
// with connections, requests/s over time) and each cell's wrk-style text.
//
// Text in the Document is plain: renderers escape it for their format.
// Missing numbers print as "–".
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "controller/report/chart.h"
#include "controller/report/run_record.h"

namespace fairbench::report {

inline constexpr const char* kMissing = "–";

struct Span {
  enum class Style { kPlain, kStrong, kCode };
  Style style = Style::kPlain;
  std::string text;
};

struct Paragraph {
  std::vector<Span> spans;
};

struct BulletList {
  std::vector<Paragraph> items;
};

enum class Align { kLeft, kRight };

struct Table {
  std::vector<std::string> header;
  std::vector<Align> align;  // per column
  std::vector<std::vector<std::string>> rows;
};

// Raw text kept as it was produced (a cell's wrk-style output, what a
// script's done() printed), under a one-line summary; Markdown shows it as
// a code block.
struct RawText {
  std::string summary;
  std::string text;
};

// A profiled cell's folded stacks, drawn as a flame graph (flamegraph.h).
// Only the HTML report shows these.
struct FlameGraph {
  std::string title;
  CellProfile profile;
};

using Block = std::variant<Paragraph, BulletList, Table, Chart, RawText, FlameGraph>;

struct Section {
  std::string id;  // unique anchor: "ranking-hello-100"
  std::string title;
  int level = 2;  // 2 or 3
  std::vector<Block> blocks;
  bool html_only = false;  // charts and raw text only: the Markdown report leaves it out
};

struct Document {
  std::string title;
  std::vector<Paragraph> preamble;
  std::vector<Section> sections;
};

Document BuildDocument(const RunRecord& record);

}  // namespace fairbench::report
