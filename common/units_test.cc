#include "common/units.h"

#include <gtest/gtest.h>

namespace fairbench {
namespace {

using std::chrono::nanoseconds;

TEST(UnitsTest, FormatsLikeWrk) {
  EXPECT_EQ(FormatTimeUs(635.91), "635.91us");
  EXPECT_EQ(FormatTimeUs(849.0), "849.00us");
  EXPECT_EQ(FormatTimeUs(850.0), "0.85ms");  // switches at 0.85 of the next unit
  EXPECT_EQ(FormatTimeUs(12920.0), "12.92ms");
  EXPECT_EQ(FormatTimeUs(2000000.0), "2.00s");
  EXPECT_EQ(FormatTimeUs(90000000.0), "1.50m");
  EXPECT_EQ(FormatTimeS(30), "30s");
  EXPECT_EQ(FormatTimeS(60), "1m");
  EXPECT_EQ(FormatBinary(2.76 * 1024 * 1024 * 1024), "2.76G");
  EXPECT_EQ(FormatBinary(512), "512.00");
  EXPECT_EQ(FormatMetric(56200), "56.20k");
}

TEST(UnitsTest, PadsColumnsLikeWrk) {
  // wrk: printf("%*.*s%.*s", width-pad, width-pad, msg, pad, "  ").
  EXPECT_EQ(PadUnits("635.91us", 8), "635.91us");
  EXPECT_EQ(PadUnits("0.89ms", 10), "    0.89ms");
  EXPECT_EQ(PadUnits("56.20k", 8), " 56.20k ");
  EXPECT_EQ(PadUnits("12.00", 8), " 12.00  ");
}

TEST(UnitsTest, ParsesDurations) {
  EXPECT_EQ(*ParseDuration("30s"), nanoseconds(30'000'000'000));
  EXPECT_EQ(*ParseDuration("500ms"), nanoseconds(500'000'000));
  EXPECT_EQ(*ParseDuration("1.5m"), nanoseconds(90'000'000'000));
  EXPECT_EQ(*ParseDuration("2h"), nanoseconds(7200'000'000'000));
  EXPECT_EQ(*ParseDuration("250us"), nanoseconds(250'000));
  EXPECT_EQ(*ParseDuration("10"), nanoseconds(10'000'000'000));
  EXPECT_FALSE(ParseDuration("").ok());
  EXPECT_FALSE(ParseDuration("abc").ok());
  EXPECT_FALSE(ParseDuration("-1s").ok());
  EXPECT_FALSE(ParseDuration("5 parsecs").ok());
  EXPECT_NE(ParseDuration("5x").status().message().find("unknown time unit"), std::string::npos);
}

TEST(UnitsTest, ParsesCountsAndBytes) {
  EXPECT_EQ(*ParseCount("100"), 100u);
  EXPECT_EQ(*ParseCount("10k"), 10000u);
  EXPECT_EQ(*ParseCount("1.5k"), 1500u);
  EXPECT_FALSE(ParseCount("1.5").ok());
  EXPECT_FALSE(ParseCount("x").ok());
  EXPECT_EQ(*ParseBytes("1Gi"), 1024u * 1024 * 1024);
  EXPECT_EQ(*ParseBytes("512Mi"), 512u * 1024 * 1024);
  EXPECT_EQ(*ParseBytes("1G"), 1000000000u);
  EXPECT_FALSE(ParseBytes("1Zi").ok());
}

TEST(UnitsTest, FormatsDurationsCanonically) {
  EXPECT_EQ(FormatDuration(nanoseconds(30'000'000'000)), "30s");
  EXPECT_EQ(FormatDuration(nanoseconds(1'500'000'000)), "1500ms");
  EXPECT_EQ(FormatDuration(nanoseconds(120'000'000'000)), "2m");
  EXPECT_EQ(FormatDuration(nanoseconds(0)), "0s");
}

}  // namespace
}  // namespace fairbench
