#include "controller/hub/job_stream.h"

#include <gtest/gtest.h>

namespace fairbench::controller {
namespace {

Counters Requests(uint64_t n) {
  Counters c;
  c.requests = n;
  return c;
}

TEST(JobStreamTest, AcceptsInOrderAndAgreesWithTheTotals) {
  JobStream s;
  EXPECT_EQ(s.OnSnapshot(1, Requests(10)), JobStream::Verdict::kAccept);
  EXPECT_EQ(s.OnSnapshot(2, Requests(20)), JobStream::Verdict::kAccept);
  EXPECT_EQ(s.sum().requests, 30u);
  EXPECT_TRUE(s.Consistent(2, Requests(30)));
  EXPECT_FALSE(s.Consistent(2, Requests(31)));
  EXPECT_FALSE(s.Consistent(3, Requests(30)));  // the agent sent one we never got
}

TEST(JobStreamTest, DuplicatesAreNeverCountedTwice) {
  JobStream s;
  s.OnSnapshot(1, Requests(10));
  s.OnSnapshot(2, Requests(20));
  EXPECT_EQ(s.OnSnapshot(2, Requests(20)), JobStream::Verdict::kDuplicate);
  EXPECT_EQ(s.OnSnapshot(1, Requests(10)), JobStream::Verdict::kDuplicate);
  EXPECT_EQ(s.sum().requests, 30u);
  EXPECT_EQ(s.duplicates(), 2u);
  EXPECT_TRUE(s.Consistent(2, Requests(30)));
}

TEST(JobStreamTest, GapsAreDetected) {
  JobStream s;
  s.OnSnapshot(1, Requests(10));
  EXPECT_EQ(s.OnSnapshot(4, Requests(40)), JobStream::Verdict::kAccept);
  EXPECT_EQ(s.missing(), 2u);
  EXPECT_FALSE(s.Consistent(4, Requests(100)));
  EXPECT_FALSE(s.Consistent(4, Requests(50)));  // even when the sums happen to agree
}

}  // namespace
}  // namespace fairbench::controller
