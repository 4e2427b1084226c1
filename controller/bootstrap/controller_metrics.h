// ControllerMetrics: the Prometheus side as both controllers run it —
// `fairbench run` and fairbench-controller. One registry holding the run
// series (RunMetrics, an observer of the orchestrator), the process's own
// series and the agent hub's figures (read at each scrape); served on
// /metrics, /healthz and /readyz when an address is given, and pushed with
// remote write when a URL is. Start() checks both before anything runs:
// its errors name the flag (--metrics-address, --remote-write-url).
//
// Owns the registry, the server and the writer; the hub is not owned and
// must outlive it. Thread-safe (as RunMetrics and the server are).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "controller/hub/agent_hub.h"
#include "controller/metrics/metrics_server.h"
#include "controller/metrics/registry.h"
#include "controller/metrics/remote_writer.h"
#include "controller/metrics/run_metrics.h"

namespace fairbench::controller {

struct ControllerMetricsOptions {
  std::string address;           // HOST:PORT of /metrics (port 0: a free one); empty: not served
  std::string remote_write_url;  // where every interval is pushed; empty: nowhere
  // How long a finished run's series stay.
  std::chrono::milliseconds retention{std::chrono::minutes(10)};
  std::function<bool()> ready;  // /readyz; null: always ready
  std::string version;          // fairbench_build_info's, and remote write's User-Agent
};

class ControllerMetrics {
 public:
  static Result<std::unique_ptr<ControllerMetrics>> Start(const ControllerMetricsOptions& options, AgentHub& hub);
  ~ControllerMetrics();  // Stop(0)
  ControllerMetrics(const ControllerMetrics&) = delete;
  ControllerMetrics& operator=(const ControllerMetrics&) = delete;

  // The run series: give it to the orchestrator as an observer.
  metrics::RunMetrics& runs() { return *runs_; }
  // Served or pushed: whether anyone sees the series at all.
  bool enabled() const { return server_ != nullptr || remote_ != nullptr; }
  // "http://127.0.0.1:9464/metrics" ([v6] in brackets); "" when not served.
  std::string url() const;
  // Stops pushing, giving what is queued up to `flush`, then serving.
  // What remote write did, when there was one. Idempotent.
  std::optional<metrics::RemoteWriterStats> Stop(std::chrono::milliseconds flush);

 private:
  ControllerMetrics() = default;
  metrics::MetricRegistry registry_;
  std::unique_ptr<metrics::RemoteWriter> remote_;
  std::unique_ptr<metrics::RunMetrics> runs_;
  std::unique_ptr<metrics::MetricsServer> server_;
};

}  // namespace fairbench::controller
