#include "common/histogram.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

namespace fairbench {
namespace {

constexpr uint32_t kV2EncodingCookie = 0x1c849303 | 0x10;
constexpr uint32_t kV2CompressedEncodingCookie = 0x1c849304 | 0x10;
constexpr size_t kV2HeaderSize = 40;
// Refuse to inflate more than this: a histogram of our layout never needs it.
constexpr size_t kMaxPayload = static_cast<size_t>(Histogram::kCountsLen) * 9;

void PutBe32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}
void PutBe64(std::string& out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}
uint32_t GetBe32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}
uint64_t GetBe64(const unsigned char* p) { return (uint64_t{GetBe32(p)} << 32) | GetBe32(p + 4); }

// HdrHistogram's LEB128 variant: up to 8 groups of 7 bits, then a 9th byte
// carrying the top 8 bits whole.
void PutZigZag(std::string& out, int64_t signed_value) {
  uint64_t v = (static_cast<uint64_t>(signed_value) << 1) ^ static_cast<uint64_t>(signed_value >> 63);
  for (int i = 0; i < 8; ++i) {
    if ((v >> 7) == 0) {
      out.push_back(static_cast<char>(v));
      return;
    }
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

bool GetZigZag(const unsigned char*& p, const unsigned char* end, int64_t* out) {
  uint64_t v = 0;
  for (int i = 0; i < 9; ++i) {
    if (p == end) return false;
    const uint64_t b = *p++;
    if (i == 8) {
      v |= b << 56;
      break;
    }
    v |= (b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) break;
  }
  *out = static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
  return true;
}

}  // namespace

Histogram::Histogram() = default;

int64_t Histogram::ValueFromIndex(int index) {
  int bucket = (index >> kSubBucketHalfCountMagnitude) - 1;
  int64_t sub_bucket = (index & (kSubBucketHalfCount - 1)) + kSubBucketHalfCount;
  if (bucket < 0) {
    sub_bucket -= kSubBucketHalfCount;
    bucket = 0;
  }
  return sub_bucket << bucket;
}

int64_t Histogram::LowestEquivalentValue(int64_t value) { return ValueFromIndex(IndexOf(value)); }

int64_t Histogram::HighestEquivalentValue(int64_t value) {
  const int pow2ceiling = 64 - __builtin_clzll(static_cast<uint64_t>(value) | kSubBucketMask);
  int bucket = pow2ceiling - (kSubBucketHalfCountMagnitude + 1);
  const int64_t sub_bucket = value >> bucket;
  if (sub_bucket >= kSubBucketCount) ++bucket;
  const int64_t range = int64_t{1} << bucket;
  return LowestEquivalentValue(value) + range - 1;
}

void Histogram::Merge(const Histogram& other) {
  if (!other.counts_.empty()) {
    if (counts_.empty()) {
      counts_ = other.counts_;
    } else {
      for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
    }
  }
  if (other.moments_.count > 0) {
    if (moments_.count == 0 || other.moments_.min < moments_.min) moments_.min = other.moments_.min;
    if (other.moments_.max > moments_.max) moments_.max = other.moments_.max;
  }
  moments_.count += other.moments_.count;
  moments_.sum += other.moments_.sum;
  moments_.sum_squares += other.moments_.sum_squares;
  clamped_ += other.clamped_;
}

void Histogram::Reset() {
  if (!counts_.empty()) std::memset(counts_.data(), 0, counts_.size() * sizeof(uint64_t));
  moments_ = HistogramMoments{};
  clamped_ = 0;
}

double Histogram::Mean() const {
  if (moments_.count == 0) return 0.0;
  return static_cast<double>(moments_.sum) / static_cast<double>(moments_.count);
}

double Histogram::Stdev() const {
  const uint64_t n = moments_.count;
  if (n < 2) return 0.0;
  // Σ(x - mean)² = Σx² - (Σx)²/n, computed in 128-bit integers to stay exact
  // until the final division.
  const uint128_t sum = moments_.sum;
  const uint128_t num = moments_.sum_squares * n - sum * sum;  // n·Σ(x-mean)², never negative
  const long double var =
      static_cast<long double>(num) / (static_cast<long double>(n) * static_cast<long double>(n - 1));
  return static_cast<double>(std::sqrt(var));
}

double Histogram::WithinStdevPercent() const {
  if (moments_.count == 0) return 0.0;
  const double mean = Mean();
  const double sd = Stdev();
  const double lower = mean - sd;
  const double upper = mean + sd;
  uint64_t within = 0;
  for (int i = 0; i < static_cast<int>(counts_.size()); ++i) {
    const uint64_t c = counts_[static_cast<size_t>(i)];
    if (c == 0) continue;
    const auto v = static_cast<double>(ValueFromIndex(i));
    if (v >= lower && v <= upper) within += c;
  }
  return 100.0 * static_cast<double>(within) / static_cast<double>(moments_.count);
}

uint64_t Histogram::ValueAtPercentile(double p) const {
  const uint64_t n = moments_.count;
  if (n == 0) return 0;
  if (p < 0) p = 0;
  if (p > 100) p = 100;
  auto rank = static_cast<uint64_t>(std::llround(p / 100.0 * static_cast<double>(n)));
  if (rank < 1) rank = 1;
  if (rank > n) rank = n;
  uint64_t cumulative = 0;
  for (int i = 0; i < static_cast<int>(counts_.size()); ++i) {
    cumulative += counts_[static_cast<size_t>(i)];
    if (cumulative >= rank) {
      const auto v = static_cast<uint64_t>(HighestEquivalentValue(ValueFromIndex(i)));
      return v < moments_.max ? (v > moments_.min ? v : moments_.min) : moments_.max;
    }
  }
  return moments_.max;
}

std::string Histogram::EncodeCompressed() const {
  // V2 payload: counts up to the last non-zero one, zero runs as negatives.
  int last = static_cast<int>(counts_.size()) - 1;
  while (last >= 0 && counts_[static_cast<size_t>(last)] == 0) --last;
  std::string payload;
  payload.reserve(256);
  for (int i = 0; i <= last;) {
    const uint64_t c = counts_[static_cast<size_t>(i)];
    if (c == 0) {
      int run = 0;
      while (i <= last && counts_[static_cast<size_t>(i)] == 0) {
        ++run;
        ++i;
      }
      PutZigZag(payload, run == 1 ? 0 : -static_cast<int64_t>(run));
      continue;
    }
    PutZigZag(payload, static_cast<int64_t>(c));
    ++i;
  }
  std::string encoded;
  encoded.reserve(kV2HeaderSize + payload.size());
  PutBe32(encoded, kV2EncodingCookie);
  PutBe32(encoded, static_cast<uint32_t>(payload.size()));
  PutBe32(encoded, 0);  // normalizing index offset
  PutBe32(encoded, static_cast<uint32_t>(kSignificantDigits));
  PutBe64(encoded, static_cast<uint64_t>(kLowestDiscernible));
  PutBe64(encoded, static_cast<uint64_t>(kHighestTrackable));
  double ratio = 1.0;
  uint64_t ratio_bits;
  std::memcpy(&ratio_bits, &ratio, sizeof ratio_bits);
  PutBe64(encoded, ratio_bits);
  encoded += payload;

  uLongf bound = compressBound(static_cast<uLong>(encoded.size()));
  std::string out(8 + bound, '\0');
  auto* dest = reinterpret_cast<Bytef*>(out.data() + 8);
  const int rc = compress2(dest, &bound, reinterpret_cast<const Bytef*>(encoded.data()),
                           static_cast<uLong>(encoded.size()), Z_DEFAULT_COMPRESSION);
  if (rc != Z_OK) return {};  // only on out-of-memory
  std::string header;
  PutBe32(header, kV2CompressedEncodingCookie);
  PutBe32(header, static_cast<uint32_t>(bound));
  std::memcpy(out.data(), header.data(), 8);
  out.resize(8 + bound);
  return out;
}

Result<Histogram> Histogram::DecodeCompressed(std::string_view bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 8) return Status::InvalidArgument("histogram: truncated header");
  if (GetBe32(p) != kV2CompressedEncodingCookie)
    return Status::InvalidArgument("histogram: not a V2 compressed histogram");
  const uint32_t clen = GetBe32(p + 4);
  if (clen > bytes.size() - 8) return Status::InvalidArgument("histogram: compressed length exceeds input");

  // Inflate into a buffer kept per thread: a decode per agent per second
  // must not allocate (and fault in) a fresh 200 KB every time.
  thread_local std::unique_ptr<unsigned char[]> buffer(new unsigned char[kV2HeaderSize + kMaxPayload]);
  unsigned char* const encoded = buffer.get();
  uLongf dlen = static_cast<uLongf>(kV2HeaderSize + kMaxPayload);
  const int rc = uncompress(encoded, &dlen, p + 8, clen);
  if (rc != Z_OK) return Status::InvalidArgument("histogram: zlib error " + std::to_string(rc));
  if (dlen < kV2HeaderSize) return Status::InvalidArgument("histogram: truncated V2 header");
  const unsigned char* e = encoded;
  if (GetBe32(e) != kV2EncodingCookie) return Status::InvalidArgument("histogram: bad V2 cookie");
  const uint32_t payload_len = GetBe32(e + 4);
  const uint32_t offset = GetBe32(e + 8);
  const uint32_t digits = GetBe32(e + 12);
  const uint64_t lowest = GetBe64(e + 16);
  const uint64_t highest = GetBe64(e + 24);
  // Any histogram with the same lowest value and precision has the same
  // bucket layout (the highest trackable value only sets how many buckets
  // exist), so it reads as long as its values fit in ours. The normalizing
  // index offset is ignored, as hdr-histogram-js does (it writes 1 there).
  (void)highest;
  (void)offset;
  if (digits != static_cast<uint32_t>(kSignificantDigits) || lowest != static_cast<uint64_t>(kLowestDiscernible)) {
    return Status::InvalidArgument("histogram: layout differs from fairbench's (lowest " + std::to_string(lowest) +
                                   ", " + std::to_string(digits) + " digits; expected lowest 1, 3 digits)");
  }
  if (payload_len > dlen - kV2HeaderSize) return Status::InvalidArgument("histogram: payload length exceeds data");

  Histogram h;
  const unsigned char* q = e + kV2HeaderSize;
  const unsigned char* end = q + payload_len;
  int index = 0;
  while (q < end) {
    int64_t v = 0;
    if (!GetZigZag(q, end, &v)) return Status::InvalidArgument("histogram: truncated count");
    if (v < 0) {
      // Compared as v < -(room) so that INT64_MIN is not negated.
      if (v < -static_cast<int64_t>(kCountsLen - index))
        return Status::InvalidArgument("histogram: zero run past the end");
      index += static_cast<int>(-v);
      continue;
    }
    if (index >= kCountsLen) return Status::InvalidArgument("histogram: too many counts");
    if (v > 0) {
      if (h.counts_.empty()) h.AllocateCounts();
      h.counts_[static_cast<size_t>(index)] = static_cast<uint64_t>(v);
      const auto c = static_cast<uint64_t>(v);
      if (c > UINT64_MAX - h.moments_.count) return Status::InvalidArgument("histogram: total count overflows");
      const auto value = static_cast<uint64_t>(ValueFromIndex(index));
      const auto mid =
          value + (static_cast<uint64_t>(HighestEquivalentValue(static_cast<int64_t>(value))) - value + 1) / 2;
      if (h.moments_.count == 0) h.moments_.min = value;
      h.moments_.max = static_cast<uint64_t>(HighestEquivalentValue(static_cast<int64_t>(value)));
      h.moments_.count += c;
      h.moments_.sum += mid * c;
      h.moments_.sum_squares += static_cast<uint128_t>(mid) * mid * c;
    }
    ++index;
  }
  return h;
}

bool Histogram::operator==(const Histogram& other) const {
  // No counts array and one of zeros hold the same counts.
  const auto same_counts = [](const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
    if (a.empty()) return std::all_of(b.begin(), b.end(), [](uint64_t c) { return c == 0; });
    if (b.empty()) return std::all_of(a.begin(), a.end(), [](uint64_t c) { return c == 0; });
    return a == b;
  };
  return same_counts(counts_, other.counts_) && moments_.count == other.moments_.count &&
         moments_.sum == other.moments_.sum && moments_.sum_squares == other.moments_.sum_squares &&
         min() == other.min() && max() == other.max() && clamped_ == other.clamped_;
}

}  // namespace fairbench
