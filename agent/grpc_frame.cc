#include "agent/grpc_frame.h"

#include <algorithm>

namespace fairbench::agent {

const char* GrpcFrameErrorName(GrpcFrameError e) {
  switch (e) {
    case GrpcFrameError::kNone: return "none";
    case GrpcFrameError::kBadFlag: return "bad_flag";
    case GrpcFrameError::kTooLarge: return "too_large";
    case GrpcFrameError::kTruncated: return "truncated";
  }
  return "unknown";
}

uint32_t GrpcMessageReader::Feed(const uint8_t* data, size_t len) {
  uint32_t done = 0;
  while (len > 0 && error_ == GrpcFrameError::kNone) {
    if (in_payload_) {
      const size_t take = std::min<size_t>(left_, len);
      left_ -= static_cast<uint32_t>(take);
      data += take;
      len -= take;
      if (left_ == 0) {
        in_payload_ = false;
        ++messages_;
        ++done;
      }
      continue;
    }
    prefix_[have_++] = *data++;
    --len;
    if (have_ == 1 && prefix_[0] > 1) {
      error_ = GrpcFrameError::kBadFlag;
      break;
    }
    if (have_ < 5) continue;
    have_ = 0;
    const uint32_t n = (uint32_t{prefix_[1]} << 24) | (uint32_t{prefix_[2]} << 16) | (uint32_t{prefix_[3]} << 8) |
                       uint32_t{prefix_[4]};
    if (n > max_) {
      error_ = GrpcFrameError::kTooLarge;
      break;
    }
    if (n == 0) {
      ++messages_;
      ++done;
    } else {
      in_payload_ = true;
      left_ = n;
    }
  }
  return done;
}

GrpcFrameError GrpcMessageReader::End() {
  if (error_ == GrpcFrameError::kNone && (in_payload_ || have_ > 0)) error_ = GrpcFrameError::kTruncated;
  return error_;
}

int ParseGrpcStatus(std::string_view value) {
  if (value.empty() || value.size() > 9) return -1;
  int code = 0;
  for (char c : value) {
    if (c < '0' || c > '9') return -1;
    code = code * 10 + (c - '0');
  }
  return code;
}

int GrpcStatusFromHttp(int http_status) {
  switch (http_status) {
    case 400: return 13;  // INTERNAL
    case 401: return 16;  // UNAUTHENTICATED
    case 403: return 7;   // PERMISSION_DENIED
    case 404: return 12;  // UNIMPLEMENTED
    case 429:
    case 502:
    case 503:
    case 504: return 14;  // UNAVAILABLE
    default: return 2;    // UNKNOWN
  }
}

std::string EncodeGrpcFrame(std::string_view message) {
  std::string out(5, '\0');
  const auto n = static_cast<uint32_t>(message.size());
  out[1] = static_cast<char>(n >> 24);
  out[2] = static_cast<char>(n >> 16);
  out[3] = static_cast<char>(n >> 8);
  out[4] = static_cast<char>(n);
  out.append(message);
  return out;
}

std::string FormatGrpcTimeout(int64_t ns) {
  struct Unit {
    int64_t ns;
    char name;
  };
  static constexpr Unit kUnits[] = {
      {1, 'n'}, {1'000, 'u'}, {1'000'000, 'm'}, {1'000'000'000, 'S'}, {60'000'000'000, 'M'}, {3'600'000'000'000, 'H'}};
  for (const Unit& u : kUnits) {
    const int64_t v = (ns + u.ns - 1) / u.ns;
    if (v <= 99'999'999) return std::to_string(v) + u.name;
  }
  return "99999999H";
}

}  // namespace fairbench::agent
