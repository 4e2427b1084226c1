// H2Connection against nghttp2's own server session (H2TestServer), bytes
// passed in memory. The server's counters and a frame scanner that reads
// the wire by itself are the truth; the client's outcomes must match them.
#include "agent/h2_connection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "agent/h2_test_server.h"

namespace fairbench::agent {
namespace {

std::unique_ptr<H2Request> Get(const std::string& path = "/") {
  RequestSpec spec;
  spec.target = path;
  auto r = H2Request::Build(spec, "http", "test.local");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(*r);
}

std::unique_ptr<H2Connection> Client(H2Options o = {}) {
  auto c = H2Connection::Create(o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(*c);
}

struct Load {
  uint64_t submitted = 0;
  uint32_t peak_open = 0;  // the client's own count of open streams
  uint64_t submits_over_limit = 0;
  std::vector<H2Outcome> outcomes;
  std::map<H2Error, uint64_t> by_kind;
};

// Submits up to `total` requests (cookie = submission number) whenever the
// client allows, pumping bytes until nothing moves.
Load Drive(H2Connection& c, H2TestServer& s, H2Wire& w, const H2Request& req, uint64_t total) {
  Load load;
  for (int round = 0; round < 10'000'000; ++round) {
    while (load.submitted < total && c.CanSubmit()) {
      // nghttp2 would hold back HEADERS over the server's limit (and the
      // request's latency would include the wait): the client must not
      // submit them.
      if (c.open_streams() >= c.stream_limit()) ++load.submits_over_limit;
      EXPECT_GT(c.Submit(req, static_cast<uint32_t>(load.submitted % 7), load.submitted), 0);
      ++load.submitted;
    }
    load.peak_open = std::max(load.peak_open, c.open_streams());
    const bool moved = w.Pump(c, s);
    for (const H2Outcome& o : c.outcomes()) {
      load.outcomes.push_back(o);
      ++load.by_kind[o.error];
    }
    c.outcomes().clear();
    if (!moved) break;
  }
  return load;
}

TEST(H2ConnectionTest, SendsPrefaceAndSettingsAndWaitsForTheServers) {
  H2Options o;
  o.stream_window = 1 << 20;
  o.connection_window = 1 << 24;
  auto c = Client(o);
  EXPECT_FALSE(c->CanSubmit()) << "nothing may be sent before the server's SETTINGS";
  auto req = Get();
  EXPECT_EQ(c->Submit(*req, 0, 0), 0);
  H2FrameScanner up(true);
  const auto out = c->Output();
  up.Feed(out.data(), out.size());
  c->Consumed(out.size());
  EXPECT_FALSE(up.bad());
  EXPECT_EQ(up.frames(0x4), 1u);  // SETTINGS
  const std::vector<std::pair<uint16_t, uint32_t>> want = {{0x2, 0}, {0x4, 1u << 20}, {0x1, 4096}};
  EXPECT_EQ(up.settings(), want);  // ENABLE_PUSH, INITIAL_WINDOW_SIZE, HEADER_TABLE_SIZE
  // The connection window raised by one WINDOW_UPDATE on stream 0.
  EXPECT_EQ(up.frames(0x8), 1u);
  EXPECT_EQ(up.connection_window_increments(), (1u << 24) - 65535u);
  EXPECT_TRUE(c->Output().empty());
  EXPECT_TRUE(c->Alive());
}

TEST(H2ConnectionTest, ResponsesEqualTheServersCount) {
  H2TestServer server;
  auto c = Client({.max_streams = 10});
  auto req = Get("/count");
  H2Wire w;
  const Load load = Drive(*c, server, w, *req, 5000);
  EXPECT_TRUE(w.client_ok && w.server_ok);
  EXPECT_EQ(load.submitted, 5000u);
  ASSERT_EQ(load.outcomes.size(), 5000u);
  EXPECT_EQ(server.requests(), 5000u);
  EXPECT_EQ(server.responses(), 5000u);
  EXPECT_EQ(w.up.opened().size(), 5000u) << "HEADERS frames on the wire";
  EXPECT_EQ(load.by_kind.at(H2Error::kNone), 5000u);
  std::set<uint64_t> cookies;
  std::set<int32_t> ids;
  for (const H2Outcome& o : load.outcomes) {
    EXPECT_EQ(o.status, 200);
    EXPECT_EQ(o.body_bytes, 13u);
    EXPECT_EQ(o.request, o.cookie % 7);
    cookies.insert(o.cookie);
    ids.insert(o.stream_id);
  }
  EXPECT_EQ(cookies.size(), 5000u);
  EXPECT_EQ(*cookies.rbegin(), 4999u);
  EXPECT_EQ(ids, std::set<int32_t>(w.up.opened().begin(), w.up.opened().end()));
  for (const std::string& p : server.paths()) ASSERT_EQ(p, "/count");
  EXPECT_EQ(load.peak_open, 10u);
  EXPECT_EQ(server.peak_open_streams(), 10u);
  EXPECT_EQ(c->open_streams(), 0u);
  EXPECT_EQ(c->bytes_received(), w.down_bytes);
  EXPECT_EQ(c->bytes_sent(), w.up_bytes);
}

TEST(H2ConnectionTest, NonSuccessStatusIsAResponseNotAnError) {
  H2TestServer server({.status = 503});
  auto c = Client({.max_streams = 4});
  auto req = Get();
  H2Wire w;
  const Load load = Drive(*c, server, w, *req, 40);
  ASSERT_EQ(load.outcomes.size(), 40u);
  for (const H2Outcome& o : load.outcomes) {
    EXPECT_EQ(o.error, H2Error::kNone);
    EXPECT_EQ(o.status, 503);
  }
}

TEST(H2ConnectionTest, MaxConcurrentStreamsFromTheServerRespected) {
  for (uint32_t limit : {1u, 3u, 64u}) {
    H2TestServer server({.max_concurrent_streams = limit});
    auto c = Client({.max_streams = 50});
    auto req = Get();
    H2Wire w;
    const Load load = Drive(*c, server, w, *req, 600);
    ASSERT_EQ(load.outcomes.size(), 600u) << limit;
    EXPECT_EQ(load.by_kind.at(H2Error::kNone), 600u);
    EXPECT_EQ(server.responses(), 600u);
    const uint32_t want = std::min(limit, 50u);
    EXPECT_EQ(c->stream_limit(), want);
    EXPECT_EQ(server.peak_open_streams(), want) << "the server never saw more open streams than it allows";
    EXPECT_EQ(load.peak_open, want);
    EXPECT_EQ(server.refused(), 0u) << "nghttp2's server refuses streams over its limit";
    EXPECT_EQ(load.submits_over_limit, 0u);
    EXPECT_TRUE(w.down.reset_ids().empty());
  }
}

TEST(H2ConnectionTest, ALoweredStreamLimitIsFollowed) {
  // The server allows 10, then after 50 requests sends SETTINGS with 2.
  H2TestServer server({.max_concurrent_streams = 10, .lower_after = 50, .lowered_streams = 2});
  auto c = Client({.max_streams = 50});
  auto req = Get();
  H2Wire w;
  const Load load = Drive(*c, server, w, *req, 400);
  ASSERT_EQ(load.outcomes.size(), 400u);
  EXPECT_EQ(load.by_kind.at(H2Error::kNone), 400u);
  EXPECT_EQ(server.peak_open_streams(), 10u);
  ASSERT_TRUE(server.lowering_acknowledged());
  EXPECT_EQ(server.peak_open_after_lowering(), 2u) << "never more than the lowered limit once it was known";
  EXPECT_EQ(c->stream_limit(), 2u);
  EXPECT_EQ(load.submits_over_limit, 0u);
  EXPECT_EQ(server.refused(), 0u);
}

TEST(H2ConnectionTest, GoawayMidLoadCountedExactly) {
  // Ten requests arrive together: the 95th leaves five above the GOAWAY.
  H2TestServer server({.goaway_after = 95});
  auto c = Client({.max_streams = 10});
  auto req = Get();
  H2Wire w;
  const Load load = Drive(*c, server, w, *req, 1000);
  EXPECT_TRUE(w.client_ok && w.server_ok);
  ASSERT_EQ(w.down.goaway_last_ids().size(), 1u);
  const int32_t last = w.down.goaway_last_ids()[0];
  EXPECT_EQ(last, server.goaway_last_stream_id());
  EXPECT_EQ(c->goaways_received(), 1u);
  EXPECT_EQ(c->goaway_last_stream_id(), last);
  // Every stream the client opened on the wire ended exactly once: those
  // up to last-stream-id answered, those above as GOAWAY.
  uint64_t above = 0;
  for (int32_t id : w.up.opened()) above += id > last ? 1 : 0;
  ASSERT_GT(above, 0u) << "streams were in flight when GOAWAY came";
  EXPECT_EQ(load.outcomes.size(), w.up.opened().size());
  EXPECT_EQ(load.submitted, w.up.opened().size()) << "no stream submitted after GOAWAY";
  EXPECT_EQ(load.by_kind.at(H2Error::kGoaway), above);
  EXPECT_EQ(load.by_kind.at(H2Error::kNone), server.responses());
  EXPECT_EQ(server.responses(), 95u);
  for (const H2Outcome& o : load.outcomes) {
    EXPECT_EQ(o.error == H2Error::kGoaway, o.stream_id > last) << o.stream_id;
  }
  EXPECT_FALSE(c->CanSubmit());
  EXPECT_FALSE(c->Alive()) << "after GOAWAY with nothing open the connection is done";
}

TEST(H2ConnectionTest, RstStreamCountedExactly) {
  H2TestServer server({.reset_every = 7, .reset_code = NGHTTP2_REFUSED_STREAM});
  auto c = Client({.max_streams = 10});
  auto req = Get();
  H2Wire w;
  const Load load = Drive(*c, server, w, *req, 700);
  ASSERT_EQ(load.outcomes.size(), 700u);
  EXPECT_EQ(w.down.reset_ids().size(), 100u);
  EXPECT_EQ(load.by_kind.at(H2Error::kRstStream), 100u);
  EXPECT_EQ(c->rst_streams_received(), 100u);
  EXPECT_EQ(load.by_kind.at(H2Error::kNone), server.responses());
  EXPECT_EQ(server.responses(), 600u);
  std::set<int32_t> reset(w.down.reset_ids().begin(), w.down.reset_ids().end());
  for (const H2Outcome& o : load.outcomes) {
    EXPECT_EQ(o.error == H2Error::kRstStream, reset.count(o.stream_id) == 1) << o.stream_id;
    if (o.error == H2Error::kRstStream) {
      EXPECT_EQ(o.error_code, static_cast<uint32_t>(NGHTTP2_REFUSED_STREAM));
    }
  }
  EXPECT_TRUE(c->Alive()) << "a reset stream leaves the connection usable";
}

TEST(H2ConnectionTest, CancelledStreamsAreResetAndFreeTheirSlot) {
  // Every fifth stream is never answered: the caller times it out.
  H2TestServer server({.ignore_every = 5});
  auto c = Client({.max_streams = 10});
  auto req = Get();
  H2Wire w;
  std::set<int32_t> open;
  std::map<H2Error, uint64_t> kinds;
  uint64_t submitted = 0, cancels = 0;
  int32_t finished_id = 0;
  for (int round = 0; round < 100000; ++round) {
    while (submitted < 100 && c->CanSubmit()) open.insert(c->Submit(*req, 0, submitted++));
    const bool moved = w.Pump(*c, server);
    for (const H2Outcome& o : c->outcomes()) {
      EXPECT_EQ(open.erase(o.stream_id), 1u);
      ++kinds[o.error];
      if (o.error == H2Error::kNone) finished_id = o.stream_id;
    }
    c->outcomes().clear();
    if (moved) continue;
    if (open.empty()) break;
    for (int32_t id : open) {
      ASSERT_TRUE(c->Cancel(id));
      EXPECT_FALSE(c->Cancel(id)) << "a stream is cancelled once";
      ++cancels;
    }
    for (const H2Outcome& o : c->outcomes()) {
      EXPECT_EQ(o.error, H2Error::kCancelled);
      open.erase(o.stream_id);
      ++kinds[o.error];
    }
    c->outcomes().clear();
  }
  EXPECT_EQ(submitted, 100u);
  EXPECT_EQ(cancels, 20u);
  EXPECT_EQ(kinds[H2Error::kCancelled], 20u);
  EXPECT_EQ(kinds[H2Error::kNone], 80u);
  EXPECT_EQ(server.responses(), 80u);
  EXPECT_EQ(server.resets_received(), 20u) << "each cancel reached the server as RST_STREAM";
  EXPECT_EQ(w.up.reset_ids().size(), 20u);
  EXPECT_EQ(c->open_streams(), 0u);
  EXPECT_FALSE(c->Cancel(finished_id));
  EXPECT_TRUE(c->Alive());
}

TEST(H2ConnectionTest, CancelBeforeTheHeadersLeftStillEndsTheStreamOnce) {
  H2TestServer server;
  auto c = Client({.max_streams = 4});
  auto req = Get();
  H2Wire w;
  w.Pump(*c, server);
  w.Pump(*c, server);
  const int32_t id = c->Submit(*req, 0, 0);
  ASSERT_GT(id, 0);
  ASSERT_TRUE(c->Cancel(id));
  const Load load = Drive(*c, server, w, *req, 0);
  ASSERT_EQ(c->outcomes().size() + load.outcomes.size(), 1u);
  EXPECT_EQ(c->open_streams(), 0u);
  EXPECT_EQ(server.responses(), 0u);
  EXPECT_TRUE(c->CanSubmit());
}

TEST(H2ConnectionTest, SmallWindowLargeResponsesComplete) {
  constexpr uint64_t kBody = 1 << 20;
  H2TestServer server({.response_body = kBody});
  auto c = Client({.max_streams = 4, .stream_window = 16384});
  auto req = Get();
  H2Wire w;
  const Load load = Drive(*c, server, w, *req, 8);
  ASSERT_EQ(load.outcomes.size(), 8u);
  for (const H2Outcome& o : load.outcomes) {
    EXPECT_EQ(o.error, H2Error::kNone);
    EXPECT_EQ(o.body_bytes, kBody);
  }
  EXPECT_EQ(server.client_initial_window(), 16384u) << "the server saw our SETTINGS_INITIAL_WINDOW_SIZE";
  // The server may send no more than the windows allow: every DATA byte
  // past the first 16 KiB of a stream (64 KiB of the connection) was
  // granted by a WINDOW_UPDATE the scanner saw.
  EXPECT_GE(w.up.connection_window_increments() + 65535, 8 * kBody);
  EXPECT_GE(w.up.stream_window_updates(), 8 * (kBody - 16384) / 16384);
}

TEST(H2ConnectionTest, LargeConnectionWindowNeedsNoConnectionUpdatesForOneResponse) {
  constexpr uint64_t kBody = 4 << 20;
  H2TestServer server({.response_body = kBody});
  auto c = Client({.max_streams = 1, .stream_window = 8 << 20, .connection_window = 16 << 20});
  auto req = Get();
  H2Wire w;
  const Load load = Drive(*c, server, w, *req, 1);
  ASSERT_EQ(load.outcomes.size(), 1u);
  EXPECT_EQ(load.outcomes[0].body_bytes, kBody);
  EXPECT_EQ(w.up.connection_window_increments(), (16u << 20) - 65535u) << "only the initial raise";
  EXPECT_EQ(w.up.stream_window_updates(), 0u);
}

TEST(H2ConnectionTest, RequestBodiesFollowTheServersWindow) {
  H2TestServer server({.initial_window = 1024});
  RequestSpec spec;
  spec.method = "POST";
  spec.target = "/upload";
  spec.body.assign(100'000, 'b');
  auto req = H2Request::Build(spec, "http", "test.local");
  ASSERT_TRUE(req.ok());
  auto c = Client({.max_streams = 5});
  H2Wire w;
  const Load load = Drive(*c, server, w, **req, 20);
  ASSERT_EQ(load.outcomes.size(), 20u);
  EXPECT_EQ(load.by_kind.at(H2Error::kNone), 20u);
  EXPECT_EQ(server.request_body_bytes(), 20u * 100'000u);
  EXPECT_GT(w.down.stream_window_updates(), 20u * (100'000u / 1024u) / 2u);
}

// Outcomes in stream order with everything but the cookie (which equals the
// submission order, itself compared through the stream id).
std::vector<std::tuple<int32_t, H2Error, uint16_t, uint32_t, uint64_t, uint64_t>> Canon(const Load& load) {
  std::vector<std::tuple<int32_t, H2Error, uint16_t, uint32_t, uint64_t, uint64_t>> v;
  for (const H2Outcome& o : load.outcomes)
    v.emplace_back(o.stream_id, o.error, o.status, o.error_code, o.body_bytes, o.cookie);
  std::sort(v.begin(), v.end());
  return v;
}

struct SplitRun {
  Load load;
  uint64_t up_bytes, down_bytes, server_responses, server_resets;
};

// Two scenarios whose outcomes cannot depend on timing (a cut changes when
// nghttp2 sends a WINDOW_UPDATE, so how DATA is scheduled, but not what
// each stream gets). GETs: requests complete in stream order, so the
// server's GOAWAY and resets hit the same streams however the bytes are
// cut; the windows are large enough for responses to flow without
// updates. POSTs: bodies wait for the server's small window and responses
// for the client's; every stream is answered.
SplitRun RunSplit(bool post, const std::vector<size_t>& up_cuts, const std::vector<size_t>& down_cuts) {
  H2TestServerOptions so;
  RequestSpec spec;
  H2Options co{.max_streams = 3};
  if (post) {
    so.initial_window = 300;
    so.response_body = 1500;
    spec.method = "POST";
    spec.body.assign(700, 'p');
    co.stream_window = 512;
    co.connection_window = 1024;
  } else {
    so.response_body = 1500;
    so.goaway_after = 5;
    so.reset_every = 3;
  }
  H2TestServer server(so);
  auto req = H2Request::Build(spec, "http", "split.test");
  auto c = Client(co);
  H2Wire w;
  w.up_cuts = up_cuts;
  w.down_cuts = down_cuts;
  SplitRun r{Drive(*c, server, w, **req, 8), w.up_bytes, w.down_bytes, server.responses(), server.resets_sent()};
  EXPECT_TRUE(w.client_ok && w.server_ok);
  return r;
}

void ExpectSplitInvariant(bool post) {
  SplitRun whole = RunSplit(post, {}, {});
  ASSERT_EQ(whole.load.outcomes.size(), whole.load.submitted);
  ASSERT_GT(whole.load.by_kind[H2Error::kNone], 0u);
  if (!post) {
    ASSERT_GT(whole.load.by_kind[H2Error::kRstStream], 0u);
    ASSERT_GT(whole.load.by_kind[H2Error::kGoaway], 0u);
  }
  const auto want = Canon(whole.load);
  // The server's bytes to the client cut at every offset, then the client's
  // to the server. (The bytes themselves may differ by a WINDOW_UPDATE:
  // nghttp2 decides on one per DATA chunk it is given.)
  for (size_t cut = 1; cut < whole.down_bytes; ++cut) {
    const SplitRun r = RunSplit(post, {}, {cut});
    ASSERT_EQ(Canon(r.load), want) << "server bytes cut at " << cut;
    ASSERT_EQ(r.server_responses, whole.server_responses) << cut;
    ASSERT_EQ(r.server_resets, whole.server_resets) << cut;
  }
  for (size_t cut = 1; cut < whole.up_bytes; ++cut) {
    const SplitRun r = RunSplit(post, {cut}, {});
    ASSERT_EQ(Canon(r.load), want) << "client bytes cut at " << cut;
    ASSERT_EQ(r.server_responses, whole.server_responses) << cut;
    ASSERT_EQ(r.server_resets, whole.server_resets) << cut;
  }
  // And byte by byte, both ways at once.
  std::vector<size_t> every_up, every_down;
  for (size_t i = 1; i < whole.up_bytes + 64; ++i) every_up.push_back(i);
  for (size_t i = 1; i < whole.down_bytes + 64; ++i) every_down.push_back(i);
  EXPECT_EQ(Canon(RunSplit(post, every_up, every_down).load), want);
}

TEST(H2ConnectionTest, EverySplitPointGivesTheSameResults) { ExpectSplitInvariant(false); }

TEST(H2ConnectionTest, EverySplitPointGivesTheSameResultsWithRequestBodies) { ExpectSplitInvariant(true); }

TEST(H2ConnectionTest, ServerBreakingTheProtocolFailsEveryOpenStream) {
  auto c = Client({.max_streams = 3});
  auto req = Get();
  const uint8_t settings[] = {0, 0, 0, 0x4, 0, 0, 0, 0, 0};
  ASSERT_TRUE(c->Receive(settings, sizeof(settings)));
  ASSERT_TRUE(c->CanSubmit());
  for (int i = 0; i < 3; ++i) ASSERT_GT(c->Submit(*req, 0, i), 0);
  H2FrameScanner up(true);
  auto out = c->Output();
  up.Feed(out.data(), out.size());
  c->Consumed(out.size());
  EXPECT_EQ(up.opened().size(), 3u);
  // DATA on stream 2, which nobody opened: a connection error.
  const uint8_t data[] = {0, 0, 1, 0x0, 0, 0, 0, 0, 2, 'x'};
  EXPECT_FALSE(c->Receive(data, sizeof(data)));
  EXPECT_TRUE(c->failed());
  EXPECT_FALSE(c->Alive());
  EXPECT_STRNE(c->error_message(), "");
  ASSERT_EQ(c->outcomes().size(), 3u);
  for (const H2Outcome& o : c->outcomes()) EXPECT_EQ(o.error, H2Error::kProtocol);
  EXPECT_EQ(c->open_streams(), 0u);
  out = c->Output();
  up.Feed(out.data(), out.size());
  EXPECT_EQ(up.goaway_last_ids().size(), 1u) << "nghttp2 tells the server why";
  EXPECT_FALSE(c->CanSubmit());
}

// A server that sends HEADERS again on a stream whose response has ended.
// If the request's body has all gone out, the stream is closed and
// nghttp2 ignores the frame; while the body is still held back (here by
// a zero stream window), the stream is only half-closed and the frame is
// a connection error. Which one depends on the client's own writes, never
// on where its reads end: the same bytes whole and byte by byte, with no
// output taken between them, end every stream the same way.
TEST(H2ConnectionTest, HeadersOnAFinishedStreamFailTheConnectionOnlyWhileItsBodyIsUnsent) {
  RequestSpec spec;
  spec.method = "POST";
  spec.body.assign(10000, 'b');
  auto post = H2Request::Build(spec, "http", "test.local");
  ASSERT_TRUE(post.ok()) << post.status().ToString();
  using Ended = std::tuple<int32_t, H2Error, uint16_t>;
  auto run = [&](bool body_held, bool byte_by_byte, uint64_t* data_frames_up) {
    auto c = Client({.max_streams = 2});
    // SETTINGS, with SETTINGS_INITIAL_WINDOW_SIZE = 0 when the bodies are to wait.
    const uint8_t window_zero[] = {0, 0, 6, 0x4, 0, 0, 0, 0, 0, 0, 0x4, 0, 0, 0, 0};
    const uint8_t empty[] = {0, 0, 0, 0x4, 0, 0, 0, 0, 0};
    EXPECT_TRUE(body_held ? c->Receive(window_zero, sizeof(window_zero)) : c->Receive(empty, sizeof(empty)));
    EXPECT_GT(c->Submit(**post, 0, 0), 0);
    EXPECT_GT(c->Submit(**post, 1, 1), 0);
    H2FrameScanner up(true);
    auto out = c->Output();
    up.Feed(out.data(), out.size());
    c->Consumed(out.size());
    *data_frames_up = up.frames(0x0);  // 10,000 bytes fit one DATA frame
    // :status 200 with END_STREAM on stream 1, then the same again on it.
    const uint8_t frames[] = {0, 0, 1, 0x1, 0x5, 0, 0, 0, 1, 0x88, 0, 0, 1, 0x1, 0x5, 0, 0, 0, 1, 0x88};
    if (byte_by_byte) {
      for (uint8_t b : frames) c->Receive(&b, 1);
    } else {
      c->Receive(frames, sizeof(frames));
    }
    std::vector<Ended> ended;
    for (const H2Outcome& o : c->outcomes()) ended.emplace_back(o.stream_id, o.error, o.status);
    c->outcomes().clear();
    const bool failed = c->failed();
    c->Fail(H2Error::kClosed);
    for (const H2Outcome& o : c->outcomes()) ended.emplace_back(o.stream_id, o.error, o.status);
    std::sort(ended.begin(), ended.end());
    return std::make_pair(failed, ended);
  };
  uint64_t sent = 0;
  const auto closed = run(false, false, &sent);
  EXPECT_EQ(sent, 2u) << "both bodies went out";
  EXPECT_FALSE(closed.first) << "a frame on a closed stream is ignored";
  EXPECT_EQ(closed.second, (std::vector<Ended>{{1, H2Error::kNone, 200}, {3, H2Error::kClosed, 0}}));
  const auto half_closed = run(true, false, &sent);
  EXPECT_EQ(sent, 0u) << "no body went out";
  EXPECT_TRUE(half_closed.first) << "a frame on a half-closed stream breaks the protocol";
  EXPECT_EQ(half_closed.second, (std::vector<Ended>{{1, H2Error::kNone, 200}, {3, H2Error::kProtocol, 0}}));
  EXPECT_EQ(run(false, true, &sent), closed);
  EXPECT_EQ(run(true, true, &sent), half_closed);
}

TEST(H2ConnectionTest, TransportEndFailsOpenStreamsAsClosed) {
  H2TestServer server;
  auto c = Client({.max_streams = 5});
  auto req = Get();
  H2Wire w;
  w.Pump(*c, server);
  w.Pump(*c, server);
  ASSERT_TRUE(c->CanSubmit());
  for (int i = 0; i < 5; ++i) ASSERT_GT(c->Submit(*req, 0, i), 0);
  c->Fail(H2Error::kClosed);
  ASSERT_EQ(c->outcomes().size(), 5u);
  for (const H2Outcome& o : c->outcomes()) EXPECT_EQ(o.error, H2Error::kClosed);
  EXPECT_FALSE(c->Alive());
  EXPECT_FALSE(c->CanSubmit());
  EXPECT_EQ(std::string(H2ErrorName(H2Error::kClosed)), "closed");
}

TEST(H2ConnectionTest, ShutdownLetsOpenStreamsFinish) {
  H2TestServer server;
  auto c = Client({.max_streams = 5});
  auto req = Get();
  H2Wire w;
  w.Pump(*c, server);
  w.Pump(*c, server);
  for (int i = 0; i < 5; ++i) ASSERT_GT(c->Submit(*req, 0, i), 0);
  c->Shutdown();
  EXPECT_FALSE(c->CanSubmit());
  const Load load = Drive(*c, server, w, *req, 0);
  EXPECT_EQ(load.by_kind.at(H2Error::kNone), 5u);
  EXPECT_EQ(w.up.goaway_last_ids().size(), 1u);
  EXPECT_FALSE(c->Alive());
}

TEST(H2ConnectionTest, OptionsAreCheckedByFlag) {
  EXPECT_NE(H2Connection::Create({.max_streams = 0}).status().message().find("--streams"), std::string::npos);
  EXPECT_NE(H2Connection::Create({.stream_window = 0}).status().message().find("--h2-stream-window"),
            std::string::npos);
  EXPECT_NE(H2Connection::Create({.connection_window = 1u << 31}).status().message().find("--h2-connection-window"),
            std::string::npos);
}

}  // namespace
}  // namespace fairbench::agent
