#include "controller/report/markdown.h"

#include <algorithm>
#include <type_traits>

namespace fairbench::report {
namespace {

// A code span whose fence is longer than any run of backticks inside it.
std::string CodeSpan(std::string_view text) {
  size_t longest = 0, run = 0;
  for (char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(longest + 1, '`');
  std::string body;
  for (char c : text) body += (c == '\n' || c == '\r') ? ' ' : c;
  body = body.empty() ? " " : body;
  // A space on each side keeps a backtick at either end from joining the fence.
  const bool pad = body.front() == '`' || body.back() == '`';
  // "|" ends a table cell even inside a code span.
  std::string escaped;
  for (char c : body) {
    if (c == '|') escaped += '\\';
    escaped += c;
  }
  return fence + (pad ? " " : "") + escaped + (pad ? " " : "") + fence;
}

// Text that starts a line: characters that would open a heading, quote,
// list or setext underline there are escaped as well.
std::string LineStart(std::string text) {
  if (!text.empty() && (text[0] == '#' || text[0] == '>' || text[0] == '-' || text[0] == '+' || text[0] == '=')) {
    text.insert(0, "\\");
  }
  return text;
}

std::string Inline(const Paragraph& p) {
  std::string out;
  for (const Span& s : p.spans) {
    switch (s.style) {
      case Span::Style::kPlain: out += EscapeMarkdown(s.text); break;
      case Span::Style::kStrong: out += "**" + EscapeMarkdown(s.text) + "**"; break;
      case Span::Style::kCode: out += CodeSpan(s.text); break;
    }
  }
  return out;
}

std::string TableText(const Table& t) {
  auto line = [](const std::vector<std::string>& cells) {
    std::string out = "|";
    for (const std::string& c : cells) out += " " + (c.empty() ? std::string() : EscapeMarkdown(c)) + " |";
    return out + "\n";
  };
  std::string out = line(t.header);
  out += "|";
  for (size_t i = 0; i < t.header.size(); ++i) {
    const Align a = i < t.align.size() ? t.align[i] : Align::kLeft;
    out += a == Align::kRight ? "--:|" : "---|";
  }
  out += "\n";
  for (const auto& row : t.rows) {
    std::vector<std::string> cells = row;
    cells.resize(t.header.size());
    out += line(cells);
  }
  return out;
}

std::string BlockText(const Block& block) {
  return std::visit(
      [](const auto& b) -> std::string {
        using T = std::decay_t<decltype(b)>;
        if constexpr (std::is_same_v<T, Paragraph>) {
          return LineStart(Inline(b)) + "\n";
        } else if constexpr (std::is_same_v<T, BulletList>) {
          std::string out;
          for (const Paragraph& item : b.items) out += "- " + Inline(item) + "\n";
          return out;
        } else if constexpr (std::is_same_v<T, Table>) {
          return TableText(b);
        } else if constexpr (std::is_same_v<T, RawText>) {
          // As a code block under its summary; the fence outgrows any run
          // of backticks in the text.
          std::string fence = "```";
          while (b.text.find(fence) != std::string::npos) fence += '`';
          std::string text = b.text;
          if (!text.empty() && text.back() != '\n') text += '\n';
          return LineStart(EscapeMarkdown(b.summary)) + "\n\n" + fence + "\n" + text + fence + "\n";
        } else {
          return "";  // charts and flame graphs: HTML only
        }
      },
      block);
}

}  // namespace

std::string EscapeMarkdown(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '\\':
      case '`':
      case '*':
      case '_':
      case '[':
      case ']':
      case '<':
      case '|':
      case '~':
        out += '\\';
        out += c;
        break;
      case '\n':
      case '\r': out += ' '; break;
      default: out += c;
    }
  }
  return out;
}

std::string RenderMarkdown(const Document& doc) {
  std::string out = "# " + EscapeMarkdown(doc.title) + "\n";
  // (Headings and list items need no LineStart: their marker comes first.)
  for (const Paragraph& p : doc.preamble) out += "\n" + LineStart(Inline(p)) + "\n";
  for (const Section& s : doc.sections) {
    if (s.html_only) continue;
    out += "\n" + std::string(static_cast<size_t>(s.level), '#') + " " + EscapeMarkdown(s.title) + "\n";
    for (const Block& b : s.blocks) {
      const std::string text = BlockText(b);
      if (!text.empty()) out += "\n" + text;
    }
  }
  return out;
}

std::string RenderMarkdown(const RunRecord& record) { return RenderMarkdown(BuildDocument(record)); }

}  // namespace fairbench::report
