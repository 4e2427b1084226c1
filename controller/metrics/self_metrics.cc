#include "controller/metrics/self_metrics.h"

#include "controller/metrics/process_stats.h"

namespace fairbench::metrics {

void RegisterSelfMetrics(MetricRegistry& registry, const std::string& version, const RemoteWriter* remote) {
  MetricRegistry& r = registry;
  const auto cpu = r.AddCounter("process_cpu_seconds_total", "CPU time (user and system) of the controller process.");
  const auto rss = r.AddGauge("process_resident_memory_bytes", "Resident memory of the controller process.");
  const auto vsz = r.AddGauge("process_virtual_memory_bytes", "Virtual memory of the controller process.");
  const auto fds = r.AddGauge("process_open_fds", "Open file descriptors of the controller process.");
  const auto max_fds = r.AddGauge("process_max_fds", "The controller's limit on open file descriptors.");
  const auto start = r.AddGauge("process_start_time_seconds", "Start time of the controller since the Unix epoch.");
  const auto info = r.AddGauge("fairbench_build_info", "1, labelled with the controller's version.", {"version"});
  r.Set(info, {version}, 1);
  r.AddCollector([&r, cpu, rss, vsz, fds, max_fds, start] {
    auto s = ReadProcessStats();
    if (!s.ok()) return;
    r.Set(cpu, {}, s->cpu_seconds);
    r.Set(rss, {}, s->resident_memory_bytes);
    r.Set(vsz, {}, s->virtual_memory_bytes);
    r.Set(fds, {}, s->open_fds);
    r.Set(max_fds, {}, s->max_fds);
    r.Set(start, {}, s->start_time_seconds);
  });
  if (remote == nullptr) return;
  const auto sent =
      r.AddCounter("fairbench_remote_write_samples_sent_total", "Samples the remote write endpoint accepted.");
  const auto dropped =
      r.AddCounter("fairbench_remote_write_samples_dropped_total",
                   "Samples given up: the queue was full, the endpoint refused them, or retries ran out.");
  const auto failed = r.AddCounter("fairbench_remote_write_failed_requests_total",
                                   "Remote write requests that failed (each retry counts).");
  const auto queued = r.AddGauge("fairbench_remote_write_queued_samples", "Samples waiting to be sent.");
  r.AddCollector([&r, remote, sent, dropped, failed, queued] {
    const RemoteWriterStats s = remote->stats();
    r.Set(sent, {}, static_cast<double>(s.samples_sent));
    r.Set(dropped, {}, static_cast<double>(s.samples_dropped));
    r.Set(failed, {}, static_cast<double>(s.failed_requests));
    r.Set(queued, {}, static_cast<double>(s.samples_queued));
  });
}

}  // namespace fairbench::metrics
