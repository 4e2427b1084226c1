#include "common/wire.h"

#include <gtest/gtest.h>

namespace fairbench::wire {
namespace {

TEST(WireTest, SnapshotRoundTripsExactly) {
  Snapshot s;
  s.sequence = 7;
  s.phase = Phase::kWarmup;
  s.start_ns = 1'000'000'000;
  s.end_ns = 2'000'000'000;
  s.stats.counters.requests = 12345;
  s.stats.counters.bytes_read = 999;
  s.stats.counters.errors.timeout = 3;
  s.stats.counters.errors.port_exhaustion = 2;
  s.stats.counters.status_classes = {1, 2, 3, 4, 5, 6};
  s.stats.counters.closes_by_server = 9;
  for (int64_t v = 1; v < 100000; v += 37) s.stats.latency.Record(v * 13);
  s.stats.uncorrected.Record(5);
  s.stats.rate_samples = {1.5, 2.5};
  s.connections_open = 100;
  s.cpu_seconds = 0.25;

  v1::Snapshot msg;
  ToProto(s, "job-1", &msg);
  std::string bytes;
  ASSERT_TRUE(msg.SerializeToString(&bytes));
  v1::Snapshot parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  EXPECT_EQ(parsed.job_id(), "job-1");
  auto back = FromProto(parsed);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->sequence, 7u);
  EXPECT_EQ(back->phase, Phase::kWarmup);
  EXPECT_EQ(back->stats.counters, s.stats.counters);
  EXPECT_TRUE(back->stats.latency == s.stats.latency);
  EXPECT_TRUE(back->stats.uncorrected == s.stats.uncorrected);
  EXPECT_EQ(back->stats.rate_samples, s.stats.rate_samples);
  EXPECT_EQ(back->connections_open, 100u);
  EXPECT_EQ(back->end_ns, 2'000'000'000);
}

TEST(WireTest, RejectsInconsistentMessages) {
  v1::Snapshot msg;
  EXPECT_FALSE(FromProto(msg).ok());  // sequence 0
  msg.set_sequence(1);
  msg.set_phase(v1::PHASE_MEASURE);
  msg.mutable_latency()->set_count(5);  // a count without counts
  EXPECT_FALSE(FromProto(msg).ok());
  Histogram h;
  h.Record(10);
  ToProto(h, msg.mutable_latency());
  msg.mutable_latency()->set_count(2);
  EXPECT_FALSE(FromProto(msg).ok());
  msg.mutable_latency()->set_count(1);
  EXPECT_TRUE(FromProto(msg).ok());
}

}  // namespace
}  // namespace fairbench::wire
