// Helpers for the engine's integration tests: run an Engine in-process to
// the end and add up everything it reported.
#pragma once

#include <string>
#include <vector>

#include "agent/engine.h"
#include "common/metrics.h"

namespace fairbench::agent {

struct EngineRun {
  std::vector<Snapshot> snapshots;
  Counters all;           // every snapshot, warmup and measure
  Counters measure;       // measure snapshots only
  Histogram latency;      // measure phase; with a constant rate, corrected for coordinated omission
  Histogram uncorrected;  // measure phase, constant rate only: from the actual send
  EndReport end;
};

// Options for host:port with one GET / (or `spec`), short by default.
EngineOptions TestOptions(const std::string& host, uint16_t port, RequestSpec spec = {}, bool keep_alive = true);

// Runs to completion; Stop() after `stop_after` if it is positive.
EngineRun RunEngine(EngineOptions options, std::chrono::milliseconds stop_after = std::chrono::milliseconds(0));

}  // namespace fairbench::agent
