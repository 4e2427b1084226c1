// ProcessStats: this process's own CPU time, resident memory, open file
// descriptors and start time, read from /proc — the standard process_*
// metrics every Prometheus exporter serves.
//
// Read on demand (at scrape time), never on a hot path. Thread-safe (reads
// only). Linux only.
#pragma once

#include "common/status.h"

namespace fairbench::metrics {

struct ProcessStats {
  double cpu_seconds = 0;  // user + system
  double resident_memory_bytes = 0;
  double virtual_memory_bytes = 0;
  double open_fds = 0;
  double max_fds = 0;             // the soft RLIMIT_NOFILE
  double start_time_seconds = 0;  // since the Unix epoch
};

Result<ProcessStats> ReadProcessStats();

}  // namespace fairbench::metrics
