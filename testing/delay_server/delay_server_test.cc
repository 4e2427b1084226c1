// fairbench-test-delay-server itself: the delays it promises, in order, and
// records that tell the truth — the ground the agent's latency tests stand on.
#include <gtest/gtest.h>
#include <time.h>

#include <algorithm>
#include <thread>

#include "testing/delay_server/delay_server.h"
#include "testing/delay_server/delay_server_fixture.h"
#include "testing/support/http_client.h"
#include "testing/support/time_scale.h"

namespace fairbench::testing {
namespace {

using namespace std::chrono_literals;

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::unique_ptr<DelayServerFixture> StartServer(DelayFixtureOptions o) {
  auto f = DelayServerFixture::Start(std::move(o));
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return f.ok() ? std::move(*f) : nullptr;
}

const std::string kGet = BuildRequest("GET", "/", "h");

TEST(DelayRecordsTest, TextRoundTrip) {
  DelayRecords r;
  r.snapshot = 3;
  r.connections = 2;
  r.requests = 3;
  r.served = 2;
  r.abandoned = 1;
  r.dropped = 0;
  // A recorded request keeps every byte, spaces, CR LF and '%' included.
  // Catches: a request field cut at its first space or not decoded.
  r.records = {{0, 0, 1, false, 100, 200, {}},
               {1, 0, 2, true, 150, 5000, "POST /a%20b HTTP/1.1\r\nX: 1 2\r\nContent-Length: 3\r\n\r\n\x01%\xff"},
               {0, 1, 3, false, 300, 0, {}}};
  auto back = DelayRecords::FromText(r.ToText());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->snapshot, 3u);
  EXPECT_EQ(back->served, 2u);
  EXPECT_EQ(back->abandoned, 1u);
  EXPECT_EQ(back->records, r.records);
  EXPECT_FALSE(DelayRecords::FromText("something else").ok());
  EXPECT_FALSE(DelayRecords::FromText(r.ToText() + "0 1 x\n").ok());
}

// The client sees the answer no sooner than the delay, and the server's own
// record says the same delay (to its clock's precision plus wake-up).
// Catches: a delay not applied, applied from the wrong moment (accept, the
// previous response), or records that disagree with what the client saw.
// A clock whose every read takes 1 ms, as when the server is preempted
// between reads; the realtime clock runs kOffset ahead of the monotonic one.
constexpr int64_t kOffset = 1'700'000'000'000'000'000;
int64_t slow_now = 5'000'000'000;
int64_t SlowClock(clockid_t clock) {
  slow_now += 1'000'000;
  return clock == CLOCK_REALTIME ? slow_now + kOffset : slow_now;
}

// A request's arrival is the kernel's realtime stamp moved onto the
// monotonic clock. Catches: the offset between the clocks read monotonic
// first (a delay between the reads then stamps arrivals early, by as much
// as the delay, and the latency tests' lower bounds rise above what the
// agent can measure), and a wrong sign.
TEST(MonotonicOfRealtimeTest, DelaysBetweenClockReadsNeverMakeAnArrivalEarly) {
  for (int64_t ago : {0, 3'000'000, 40'000'000}) {
    const int64_t truth = slow_now - ago;
    const int64_t mono = MonotonicOfRealtime(truth + kOffset, SlowClock);
    EXPECT_GE(mono, truth) << ago;
    EXPECT_LE(mono, truth + 1'000'000) << "late by more than the delay between two reads";
  }
  // The real clocks: a stamp taken now is now, to within a millisecond.
  timespec real;
  clock_gettime(CLOCK_REALTIME, &real);
  const int64_t before = NowNs();
  const int64_t mono =
      MonotonicOfRealtime(static_cast<int64_t>(real.tv_sec) * 1'000'000'000 + real.tv_nsec, [](clockid_t c) {
        timespec ts;
        clock_gettime(c, &ts);
        return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
      });
  EXPECT_NEAR(static_cast<double>(mono), static_cast<double>(before), 1e6);
}

TEST(DelayServerTest, AnswersAfterTheDelayAndRecordsIt) {
  DelayFixtureOptions o;
  o.delay = 5ms;
  auto server = StartServer(o);
  ASSERT_NE(server, nullptr);
  auto conn = HttpConnection::Connect("127.0.0.1", server->port());
  ASSERT_TRUE(conn.ok());
  std::vector<int64_t> seen;
  for (int i = 0; i < 5; ++i) {
    const int64_t t0 = NowNs();
    ASSERT_TRUE(conn->Send(kGet).ok());
    auto r = conn->ReadResponse();
    const int64_t t1 = NowNs();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "Hello, World!");
    seen.push_back(t1 - t0);
    std::this_thread::sleep_for(2ms);  // the delay runs from the request, not from the last answer
  }
  auto records = server->Stop();
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  ASSERT_EQ(records->records.size(), 5u);
  EXPECT_EQ(records->requests, 5u);
  EXPECT_EQ(records->served, 5u);
  EXPECT_EQ(records->connections, 1u);
  std::vector<int64_t> times;
  for (size_t i = 0; i < 5; ++i) {
    const DelayRecord& rec = records->records[i];
    EXPECT_EQ(rec.seq, i);
    EXPECT_EQ(rec.index, i + 1);
    EXPECT_GE(rec.server_ns(), 5'000'000) << i;
    EXPECT_GE(seen[i], rec.server_ns()) << "the client cannot see the answer before it left";
    // Loopback and wake-ups: tens of microseconds; a loaded machine may
    // stall one of them for longer.
    EXPECT_LT(seen[i], rec.server_ns() + 50'000'000) << i;
    times.push_back(rec.server_ns());
  }
  // The timer wakes within microseconds (10–40 µs seen); the median keeps
  // one descheduled wake-up from deciding. Sanitizers slow the server's own
  // work between wake-up and answer: its 1 ms of slack scales with them.
  std::sort(times.begin(), times.end());
  EXPECT_LT(times[2], 5'000'000 + static_cast<int64_t>(1'000'000 * TimeScale()));
}

