// The agent's gRPC message framing (agent/grpc_frame.h), fed any bytes at
// any split.
//
// Input: [limit byte][split seed][a stream's DATA bytes]. The limit on a
// message is the first byte × 4 (0: none, 4 GiB). The bytes are read
// three ways — in one piece, one byte at a time, and cut at points drawn
// from the seed — then End(). Besides crashes and sanitizer reports, any
// difference between the three (messages counted, the error) aborts, as
// does a count that the bytes cannot hold (5 bytes a message at least) or
// a message counted past an error.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "agent/grpc_frame.h"

namespace {

using fairbench::agent::GrpcFrameError;
using fairbench::agent::GrpcMessageReader;

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "grpc_frame_fuzzer: %s\n", what);
  std::abort();
}

struct Result {
  uint32_t messages = 0;
  GrpcFrameError error = GrpcFrameError::kNone;
  bool operator==(const Result&) const = default;
};

Result Read(const uint8_t* data, uint32_t limit, const std::vector<size_t>& cuts) {
  GrpcMessageReader r(limit);
  uint32_t counted = 0;
  size_t from = 0;
  for (size_t cut : cuts) {
    const GrpcFrameError before = r.error();
    const uint32_t n = r.Feed(data + from, cut - from);
    if (before != GrpcFrameError::kNone && n != 0) Die("a message counted after an error");
    counted += n;
    from = cut;
  }
  if (counted != r.messages()) Die("Feed's counts do not add up to messages()");
  const GrpcFrameError end = r.End();
  if (r.End() != end) Die("End() is not stable");
  return {r.messages(), end};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* input, size_t size) {
  if (size < 2) return 0;
  const uint32_t limit = input[0] == 0 ? 0xffffffffu : uint32_t{input[0]} * 4;
  uint32_t seed = input[1];
  const uint8_t* data = input + 2;
  const size_t len = size - 2;

  const Result whole = Read(data, limit, {len});
  std::vector<size_t> bytes;
  for (size_t i = 1; i <= len; ++i) bytes.push_back(i);
  if (bytes.empty()) bytes.push_back(0);
  const Result one = Read(data, limit, bytes);
  std::vector<size_t> cuts;
  for (size_t at = 0; at < len;) {
    seed = seed * 1103515245u + 12345u;
    at += 1 + (seed >> 16) % 16;
    cuts.push_back(at < len ? at : len);
  }
  if (cuts.empty()) cuts.push_back(0);
  const Result some = Read(data, limit, cuts);
  if (!(whole == one) || !(whole == some)) Die("the split changed what was read");
  if (static_cast<uint64_t>(whole.messages) * 5 > len) Die("more messages than the bytes can hold");
  return 0;
}
