#include "controller/metrics/run_metrics.h"

#include <algorithm>
#include <array>

#include "common/mutex.h"
#include "controller/metrics/exposition.h"
#include "controller/metrics/latency_buckets.h"

namespace fairbench::metrics {
namespace {

const std::vector<std::string> kCellLabels = {"run", "target", "scenario", "connections", "rate"};

// A scenarios[].rates level as the `rate` label says it; "" (no label) for
// a cell of none.
std::string RateLabel(const std::optional<api::RateLevel>& level) {
  if (!level) return "";
  if (level->is_share()) return std::to_string(level->percent) + "%";
  return std::to_string(level->per_second) + "/s";
}

struct Percentile {
  const char* label;
  double p;
};
constexpr std::array<Percentile, 4> kPercentiles = {{{"50", 50}, {"90", 90}, {"99", 99}, {"99.9", 99.9}}};
constexpr std::array<const char*, 6> kStatusClasses = {"other", "1xx", "2xx", "3xx", "4xx", "5xx"};
constexpr std::array<api::RunPhase, 5> kPhases = {api::RunPhase::kQueued, api::RunPhase::kRunning,
                                                  api::RunPhase::kSucceeded, api::RunPhase::kFailed,
                                                  api::RunPhase::kCancelled};
constexpr std::array<api::CellState, 3> kCellStates = {api::CellState::kSucceeded, api::CellState::kFailed,
                                                       api::CellState::kSkipped};

std::vector<std::pair<const char*, uint64_t>> ErrorKinds(const ErrorCounts& e) {
  return {{"connect", e.connect},         {"read", e.read},     {"write", e.write},
          {"timeout", e.timeout},         {"status", e.status}, {"port_exhaustion", e.port_exhaustion},
          {"handshake", e.handshake},     {"goaway", e.goaway}, {"rst_stream", e.rst_stream},
          {"h2_protocol", e.h2_protocol}, {"script", e.script}};
}

// gRPC cells: calls by the grpc-status they ended with, spelt as gRPC names
// them, and the calls that broke gRPC's rules under "protocol_error".
// Nothing for HTTP cells.
std::vector<std::pair<std::string, uint64_t>> GrpcCodes(const GrpcCounts& g) {
  std::vector<std::pair<std::string, uint64_t>> out;
  if (g == GrpcCounts{}) return out;
  for (size_t code = 0; code < g.status.size(); ++code) {
    out.emplace_back(GrpcStatusName(static_cast<int>(code)), g.status[code]);
  }
  out.emplace_back("OTHER", g.status_other);
  out.emplace_back("protocol_error", g.ProtocolErrors());
  return out;
}

std::vector<std::string> With(std::vector<std::string> labels, std::string extra) {
  labels.push_back(std::move(extra));
  return labels;
}

int64_t Millis(api::Time t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

bool Terminal(api::RunPhase p) {
  return p == api::RunPhase::kSucceeded || p == api::RunPhase::kFailed || p == api::RunPhase::kCancelled;
}

bool HoldsSlot(api::Stage s) { return s != api::Stage::kWaitingForSlot; }

// Samples of one series family for remote write.
class Batch {
 public:
  Batch(const std::vector<std::string>& names, const std::vector<std::string>& values) {
    for (size_t i = 0; i < names.size(); ++i) {
      if (!values[i].empty()) base_.emplace_back(names[i], values[i]);  // empty: no label
    }
  }
  void Add(const std::string& name, double value, int64_t ts,
           std::initializer_list<std::pair<const char*, std::string>> extra = {}) {
    RemoteSample s;
    s.labels = base_;
    s.labels.emplace_back("__name__", name);
    for (const auto& [k, v] : extra) s.labels.emplace_back(k, v);
    s.value = value;
    s.timestamp_ms = ts;
    samples.push_back(std::move(s));
  }
  std::vector<RemoteSample> samples;

 private:
  RemoteLabels base_;
};

}  // namespace

RunMetrics::RunMetrics(MetricRegistry& registry, RunMetricsOptions options)
    : registry_(registry), options_(std::move(options)) {
  MetricRegistry& r = registry_;
  requests_ =
      r.AddCounter("fairbench_requests_total", "Complete responses received during the measurement.", kCellLabels);
  read_bytes_ = r.AddCounter("fairbench_read_bytes_total",
                             "Bytes read from the target during the measurement, headers included.", kCellLabels);
  errors_ = r.AddCounter("fairbench_errors_total",
                         "Errors during the measurement by kind: connect, read, write, timeout, status (responses "
                         "above 399), port_exhaustion, handshake (TLS).",
                         With(kCellLabels, "kind"));
  responses_ =
      r.AddCounter("fairbench_responses_total", "Responses during the measurement by status class (1xx to 5xx, other).",
                   With(kCellLabels, "status_class"));
  grpc_calls_ = r.AddCounter("fairbench_grpc_calls_total",
                             "gRPC targets: calls during the measurement by the grpc-status they ended with (OK, "
                             "UNAVAILABLE, ...), and protocol_error for calls answered in a way gRPC does not allow.",
                             With(kCellLabels, "code"));
  duration_ = r.AddHistogram("fairbench_request_duration_seconds",
                             "Request latency during the measurement, merged across the agents (first byte written to "
                             "last byte read; corrected for coordinated omission with a constant rate).",
                             kCellLabels, LatencyBoundsSeconds());
  agent_cpu_ = r.AddCounter("fairbench_agent_cpu_seconds_total",
                            "CPU time (user and system) the load agents used during the measurement.", kCellLabels);
  rps_ = r.AddGauge("fairbench_requests_per_second", "Responses per second in the newest one-second interval.",
                    kCellLabels);
  percentile_ = r.AddGauge("fairbench_request_duration_percentile_seconds",
                           "Latency percentiles (50, 90, 99, 99.9) of the newest one-second interval.",
                           With(kCellLabels, "percentile"));
  connections_open_ = r.AddGauge("fairbench_connections_open",
                                 "Connections established at the end of the newest interval.", kCellLabels);
  target_memory_ = r.AddGauge("fairbench_target_memory_bytes",
                              "Memory of the target as its platform measures it: the working set of its cgroup (as "
                              "Kubernetes counts it) when it has one, else the resident memory of its processes.",
                              {"run", "target"});
  target_cpu_ =
      r.AddCounter("fairbench_target_cpu_seconds_total",
                   "CPU time (user and system) of the target's processes since it was deployed.", {"run", "target"});
  target_memory_peak_ =
      r.AddGauge("fairbench_target_memory_peak_bytes",
                 "Highest fairbench_target_memory_bytes sampled during the cell's measurement.", kCellLabels);
  runs_by_phase_ = r.AddGauge("fairbench_runs", "Benchmark runs known to this controller, by phase.", {"phase"});
  queue_length_ = r.AddGauge("fairbench_queue_length", "Benchmark runs waiting for their turn.");
  slot_holder_family_ = r.AddGauge("fairbench_load_slot_holder",
                                   "1 for the run and target holding the load slot (one target under load at a time).",
                                   {"run", "target"});
  run_cells_ =
      r.AddGauge("fairbench_run_cells", "Cells (target, scenario, connections, repetition) in the run.", {"run"});
  cells_finished_ = r.AddCounter("fairbench_cells_finished_total", "Cells finished, by outcome.", {"run", "state"});
  agents_connected_ = r.AddGauge("fairbench_agents_connected", "Load agents connected to the controller.");
  agent_snapshots_ = r.AddCounter("fairbench_agent_snapshots_total", "Snapshots received from the load agents.");
  agent_missing_ = r.AddCounter("fairbench_agent_snapshots_missing_total",
                                "Snapshots the agents numbered but never delivered (sequence gaps).");
  agent_refused_ = r.AddCounter(
      "fairbench_agent_streams_refused_total",
      "Agent streams the hub refused or ended, by reason (token, full, pending, hello_timeout).", {"reason"});
  registry_.AddCollector([this] { Expire(); });
}

std::vector<std::string> RunMetrics::Labels(const CellKey& key) const {
  return {std::get<0>(key), std::get<1>(key), std::get<2>(key), std::to_string(std::get<3>(key)), std::get<4>(key)};
}

void RunMetrics::RunQueued(const std::string& run) {
  MutexLock lock(mu_);
  RunState& rs = runs_[run];
  rs.phase = api::RunPhase::kQueued;
  rs.expires.reset();
  PublishRuns();
}

void RunMetrics::OnPersist(const report::RunRecord& record) {
  MutexLock lock(mu_);
  const std::string& name = record.run.metadata.name;
  RunState& rs = runs_[name];
  rs.phase = record.run.status.phase.value_or(api::RunPhase::kRunning);
  if (Terminal(rs.phase)) {
    if (!rs.expires) rs.expires = options_.now() + options_.retention;
    if (slot_holder_ && slot_holder_->first == name) {
      registry_.Remove(slot_holder_family_, {slot_holder_->first, slot_holder_->second});
      slot_holder_.reset();
    }
  } else {
    rs.expires.reset();
  }
  registry_.Set(run_cells_, {name}, static_cast<double>(record.run.status.progress.total));
  for (api::CellState state : kCellStates) {
    const auto n = std::count_if(record.cells.begin(), record.cells.end(),
                                 [&](const report::CellRecord& c) { return c.result.state == state; });
    registry_.Set(cells_finished_, {name, std::string(api::ToString(state))}, static_cast<double>(n));
  }
  PublishRuns();
  ExpireLocked();
}

void RunMetrics::SetAgentHub(size_t connected, uint64_t snapshots, uint64_t missing) {
  registry_.Set(agents_connected_, {}, static_cast<double>(connected));
  registry_.Set(agent_snapshots_, {}, static_cast<double>(snapshots));
  registry_.Set(agent_missing_, {}, static_cast<double>(missing));
}

void RunMetrics::SetAgentRefusals(uint64_t token, uint64_t full, uint64_t pending, uint64_t hello_timeout) {
  registry_.Set(agent_refused_, {"token"}, static_cast<double>(token));
  registry_.Set(agent_refused_, {"full"}, static_cast<double>(full));
  registry_.Set(agent_refused_, {"pending"}, static_cast<double>(pending));
  registry_.Set(agent_refused_, {"hello_timeout"}, static_cast<double>(hello_timeout));
}

void RunMetrics::Expire() {
  MutexLock lock(mu_);
  ExpireLocked();
}

void RunMetrics::ExpireLocked() {
  const auto now = options_.now();
  bool changed = false;
  for (auto it = runs_.begin(); it != runs_.end();) {
    if (!it->second.expires || *it->second.expires > now) {
      ++it;
      continue;
    }
    const std::string name = it->first;
    registry_.RemoveWhere("run", name);
    std::erase_if(cells_, [&](const auto& kv) { return std::get<0>(kv.first) == name; });
    std::erase_if(usage_, [&](const auto& kv) { return kv.first.first == name; });
    it = runs_.erase(it);
    changed = true;
  }
  if (changed) PublishRuns();
}

void RunMetrics::PublishRuns() {
  size_t queued = 0;
  for (api::RunPhase phase : kPhases) {
    const auto n = std::count_if(runs_.begin(), runs_.end(), [&](const auto& kv) { return kv.second.phase == phase; });
    if (phase == api::RunPhase::kQueued) queued = static_cast<size_t>(n);
    registry_.Set(runs_by_phase_, {std::string(api::ToString(phase))}, static_cast<double>(n));
  }
  registry_.Set(queue_length_, {}, static_cast<double>(queued));
}

void RunMetrics::OnStage(const api::BenchmarkRun& run, const api::CurrentCell& current) {
  MutexLock lock(mu_);
  const std::string& name = run.metadata.name;
  RunState& rs = runs_[name];
  if (!Terminal(rs.phase)) rs.phase = api::RunPhase::kRunning;
  if (current.stage) {
    std::optional<std::pair<std::string, std::string>> holder;
    if (HoldsSlot(*current.stage)) holder = std::make_pair(name, current.target);
    if (holder != slot_holder_) {
      if (slot_holder_) registry_.Remove(slot_holder_family_, {slot_holder_->first, slot_holder_->second});
      slot_holder_ = holder;
    }
    if (slot_holder_) registry_.Set(slot_holder_family_, {slot_holder_->first, slot_holder_->second}, 1);
    if (*current.stage == api::Stage::kWarmingUp) {
      const CellKey key{name, current.target, current.scenario, current.connections, RateLabel(current.rate_level)};
      CellState& st = cells_[key];
      if (st.buckets.empty()) st.buckets.assign(LatencyBoundsSeconds().size() + 1, 0);
      PublishCell(key, st);
    }
  }
  PublishRuns();
}

void RunMetrics::OnCellDone(const report::RunRecord& record, const report::CellRecord& cell) {
  const api::CellResult& r = cell.result;
  if (r.state != api::CellState::kSucceeded || !r.memory_loaded) return;
  MutexLock lock(mu_);
  const CellKey key{record.run.metadata.name, r.target, r.scenario, r.connections, RateLabel(r.rate_level)};
  registry_.Set(target_memory_peak_, Labels(key), static_cast<double>(*r.memory_loaded));
}

void RunMetrics::PublishCell(const CellKey& key, const CellState& st) {
  const std::vector<std::string> l = Labels(key);
  const Counters& c = st.counters;
  registry_.Set(requests_, l, static_cast<double>(c.requests));
  registry_.Set(read_bytes_, l, static_cast<double>(c.bytes_read));
  for (const auto& [kind, n] : ErrorKinds(c.errors)) registry_.Set(errors_, With(l, kind), static_cast<double>(n));
  for (size_t i = 0; i < kStatusClasses.size(); ++i) {
    registry_.Set(responses_, With(l, kStatusClasses[i]), static_cast<double>(c.status_classes[i]));
  }
  for (const auto& [code, n] : GrpcCodes(c.grpc)) registry_.Set(grpc_calls_, With(l, code), static_cast<double>(n));
  std::vector<uint64_t> cumulative = Cumulative(st.buckets);
  cumulative.resize(LatencyBoundsSeconds().size());
  registry_.SetHistogram(duration_, l, std::move(cumulative), st.count, st.sum_seconds);
  registry_.Set(agent_cpu_, l, st.agent_cpu_seconds);
}

void RunMetrics::AppendCellCounters(const CellKey& key, const CellState& st, int64_t ts,
                                    std::vector<RemoteSample>& out) const {
  Batch b(kCellLabels, Labels(key));
  const Counters& c = st.counters;
  b.Add("fairbench_requests_total", static_cast<double>(c.requests), ts);
  b.Add("fairbench_read_bytes_total", static_cast<double>(c.bytes_read), ts);
  for (const auto& [kind, n] : ErrorKinds(c.errors))
    b.Add("fairbench_errors_total", static_cast<double>(n), ts, {{"kind", kind}});
  for (size_t i = 0; i < kStatusClasses.size(); ++i) {
    b.Add("fairbench_responses_total", static_cast<double>(c.status_classes[i]), ts,
          {{"status_class", kStatusClasses[i]}});
  }
  for (const auto& [code, n] : GrpcCodes(c.grpc))
    b.Add("fairbench_grpc_calls_total", static_cast<double>(n), ts, {{"code", code}});
  const std::vector<uint64_t> cumulative = Cumulative(st.buckets);
  const std::vector<double>& bounds = LatencyBoundsSeconds();
  for (size_t i = 0; i < bounds.size(); ++i) {
    b.Add("fairbench_request_duration_seconds_bucket", static_cast<double>(cumulative[i]), ts,
          {{"le", FormatValue(bounds[i])}});
  }
  b.Add("fairbench_request_duration_seconds_bucket", static_cast<double>(st.count), ts, {{"le", "+Inf"}});
  b.Add("fairbench_request_duration_seconds_sum", st.sum_seconds, ts);
  b.Add("fairbench_request_duration_seconds_count", static_cast<double>(st.count), ts);
  b.Add("fairbench_agent_cpu_seconds_total", st.agent_cpu_seconds, ts);
  out.insert(out.end(), std::make_move_iterator(b.samples.begin()), std::make_move_iterator(b.samples.end()));
}

void RunMetrics::OnInterval(const std::string& run, const api::CurrentCell& cell, const Snapshot& merged,
                            api::Time end) {
  MutexLock lock(mu_);
  const CellKey key{run, cell.target, cell.scenario, cell.connections, RateLabel(cell.rate_level)};
  CellState& st = cells_[key];
  if (st.buckets.empty()) st.buckets.assign(LatencyBoundsSeconds().size() + 1, 0);
  const std::vector<std::string> l = Labels(key);
  const IntervalStats& s = merged.stats;
  const int64_t span_ns = std::max<int64_t>(0, merged.end_ns - merged.start_ns);
  const int64_t end_ms = Millis(end);
  const int64_t start_ms = Millis(end - std::chrono::nanoseconds(span_ns));
  const double rps = span_ns > 0 ? static_cast<double>(s.counters.requests) / (static_cast<double>(span_ns) / 1e9) : 0;

  Batch remote(kCellLabels, l);
  registry_.Set(rps_, l, rps);
  registry_.Set(connections_open_, l, merged.connections_open);
  remote.Add("fairbench_requests_per_second", rps, end_ms);
  remote.Add("fairbench_connections_open", merged.connections_open, end_ms);
  if (s.latency.count() > 0) {
    for (const Percentile& p : kPercentiles) {
      const double v = static_cast<double>(s.latency.ValueAtPercentile(p.p)) / 1e6;
      registry_.Set(percentile_, With(l, p.label), v);
      remote.Add("fairbench_request_duration_percentile_seconds", v, end_ms, {{"percentile", p.label}});
    }
  }
  if (merged.phase == Phase::kMeasure) {
    if (options_.remote != nullptr && st.measuring_repetition != cell.repetition) {
      AppendCellCounters(key, st, start_ms, remote.samples);
    }
    st.measuring_repetition = cell.repetition;
    st.counters.Add(s.counters);
    const std::vector<uint64_t> counts = LatencyBucketCounts(s.latency);
    for (size_t i = 0; i < counts.size(); ++i) st.buckets[i] += counts[i];
    st.count += s.latency.count();
    st.sum_seconds += static_cast<double>(s.latency.moments().sum) / 1e6;
    st.agent_cpu_seconds += merged.cpu_seconds;
    PublishCell(key, st);
    if (options_.remote != nullptr) AppendCellCounters(key, st, end_ms, remote.samples);
  }
  if (options_.remote != nullptr) options_.remote->Enqueue(std::move(remote.samples));
}

void RunMetrics::OnTargetUsage(const std::string& run, const api::CurrentCell& cell,
                               const controller::TargetUsage& usage) {
  MutexLock lock(mu_);
  const std::vector<std::string> t = {run, cell.target};
  registry_.Set(target_memory_, t, static_cast<double>(usage.memory_bytes));
  registry_.Set(target_cpu_, t, usage.cpu_seconds);
  if (cell.stage == api::Stage::kMeasuring) {
    const std::vector<std::string> l =
        Labels({run, cell.target, cell.scenario, cell.connections, RateLabel(cell.rate_level)});
    double peak = 0;
    registry_.Get(target_memory_peak_, l, &peak);
    registry_.Set(target_memory_peak_, l, std::max(peak, static_cast<double>(usage.memory_bytes)));
  }
  if (options_.remote == nullptr) return;
  const api::Time now = options_.wall_now();
  UsageState& u = usage_[{run, cell.target}];
  if (u.last_sent && now - *u.last_sent < std::chrono::seconds(1)) return;
  u.last_sent = now;
  Batch b({"run", "target"}, t);
  b.Add("fairbench_target_memory_bytes", static_cast<double>(usage.memory_bytes), Millis(now));
  b.Add("fairbench_target_cpu_seconds_total", usage.cpu_seconds, Millis(now));
  options_.remote->Enqueue(std::move(b.samples));
}

}  // namespace fairbench::metrics
