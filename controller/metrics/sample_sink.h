// SampleSink: where timestamped samples for remote write go. RemoteWriter
// is the real one; tests collect batches in memory. Enqueue must never
// block: it is called from the threads that deliver the agents' snapshots.
#pragma once

#include <vector>

#include "controller/metrics/write_request.h"

namespace fairbench::metrics {

class SampleSink {
 public:
  virtual ~SampleSink() = default;
  // False when the batch was dropped (and counted by the sink).
  virtual bool Enqueue(std::vector<RemoteSample> batch) = 0;
};

}  // namespace fairbench::metrics
