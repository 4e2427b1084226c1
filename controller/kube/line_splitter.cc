#include "controller/kube/line_splitter.h"

namespace fairbench::kube {

bool LineSplitter::Feed(std::string_view chunk, const std::function<void(std::string_view)>& on_line) {
  size_t start = 0;
  while (start < chunk.size()) {
    size_t nl = chunk.find('\n', start);
    if (nl == std::string_view::npos) {
      buffer_.append(chunk.substr(start));
      return buffer_.size() <= max_line_;
    }
    std::string_view piece = chunk.substr(start, nl - start);
    if (buffer_.empty()) {
      if (!piece.empty()) on_line(piece);
    } else {
      buffer_.append(piece);
      if (buffer_.size() > max_line_) return false;
      std::string line;
      line.swap(buffer_);
      on_line(line);
    }
    start = nl + 1;
  }
  return true;
}

}  // namespace fairbench::kube
