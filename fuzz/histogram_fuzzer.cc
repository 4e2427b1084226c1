// The HdrHistogram V2 decoder: agents send their latency histograms in this
// encoding, so any bytes may arrive. Beyond not crashing, whatever decodes
// must survive a round trip: encode(decode(x)) decodes to the same counts,
// count, min, max and sums, and the count is the sum of the counts.
//
// Input: [mode][bytes]. Mode even: the bytes are decoded as they are (the
// compressed form agents send). Mode odd: the bytes are the inflated V2
// form (header and counts), deflated here first, so that mutations reach
// the counts instead of breaking the zlib stream.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <zlib.h>

#include "common/histogram.h"

namespace {

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "histogram_fuzzer: %s\n", what);
  std::abort();
}

}  // namespace

// The compressed envelope: cookie, length, zlib stream.
std::string Deflate(const uint8_t* data, size_t size) {
  uLongf bound = compressBound(static_cast<uLong>(size));
  std::string out(8 + bound, '\0');
  if (compress2(reinterpret_cast<Bytef*>(out.data() + 8), &bound, data, static_cast<uLong>(size), 1) != Z_OK) return {};
  const uint32_t header[2] = {0x1c849314, static_cast<uint32_t>(bound)};
  for (int i = 0; i < 8; ++i)
    out[static_cast<size_t>(i)] = static_cast<char>((header[i / 4] >> (24 - 8 * (i % 4))) & 0xff);
  out.resize(8 + bound);
  return out;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using fairbench::Histogram;
  if (size < 1) return 0;
  const std::string input =
      (data[0] & 1) ? Deflate(data + 1, size - 1) : std::string(reinterpret_cast<const char*>(data + 1), size - 1);
  auto h = Histogram::DecodeCompressed(input);
  if (!h.ok()) {
    if (h.status().message().empty()) Die("an error without a message");
    return 0;
  }
  uint64_t total = 0;
  for (int i = 0; i < Histogram::kCountsLen; ++i) total += h->CountAtIndex(i);
  if (total != h->count()) Die("count differs from the sum of the counts");
  if (h->count() > 0 && (h->min() > h->max() || h->ValueAtPercentile(100) > h->max())) Die("min/max out of order");
  const std::string encoded = h->EncodeCompressed();
  auto again = Histogram::DecodeCompressed(encoded);
  if (!again.ok()) {
    std::fprintf(stderr, "%s\n", again.status().message().c_str());
    Die("a decoded histogram's encoding does not decode");
  }
  if (!(*again == *h)) Die("the round trip changed the histogram");
  (void)h->Stdev();
  (void)h->WithinStdevPercent();
  return 0;
}
