#include "common/hlog.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/base64.h"
#include "testing/support/temp_dir.h"

namespace fairbench {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Histogram Known() {
  Histogram h;
  for (int i = 0; i < 3; ++i) h.Record(100);
  h.Record(2500);
  h.Record(123'456);
  return h;
}

// Catches: a header that HdrHistogram's readers do not recognise — a
// StartTime/BaseTime spelt or formatted otherwise than HistogramLogWriter's
// "#[StartTime: %.3f (seconds since epoch), <date>]" (readers take the
// number after the first space), a missing legend, or the date in local time.
TEST(HlogTest, HeaderIsHistogramLogWritersText) {
  HlogHeader h;
  h.comments = {"Logged with fairbench: latency in microseconds"};
  h.start_time_s = 1764975665.1234;  // 2025-12-05 23:01:05 UTC (date -u -d @1764975665)
  h.base_time_s = 1764975665.1234;
  h.max_value_divisor = 1000;
  EXPECT_EQ(HlogHeaderText(h),
            "#[Logged with fairbench: latency in microseconds]\n"
            "#[Histogram log format version 1.3]\n"
            "#[StartTime: 1764975665.123 (seconds since epoch), Fri Dec 05 23:01:05 UTC 2025]\n"
            "#[BaseTime: 1764975665.123 (seconds since epoch)]\n"
            "#[MaxValueDivisor: 1000.000]\n"
            "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n");
}

// Catches: interval fields in the wrong order or units (the max not divided,
// or divided into seconds), a tag written after the numbers instead of
// before them, or a histogram that is not the V2 compressed encoding (every
// such histogram in a Java-written log starts "HISTFAAAA": cookie
// 0x1c849314 and a short length).
TEST(HlogTest, IntervalLineFields) {
  const Histogram h = Known();
  const std::string line = HlogIntervalLine(h, 1.25, 1.0, 1000.0);
  ASSERT_EQ(line.back(), '\n');
  EXPECT_TRUE(line.starts_with("1.250,1.000,123.456,HISTFAAAA")) << line;
  const std::string tagged = HlogIntervalLine(h, 0, 0.3, 1000.0, "warmup");
  EXPECT_TRUE(tagged.starts_with("Tag=warmup,0.000,0.300,123.456,HISTFAAAA")) << tagged;
  // An interval without a single request: a valid empty histogram.
  const std::string empty = HlogIntervalLine(Histogram(), 2, 1, 1000.0);
  EXPECT_TRUE(empty.starts_with("2.000,1.000,0.000,HISTFAAAA")) << empty;
  const std::string prefix = "2.000,1.000,0.000,";
  auto bytes = Base64Decode(empty.substr(prefix.size(), empty.size() - prefix.size() - 1));
  ASSERT_TRUE(bytes.ok());
  auto decoded = Histogram::DecodeCompressed(*bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->count(), 0u);
}

// Catches: a file whose intervals do not decode back into the histograms
// written (counts per bucket), lost tags, or start/length mixed up; and a
// header the reader cannot find its times in.
TEST(HlogTest, FileReadsBackWithOurDecoder) {
  auto dir = testing::TempDir::Create("fairbench-hlog");
  ASSERT_TRUE(dir.ok());
  const std::string path = (dir->path() / "a.hlog").string();
  HlogHeader header;
  header.start_time_s = 1000.5;
  header.base_time_s = 1000.25;
  auto f = HlogFile::Create(path, header);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  Histogram second;
  for (int v = 1; v <= 5000; ++v) second.Record(v * 3);
  ASSERT_TRUE((*f)->Append(Known(), 0, 0.3, "warmup").ok());
  ASSERT_TRUE((*f)->Append(second, 0.3, 1.0).ok());
  // Each interval is on disk once Append returns (the file still open).
  auto log = ParseHlog(ReadFile(path));
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(log->start_time_s, 1000.5);
  EXPECT_EQ(log->base_time_s, 1000.25);
  EXPECT_EQ(log->max_value_divisor, 1000.0);
  ASSERT_EQ(log->intervals.size(), 2u);
  EXPECT_EQ(log->intervals[0].tag, "warmup");
  EXPECT_EQ(log->intervals[0].start_s, 0);
  EXPECT_EQ(log->intervals[0].length_s, 0.3);
  EXPECT_EQ(log->intervals[0].max, 123.456);
  EXPECT_EQ(log->intervals[0].histogram.count(), 5u);
  EXPECT_EQ(log->intervals[1].tag, "");
  EXPECT_EQ(log->intervals[1].start_s, 0.3);
  EXPECT_EQ(log->intervals[1].max, 15.0);
  for (int i = 0; i < Histogram::kCountsLen; ++i) {
    ASSERT_EQ(log->intervals[1].histogram.CountAtIndex(i), second.CountAtIndex(i)) << "index " << i;
  }
  EXPECT_EQ(log->intervals[1].histogram.count(), 5000u);
}

// Catches: a reader that accepts a truncated or corrupted line instead of
// saying which line is broken.
TEST(HlogTest, ParseRejectsBrokenLines) {
  EXPECT_FALSE(ParseHlog("0.000,1.000,2.000\n").ok());
  EXPECT_FALSE(ParseHlog("0.000,1.000,x,HISTFAAAA\n").ok());
  auto r = ParseHlog("#c\n0.000,1.000,1.000,bm90IGEgaGlzdG9ncmFt\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("line 2"), std::string::npos) << r.status().message();
}

// Catches: a file that cannot be created reported as success.
TEST(HlogTest, CreateFailsInAMissingFolder) {
  auto f = HlogFile::Create("/nonexistent-fairbench-dir/a.hlog", HlogHeader{});
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("/nonexistent-fairbench-dir/a.hlog"), std::string::npos);
}

}  // namespace
}  // namespace fairbench
