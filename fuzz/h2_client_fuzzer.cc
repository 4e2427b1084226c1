// The agent's HTTP/2 client (H2Connection) fed any bytes as the server's.
//
// Input: [config][split seed][what the server sends after its first
// SETTINGS]. The client opens 1..16 streams (config & 15; bit 4: POSTs
// with a body instead of GETs; bit 5: the first is cancelled at once; bit
// 6: gRPC mode, whose status, framing error and message count per complete
// response must not depend on the cuts either) once
// an empty server SETTINGS frame is in,
// then takes the input in one piece, byte by byte and cut at points drawn
// from the seed, and finally loses the transport; its output is dropped
// only at the end. Besides crashes and sanitizer reports,
// aborts when a stream does not end exactly once, when a complete response
// has no final status, when more body bytes are counted than were fed, or
// when the three ways of cutting give different outcomes (for a failed
// stream: its kind, status and code, not how much of its body had come).
//
// What the client has written must not differ between the three runs:
// whether a request's body has all gone out decides whether its stream is
// closed or only half-closed when the response ends, and a late frame on
// it is then ignored or a connection error (a real race between the
// server and the client's writes, not a matter of where reads end). So
// the output is not taken between pieces (taking it after every piece
// would let the piecewise runs write more than the whole one), and the
// request bodies are small enough (16 x 10,000 bytes and a few replies)
// that H2Connection::kOutputHighWater (256 KiB) never holds one
// back: what is written depends only on the frames read and the windows.
//
// The windows are the largest HTTP/2 allows: when nghttp2 sends a
// WINDOW_UPDATE depends on how DATA arrives in pieces, so with small
// windows a flooding "server" would be within its window in one cut and
// beyond it in another. Inputs are capped (8000 bytes: fewer than 1000
// frames) for the same reason: nghttp2 counts unsent ACKs toward its
// flood limit, and the piecewise runs send theirs in between.
//
// Debian's nghttp2 1.52 (with the limit on CONTINUATION frames backported)
// counts every piece in which a CONTINUATION frame header arrives toward
// that limit of 8, so a header block cut finely enough fails the
// connection ("Too many CONTINUATION frames") where the whole one does
// not. When a run ends that way the runs are not compared.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "agent/h2_connection.h"

namespace {

using fairbench::agent::H2Connection;
using fairbench::agent::H2Error;
using fairbench::agent::H2Options;
using fairbench::agent::H2Outcome;
using fairbench::agent::H2Request;
using fairbench::agent::RequestSpec;

// stream, error, status, code, body bytes, cookie; gRPC: grpc-status,
// framing error, messages.
using Event = std::tuple<int32_t, int, uint16_t, uint32_t, uint64_t, uint64_t, int32_t, int, uint32_t>;

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "h2_client_fuzzer: %s\n", what);
  std::abort();
}

const H2Request& Request(bool post) {
  static const std::unique_ptr<H2Request> get = [] {
    RequestSpec spec;
    return H2Request::Build(spec, "http", "fuzz.test").value();
  }();
  static const std::unique_ptr<H2Request> with_body = [] {
    RequestSpec spec;
    spec.method = "POST";
    spec.target = "/upload";
    spec.body.assign(10000, 'b');
    return H2Request::Build(spec, "http", "fuzz.test").value();
  }();
  return post ? *with_body : *get;
}

// Moves the streams that ended since the last call into *out.
void Collect(H2Connection& c, std::vector<H2Outcome>* out) {
  out->insert(out->end(), c.outcomes().begin(), c.outcomes().end());
  c.outcomes().clear();
}

// Takes (and drops) everything the client has to write, then Collect.
void Drain(H2Connection& c, std::vector<H2Outcome>* out) {
  for (auto bytes = c.Output(); !bytes.empty(); bytes = c.Output()) c.Consumed(bytes.size());
  Collect(c, out);
}

struct Outcomes {
  std::vector<Event> events;
  bool continuation_limit = false;  // nghttp2's cut-dependent CONTINUATION count ended it
};

