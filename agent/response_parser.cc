#include "agent/response_parser.h"

#include <cstring>
#include <string_view>

namespace fairbench::agent {
namespace {

constexpr char kStatusPrefix[] = "HTTP/1.";
constexpr size_t kStatusPrefixLen = sizeof(kStatusPrefix) - 1;

// Header names we interpret, lower case, indexed by bit position.
constexpr std::string_view kNames[] = {"content-length", "transfer-encoding", "connection"};
constexpr uint8_t kAllNames = 0b111;

// Case-insensitive comparison with a lower-case name.
inline bool NameIs(const char* p, size_t len, std::string_view lower) {
  if (len != lower.size()) return false;
  for (size_t i = 0; i < len; ++i) {
    if (static_cast<char>(p[i] | 0x20) != lower[i]) return false;
  }
  return true;
}

inline int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  const char l = static_cast<char>(c | 0x20);
  if (l >= 'a' && l <= 'f') return l - 'a' + 10;
  return -1;
}

}  // namespace

void ResponseParser::EndToken() {
  if (token_len_ == 0) return;
  const std::string_view token(token_, token_len_ <= sizeof(token_) ? token_len_ : 0);
  if (header_ == Header::kTransferEncoding) {
    chunked_ = token == "chunked";  // the last coding decides
  } else if (header_ == Header::kConnection) {
    if (token == "close") saw_close_ = true;
    if (token == "keep-alive") saw_keep_alive_ = true;
  }
  token_len_ = 0;
}

bool ResponseParser::ValueChar(char c) {
  if (c == '\r') return true;
  if (header_ == Header::kContentLength) {
    if (c == ' ' || c == '\t') {
      if (value_started_) length_done_ = true;
      return true;
    }
    if (c < '0' || c > '9' || length_done_) {
      error_ = "malformed Content-Length";
      return false;
    }
    if (remaining_ > (UINT64_MAX - 9) / 10) {
      error_ = "Content-Length too large";
      return false;
    }
    remaining_ = remaining_ * 10 + static_cast<uint64_t>(c - '0');
    value_started_ = true;
    return true;
  }
  if (c == ',' || c == ' ' || c == '\t') {
    EndToken();
    return true;
  }
  if (token_len_ < sizeof(token_)) token_[token_len_] = static_cast<char>(c | 0x20);
  if (token_len_ < 255) ++token_len_;
  return true;
}

void ResponseParser::EndHeaderValue() {
  if (header_ == Header::kContentLength) {
    if (!value_started_) {
      error_ = "empty Content-Length";
    } else if (has_length_ && content_length_ != remaining_) {
      error_ = "conflicting Content-Length headers";
    } else {
      has_length_ = true;
      content_length_ = remaining_;
    }
    remaining_ = 0;
  } else {
    EndToken();
  }
  header_ = Header::kNone;
}

ResponseParser::Outcome ResponseParser::HeadersDone() {
  if (status_ >= 100 && status_ < 200 && status_ != 101) {
    // Interim response (100 Continue, 103 Early Hints): the final one follows.
    const bool head = head_;
    *this = ResponseParser();
    head_ = head;
    seen_ = true;
    return Outcome::kNeedMore;
  }
  keep_alive_ = minor_ == 1 ? !saw_close_ : (saw_keep_alive_ && !saw_close_);
  if (head_ || status_ == 204 || status_ == 304 || status_ == 101) {
    if (status_ == 101) keep_alive_ = false;  // the connection now speaks something else
    state_ = State::kDone;
    return Outcome::kComplete;
  }
  if (chunked_) {
    state_ = State::kChunkSize;
    remaining_ = 0;
    chunk_digits_ = false;
    return Outcome::kNeedMore;
  }
  if (has_length_) {
    if (content_length_ == 0) {
      state_ = State::kDone;
      return Outcome::kComplete;
    }
    remaining_ = content_length_;
    state_ = State::kBodyLength;
    return Outcome::kNeedMore;
  }
  keep_alive_ = false;  // the body ends when the server closes
  state_ = State::kBodyClose;
  return Outcome::kNeedMore;
}

// The steps below run once per byte or per span on every connection's read,
// so they are forced inline: Feed() must stay one loop over one switch.
#define FAIRBENCH_PARSER_STEP [[gnu::always_inline]] inline

FAIRBENCH_PARSER_STEP ResponseParser::Outcome ResponseParser::StatusPrefixByte(char c) {
  if (c != kStatusPrefix[pos_]) return Fail("malformed status line");
  if (++pos_ == kStatusPrefixLen) {
    pos_ = 0;
    state_ = State::kStatusMinor;
  }
  return Outcome::kNeedMore;
}

FAIRBENCH_PARSER_STEP ResponseParser::Outcome ResponseParser::StatusMinorByte(char c) {
  if (c != '0' && c != '1') return Fail("unsupported HTTP version");
  minor_ = static_cast<uint8_t>(c - '0');
  state_ = State::kStatusSpace;
  return Outcome::kNeedMore;
}

