// WriteRequest encoding: fairbench's samples as a Prometheus remote write
// 1.0 request body — the protobuf WriteRequest (proto/fairbench/prompb),
// compressed with snappy's block format.
//
// Samples of the same label set are gathered into one TimeSeries, their
// samples ordered by timestamp; labels are sorted by name as the
// specification requires. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace fairbench::metrics {

// Name/value pairs, "__name__" among them.
using RemoteLabels = std::vector<std::pair<std::string, std::string>>;

struct RemoteSample {
  RemoteLabels labels;
  double value = 0;
  int64_t timestamp_ms = 0;  // since the Unix epoch
};

// The serialised (uncompressed) WriteRequest.
std::string EncodeWriteRequest(const std::vector<RemoteSample>& samples);
std::string SnappyCompress(std::string_view bytes);
Result<std::string> SnappyUncompress(std::string_view bytes);

// The inverse of EncodeWriteRequest, for tests and diagnostics: one
// RemoteSample per sample, in the request's order.
Result<std::vector<RemoteSample>> DecodeWriteRequest(std::string_view bytes);

}  // namespace fairbench::metrics
