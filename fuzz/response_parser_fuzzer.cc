// The agent's HTTP/1.x response parser, fed any bytes at any split.
//
// Input: [head mask][split seed][the bytes a connection received]. Bit i%8
// of the mask says whether request i was HEAD. The bytes are parsed three
// ways — in one piece, one byte at a time, and cut at points drawn from
// the seed — as the engine does it: Feed until a response completes, Reset,
// feed the rest (pipelining), FeedEof at the end. Besides crashes and
// sanitizer reports, any difference between the three (responses, status
// codes, keep-alive, bytes per response, the error) aborts: where a read
// ends must never change what was parsed.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "agent/response_parser.h"

namespace {

using fairbench::agent::ResponseParser;

struct Event {
  ResponseParser::Outcome outcome;
  int status = 0;
  bool keep_alive = false;
  size_t bytes = 0;  // bytes of this response (0 for an error)
  std::string error;
  bool operator==(const Event&) const = default;
};

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "response_parser_fuzzer: %s\n", what);
  std::abort();
}

// Parses `data` delivered in the pieces that end at `cuts` (increasing,
// the last one = len).
std::vector<Event> Parse(const char* data, size_t len, uint8_t head_mask, const std::vector<size_t>& cuts) {
  std::vector<Event> events;
  ResponseParser parser;
  size_t index = 0;
  parser.Reset(head_mask & 1);
  size_t response_start = 0;
  size_t from = 0;
  for (size_t cut : cuts) {
    size_t off = from;
    while (off < cut) {
      size_t consumed = 0;
      const ResponseParser::Outcome o = parser.Feed(data + off, cut - off, &consumed);
      if (o == ResponseParser::Outcome::kError) {
        if (parser.error() == nullptr) Die("kError without an error message");
        // Where in the piece it failed is not reported: only that it did and why.
        events.push_back({o, parser.status(), parser.keep_alive(), 0, parser.error()});
        return events;
      }
      if (consumed > cut - off) Die("consumed more than it was given");
      if (o == ResponseParser::Outcome::kNeedMore) {
        if (consumed != cut - off) Die("kNeedMore without consuming everything");
        off = cut;
        break;
      }
      if (consumed == 0) Die("a response completed without a byte");
      off += consumed;
      events.push_back({o, parser.status(), parser.keep_alive(), off - response_start, {}});
      if (parser.status() > 999) Die("status beyond three digits");
      response_start = off;
      ++index;
      parser.Reset((head_mask >> (index % 8)) & 1);
    }
    from = cut;
  }
  const ResponseParser::Outcome o = parser.FeedEof();
  if (o == ResponseParser::Outcome::kNeedMore && parser.started()) Die("FeedEof: kNeedMore after bytes were seen");
  const bool failed = o == ResponseParser::Outcome::kError;
  events.push_back({o, parser.status(), parser.keep_alive(), failed ? 0 : len - response_start,
                    failed && parser.error() != nullptr ? parser.error() : ""});
  return events;
}

void Describe(const char* name, const std::vector<Event>& events) {
  std::fprintf(stderr, "%s:\n", name);
  for (const Event& e : events) {
    std::fprintf(stderr, "  outcome %d status %d keep-alive %d bytes %zu %s\n", static_cast<int>(e.outcome), e.status,
                 e.keep_alive, e.bytes, e.error.c_str());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* input, size_t size) {
  if (size < 2) return 0;
  const uint8_t head_mask = input[0];
  uint32_t seed = input[1];
  const char* data = reinterpret_cast<const char*>(input + 2);
  const size_t len = size - 2;

  const std::vector<Event> whole = Parse(data, len, head_mask, {len});

  std::vector<size_t> bytewise;
  for (size_t i = 1; i <= len; ++i) bytewise.push_back(i);
  if (bytewise.empty()) bytewise.push_back(0);
  const std::vector<Event> by_byte = Parse(data, len, head_mask, bytewise);

  // Cuts from the seed: pieces of 1 to 16 bytes, with the odd long one.
  std::vector<size_t> cuts;
  for (size_t at = 0; at < len;) {
    seed = seed * 1103515245u + 12345u;
    const uint32_t r = (seed >> 16) & 0x7fff;
    at += (r % 8 == 0) ? 1 + r % 97 : 1 + r % 16;
    cuts.push_back(at < len ? at : len);
  }
  if (cuts.empty()) cuts.push_back(0);
  const std::vector<Event> split = Parse(data, len, head_mask, cuts);

  if (whole != by_byte || whole != split) {
    Describe("in one piece", whole);
    Describe("byte by byte", by_byte);
    Describe("in pieces", split);
    Die("the split changed the parse");
  }
  return 0;
}