FAIRBENCH_PARSER_STEP ResponseParser::Outcome ResponseParser::StatusSpaceByte(char c) {
  if (c != ' ') return Fail("malformed status line");
  state_ = State::kStatusCode;
  return Outcome::kNeedMore;
}

FAIRBENCH_PARSER_STEP ResponseParser::Outcome ResponseParser::StatusCodeByte(char c) {
  if (c < '0' || c > '9') return Fail("malformed status code");
  status_ = static_cast<uint16_t>(status_ * 10 + (c - '0'));
  if (++pos_ == 3) {
    pos_ = 0;
    state_ = State::kStatusRest;
  }
  return Outcome::kNeedMore;
}

FAIRBENCH_PARSER_STEP void ResponseParser::SkipLine(const char*& p, const char* end, State next) {
  const void* lf = std::memchr(p, '\n', static_cast<size_t>(end - p));
  if (lf == nullptr) {
    p = end;
    return;
  }
  p = static_cast<const char*>(lf) + 1;
  state_ = next;
}

FAIRBENCH_PARSER_STEP bool ResponseParser::SkipCounted(const char*& p, const char* end) {
  const auto avail = static_cast<uint64_t>(end - p);
  const uint64_t take = avail < remaining_ ? avail : remaining_;
  p += take;
  remaining_ -= take;
  return remaining_ == 0;
}

FAIRBENCH_PARSER_STEP void ResponseParser::StartHeaderValue() {
  token_len_ = 0;
  value_started_ = false;
  length_done_ = false;
  if (header_ == Header::kContentLength) remaining_ = 0;
}

// Fast path: the whole line [p, lf] is here, so the name is compared at once
// and uninteresting values are skipped. A line split across reads goes
// through the byte-wise states instead.
FAIRBENCH_PARSER_STEP ResponseParser::Outcome ResponseParser::WholeHeaderLine(const char*& p, const char* lf) {
  const auto* colon = static_cast<const char*>(std::memchr(p, ':', static_cast<size_t>(lf - p)));
  if (colon == nullptr) return Fail("header line without a colon");
  const auto name_len = static_cast<size_t>(colon - p);
  // A CR before the colon ends the line for the byte-wise path; a line that
  // arrives whole must fail the same way.
  if (std::memchr(p, '\r', name_len) != nullptr) return Fail("header line without a colon");
  header_ = NameIs(p, name_len, kNames[0])   ? Header::kContentLength
            : NameIs(p, name_len, kNames[1]) ? Header::kTransferEncoding
            : NameIs(p, name_len, kNames[2]) ? Header::kConnection
                                             : Header::kNone;
  if (header_ != Header::kNone) {
    StartHeaderValue();
    for (const char* v = colon + 1; v < lf; ++v) {
      if (!ValueChar(*v)) return Outcome::kError;
    }
    EndHeaderValue();
    if (error_ != nullptr) return Outcome::kError;
  }
  p = lf + 1;
  return Outcome::kNeedMore;
}

FAIRBENCH_PARSER_STEP ResponseParser::Outcome ResponseParser::HeaderStart(const char*& p, const char* end) {
  if (*p == '\r') {
    ++p;
    state_ = State::kHeadersEndLf;
    return Outcome::kNeedMore;
  }
  if (*p == '\n') {
    ++p;
    return HeadersDone();
  }
  const auto* lf = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
  if (lf != nullptr) return WholeHeaderLine(p, lf);
  name_mask_ = kAllNames;
  pos_ = 0;
  state_ = State::kHeaderName;
  return Outcome::kNeedMore;
}

FAIRBENCH_PARSER_STEP ResponseParser::Outcome ResponseParser::HeadersEndLf(char c) {
  if (c != '\n') return Fail("malformed end of headers");
  return HeadersDone();
}

FAIRBENCH_PARSER_STEP ResponseParser::Outcome ResponseParser::HeaderNameByte(char c) {
  if (c == ':') {
    header_ = Header::kNone;
    for (int i = 0; i < 3; ++i) {
      if ((name_mask_ & (1u << i)) && kNames[i].size() == pos_) header_ = static_cast<Header>(i + 1);
    }
    StartHeaderValue();
    state_ = header_ == Header::kNone ? State::kHeaderSkip : State::kHeaderValue;
    return Outcome::kNeedMore;
  }
  if (c == '\n' || c == '\r') return Fail("header line without a colon");
  if (name_mask_ != 0) {
    const char lower = static_cast<char>(c | 0x20);
    for (int i = 0; i < 3; ++i) {
      if ((name_mask_ & (1u << i)) && (pos_ >= kNames[i].size() || kNames[i][pos_] != lower)) {
        name_mask_ = static_cast<uint8_t>(name_mask_ & ~(1u << i));
      }
    }
    if (pos_ < 255) ++pos_;
  }
  return Outcome::kNeedMore;
}

FAIRBENCH_PARSER_STEP ResponseParser::Outcome ResponseParser::HeaderValueByte(char c) {
  if (c == '\n') {
    EndHeaderValue();
    if (error_ != nullptr) return Outcome::kError;
    state_ = State::kHeaderStart;
    return Outcome::kNeedMore;
  }
  return ValueChar(c) ? Outcome::kNeedMore : Outcome::kError;
}