Outcomes Run(uint8_t config, const uint8_t* data, size_t len, const std::vector<size_t>& cuts) {
  H2Options o;
  o.max_streams = 16;
  o.stream_window = (1u << 31) - 1;
  o.connection_window = (1u << 31) - 1;
  o.grpc = (config & 64) != 0;
  o.grpc_max_message = 1000;
  auto created = H2Connection::Create(o);
  if (!created.ok()) Die("Create failed");
  H2Connection& c = **created;
  std::vector<H2Outcome> outcomes;
  static const uint8_t kSettings[] = {0, 0, 0, 0x4, 0, 0, 0, 0, 0};
  if (!c.Receive(kSettings, sizeof(kSettings))) Die("an empty SETTINGS frame was refused");
  const int streams = 1 + (config & 15);
  std::map<int32_t, int> ended;
  for (int i = 0; i < streams; ++i) {
    if (!c.CanSubmit()) Die("cannot submit after the server's SETTINGS");
    const int32_t id = c.Submit(Request(config & 16), static_cast<uint32_t>(i), static_cast<uint64_t>(i) * 7);
    if (id <= 0) Die("Submit failed");
    ended[id] = 0;
  }
  if ((config & 32) != 0) {
    // The caller gives up on the first stream before the server's bytes come.
    if (!c.Cancel(1)) Die("Cancel of an open stream failed");
    if (c.Cancel(1)) Die("a stream was cancelled twice");
  }
  Drain(c, &outcomes);
  size_t from = 0;
  for (size_t cut : cuts) {
    if (cut > from) {
      (void)c.Receive(data + from, cut - from);  // a failure shows in the outcomes
      Collect(c, &outcomes);
    }
    from = cut;
  }
  // Nothing was taken since the input began, so this is all the client
  // wrote meanwhile: at the high-water mark, writes would have been held
  // back and the runs' comparison would not hold (see above).
  if (c.Output().size() >= H2Connection::kOutputHighWater) Die("the output reached H2Connection's high-water mark");
  Outcomes result;
  result.continuation_limit =
      c.failed() && std::strcmp(c.error_message(), nghttp2_strerror(NGHTTP2_ERR_TOO_MANY_CONTINUATIONS)) == 0;
  c.Fail(H2Error::kClosed);
  Drain(c, &outcomes);
  if (c.open_streams() != 0) Die("streams left open after Fail");
  if (c.Alive()) Die("alive after Fail");

  std::vector<Event>& events = result.events;
  uint64_t body = 0;
  for (const H2Outcome& e : outcomes) {
    auto it = ended.find(e.stream_id);
    if (it == ended.end()) Die("an outcome for a stream never submitted");
    if (++it->second != 1) Die("a stream ended twice");
    if (e.cookie != static_cast<uint64_t>(e.request) * 7) Die("the cookie does not match the request");
    if (e.error == H2Error::kNone && (e.status < 200 || e.status > 999)) Die("a response without a final status");
    body += e.body_bytes;
    // A failed stream's body count is what arrived before nghttp2 saw the
    // fault, and that depends on the cuts.
    if (e.error == H2Error::kNone && static_cast<uint64_t>(e.grpc_messages) * 5 > e.body_bytes) {
      Die("more gRPC messages than the body can hold");
    }
    const bool done = e.error == H2Error::kNone;
    events.emplace_back(e.stream_id, static_cast<int>(e.error), e.status, e.error_code, done ? e.body_bytes : 0,
                        e.cookie, done ? e.grpc_status : 0, done ? static_cast<int>(e.grpc_error) : 0,
                        done ? e.grpc_messages : 0);
  }
  if (body > len) Die("more body bytes than were fed");
  if (events.size() != ended.size()) Die("a stream never ended");
  std::sort(events.begin(), events.end());
  return result;
}

void Describe(const char* name, const std::vector<Event>& events) {
  std::fprintf(stderr, "%s:\n", name);
  for (const Event& e : events) {
    std::fprintf(stderr, "  stream %d error %d status %u code %u body %llu\n", std::get<0>(e), std::get<1>(e),
                 std::get<2>(e), std::get<3>(e), static_cast<unsigned long long>(std::get<4>(e)));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* input, size_t size) {
  if (size < 2 || size > 8000) return 0;
  const uint8_t config = input[0];
  uint32_t seed = input[1];
  const uint8_t* data = input + 2;
  const size_t len = size - 2;

  const Outcomes whole = Run(config, data, len, {len});
  std::vector<size_t> bytewise;
  for (size_t i = 1; i <= len; ++i) bytewise.push_back(i);
  const Outcomes by_byte = Run(config, data, len, bytewise);
  std::vector<size_t> cuts;
  for (size_t at = 0; at < len;) {
    seed = seed * 1103515245u + 12345u;
    const uint32_t r = (seed >> 16) & 0x7fff;
    at += (r % 8 == 0) ? 1 + r % 97 : 1 + r % 16;
    cuts.push_back(at < len ? at : len);
  }
  const Outcomes split = Run(config, data, len, cuts);

  if (whole.continuation_limit || by_byte.continuation_limit || split.continuation_limit) return 0;
  if (whole.events != by_byte.events || whole.events != split.events) {
    Describe("in one piece", whole.events);
    Describe("byte by byte", by_byte.events);
    Describe("in pieces", split.events);
    Die("the split changed the outcomes");
  }
  return 0;
}
