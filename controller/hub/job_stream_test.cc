#include "controller/hub/job_stream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "controller/hub/cell_aggregator.h"

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

Snapshot Interval(uint64_t sequence, uint64_t requests) {
  Snapshot s;
  s.sequence = sequence;
  // One second each; a sequence number far out (a hostile agent's) gets
  // the times of 2^32, which still fit in int64 nanoseconds.
  const int64_t at = static_cast<int64_t>(std::min<uint64_t>(sequence, uint64_t{1} << 32));
  s.start_ns = (at - 1) * 1'000'000'000;
  s.end_ns = at * 1'000'000'000;
  s.stats.counters.requests = requests;
  return s;
}

CellAggregator::Outcome WaitNow(CellAggregator& cell) {
  return cell.Wait(SystemClock::Instance(), SystemClock::Instance().Now());
}

// Hub hardening (issue 12): an agent that jumps ahead used to open one
// interval per sequence number, each waiting for the other agents, without
// limit (hundreds of KB each once histograms are merged in).
TEST(CellAggregatorTest, AnAgentJumpingAheadFailsTheCellInsteadOfHoldingIntervals) {
  CellAggregator cell(2);
  cell.OnSnapshot("a", Interval(1, 10));
  for (uint64_t seq = 1; seq <= CellAggregator::kMaxPendingIntervals + 10; ++seq)
    cell.OnSnapshot("b", Interval(seq, 10));
  EXPECT_LE(cell.pending_intervals(), CellAggregator::kMaxPendingIntervals);
  EXPECT_EQ(WaitNow(cell), CellAggregator::Outcome::kFailed);
  EXPECT_NE(cell.failure().find("agent b: snapshot"), std::string::npos) << cell.failure();
  EXPECT_NE(cell.failure().find("apart"), std::string::npos) << cell.failure();

  CellAggregator far(2);
  far.OnSnapshot("a", Interval(uint64_t{1} << 40, 1));
  EXPECT_EQ(far.pending_intervals(), 0u);
  EXPECT_EQ(WaitNow(far), CellAggregator::Outcome::kFailed);
}

TEST(CellAggregatorTest, SequenceNumbersBeyondTheLimitFailTheCell) {
  CellAggregator cell(1);
  cell.OnSnapshot("a", Interval(CellAggregator::kMaxIntervals + 1, 1));
  EXPECT_EQ(WaitNow(cell), CellAggregator::Outcome::kFailed);
  EXPECT_TRUE(cell.Totals().timeline().empty());
}

// An interval one agent never sent (its JobStream counted the gap) used to
// stay open until every agent was done, and every later interval with it.
TEST(CellAggregatorTest, AGapIsClosedOnceEveryAgentHasSentALaterInterval) {
  CellAggregator cell(2);
  for (uint64_t seq = 1; seq <= 3; ++seq) cell.OnSnapshot("a", Interval(seq, 10));
  cell.OnSnapshot("b", Interval(1, 1));
  cell.OnSnapshot("b", Interval(3, 1));  // 2 went missing
  ASSERT_EQ(cell.Totals().timeline().size(), 3u);
  EXPECT_EQ(cell.Totals().timeline()[1].counters.requests, 10u);  // a's part alone
  EXPECT_EQ(cell.Totals().measure().counters.requests, 32u);
  EXPECT_EQ(cell.pending_intervals(), 0u);
  EXPECT_EQ(WaitNow(cell), CellAggregator::Outcome::kTimeout);  // nobody is done yet
}

TEST(CellAggregatorTest, MoreAgentsThanTheCellHasFailIt) {
  CellAggregator cell(1);
  cell.OnSnapshot("a", Interval(1, 1));
  cell.OnSnapshot("intruder", Interval(2, 1));
  EXPECT_EQ(WaitNow(cell), CellAggregator::Outcome::kFailed);
  EXPECT_NE(cell.failure().find("agent intruder"), std::string::npos) << cell.failure();
  EXPECT_EQ(cell.Totals().timeline().size(), 1u);
}

// The same agent reporting done twice used to count as two agents done.
TEST(CellAggregatorTest, OneAgentDoneTwiceIsNotTwoAgentsDone) {
  CellAggregator cell(2);
  JobSummary summary;
  cell.OnDone("a", summary);
  cell.OnDone("a", summary);
  EXPECT_EQ(WaitNow(cell), CellAggregator::Outcome::kTimeout);
  cell.OnDone("b", summary);
  EXPECT_EQ(WaitNow(cell), CellAggregator::Outcome::kDone);
}

}  // namespace
}  // namespace fairbench::controller