FAIRBENCH_PARSER_STEP ResponseParser::Outcome ResponseParser::ChunkSizeByte(char c) {
  const int d = HexDigit(c);
  if (d >= 0) {
    if (remaining_ > (UINT64_MAX >> 4)) return Fail("chunk size too large");
    remaining_ = (remaining_ << 4) | static_cast<uint64_t>(d);
    chunk_digits_ = true;
    return Outcome::kNeedMore;
  }
  if (!chunk_digits_) return Fail("malformed chunk size");
  if (c == ';' || c == ' ' || c == '\t' || c == '\r') {
    state_ = State::kChunkExt;  // after CR, the LF follows
    return Outcome::kNeedMore;
  }
  if (c != '\n') return Fail("malformed chunk size");
  state_ = remaining_ == 0 ? State::kTrailerStart : State::kChunkData;
  return Outcome::kNeedMore;
}

FAIRBENCH_PARSER_STEP ResponseParser::Outcome ResponseParser::ChunkDataLf(char c) {
  if (c != '\n') return Fail("missing CRLF after chunk data");
  chunk_digits_ = false;
  remaining_ = 0;
  state_ = State::kChunkSize;
  return Outcome::kNeedMore;
}

// The CR after a chunk's data is optional; the LF is not.
FAIRBENCH_PARSER_STEP ResponseParser::Outcome ResponseParser::ChunkDataCr(const char*& p) {
  if (*p == '\r') {
    ++p;
    state_ = State::kChunkDataLf;
    return Outcome::kNeedMore;
  }
  return ChunkDataLf(*p++);
}

FAIRBENCH_PARSER_STEP ResponseParser::Outcome ResponseParser::TrailerStart(const char*& p) {
  if (*p == '\r') {
    ++p;
    state_ = State::kTrailerEndLf;
    return Outcome::kNeedMore;
  }
  if (*p == '\n') {
    ++p;
    return Outcome::kComplete;
  }
  state_ = State::kTrailerSkip;
  return Outcome::kNeedMore;
}

FAIRBENCH_PARSER_STEP ResponseParser::Outcome ResponseParser::TrailerEndLf(char c) {
  if (c != '\n') return Fail("malformed end of trailers");
  return Outcome::kComplete;
}

#undef FAIRBENCH_PARSER_STEP

ResponseParser::Outcome ResponseParser::Feed(const char* data, size_t len, size_t* consumed) {
  const char* p = data;
  const char* const end = data + len;
  if (len > 0) seen_ = true;
  while (p < end) {
    Outcome step = Outcome::kNeedMore;
    switch (state_) {
      case State::kStatusStart: step = StatusPrefixByte(*p++); break;
      case State::kStatusMinor: step = StatusMinorByte(*p++); break;
      case State::kStatusSpace: step = StatusSpaceByte(*p++); break;
      case State::kStatusCode: step = StatusCodeByte(*p++); break;
      case State::kStatusRest:
      case State::kHeaderSkip: SkipLine(p, end, State::kHeaderStart); break;
      case State::kHeaderStart: step = HeaderStart(p, end); break;
      case State::kHeadersEndLf: step = HeadersEndLf(*p++); break;
      case State::kHeaderName: step = HeaderNameByte(*p++); break;
      case State::kHeaderValue: step = HeaderValueByte(*p++); break;
      case State::kBodyLength:
        if (SkipCounted(p, end)) step = Outcome::kComplete;
        break;
      case State::kBodyClose: p = end; break;
      case State::kChunkSize: step = ChunkSizeByte(*p++); break;
      case State::kChunkExt: SkipLine(p, end, remaining_ == 0 ? State::kTrailerStart : State::kChunkData); break;
      case State::kChunkData:
        if (SkipCounted(p, end)) state_ = State::kChunkDataCr;
        break;
      case State::kChunkDataCr: step = ChunkDataCr(p); break;
      case State::kChunkDataLf: step = ChunkDataLf(*p++); break;
      case State::kTrailerStart: step = TrailerStart(p); break;
      case State::kTrailerEndLf: step = TrailerEndLf(*p++); break;
      case State::kTrailerSkip: SkipLine(p, end, State::kTrailerStart); break;
      case State::kDone: return Fail("bytes after a complete response");
    }
    if (step == Outcome::kError) return step;
    if (step == Outcome::kComplete) {
      state_ = State::kDone;
      *consumed = static_cast<size_t>(p - data);
      return step;
    }
  }
  *consumed = len;
  return Outcome::kNeedMore;
}

ResponseParser::Outcome ResponseParser::FeedEof() {
  if (state_ == State::kBodyClose) {
    state_ = State::kDone;
    return Outcome::kComplete;
  }
  if (state_ == State::kDone) return Outcome::kComplete;
  if (!started()) return Outcome::kNeedMore;
  return Fail("connection closed mid-response");
}

}  // namespace fairbench::agent
