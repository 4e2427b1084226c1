#include "controller/metrics/write_request.h"

#include <gtest/gtest.h>

#include <cstring>

namespace fairbench::metrics {
namespace {

TEST(WriteRequestTest, WireBytesFollowTheSpecification) {
  // WriteRequest{timeseries: [{labels: [{__name__, up}], samples: [{1.0, 1000}]}]},
  // by hand from the published field numbers: WriteRequest.timeseries = 1,
  // TimeSeries.labels = 1, .samples = 2, Label.name = 1, .value = 2,
  // Sample.value = 1 (double), .timestamp = 2 (int64).
  const std::string label = std::string("\x0a\x08", 2) + "__name__" + std::string("\x12\x02", 2) + "up";
  std::string sample = "\x09";
  const double one = 1.0;
  char raw[8];
  std::memcpy(raw, &one, 8);  // little-endian fixed64
  sample += std::string(raw, 8);
  sample += std::string("\x10\xe8\x07", 3);  // 1000 as a varint
  std::string series;
  series += '\x0a';
  series += static_cast<char>(label.size());
  series += label;
  series += '\x12';
  series += static_cast<char>(sample.size());
  series += sample;
  std::string expected;
  expected += '\x0a';
  expected += static_cast<char>(series.size());
  expected += series;
  EXPECT_EQ(EncodeWriteRequest({{{{"__name__", "up"}}, 1.0, 1000}}), expected);
}

TEST(WriteRequestTest, SeriesGatheredLabelsSortedSamplesInTimeOrder) {
  std::vector<RemoteSample> in = {
      {{{"target", "b"}, {"__name__", "x_total"}, {"run", "r"}}, 2, 2000},
      {{{"__name__", "y"}, {"run", "r"}}, 7, 1000},
      {{{"run", "r"}, {"__name__", "x_total"}, {"target", "b"}}, 1, 1000},
  };
  auto compressed = SnappyCompress(EncodeWriteRequest(in));
  auto raw = SnappyUncompress(compressed);
  ASSERT_TRUE(raw.ok());
  auto out = DecodeWriteRequest(*raw);
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->size(), 3u);
  const RemoteLabels x = {{"__name__", "x_total"}, {"run", "r"}, {"target", "b"}};
  EXPECT_EQ((*out)[0].labels, x);
  EXPECT_EQ((*out)[0].timestamp_ms, 1000);
  EXPECT_EQ((*out)[0].value, 1);
  EXPECT_EQ((*out)[1].labels, x);
  EXPECT_EQ((*out)[1].timestamp_ms, 2000);
  EXPECT_EQ((*out)[2].labels, (RemoteLabels{{"__name__", "y"}, {"run", "r"}}));
}

// Catches: a label with an empty value sent (Prometheus' remote write takes
// none), or the same series with and without it sent as two.
TEST(WriteRequestTest, AnEmptyLabelValueIsNoLabel) {
  std::vector<RemoteSample> in = {
      {{{"__name__", "x_total"}, {"rate", ""}, {"run", "r"}}, 1, 1000},
      {{{"__name__", "x_total"}, {"run", "r"}}, 2, 2000},
  };
  auto out = DecodeWriteRequest(EncodeWriteRequest(in));
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->size(), 2u);
  const RemoteLabels x = {{"__name__", "x_total"}, {"run", "r"}};
  EXPECT_EQ((*out)[0].labels, x);
  EXPECT_EQ((*out)[1].labels, x);
}

TEST(WriteRequestTest, BadInputIsAnError) {
  EXPECT_FALSE(SnappyUncompress("definitely not snappy").ok());
  EXPECT_FALSE(DecodeWriteRequest("\xff\xff\xff").ok());
}

}  // namespace
}  // namespace fairbench::metrics
