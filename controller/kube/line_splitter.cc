#include "controller/kube/line_splitter.h"

#include <algorithm>

namespace fairbench::kube {

bool LineSplitter::Feed(std::string_view chunk, const std::function<void(std::string_view)>& on_line) {
  // The limit holds for every line, however the stream was cut: a line
  // that arrives whole in one chunk is held to it as one that is buffered,
  // and nothing beyond it is buffered.
  size_t start = 0;
  while (start < chunk.size()) {
    size_t nl = chunk.find('\n', start);
    if (nl == std::string_view::npos) {
      const std::string_view rest = chunk.substr(start);
      if (rest.size() > max_line_ - std::min(buffer_.size(), max_line_)) return false;
      buffer_.append(rest);
      return true;
    }
    std::string_view piece = chunk.substr(start, nl - start);
    if (piece.size() > max_line_ - std::min(buffer_.size(), max_line_)) return false;
    if (buffer_.empty()) {
      if (!piece.empty()) on_line(piece);
    } else {
      buffer_.append(piece);
      std::string line;
      line.swap(buffer_);
      on_line(line);
    }
    start = nl + 1;
  }
  return true;
}

}  // namespace fairbench::kube
