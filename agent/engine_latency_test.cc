// The engine's latency numbers against a server whose answer times are
// known: fairbench-test-delay-server answers after an exact delay and
// records, per request, when it arrived and when its answer left (the
// server-side truth, on the CLOCK_MONOTONIC the agent measures with).
//
// The server's records bracket every latency the agent can honestly
// report. For request i of a connection, written by the agent at w_i and
// parsed at e_i, which arrived at the server at a_i and whose answer left
// at s_i:
//   w_i ≤ a_i and e_i ≥ s_i              ⇒  e_i − w_i ≥ truth_i = s_i − a_i
//   w_i ≥ e_{i−1} ≥ s_{i−1}, e_i ≤ w_{i+1} ≤ a_{i+1}
//                                        ⇒  e_i − w_i ≤ a_{i+1} − s_{i−1}
// The upper end is truth_i plus the loopback round trips on either side as
// the server sees them (s_{i−1} → a_i and s_i → a_{i+1}: the agent's
// wake-up, parse and turnaround included). Order statistics keep the
// bracket, so for every percentile and for the mean
//   P(truth) ≤ P(agent) ≤ P(truth + round trips).
// Scheduling noise on a loaded machine widens the round trips of exactly
// the requests it delays, so the bracket needs no tolerance that would hide
// a wrong clock. Only the window's edges are uncertain: the agent counts
// the answers it parsed between crossing two interval boundaries, which it
// may cross late; answers within kEdgeNs of an edge are taken, for the
// bound, as the ones that loosen it most (Measured::For). With pipelining a
// batch takes the place of a request; at a constant rate the same bounds,
// measured from each request's due time, bracket the corrected latency.
//
// Each case prints one line with the bracket and the agent's figures.
#include <gtest/gtest.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <sstream>

#include "agent/engine_test_util.h"
#include "testing/delay_server/delay_server_fixture.h"

namespace fairbench::agent {
namespace {

using namespace std::chrono_literals;
using testing::DelayFixtureOptions;
using testing::DelayRecord;
using testing::DelayRecords;
using testing::DelayServerFixture;

// A latency the bracket cannot bound from above (no next request).
constexpr int64_t kUnbounded = INT64_MAX / 4;
// How late the agent may cross an interval boundary (a descheduled worker
// crosses it when it runs again): answers within this of the window's edges
// may fall on either side.
constexpr int64_t kEdgeNs = 20'000'000;

// One request as the server saw it, µs.
struct Sample {
  int64_t truth;  // its answer left − it arrived
  int64_t upper;  // the next batch arrived − the previous batch's last answer left
  int64_t after;  // the next batch arrived − its answer left (0 when unknown)
  // At a constant rate, the bounds of the latency from the intended send
  // (see CoordinatedOmissionTest).
  int64_t late_low = 0;
  int64_t late_high = kUnbounded;
};

// The agent's latencies at one percentile or on average are bracketed by
// the server's: see the file comment.
struct Bracket {
  std::vector<int64_t> low;   // sorted
  std::vector<int64_t> high;  // sorted
  double low_mean = 0;
  double high_mean = 0;

  // The value at the rank Histogram::ValueAtPercentile uses.
  static int64_t At(const std::vector<int64_t>& v, double p) {
    if (v.empty()) return 0;
    const auto n = static_cast<int64_t>(v.size());
    const int64_t rank = std::clamp<int64_t>(std::llround(p / 100.0 * static_cast<double>(n)), 1, n);
    return v[static_cast<size_t>(rank - 1)];
  }
  int64_t Low(double p) const { return At(low, p); }
  // As the agent's histogram reports it: the top of the value's bucket.
  int64_t High(double p) const { return Histogram::HighestEquivalentValue(At(high, p)); }
};

struct Measured {
  EngineRun run;
  DelayRecords server;
  // Requests the agent certainly counted (answered and parsed well inside
  // its measure window), and those at the window's edges that it may or
  // may not have counted.
  std::vector<Sample> inside;
  std::vector<Sample> edge;
  int64_t inside_ns = 0;  // the span `inside` covers: the window less its edges

