#include "controller/kube/line_splitter.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace fairbench::kube
