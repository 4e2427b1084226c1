#include "controller/bootstrap/controller_metrics.h"

#include "controller/metrics/exposition.h"
#include "controller/metrics/self_metrics.h"

namespace fairbench::controller {

Result<std::unique_ptr<ControllerMetrics>> ControllerMetrics::Start(const ControllerMetricsOptions& options,
                                                                    AgentHub& hub) {
  std::unique_ptr<ControllerMetrics> m(new ControllerMetrics());
  if (!options.remote_write_url.empty()) {
    metrics::RemoteWriterOptions ro;
    ro.url = options.remote_write_url;
    ro.user_agent = "fairbench/" + options.version;
    auto writer = metrics::RemoteWriter::Start(ro);
    if (!writer.ok()) return Status::InvalidArgument("--remote-write-url: " + writer.status().message());
    m->remote_ = std::move(*writer);
  }
  metrics::RunMetricsOptions ro;
  ro.retention = options.retention;
  ro.remote = m->remote_.get();
  m->runs_ = std::make_unique<metrics::RunMetrics>(m->registry_, ro);
  metrics::RegisterSelfMetrics(m->registry_, options.version, m->remote_.get());
  metrics::RunMetrics* runs = m->runs_.get();
  m->registry_.AddCollector([runs, &hub] {
    const HubStats st = hub.stats();
    runs->SetAgentHub(hub.Agents().size(), st.snapshots, st.missing);
    runs->SetAgentRefusals(st.refused, st.refused_full, st.refused_pending, st.hello_timeouts);
  });
  if (!options.address.empty()) {
    metrics::MetricsServerOptions so;
    so.address = options.address;
    metrics::MetricRegistry* registry = &m->registry_;
    so.render = [registry] { return metrics::RenderText(registry->Collect()); };
    so.ready = options.ready;
    auto server = metrics::MetricsServer::Start(so);
    if (!server.ok()) return Status::InvalidArgument("--metrics-address: " + server.status().message());
    m->server_ = std::move(*server);
  }
  return m;
}

ControllerMetrics::~ControllerMetrics() { Stop(std::chrono::milliseconds(0)); }

std::string ControllerMetrics::url() const {
  if (server_ == nullptr) return "";
  const std::string& h = server_->host();
  const std::string host = h.find(':') != std::string::npos ? "[" + h + "]" : h;
  return "http://" + host + ":" + std::to_string(server_->port()) + "/metrics";
}

std::optional<metrics::RemoteWriterStats> ControllerMetrics::Stop(std::chrono::milliseconds flush) {
  std::optional<metrics::RemoteWriterStats> pushed;
  if (remote_ != nullptr) {
    remote_->Stop(flush);
    pushed = remote_->stats();
  }
  if (server_ != nullptr) server_->Stop();
  return pushed;
}

}  // namespace fairbench::controller