  // The agent counted `inside` and n − |inside| of `edge`. Whichever those
  // were, its k-th smallest latency is at least the k-th smallest truth of
  // `inside` plus the edge requests with the smallest truths, and at most
  // the k-th smallest upper end of `inside` plus those with the largest.
  // With `corrected`, the bracket of the latency from the intended send.
  Bracket For(uint64_t n, bool corrected = false) const {
    Bracket b;
    const size_t extra = n >= inside.size() ? std::min<size_t>(n - inside.size(), edge.size()) : 0;
    auto low = [corrected](const Sample& x) { return corrected ? x.late_low : x.truth; };
    auto high = [corrected](const Sample& x) { return corrected ? x.late_high : x.upper; };
    std::vector<Sample> e = edge;
    std::sort(e.begin(), e.end(), [&](const Sample& x, const Sample& y) { return low(x) < low(y); });
    for (const Sample& s : inside) b.low.push_back(low(s));
    for (size_t i = 0; i < extra; ++i) b.low.push_back(low(e[i]));
    std::sort(e.begin(), e.end(), [&](const Sample& x, const Sample& y) { return high(x) > high(y); });
    for (const Sample& s : inside) b.high.push_back(high(s));
    for (size_t i = 0; i < extra; ++i) b.high.push_back(high(e[i]));
    std::sort(b.low.begin(), b.low.end());
    std::sort(b.high.begin(), b.high.end());
    for (int64_t v : b.low) b.low_mean += static_cast<double>(v);
    for (int64_t v : b.high) b.high_mean += static_cast<double>(v);
    b.low_mean /= static_cast<double>(std::max<size_t>(1, b.low.size()));
    b.high_mean /= static_cast<double>(std::max<size_t>(1, b.high.size()));
    return b;
  }
};

// Runs the engine (options `o`, its address and request replaced by GET /
// on the server) against a delay server started with `so`, then sorts the
// server's records by where they fall against the agent's measure window.
Measured Measure(const DelayFixtureOptions& so, EngineOptions o) {
  Measured m;
  auto server = DelayServerFixture::Start(so);
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  if (!server.ok()) return m;
  const EngineOptions base = TestOptions("127.0.0.1", (*server)->port());
  o.addresses = base.addresses;
  o.requests = base.requests;
  m.run = RunEngine(o);
  auto records = (*server)->Stop();
  EXPECT_TRUE(records.ok()) << records.status().ToString();
  if (!records.ok() || records->records.empty()) return m;
  m.server = std::move(*records);
  // Connection 0 sends its first request the moment the load starts, so
  // the first arrival is the start to within a send system call.
  int64_t start = INT64_MAX;
  for (const DelayRecord& r : m.server.records) start = std::min(start, r.arrived_ns);
  const int64_t from = start + o.warmup.count();
  const int64_t to = from + o.duration.count();
  std::map<std::pair<uint32_t, uint32_t>, const DelayRecord*> by_seq;  // (conn, seq)
  for (const DelayRecord& r : m.server.records) by_seq[{r.conn, r.seq}] = &r;
  const uint32_t depth = std::max<uint32_t>(1, o.pipeline);
  m.inside_ns = to - from - 2 * kEdgeNs;
  // At a constant rate, request k of a connection is due at φ + k·Pc. The
  // agent never sends early, so φ ≤ min over k of (arrival_k − k·Pc); it
  // sends most requests within microseconds of their time, so that minimum
  // is φ to well within kLateSlackNs.
  constexpr int64_t kLateSlackNs = 1'000'000;
  const int64_t period = o.rate > 0 ? std::llround(1e9 * o.connections / o.rate) : 0;
  std::map<uint32_t, int64_t> phase;  // conn → φ
  if (period > 0) {
    for (const DelayRecord& r : m.server.records) {
      const int64_t due = r.arrived_ns - static_cast<int64_t>(r.seq) * period;
      const auto [it, fresh] = phase.emplace(r.conn, due);
      if (!fresh) it->second = std::min(it->second, due);
    }
  }
  for (const DelayRecord& r : m.server.records) {
    if (r.sent_ns == 0) continue;  // never answered
    // The agent wrote this request's batch after the previous batch's last
    // answer left, and parsed this answer (e) after it left and before the
    // next batch arrived.
    const uint32_t batch = r.seq / depth * depth;
    const auto prev = batch == 0 ? by_seq.end() : by_seq.find({r.conn, batch - 1});
    const auto next = by_seq.find({r.conn, batch + depth});
    const bool has_next = next != by_seq.end();
    const int64_t e_min = r.sent_ns;
    const int64_t e_max = has_next ? next->second->arrived_ns : INT64_MAX;
    Sample s{r.server_ns() / 1000, kUnbounded, has_next ? (next->second->arrived_ns - r.sent_ns) / 1000 : 0};
    if (prev != by_seq.end() && prev->second->sent_ns != 0 && has_next) {
      s.upper = (next->second->arrived_ns - prev->second->sent_ns) / 1000;
    }
    if (period > 0) {
      // Parsed after the answer left and before the next request arrived.
      const int64_t due = phase[r.conn] + static_cast<int64_t>(r.seq) * period;
      s.late_low = (r.sent_ns - due) / 1000;
      if (has_next) s.late_high = (next->second->arrived_ns - due + kLateSlackNs) / 1000;
    }
    // In a closed loop without pipelining an answer parsed inside the
    // window is followed at once by the next request: no next, not counted.
    if (!has_next && depth == 1 && o.rate == 0) continue;
    if (e_max < from - kEdgeNs || e_min >= to + kEdgeNs) continue;
    if (e_min >= from + kEdgeNs && e_max < to - kEdgeNs) {
      m.inside.push_back(s);
    } else {
      m.edge.push_back(s);
    }
  }
  return m;
}

int64_t P(const Histogram& h, double p) { return static_cast<int64_t>(h.ValueAtPercentile(p)); }

double RequestsPerSecond(const EngineRun& run) {
  return static_cast<double>(run.measure.requests) / run.end.measure_seconds;
}

std::string Figures(const Measured& m) {
  const Histogram& h = m.run.latency;
  const Bracket b = m.For(h.count());
  std::ostringstream s;
  s << "low/agent/high µs: p50 " << b.Low(50) << "/" << P(h, 50) << "/" << b.High(50) << ", p99 " << b.Low(99) << "/"
    << P(h, 99) << "/" << b.High(99) << ", mean " << b.low_mean << "/" << h.Mean() << "/" << b.high_mean << "; "
    << h.count() << " answers (" << m.inside.size() << " inside, " << m.edge.size() << " at the edges), "
    << RequestsPerSecond(m.run) << " requests/s, in flight " << RequestsPerSecond(m.run) * h.Mean() / 1e6;
  if (m.inside_ns > 0) {
    double after = 0;
    for (const Sample& x : m.inside) after += static_cast<double>(x.after);
    s << ", waiting " << after * 1e3 / static_cast<double>(m.inside_ns) << ", edges "
      << static_cast<double>(m.run.latency.max()) / 1e6 / m.run.end.measure_seconds << " per connection";
  }
  return s.str();
}

// Checks the agent's histogram against the bracket at `percentiles` and on
// average; with `corrected`, against the bracket of the latency from the
// intended send.
void ExpectWithinBracket(const Measured& m, const Histogram& agent, std::initializer_list<double> percentiles,
                         bool corrected = false) {
  ASSERT_GE(agent.count(), m.inside.size()) << "the agent counted fewer answers than certainly fell in its window";
  ASSERT_LE(agent.count(), m.inside.size() + m.edge.size()) << "the agent counted answers the server never gave";
  const Bracket b = m.For(agent.count(), corrected);
  for (double p : percentiles) {
    EXPECT_GE(P(agent, p), b.Low(p)) << "p" << p << " below the server's own time. " << Figures(m);
    EXPECT_LE(P(agent, p), b.High(p)) << "p" << p << " above the server's time plus round trips. " << Figures(m);
  }
  EXPECT_GE(agent.Mean(), b.low_mean) << Figures(m);
  EXPECT_LE(agent.Mean(), b.high_mean) << Figures(m);
}

// ---------------------------------------------------------------------------
// Closed loop: 1 and 50 connections, 1 ms and 20 ms.

struct ClosedCase {
  const char* name;
  uint32_t connections;
  std::chrono::microseconds delay;
  std::chrono::milliseconds duration;
};

class ClosedLoopLatencyTest : public ::testing::TestWithParam<ClosedCase> {};

// Catches: a latency clock that runs fast or slow (×1.1 fails the 20 ms
// cases by 2 ms and Little's law everywhere by 10 %), one that starts at
// the response's first byte or at the previous response (below the truth),
// one that includes the turnaround or the connect (above the round trips, and
// Little's law above C), and a requests/s over the wrong window.
//
// Measured over 85 runs of each case on a 2-CPU VM shared with parallel
// builds (load average 2–9):
//  - the agent above the server's time: p50 +15…+113 µs (up to 1.5 ms at
//    50 connections and 20 ms under the heaviest load), mean +19 µs…1.5 ms,
//    p99 +10 µs…15 ms (a descheduled agent delays a whole wave of answers);
//  - the agent below the server's time plus the round trips: p50 by
//    18 µs…1.5 ms, p99 by 16 µs…43 ms.
//  The bracket itself has no tolerance: no run left it (closest: 10 µs and
//  16 µs).
//  - Little's law, requests in flight / C: 0.991–1.006 with one connection,
//    0.978–1.004 at 50 and 20 ms, 0.94–1.045 at 50 and 1 ms, where the
//    agent's turnaround kept 1.3–10 connections waiting and stalls at the
//    window's edges moved up to 2 connections' worth of latency in or out.
//    A window of 3 s at 20 ms keeps the rounding of the answer count under
//    0.7 % (with 50 connections the answers come in waves).
TEST_P(ClosedLoopLatencyTest, LatencyLiesBetweenTheServersTruthAndTruthPlusRoundTrip) {
  const ClosedCase& c = GetParam();
  DelayFixtureOptions so;
  so.delay = c.delay;
  EngineOptions o;
  o.connections = c.connections;
  o.threads = c.connections > 1 ? 2 : 1;
  o.warmup = 200ms;
  o.duration = c.duration;
  o.interval = 1s;
  o.timeout = 2s;
  const Measured m = Measure(so, o);
  std::cout << c.name << ": " << Figures(m) << std::endl;
  ASSERT_GT(m.inside.size(), 100u);
  EXPECT_EQ(m.run.all.errors, ErrorCounts{});
  // The server answered no sooner than asked.
  for (const Sample& s : m.inside)
    ASSERT_GE(s.truth, std::chrono::duration_cast<std::chrono::microseconds>(c.delay).count());
  const Histogram& agent = m.run.latency;
  ExpectWithinBracket(m, agent, {1, 50, 90, 99});
  // Little's law: requests in flight = requests/s × mean latency ≈ C,
  // within 2 % once two things the law does not see are allowed for: the
  // requests that cross the window's edges (each connection's first
  // counted answer brings latency from before the window, its last
  // uncounted one takes latency from inside it: at most C × the longest
  // latency / the window), and the connections that sat between an answer
  // and their next request (the agent's turnaround is not latency; the
  // server sees it, with the two loopback legs, as the time from its
  // answer to the next arrival: `waiting`).
  const double in_flight = RequestsPerSecond(m.run) * agent.Mean() / 1e6;
  double turnaround_us = 0;
  for (const Sample& s : m.inside) turnaround_us += static_cast<double>(s.after);
  const double waiting = turnaround_us * 1e3 / static_cast<double>(m.inside_ns);
  const double edges = c.connections * static_cast<double>(agent.max()) / 1e6 / m.run.end.measure_seconds;
  EXPECT_LE(in_flight, 1.02 * c.connections + edges) << Figures(m);
  EXPECT_GE(in_flight, 0.98 * c.connections - edges - waiting) << Figures(m);
}

INSTANTIATE_TEST_SUITE_P(KnownDelays, ClosedLoopLatencyTest,
                         ::testing::Values(ClosedCase{"c1_1ms", 1, 1000us, 1000ms},
                                           ClosedCase{"c50_1ms", 50, 1000us, 1000ms},
                                           ClosedCase{"c1_20ms", 1, 20000us, 3000ms},
                                           ClosedCase{"c50_20ms", 50, 20000us, 3000ms}),
                         [](const ::testing::TestParamInfo<ClosedCase>& i) { return std::string(i.param.name); });

// ---------------------------------------------------------------------------
// Open model: coordinated omission.

struct OpenCase {
  const char* name;
  uint32_t connections;
  double rate;                      // requests/s, all connections
  uint64_t stall_every;             // N: the server stalls every Nth request…
  std::chrono::milliseconds stall;  // …by D
};

class CoordinatedOmissionTest : public ::testing::TestWithParam<OpenCase> {};

// At a constant rate R over C connections each connection sends every
// Pc = C/R. When the server holds a request for D, its connection misses
// the slots that fall in the stall; afterwards it sends them back to back,
// each answered after s (the unstalled round trip), so measured from when
// each *should* have been sent, the stalled request and the ones behind it
// took
//     D + s − j·(Pc − s)        for j = 0, 1, 2, … while that exceeds s,
// a ramp down from D + s in steps of Pc − s. One stall every N requests
// puts one request of each ramp level in every N: the level at percentile p
// is j = ⌊(1 − p/100)·N⌋, so
//     expected corrected p = D + s − ⌊(1 − p/100)·N⌋ · (Pc − s).
// With R = 1000/s, N = 500 and D = 50 ms: one connection (Pc = 1 ms) gives
// p99 ≈ 45.1 ms and p99.9 ≈ D + s; four connections (Pc = 4 ms) give
// p99 ≈ 30.2 ms — while the uncorrected p99 is the bare round trip in both.
// The prediction holds to one ramp step (where the window cuts the last
// cycle decides the rounding) plus 3 ms for timers and wake-ups running
// late on a loaded machine; the agent's figures are allowed 2 ms more, its
// own place inside the bracket. In 80 runs at load average 2–9 the agent's
// p99 came out 0–4.0 ms and its p99.9 0.1–3.1 ms above the prediction; in
// 3 of them a 40–50 ms stall of the whole machine moved the server's own
// figures off the prediction, and only the bracket was checked.
//
// Catches: the correction disabled (corrected = uncorrected, p99 ≈ 50 µs),
// a schedule that restarts after a late send (no ramp: p99 ≈ s), the
// period of all connections used for each (Pc = 1/R: a ramp four times
// longer, p99 ≈ 45 ms with four connections), and uncorrected latency
// measured from the intended time or not at all.
TEST_P(CoordinatedOmissionTest, CorrectedPercentilesFollowTheScheduleUncorrectedFollowTheServer) {
  const OpenCase& c = GetParam();
  DelayFixtureOptions so;
  so.delay = 0us;
  so.stall_every = c.stall_every;
  so.stall = c.stall;
  EngineOptions o;
  o.connections = c.connections;
  o.threads = 1;
  o.rate = c.rate;
  o.warmup = 200ms;
  o.duration = 2000ms;
  o.interval = 1s;
  o.timeout = 2s;
  const Measured m = Measure(so, o);
  const Histogram& corrected = m.run.latency;
  const Histogram& uncorrected = m.run.uncorrected;
  const Bracket truth = m.For(uncorrected.count());
  const Bracket due = m.For(corrected.count(), /*corrected=*/true);
  std::cout << c.name << ": corrected p50/p99/p99.9 " << P(corrected, 50) << "/" << P(corrected, 99) << "/"
            << P(corrected, 99.9) << " µs (from the due times " << due.Low(99) << "…" << due.High(99) << "/"
            << due.Low(99.9) << "…" << due.High(99.9) << "), uncorrected " << P(uncorrected, 50) << "/"
            << P(uncorrected, 99) << "/" << P(uncorrected, 99.9) << ", server " << truth.Low(50) << "/" << truth.Low(99)
            << "/" << truth.Low(99.9) << ", " << corrected.count() << " answers" << std::endl;
  EXPECT_EQ(m.run.all.errors, ErrorCounts{});
  EXPECT_NEAR(static_cast<double>(corrected.count()), c.rate * 2.0, c.rate * 2.0 * 0.05) << "the rate was kept";
  ASSERT_EQ(uncorrected.count(), corrected.count());

  // Whatever happened on the machine, each request's latency from its due
  // time lies between its answer leaving and its connection's next request
  // arriving (+1 ms for the due time's estimate, see Measure): an exact
  // bracket from the server's records.
  ExpectWithinBracket(m, corrected, {50, 90, 99, 99.9, 100}, /*corrected=*/true);
  // Uncorrected: the server's time plus the round trip — never below the
  // server's time, never above it plus the round trips on either side, and
  // at the median within 500 µs of it (11–44 µs seen).
  ExpectWithinBracket(m, uncorrected, {50, 99, 99.9, 100});
  EXPECT_LE(P(uncorrected, 50), truth.Low(50) + 500);

  // What the schedule predicts (see above). It presumes that nothing but
  // the server's stalls held requests up; when the server's records show
  // more (the whole machine stalled for tens of milliseconds, as a heavy
  // build beside can do), the bracket above still holds but the prediction
  // does not apply.
  const double pc = 1e6 * c.connections / c.rate;  // µs
  const double s = static_cast<double>(P(uncorrected, 50));
  const double d = static_cast<double>(std::chrono::duration_cast<std::chrono::microseconds>(c.stall).count());
  const double n = static_cast<double>(c.stall_every);
  auto expected = [&](double p) { return d + s - std::floor((1 - p / 100) * n) * (pc - s); };
  const double tolerance = (pc - s) + 3000;
  if (std::abs(static_cast<double>(due.Low(99)) - expected(99)) > tolerance ||
      std::abs(static_cast<double>(due.Low(99.9)) - expected(99.9)) > tolerance) {
    std::cout << c.name << ": the server's records show stalls beyond its own (from the due times: p99 " << due.Low(99)
              << " µs, p99.9 " << due.Low(99.9) << " µs, against " << expected(99) << " and " << expected(99.9)
              << "); the schedule's prediction is not checked" << std::endl;
  } else {
    EXPECT_NEAR(static_cast<double>(P(corrected, 99)), expected(99), tolerance + 2000);
    EXPECT_NEAR(static_cast<double>(P(corrected, 99.9)), expected(99.9), tolerance + 2000);
    EXPECT_LT(P(uncorrected, 99), 10000) << "without the correction the stalls stay invisible at p99";
  }

  // Corrected ≥ uncorrected, request by request, hence at every percentile.
  for (int p = 0; p <= 1000; ++p) {
    EXPECT_GE(P(corrected, p / 10.0), P(uncorrected, p / 10.0)) << "p" << p / 10.0;
  }
  EXPECT_GE(P(corrected, 99.99), P(uncorrected, 99.99));
  EXPECT_GE(corrected.Mean(), uncorrected.Mean());
}

INSTANTIATE_TEST_SUITE_P(StallEvery500, CoordinatedOmissionTest,
                         ::testing::Values(OpenCase{"c1_r1000", 1, 1000, 500, 50ms},
                                           OpenCase{"c4_r1000", 4, 1000, 500, 50ms}),
                         [](const ::testing::TestParamInfo<OpenCase>& i) { return std::string(i.param.name); });

// ---------------------------------------------------------------------------
// Pipelining.

// With --pipeline 4 the server must see each batch of four arrive before it
// answers the first of them; each request's latency runs from its own send
// (the batch's one write), so every answer takes the server's delay, not
// the gap since the previous answer. Catches: the depth ignored (requests
// one at a time: the second arrives after the first answer), and latency
// measured from the previous response (¾ of the answers near 0).
TEST(PipeliningLatencyTest, BatchesArriveBeforeTheFirstAnswerAndEachIsTimedFromItsSend) {
  DelayFixtureOptions so;
  so.delay = 2ms;
  EngineOptions o;
  o.connections = 2;
  o.threads = 1;
  o.pipeline = 4;
  o.warmup = 100ms;
  o.duration = 700ms;
  o.interval = 1s;
  o.timeout = 2s;
  const Measured m = Measure(so, o);
  std::cout << "pipeline 4: " << Figures(m) << std::endl;
  EXPECT_EQ(m.run.all.errors, ErrorCounts{});
  ASSERT_GT(m.run.latency.count(), 400u);
  std::map<std::pair<uint32_t, uint32_t>, std::vector<const DelayRecord*>> batches;  // (conn, batch)
  for (const DelayRecord& r : m.server.records) batches[{r.conn, r.seq / 4}].push_back(&r);
  size_t whole = 0, late = 0;
  std::string first_late;
  for (const auto& [key, batch] : batches) {
    if (batch.size() < 4) continue;  // the last, cut short by the end of the load
    ++whole;
    for (const DelayRecord* r : batch) {
      if (r->arrived_ns < batch.front()->sent_ns) continue;
      if (late++ == 0) first_late = "connection " + std::to_string(key.first) + " request " + std::to_string(r->seq);
    }
  }
  EXPECT_GT(whole, 100u);
  EXPECT_EQ(late, 0u) << "requests that arrived only after their batch's first answer, the first: " << first_late;
  ExpectWithinBracket(m, m.run.latency, {1, 50, 99});
}

}  // namespace
}  // namespace fairbench::agent
