// Self metrics: the series about the controller process itself, refreshed
// at every scrape —
//   process_cpu_seconds_total, process_resident_memory_bytes,
//   process_virtual_memory_bytes, process_open_fds, process_max_fds,
//   process_start_time_seconds (the names every Prometheus exporter uses for
//   its own process, so existing dashboards and alerts apply unchanged);
//   fairbench_build_info{version};
//   with remote write: fairbench_remote_write_samples_sent_total,
//   fairbench_remote_write_samples_dropped_total,
//   fairbench_remote_write_failed_requests_total,
//   fairbench_remote_write_queued_samples.
// The registry and the writer must outlive every Collect().
#pragma once

#include <string>

#include "controller/metrics/registry.h"
#include "controller/metrics/remote_writer.h"

namespace fairbench::metrics {

void RegisterSelfMetrics(MetricRegistry& registry, const std::string& version, const RemoteWriter* remote);

}  // namespace fairbench::metrics
