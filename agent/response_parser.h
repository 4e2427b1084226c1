// ResponseParser: an incremental HTTP/1.x response parser for the load engine.
//
// It is fed whatever bytes a read returned, at any split point, and keeps no
// copy of them: headers are scanned once, bodies are skipped by counting. It
// understands what decides where a response ends — the status line,
// Content-Length, Transfer-Encoding: chunked (with extensions and trailers),
// Connection, bodies delimited by the connection's close, and the responses
// that never have a body (HEAD, 1xx, 204, 304). Interim 1xx responses are
// skipped; the final response is reported.
//
// Feed() consumes bytes up to the end of one response. When it returns
// kComplete, the remaining bytes (if any) belong to the next response
// (pipelining); call Reset() before feeding them.
//
// One parser per connection; not thread-safe; about 40 bytes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fairbench::agent {

class ResponseParser {
 public:
  enum class Outcome : uint8_t { kNeedMore, kComplete, kError };

  // Prepares for the next response. `head` says the request was HEAD, so
  // the response has headers only, whatever Content-Length says.
  void Reset(bool head) {
    *this = ResponseParser();
    head_ = head;
  }

  // Consumes bytes of one response. *consumed is set to the number of bytes
  // used (all of them unless the response completed early).
  Outcome Feed(const char* data, size_t len, size_t* consumed);
  // The connection reached end of file: completes a close-delimited body,
  // otherwise the response was cut short (kError), or nothing had started
  // (kNeedMore: the caller decides; see started()).
  Outcome FeedEof();

  // True once any byte of the response has been seen.
  bool started() const { return seen_; }
  int status() const { return status_; }
  // Whether the connection may carry another request after this response.
  bool keep_alive() const { return keep_alive_; }
  // A static description of the last error (valid after kError).
  const char* error() const { return error_; }

 private:
  enum class State : uint8_t {
    kStatusStart,  // matching "HTTP/1."
    kStatusMinor,  // minor version digit
    kStatusSpace,
    kStatusCode,    // three digits
    kStatusRest,    // reason phrase up to LF
    kHeaderStart,   // start of a header line or the blank line
    kHeadersEndLf,  // saw CR of the blank line
    kHeaderName,
    kHeaderValue,  // value of a header we interpret
    kHeaderSkip,   // value of a header we ignore, up to LF
    kBodyLength,   // counting Content-Length bytes
    kBodyClose,    // until EOF
    kChunkSize,
    kChunkExt,  // extension after the size, up to LF
    kChunkData,
    kChunkDataCr,
    kChunkDataLf,
    kTrailerStart,
    kTrailerEndLf,
    kTrailerSkip,
    kDone,
  };
  enum class Header : uint8_t { kNone, kContentLength, kTransferEncoding, kConnection };

  Outcome Fail(const char* why) {
    error_ = why;
    return Outcome::kError;
  }

  // Feed()'s steps, one per state, defined inline in the .cc where the hot
  // loop sees them. A step taking `char c` is given the byte Feed() just
  // consumed; one taking `p` advances it past what it used. Each returns
  // kNeedMore to go on, kComplete when the response ends at p, or kError
  // with error_ set.
  Outcome StatusPrefixByte(char c);
  Outcome StatusMinorByte(char c);
  Outcome StatusSpaceByte(char c);
  Outcome StatusCodeByte(char c);
  Outcome HeaderStart(const char*& p, const char* end);
  Outcome WholeHeaderLine(const char*& p, const char* lf);
  Outcome HeadersEndLf(char c);
  Outcome HeaderNameByte(char c);
  Outcome HeaderValueByte(char c);
  Outcome ChunkSizeByte(char c);
  Outcome ChunkDataLf(char c);
  Outcome ChunkDataCr(const char*& p);
  Outcome TrailerStart(const char*& p);
  Outcome TrailerEndLf(char c);
  // Skips to just after the next LF and moves to `next`; without one, the
  // line continues in the next read.
  void SkipLine(const char*& p, const char* end, State next);
  // Skips body bytes counted by remaining_; true when none are left.
  bool SkipCounted(const char*& p, const char* end);
  // Clears what one interpreted header value accumulates.
  void StartHeaderValue();
  // Decides the body mode after the blank line; returns kComplete when there
  // is no body, kNeedMore otherwise (or restarts for a 1xx).
  Outcome HeadersDone();
  void EndHeaderValue();
  // One byte of an interpreted header's value; false (with error_) when malformed.
  bool ValueChar(char c);
  void EndToken();

  uint64_t remaining_ = 0;  // body or chunk bytes left
  uint64_t content_length_ = 0;
  const char* error_ = nullptr;
  State state_ = State::kStatusStart;
  Header header_ = Header::kNone;
  uint16_t status_ = 0;
  uint8_t pos_ = 0;        // position inside a literal, a name or a token
  uint8_t name_mask_ = 0;  // header names still matching (bit per Header)
  uint8_t token_len_ = 0;
  uint8_t minor_ = 1;
  bool head_ = false;
  bool has_length_ = false;
  bool chunked_ = false;
  bool saw_close_ = false;
  bool saw_keep_alive_ = false;
  bool keep_alive_ = true;
  bool chunk_digits_ = false;
  bool value_started_ = false;
  bool length_done_ = false;  // spaces after Content-Length digits
  bool seen_ = false;
  char token_[12] = {};  // lower-cased token of Connection/Transfer-Encoding
};

}  // namespace fairbench::agent
