// Splits a watch stream into events: chunk boundaries are not event
// boundaries (KUBE-API.md §2), so bytes are buffered until a newline.
// Bounded: a line longer than the limit is an error, not unbounded memory.
//
// Not thread-safe: one splitter per stream.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace fairbench::kube {

class LineSplitter {
 public:
  explicit LineSplitter(size_t max_line = size_t{64} << 20) : max_line_(max_line) {}
  // Calls on_line for every complete line in the stream so far (without the
  // newline; empty lines skipped). False once a line exceeds the limit.
  bool Feed(std::string_view chunk, const std::function<void(std::string_view)>& on_line);
  size_t pending() const { return buffer_.size(); }

 private:
  const size_t max_line_;
  std::string buffer_;
};

}  // namespace fairbench::kube
