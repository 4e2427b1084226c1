#include "controller/kube/backoff.h"

#include <gtest/gtest.h>

namespace fairbench::kube {
namespace {

using std::chrono::milliseconds;

TEST(Backoff, GrowsExponentiallyUpToTheCap) {
  Backoff b({milliseconds(100), milliseconds(1000), 2.0, 0.0}, 1);
  EXPECT_EQ(b.Next(), milliseconds(100));
  EXPECT_EQ(b.Next(), milliseconds(200));
  EXPECT_EQ(b.Next(), milliseconds(400));
  EXPECT_EQ(b.Next(), milliseconds(800));
  EXPECT_EQ(b.Next(), milliseconds(1000));
  EXPECT_EQ(b.Next(), milliseconds(1000));
  b.Reset();
  EXPECT_EQ(b.Next(), milliseconds(100));
}

TEST(Backoff, JitterStaysWithinBounds) {
  Backoff b({milliseconds(100), milliseconds(10000), 2.0, 0.5}, 7);
  for (int i = 0; i < 5; ++i) {
    auto base = milliseconds(100 << i);
    auto got = b.Next();
    EXPECT_GE(got, base);
    EXPECT_LE(got, base * 3 / 2);
  }
}

}  // namespace
}  // namespace fairbench::kube
