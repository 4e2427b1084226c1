#include "controller/report/format.h"

#include <gtest/gtest.h>

namespace fairbench::report {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

TEST(FormatTest, CountsHaveThousandsSeparatorsAndATrueMinus) {
  EXPECT_EQ(FormatCount(605123), "605,123");
  EXPECT_EQ(FormatCount(605123.4), "605,123");
  EXPECT_EQ(FormatCount(999.5), "1,000");
  EXPECT_EQ(FormatCount(0), "0");
  EXPECT_EQ(FormatCount(-1234), "\u22121,234");
  EXPECT_EQ(FormatCount(-0.2), "0");  // no "−0"
  EXPECT_EQ(FormatCount(1e12), "1,000,000,000,000");
}

TEST(FormatTest, RatesKeepOneDecimalOnlyWhenSmall) {
  EXPECT_EQ(FormatRate(85410), "85,410");
  EXPECT_EQ(FormatRate(12.46), "12.5");
  EXPECT_EQ(FormatRate(12), "12");
  EXPECT_EQ(FormatRate(99.96), "100");
}

TEST(FormatTest, LatencySwitchesUnitsAtOneThousand) {
  EXPECT_EQ(FormatLatency(149.52), "149.52 µs");
  EXPECT_EQ(FormatLatency(12220), "12.22 ms");
  EXPECT_EQ(FormatLatency(2'000'000), "2.00 s");
  EXPECT_EQ(FormatLatency(999.994), "999.99 µs");
  EXPECT_EQ(FormatLatency(999.996), "1.00 ms");  // never "1000.00 µs"
  EXPECT_EQ(FormatLatency(999'996), "1.00 s");
  EXPECT_EQ(FormatLatency(1), "1.00 µs");
}

TEST(FormatTest, BytesUseBinaryUnits) {
  EXPECT_EQ(FormatBytes(175), "175 B");
  EXPECT_EQ(FormatBytes(175.4), "175 B");
  EXPECT_EQ(FormatBytes(97.79 * kMiB), "97.79 MiB");
  EXPECT_EQ(FormatBytes(1.891 * kMiB), "1.89 MiB");
  EXPECT_EQ(FormatBytes(2048), "2.00 KiB");
  EXPECT_EQ(FormatBytes(16.0 * 1024 * kMiB), "16.00 GiB");
  EXPECT_EQ(FormatBytes(1023.9 * kMiB), "1,023.90 MiB");
  EXPECT_EQ(FormatBytes(1023.999 * kMiB), "1.00 GiB");  // never "1,024.00 MiB"
  EXPECT_EQ(FormatBytes(1023.6), "1.00 KiB");
  EXPECT_EQ(FormatByteRate(61.17 * kMiB), "61.17 MiB/s");
}

TEST(FormatTest, ChangesSharesAndFactors) {
  EXPECT_EQ(FormatChange(567065.0 / 605123 - 1), "\u22126.3 %");
  EXPECT_EQ(FormatChange(0.1), "+10.0 %");
  EXPECT_EQ(FormatChange(-0.0004), "0.0 %");
  EXPECT_EQ(FormatShare(0.93), "93.0 %");
  EXPECT_EQ(FormatShare(0.6509, 0), "65 %");
  EXPECT_EQ(FormatFactor(26.14), "26.1×");
  EXPECT_EQ(FormatDecimal(3.8249, 2), "3.82");
  EXPECT_EQ(FormatDecimal(12345.678, 1), "12,345.7");
}

}  // namespace
}  // namespace fairbench::report
