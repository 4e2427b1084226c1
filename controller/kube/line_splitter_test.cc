#include "controller/kube/line_splitter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace fairbench::kube {
namespace {

std::vector<std::string> FeedAll(LineSplitter& s, const std::vector<std::string>& chunks) {
  std::vector<std::string> lines;
  for (const auto& c : chunks) {
    EXPECT_TRUE(s.Feed(c, [&](std::string_view l) { lines.emplace_back(l); }));
  }
  return lines;
}

TEST(LineSplitter, ChunkBoundariesAreNotEventBoundaries) {
  LineSplitter s;
  auto lines = FeedAll(s, {R"({"type":"ADD)", R"(ED"})", "\n{\"a\":1}\n{\"b\"", ":2}\n", "\n"});
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], R"({"type":"ADDED"})");
  EXPECT_EQ(lines[1], R"({"a":1})");
  EXPECT_EQ(lines[2], R"({"b":2})");
  EXPECT_EQ(s.pending(), 0u);
}

TEST(LineSplitter, ByteByByte) {
  LineSplitter s;
  std::string stream = "one\ntwo\nthree\n";
  std::vector<std::string> chunks;
  for (char c : stream) chunks.emplace_back(1, c);
  auto lines = FeedAll(s, chunks);
  EXPECT_EQ(lines, (std::vector<std::string>{"one", "two", "three"}));
}

TEST(LineSplitter, BoundedLine) {
  LineSplitter s(8);
  EXPECT_FALSE(s.Feed("0123456789", [](std::string_view) {}));
}

// Found by fuzz/watch_stream_fuzzer: the limit held only for lines that
// were buffered across chunks; the same over-long line arriving whole in
// one chunk was passed on. And a partial line was buffered before the
// check, so memory grew past the limit first.
TEST(LineSplitter, TheLimitHoldsHoweverTheStreamIsCut) {
  LineSplitter whole(8);
  EXPECT_FALSE(
      whole.Feed("0123456789\n", [](std::string_view) { ADD_FAILURE() << "an over-long line was passed on"; }));
  LineSplitter split(8);
  EXPECT_TRUE(split.Feed("01234", [](std::string_view) {}));
  EXPECT_FALSE(split.Feed("56789\n", [](std::string_view) { ADD_FAILURE() << "an over-long line was passed on"; }));
  LineSplitter partial(8);
  EXPECT_TRUE(partial.Feed("0123", [](std::string_view) {}));
  EXPECT_FALSE(partial.Feed("456789", [](std::string_view) {}));
  EXPECT_LE(partial.pending(), 8u);
  // Exactly at the limit is fine, whole or cut.
  std::vector<std::string> lines;
  LineSplitter at(8);
  EXPECT_TRUE(at.Feed("01234567\n0123", [&](std::string_view l) { lines.emplace_back(l); }));
  EXPECT_TRUE(at.Feed("4567\n", [&](std::string_view l) { lines.emplace_back(l); }));
  EXPECT_EQ(lines, (std::vector<std::string>{"01234567", "01234567"}));
}

}  // namespace
}  // namespace fairbench::kube
