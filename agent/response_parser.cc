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

ResponseParser::Outcome ResponseParser::Feed(const char* data, size_t len, size_t* consumed) {
  const char* p = data;
  const char* const end = data + len;
  if (len > 0) seen_ = true;
  auto complete = [&]() {
    state_ = State::kDone;
    *consumed = static_cast<size_t>(p - data);
    return Outcome::kComplete;
  };
  while (p < end) {
    switch (state_) {
      case State::kStatusStart:
        if (*p != kStatusPrefix[pos_]) return Fail("malformed status line");
        ++p;
        if (++pos_ == kStatusPrefixLen) {
          pos_ = 0;
          state_ = State::kStatusMinor;
        }
        break;
      case State::kStatusMinor:
        if (*p != '0' && *p != '1') return Fail("unsupported HTTP version");
        minor_ = static_cast<uint8_t>(*p - '0');
        ++p;
        state_ = State::kStatusSpace;
        break;
      case State::kStatusSpace:
        if (*p != ' ') return Fail("malformed status line");
        ++p;
        state_ = State::kStatusCode;
        break;
      case State::kStatusCode:
        if (*p < '0' || *p > '9') return Fail("malformed status code");
        status_ = static_cast<uint16_t>(status_ * 10 + (*p - '0'));
        ++p;
        if (++pos_ == 3) {
          pos_ = 0;
          state_ = State::kStatusRest;
        }
        break;
      case State::kStatusRest: {
        const void* lf = std::memchr(p, '\n', static_cast<size_t>(end - p));
        if (lf == nullptr) {
          p = end;
          break;
        }
        p = static_cast<const char*>(lf) + 1;
        state_ = State::kHeaderStart;
        break;
      }
      case State::kHeaderStart:
        if (*p == '\r') {
          ++p;
          state_ = State::kHeadersEndLf;
          break;
        }
        if (*p == '\n') {
          ++p;
          const Outcome o = HeadersDone();
          if (o == Outcome::kComplete) return complete();
          break;
        }
        {
          // Fast path: the whole line is here, so the name is compared at
          // once and uninteresting values are skipped. A line split across
          // reads goes through the byte-wise states below.
          const auto* lf = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
          if (lf != nullptr) {
            const auto* colon = static_cast<const char*>(std::memchr(p, ':', static_cast<size_t>(lf - p)));
            if (colon == nullptr) return Fail("header line without a colon");
            const auto name_len = static_cast<size_t>(colon - p);
            // A CR before the colon ends the line for the byte-wise path
            // below; a line that arrives whole must fail the same way.
            if (std::memchr(p, '\r', name_len) != nullptr) return Fail("header line without a colon");
            header_ = NameIs(p, name_len, kNames[0])   ? Header::kContentLength
                      : NameIs(p, name_len, kNames[1]) ? Header::kTransferEncoding
                      : NameIs(p, name_len, kNames[2]) ? Header::kConnection
                                                  : Header::kNone;
            if (header_ != Header::kNone) {
              token_len_ = 0;
              value_started_ = false;
              length_done_ = false;
              if (header_ == Header::kContentLength) remaining_ = 0;
              for (const char* v = colon + 1; v < lf; ++v) {
                if (!ValueChar(*v)) return Outcome::kError;
              }
              EndHeaderValue();
              if (error_ != nullptr) return Outcome::kError;
            }
            p = lf + 1;
            break;
          }
        }
        name_mask_ = kAllNames;
        pos_ = 0;
        state_ = State::kHeaderName;
        break;
      case State::kHeadersEndLf: {
        if (*p != '\n') return Fail("malformed end of headers");
        ++p;
        const Outcome o = HeadersDone();
        if (o == Outcome::kComplete) return complete();
        break;
      }
      case State::kHeaderName: {
        const char c = *p++;
        if (c == ':') {
          header_ = Header::kNone;
          for (int i = 0; i < 3; ++i) {
            if ((name_mask_ & (1u << i)) && kNames[i].size() == pos_) header_ = static_cast<Header>(i + 1);
          }
          token_len_ = 0;
          value_started_ = false;
          length_done_ = false;
          if (header_ == Header::kContentLength) remaining_ = 0;
          state_ = header_ == Header::kNone ? State::kHeaderSkip : State::kHeaderValue;
          break;
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
        break;
      }
      case State::kHeaderSkip: {
        const void* lf = std::memchr(p, '\n', static_cast<size_t>(end - p));
        if (lf == nullptr) {
          p = end;
          break;
        }
        p = static_cast<const char*>(lf) + 1;
        state_ = State::kHeaderStart;
        break;
      }
      case State::kHeaderValue: {
        const char c = *p++;
        if (c == '\n') {
          EndHeaderValue();
          if (error_ != nullptr) return Outcome::kError;
          state_ = State::kHeaderStart;
          break;
        }
        if (!ValueChar(c)) return Outcome::kError;
        break;
      }
      case State::kBodyLength: {
        const auto avail = static_cast<uint64_t>(end - p);
        const uint64_t take = avail < remaining_ ? avail : remaining_;
        p += take;
        remaining_ -= take;
        if (remaining_ == 0) return complete();
        break;
      }
      case State::kBodyClose:
        p = end;
        break;
      case State::kChunkSize: {
        const char c = *p++;
        const int d = HexDigit(c);
        if (d >= 0) {
          if (remaining_ > (UINT64_MAX >> 4)) return Fail("chunk size too large");
          remaining_ = (remaining_ << 4) | static_cast<uint64_t>(d);
          chunk_digits_ = true;
          break;
        }
        if (!chunk_digits_) return Fail("malformed chunk size");
        if (c == ';' || c == ' ' || c == '\t') {
          state_ = State::kChunkExt;
          break;
        }
        if (c == '\r') {
          state_ = State::kChunkExt;  // LF follows
          break;
        }
        if (c != '\n') return Fail("malformed chunk size");
        state_ = remaining_ == 0 ? State::kTrailerStart : State::kChunkData;
        break;
      }
      case State::kChunkExt: {
        const void* lf = std::memchr(p, '\n', static_cast<size_t>(end - p));
        if (lf == nullptr) {
          p = end;
          break;
        }
        p = static_cast<const char*>(lf) + 1;
        state_ = remaining_ == 0 ? State::kTrailerStart : State::kChunkData;
        break;
      }
      case State::kChunkData: {
        const auto avail = static_cast<uint64_t>(end - p);
        const uint64_t take = avail < remaining_ ? avail : remaining_;
        p += take;
        remaining_ -= take;
        if (remaining_ == 0) state_ = State::kChunkDataCr;
        break;
      }
      case State::kChunkDataCr:
        if (*p == '\r') {
          ++p;
          state_ = State::kChunkDataLf;
          break;
        }
        [[fallthrough]];
      case State::kChunkDataLf:
        if (*p != '\n') return Fail("missing CRLF after chunk data");
        ++p;
        chunk_digits_ = false;
        remaining_ = 0;
        state_ = State::kChunkSize;
        break;
      case State::kTrailerStart:
        if (*p == '\r') {
          ++p;
          state_ = State::kTrailerEndLf;
          break;
        }
        if (*p == '\n') {
          ++p;
          return complete();
        }
        state_ = State::kTrailerSkip;
        break;
      case State::kTrailerEndLf:
        if (*p != '\n') return Fail("malformed end of trailers");
        ++p;
        return complete();
      case State::kTrailerSkip: {
        const void* lf = std::memchr(p, '\n', static_cast<size_t>(end - p));
        if (lf == nullptr) {
          p = end;
          break;
        }
        p = static_cast<const char*>(lf) + 1;
        state_ = State::kTrailerStart;
        break;
      }
      case State::kDone:
        return Fail("bytes after a complete response");
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