// Three requests in one write: each is timed from its own arrival (all
// answered one delay later, not one after another), in order; the records
// show all three arrived before the first answer left. Catches: pipelined
// requests dropped, answered out of order, or serialised.
TEST(DelayServerTest, PipelinedRequestsAreAnsweredInOrderEachAfterItsOwnDelay) {
  DelayFixtureOptions o;
  o.delay = 20ms;
  auto server = StartServer(o);
  ASSERT_NE(server, nullptr);
  auto conn = HttpConnection::Connect("127.0.0.1", server->port());
  ASSERT_TRUE(conn.ok());
  const int64_t t0 = NowNs();
  ASSERT_TRUE(conn->Send(BuildRequest("GET", "/a", "h") + BuildRequest("HEAD", "/b", "h") + kGet).ok());
  ASSERT_TRUE(conn->ReadResponse().ok());
  auto head = conn->ReadResponse(5s, /*head_response=*/true);
  ASSERT_TRUE(head.ok());
  EXPECT_TRUE(head->body.empty());
  ASSERT_TRUE(conn->ReadResponse().ok());
  EXPECT_GE(NowNs() - t0, 20'000'000);
  auto records = server->Stop();
  ASSERT_TRUE(records.ok());
  ASSERT_EQ(records->records.size(), 3u);
  const auto& r = records->records;
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(r[i].seq, i);
    EXPECT_LT(r[i].arrived_ns, r[0].sent_ns) << "request " << i << " arrived before the first answer";
    EXPECT_GE(r[i].server_ns(), 20'000'000);
    // All three left together, one delay after they arrived together — not
    // one delay after another.
    EXPECT_LT(r[i].sent_ns - r[0].sent_ns, 10'000'000);
    if (i > 0) {
      EXPECT_GE(r[i].sent_ns, r[i - 1].sent_ns);
    }
  }
}

// Every third request of the server (over both connections) waits the
// stall on top of the delay, and holds back the one behind it on its
// connection. Catches: a stall pattern counted per connection or off by one.
TEST(DelayServerTest, StallsEveryNthRequest) {
  DelayFixtureOptions o;
  o.delay = 1ms;
  o.stall_every = 3;
  o.stall = 30ms;
  auto server = StartServer(o);
  ASSERT_NE(server, nullptr);
  auto a = HttpConnection::Connect("127.0.0.1", server->port());
  auto b = HttpConnection::Connect("127.0.0.1", server->port());
  ASSERT_TRUE(a.ok() && b.ok());
  for (int i = 0; i < 3; ++i) {
    for (HttpConnection* c : {&*a, &*b}) {
      ASSERT_TRUE(c->Send(kGet).ok());
      ASSERT_TRUE(c->ReadResponse().ok());
    }
  }
  auto records = server->Stop();
  ASSERT_TRUE(records.ok());
  ASSERT_EQ(records->records.size(), 6u);
  for (const DelayRecord& r : records->records) {
    EXPECT_EQ(r.stalled, r.index % 3 == 0) << r.index;
    EXPECT_GE(r.server_ns(), r.stalled ? 31'000'000 : 1'000'000) << r.index;
    // Well short of the stall when not stalled (a loaded machine may wake
    // the server late, never by the whole stall in this short test).
    if (!r.stalled) {
      EXPECT_LT(r.server_ns(), 20'000'000) << r.index;
    }
  }
}

// Connection: close is honoured after the answer; a snapshot on request
// counts what was served so far; a client that leaves early is counted as
// abandoned, not served.
TEST(DelayServerTest, CountsServedAndAbandoned) {
  DelayFixtureOptions o;
  o.delay = 50ms;
  auto server = StartServer(o);
  ASSERT_NE(server, nullptr);
  {
    auto c = HttpConnection::Connect("127.0.0.1", server->port());
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(c->Send(BuildRequest("GET", "/", "h", {{"Connection", "close"}})).ok());
    auto r = c->ReadResponse();
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->Header("Connection"), "close");
    EXPECT_FALSE(c->ReadResponse(1s).ok()) << "closed after the answer";
  }
  auto mid = server->Records();
  ASSERT_TRUE(mid.ok());
  EXPECT_EQ(mid->served, 1u);
  {
    auto c = HttpConnection::Connect("127.0.0.1", server->port());
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(c->Send(kGet).ok());
    std::this_thread::sleep_for(10ms);
  }  // gone before its answer was due
  std::this_thread::sleep_for(100ms);
  auto end = server->Stop();
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(end->requests, 2u);
  EXPECT_EQ(end->served, 1u);
  EXPECT_EQ(end->abandoned, 1u);
  EXPECT_EQ(end->connections, 2u);
  EXPECT_GT(end->snapshot, mid->snapshot);
  EXPECT_EQ(end->records[1].sent_ns, 0);
}

}  // namespace
}  // namespace fairbench::testing
