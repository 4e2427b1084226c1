// gRPC's message framing over HTTP/2 (the gRPC over HTTP2 protocol): each
// message in a DATA stream is a 5-byte prefix — a compressed flag (0 or 1)
// and a 4-byte big-endian length — then that many bytes of protobuf; the
// call's status is the grpc-status field of the trailers (or of the only
// HEADERS frame of a Trailers-Only response). No socket, no allocation:
// the agent's HTTP/2 codec (h2_connection.h) feeds each stream's DATA to a
// GrpcMessageReader, in whatever pieces it arrived.
//
// GrpcMessageReader: a state machine — reading a prefix (0..4 of its bytes
// seen) or reading a payload (bytes left). Each completed message counts;
// the first malformed thing stops it for good (the error is sticky):
//   kBadFlag   a prefix's flag byte is neither 0 nor 1 — the stream is not
//              gRPC framing, or a message was longer than its prefix said
//              and its excess was read as the next prefix;
//   kTooLarge  a prefix announces more than the limit (--max-message-size),
//              refused before its payload is read;
//   kTruncated (from End) the stream ended inside a prefix or a payload: a
//              message shorter than its prefix said.
// Where the pieces are cut never changes the outcome
// (fuzz/grpc_frame_fuzzer.cc checks it).
//
// Plain values; not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace fairbench::agent {

enum class GrpcFrameError : uint8_t { kNone = 0, kBadFlag, kTooLarge, kTruncated };
const char* GrpcFrameErrorName(GrpcFrameError e);

class GrpcMessageReader {
 public:
  explicit GrpcMessageReader(uint32_t max_message = 4u << 20) : max_(max_message) {}
  void Reset() {
    have_ = 0;
    left_ = 0;
    in_payload_ = false;
    messages_ = 0;
    error_ = GrpcFrameError::kNone;
  }
  // Reads `len` more bytes of the DATA stream; returns the messages they completed.
  uint32_t Feed(const uint8_t* data, size_t len);
  // The stream ended: kTruncated if it stopped inside a message; the
  // reader's first error otherwise.
  GrpcFrameError End();
  uint32_t messages() const { return messages_; }
  GrpcFrameError error() const { return error_; }

 private:
  uint32_t max_;
  uint8_t prefix_[5] = {};
  uint8_t have_ = 0;  // prefix bytes seen
  bool in_payload_ = false;
  uint32_t left_ = 0;  // payload bytes still to come
  uint32_t messages_ = 0;
  GrpcFrameError error_ = GrpcFrameError::kNone;
};

// gRPC status codes (grpc/status.h), 0..16; their names: GrpcStatusName
// (common/metrics.h).
inline constexpr int kGrpcStatusCodes = 17;
// A grpc-status value: its code (any non-negative number, at most 9
// digits), or -1 if it is not one.
int ParseGrpcStatus(std::string_view value);
// What gRPC's clients report for a response without grpc-status from its
// HTTP :status (gRPC's http-grpc-status-mapping).
int GrpcStatusFromHttp(int http_status);
// The 5-byte prefix and the message: one gRPC frame, uncompressed.
std::string EncodeGrpcFrame(std::string_view message);
// --deadline as grpc-timeout: at most 8 digits and a unit (n, u, m, S, M,
// H), the finest unit that fits, rounded up. `ns` > 0.
std::string FormatGrpcTimeout(int64_t ns);

}  // namespace fairbench::agent
