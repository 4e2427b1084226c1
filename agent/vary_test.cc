#include "agent/vary.h"

#include <gtest/gtest.h>

#include <set>

namespace fairbench::agent {
namespace {

// Catches: a sequence that depends on anything but its seed and stream
// (the clock, an address), which would make a run's numbers unrepeatable.
TEST(VarySequenceTest, SameSeedAndStreamGiveTheSameNumbers) {
  VarySequence a(42, 7), b(42, 7);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(a.Next(), b.Next()) << "at " << i;
}

// Catches: SplitMix64 implemented wrong (a constant, a shift, the order of
// add and mix). The values are the first outputs of the reference
// splitmix64.c (Vigna; xoshiro's seeding generator) from state 0.
TEST(VarySequenceTest, MatchesTheReferenceSplitMix64) {
  VarySequence s = VarySequence::WithState(0);
  EXPECT_EQ(s.Next(), 0xe220a8397b1dcdafull);
  EXPECT_EQ(s.Next(), 0x6e789e6aa1b965f4ull);
  EXPECT_EQ(s.Next(), 0x06c45d188009454full);
}

// Catches: streams (connections) or seeds (agents, cells) that share
// numbers — a server caching by path would then be answered from its cache
// by another connection's request and pass.
TEST(VarySequenceTest, DifferentStreamsAndSeedsDoNotRepeat) {
  std::set<uint64_t> seen;
  size_t drawn = 0;
  for (uint64_t seed : {1ull, 2ull, 0x5eedull}) {
    for (uint64_t stream = 0; stream < 64; ++stream) {
      VarySequence s(seed, stream);
      for (int i = 0; i < 200; ++i, ++drawn) seen.insert(s.Next());
    }
  }
  EXPECT_EQ(seen.size(), drawn);
}

// Catches: a number printed other than in decimal, or cut short.
TEST(VaryNumberTest, Decimal) {
  char buf[24];
  EXPECT_EQ(std::string(buf, FormatVaryNumber(0, buf)), "0");
  EXPECT_EQ(std::string(buf, FormatVaryNumber(18446744073709551615ull, buf)), "18446744073709551615");
}

// Catches: a template that drops text around "{n}", misses a repeated or
// adjacent token, or miscounts its expanded size.
TEST(VaryTemplateTest, ReplacesEveryToken) {
  const VaryTemplate t("/echo/{n}?again={n}{n}");
  EXPECT_TRUE(t.varies());
  EXPECT_EQ(t.Expand("12"), "/echo/12?again=1212");
  EXPECT_EQ(t.Size(2), t.Expand("12").size());
  const VaryTemplate plain("no token {m} here");
  EXPECT_FALSE(plain.varies());
  EXPECT_EQ(plain.Expand("1"), "no token {m} here");
  EXPECT_EQ(VaryTemplate("{n}").Expand("7"), "7");
}

// Catches: a varied request laid out differently from BuildRequest's (the
// same spec with the number written in must give the same bytes), or a
// Content-Length that does not follow the body's varying length.
TEST(VaryRequestTest, BuildsWhatBuildRequestBuildsForTheNumber) {
  RequestSpec spec;
  spec.method = "POST";
  spec.target = "/echo/{n}";
  spec.headers = {{"X-Id", "id-{n}"}, {"Content-Type", "application/json"}};
  spec.body = R"({"n":"{n}"})";
  const VaryRequest vary(spec, "example:8080", false);
  std::string out;
  for (uint64_t n : {5ull, 123456789ull, 18446744073709551615ull}) {
    vary.Build(n, out);
    RequestSpec concrete = spec;
    const std::string digits = std::to_string(n);
    concrete.target = "/echo/" + digits;
    concrete.headers[0].second = "id-" + digits;
    concrete.body = R"({"n":")" + digits + R"("})";
    EXPECT_EQ(out, BuildRequest(concrete, "example:8080", false).bytes) << n;
  }
}

// Catches: a rebuild that allocates per request (the buffer must be reused
// once it has grown to the longest request).
TEST(VaryRequestTest, ReusesTheBuffer) {
  RequestSpec spec;
  spec.target = "/echo/{n}";
  const VaryRequest vary(spec, "h", true);
  std::string out;
  vary.Build(18446744073709551615ull, out);
  const char* data = out.data();
  const size_t capacity = out.capacity();
  VarySequence seq(1, 1);
  for (int i = 0; i < 1000; ++i) vary.Build(seq.Next(), out);
  EXPECT_EQ(out.data(), data);
  EXPECT_EQ(out.capacity(), capacity);
}

// Catches: an expectation matched without its number put in (a cached
// answer for another number would pass), or JSON compared as text.
TEST(VaryExpectTest, BodyAndJson) {
  std::string scratch;
  const VaryExpect body(VaryExpect::Kind::kBody, "n={n}");
  EXPECT_TRUE(body.Matches("n=17", "17", scratch));
  EXPECT_FALSE(body.Matches("n=16", "17", scratch));
  EXPECT_FALSE(body.Matches("n={n}", "17", scratch));
  const VaryExpect json(VaryExpect::Kind::kJson, R"({"id":"{n}","ok":true})");
  EXPECT_TRUE(json.Matches(R"({ "ok": true, "id": "99" })", "99", scratch));
  EXPECT_FALSE(json.Matches(R"({"ok":true,"id":"98"})", "99", scratch));
  EXPECT_FALSE(json.Matches("not json", "99", scratch));
  EXPECT_EQ(body.Describe("n=16", "17"), "expected 'n=17', got 'n=16'");
}

// Catches: a body taken from the wrong place (Content-Length, chunked,
// close-delimited), interim 1xx answers mistaken for the final one, or a
// Date header missed because of its case.
TEST(SplitAnswerTest, BodiesAndDate) {
  std::string body;
  std::string_view date;
  ASSERT_TRUE(SplitAnswer("HTTP/1.1 200 OK\r\ndate: Sun, 06 Nov 1994 08:49:37 GMT\r\nContent-Length: 3\r\n\r\nabc",
                          body, &date));
  EXPECT_EQ(body, "abc");
  EXPECT_EQ(date, "Sun, 06 Nov 1994 08:49:37 GMT");
  ASSERT_TRUE(
      SplitAnswer("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "2;x=y\r\nab\r\n1\r\nc\r\n0\r\nTrailer: 1\r\n\r\n",
                  body, &date));
  EXPECT_EQ(body, "abc");
  EXPECT_TRUE(date.empty());
  ASSERT_TRUE(SplitAnswer("HTTP/1.0 200 OK\r\nDate: x\r\n\r\nuntil close", body, &date));
  EXPECT_EQ(body, "until close");
  EXPECT_EQ(date, "x");
  EXPECT_FALSE(SplitAnswer("garbage", body, &date));
  EXPECT_FALSE(SplitAnswer("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort", body, &date));
}

}  // namespace
}  // namespace fairbench::agent
