#include "common/wire.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

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
  s.stats.counters.errors.handshake = 4;
  s.stats.counters.errors.goaway = 6;
  s.stats.counters.errors.rst_stream = 7;
  s.stats.counters.errors.h2_protocol = 8;
  s.stats.counters.tls_handshakes = 11;
  s.stats.counters.tls_handshake_time_us = 5555;
  s.stats.counters.tls_resumed = 10;
  s.stats.counters.unsent = 12;  // catches: requests behind a constant rate's schedule dropped on the wire
  s.stats.counters.answers = AnswerCounts{31, 32, 33, 34};  // catches: sampled answers' counts dropped or swapped
  // gRPC: every code and kind its own number, so that a field dropped or
  // two swapped on either side shows.
  for (size_t i = 0; i < s.stats.counters.grpc.status.size(); ++i) s.stats.counters.grpc.status[i] = 100 + i;
  s.stats.counters.grpc.status_other = 21;
  s.stats.counters.grpc.no_status = 22;
  s.stats.counters.grpc.bad_status = 23;
  s.stats.counters.grpc.truncated = 24;
  s.stats.counters.grpc.bad_flag = 25;
  s.stats.counters.grpc.too_large = 26;
  s.stats.counters.grpc.unary_messages = 27;
  s.stats.counters.grpc.messages = 28;
  for (int64_t v = 1; v < 100000; v += 37) s.stats.latency.Record(v * 13);
  s.stats.uncorrected.Record(5);
  s.stats.first_message.Record(77);
  for (int64_t v = 100; v < 900; v += 7) s.stats.last_message.Record(v);
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
  EXPECT_TRUE(back->stats.first_message == s.stats.first_message);  // catches: a streaming call's first message dropped
  EXPECT_TRUE(back->stats.last_message == s.stats.last_message);
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

// A valid measure snapshot of 100 requests to start each refusal from.
v1::Snapshot ValidSnapshot() {
  Snapshot s;
  s.sequence = 3;
  s.start_ns = 2'000'000'000;
  s.end_ns = 3'000'000'000;
  s.stats.counters.requests = 100;
  for (int64_t v = 1; v <= 100; ++v) s.stats.latency.Record(v * 1000);
  s.stats.rate_samples = {100.0};
  v1::Snapshot msg;
  ToProto(s, "job", &msg);
  return msg;
}

// Expects FromProto to refuse `msg` with a message naming `field`.
void ExpectRefused(const v1::Snapshot& msg, const std::string& field) {
  auto r = FromProto(msg);
  ASSERT_FALSE(r.ok()) << field;
  EXPECT_NE(r.status().message().find(field), std::string::npos) << r.status().message();
}

TEST(WireTest, TheValidSnapshotIsAccepted) {
  auto r = FromProto(ValidSnapshot());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->stats.latency.count(), 100u);
}

// Hub hardening (issue 12): what an agent claims is bounded before the hub
// counts it. Each case was accepted before, and then overflowed or grew
// without bound further on: sequence UINT64_MAX wrapped JobStream's next
// expected number to 0; start/end far apart overflowed end − start in the
// aggregator (undefined behaviour); status classes beyond six were dropped
// silently; a million rate samples per snapshot piled up in the cell's
// totals; moments that contradict the counts made a negative variance wrap.
TEST(WireTest, RefusesWhatNoAgentSends) {
  v1::Snapshot m = ValidSnapshot();
  m.set_sequence(UINT64_MAX);
  ExpectRefused(m, "snapshot.sequence");

  m = ValidSnapshot();
  m.set_start_ns(INT64_MIN);
  m.set_end_ns(INT64_MAX);
  ExpectRefused(m, "snapshot.start_ns/end_ns");
  m.set_start_ns(5);
  m.set_end_ns(4);
  ExpectRefused(m, "snapshot.start_ns/end_ns");

  m = ValidSnapshot();
  for (int i = 0; i < 4; ++i) m.mutable_counters()->add_status_classes(1);
  ASSERT_EQ(m.counters().status_classes_size(), 10);
  ExpectRefused(m, "snapshot.counters.status_classes");

  m = ValidSnapshot();
  for (int i = 0; i < kMaxRateSamples; ++i) m.add_rate_samples(1.0);
  ExpectRefused(m, "snapshot.rate_samples");
  m = ValidSnapshot();
  m.set_rate_samples(0, std::numeric_limits<double>::quiet_NaN());
  ExpectRefused(m, "snapshot.rate_samples");
  m = ValidSnapshot();
  m.set_cpu_seconds(-1);
  ExpectRefused(m, "snapshot.cpu_seconds");
}

TEST(WireTest, RefusesMomentsThatContradictTheCounts) {
  v1::Snapshot m = ValidSnapshot();
  m.mutable_latency()->set_min(5);  // the lowest bucket holds 1000
  ExpectRefused(m, "snapshot.latency");
  m = ValidSnapshot();
  m.mutable_latency()->set_max(200'000);  // the highest bucket holds 100000
  ExpectRefused(m, "snapshot.latency");
  m = ValidSnapshot();
  m.mutable_latency()->set_min(m.latency().max() + 1);
  ExpectRefused(m, "snapshot.latency");
  m = ValidSnapshot();
  m.mutable_latency()->set_sum(1);  // below count × min
  ExpectRefused(m, "snapshot.latency");
  m = ValidSnapshot();
  m.mutable_latency()->set_sum_squares_hi(0);
  m.mutable_latency()->set_sum_squares_lo(1);  // (Σx)²/n > Σx²: a negative variance
  ExpectRefused(m, "snapshot.latency");
  m = ValidSnapshot();
  m.mutable_latency()->set_clamped(101);
  ExpectRefused(m, "snapshot.latency");
  m = ValidSnapshot();
  m.mutable_uncorrected()->set_count(1);  // counts without a histogram
  ExpectRefused(m, "snapshot.uncorrected");
}

}  // namespace
}  // namespace fairbench::wire
