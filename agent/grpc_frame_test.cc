// gRPC's message framing (grpc_frame.h): messages counted at every split,
// each error kind, grpc-timeout's units, grpc-status values.
#include "agent/grpc_frame.h"

#include <gtest/gtest.h>

namespace fairbench::agent {
namespace {

const uint8_t* U(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

// Three messages (one empty) read whole and cut at every byte give the
// same count (catches a prefix byte lost across reads, an empty message
// not counted, a payload length read little-endian).
TEST(GrpcFrameTest, CountsMessagesWhereverTheBytesAreCut) {
  const std::string wire = EncodeGrpcFrame("hello") + EncodeGrpcFrame("") + EncodeGrpcFrame(std::string(300, 'x'));
  for (size_t cut = 0; cut <= wire.size(); ++cut) {
    GrpcMessageReader r;
    uint32_t done = r.Feed(U(wire), cut);
    done += r.Feed(U(wire) + cut, wire.size() - cut);
    EXPECT_EQ(done, 3u) << cut;
    EXPECT_EQ(r.messages(), 3u);
    EXPECT_EQ(r.End(), GrpcFrameError::kNone) << cut;
  }
}

// Each error kind (catches kinds swapped, a message over the limit read
// anyway, a stream that stops mid-message taken as complete).
TEST(GrpcFrameTest, ErrorsByKind) {
  GrpcMessageReader truncated;
  const std::string frame = EncodeGrpcFrame("hello");
  truncated.Feed(U(frame), frame.size() - 1);
  EXPECT_EQ(truncated.messages(), 0u);
  EXPECT_EQ(truncated.End(), GrpcFrameError::kTruncated);

  GrpcMessageReader half_prefix;
  half_prefix.Feed(U(frame), 3);
  EXPECT_EQ(half_prefix.End(), GrpcFrameError::kTruncated);

  // A message longer than its prefix: its excess is read as a prefix.
  std::string longer = EncodeGrpcFrame("hi");
  longer += "there";
  GrpcMessageReader bad_flag;
  EXPECT_EQ(bad_flag.Feed(U(longer), longer.size()), 1u);
  EXPECT_EQ(bad_flag.error(), GrpcFrameError::kBadFlag);
  EXPECT_EQ(bad_flag.End(), GrpcFrameError::kBadFlag);

  GrpcMessageReader limited(10);
  const std::string big = EncodeGrpcFrame(std::string(11, 'x'));
  EXPECT_EQ(limited.Feed(U(big), big.size()), 0u);
  EXPECT_EQ(limited.error(), GrpcFrameError::kTooLarge);
  GrpcMessageReader at_limit(11);
  EXPECT_EQ(at_limit.Feed(U(big), big.size()), 1u);
  EXPECT_EQ(at_limit.End(), GrpcFrameError::kNone);

  // The flag byte 1 (compressed) is framing gRPC allows.
  std::string compressed = EncodeGrpcFrame("z");
  compressed[0] = 1;
  GrpcMessageReader c;
  EXPECT_EQ(c.Feed(U(compressed), compressed.size()), 1u);
  EXPECT_EQ(c.End(), GrpcFrameError::kNone);
}

// The prefix is the flag and a big-endian length (catches a wrong byte order).
TEST(GrpcFrameTest, EncodesTheFiveBytePrefix) {
  const std::string f = EncodeGrpcFrame(std::string(0x0102, 'a'));
  ASSERT_EQ(f.size(), 5u + 0x0102);
  EXPECT_EQ(f.substr(0, 5), std::string("\x00\x00\x00\x01\x02", 5));
}

// grpc-timeout: at most 8 digits, the finest unit that fits, rounded up
// (catches a unit letter wrong, a value over 8 digits, a deadline shortened).
TEST(GrpcFrameTest, FormatsGrpcTimeout) {
  EXPECT_EQ(FormatGrpcTimeout(1), "1n");
  EXPECT_EQ(FormatGrpcTimeout(99'999'999), "99999999n");
  EXPECT_EQ(FormatGrpcTimeout(100'000'000), "100000u");
  EXPECT_EQ(FormatGrpcTimeout(100'000'001), "100001u");
  EXPECT_EQ(FormatGrpcTimeout(250'000'000'000), "250000m");
  EXPECT_EQ(FormatGrpcTimeout(int64_t{200'000} * 1'000'000'000), "200000S");
  EXPECT_EQ(FormatGrpcTimeout(int64_t{3'600} * 1'000'000'000 * 30'000), "1800000M");
}

TEST(GrpcFrameTest, ParsesStatusValues) {
  EXPECT_EQ(ParseGrpcStatus("0"), 0);
  EXPECT_EQ(ParseGrpcStatus("16"), 16);
  EXPECT_EQ(ParseGrpcStatus("42"), 42);
  EXPECT_EQ(ParseGrpcStatus(""), -1);
  EXPECT_EQ(ParseGrpcStatus("OK"), -1);
  EXPECT_EQ(ParseGrpcStatus("-1"), -1);
  EXPECT_EQ(ParseGrpcStatus("1234567890"), -1);
  // gRPC's mapping of HTTP errors without a grpc-status.
  EXPECT_EQ(GrpcStatusFromHttp(404), 12);
  EXPECT_EQ(GrpcStatusFromHttp(503), 14);
  EXPECT_EQ(GrpcStatusFromHttp(500), 2);
}

}  // namespace
}  // namespace fairbench::agent
