#include "controller/orchestrator/cell_jobs.h"

#include <algorithm>
#include <cmath>

#include "api/quantity.h"
#include "common/base64.h"
#include "common/load_rules.h"
#include "controller/report/cell_checks.h"

namespace fairbench::controller {
namespace {

api::Latency LatencyOf(const Histogram& h) {
  api::Latency l;
  l.mean = h.Mean();
  l.stdev = h.Stdev();
  l.max = static_cast<double>(h.max());
  l.p50 = static_cast<double>(h.ValueAtPercentile(50));
  l.p75 = static_cast<double>(h.ValueAtPercentile(75));
  l.p90 = static_cast<double>(h.ValueAtPercentile(90));
  l.p99 = static_cast<double>(h.ValueAtPercentile(99));
  l.p999 = static_cast<double>(h.ValueAtPercentile(99.9));
  l.p9999 = static_cast<double>(h.ValueAtPercentile(99.99));
  return l;
}

}  // namespace

wire::JobGrpc GrpcJob(const api::GrpcCallSpec& call) {
  wire::JobGrpc g;
  g.method = call.method;
  g.message = call.request_message;
  for (const auto& [key, value] : call.metadata) {
    std::string lower = key;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    g.metadata.emplace_back(std::move(lower), value);
  }
  g.deadline = call.deadline.value_or(std::chrono::nanoseconds(0));
  g.kind = call.kind;
  return g;
}

uint64_t AgentVarySeed(int64_t seed, const std::string& cell_key, int index) {
  // SplitMix64's finaliser over the seed, an FNV-1a hash of the key and the index.
  auto mix = [](uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : cell_key) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ull;
  return mix(mix(static_cast<uint64_t>(seed)) ^ mix(h + kGamma) ^ mix(static_cast<uint64_t>(index) + 3 * kGamma));
}

std::chrono::nanoseconds StartLead(int64_t connections, int agents, int threads) {
  return std::chrono::milliseconds(100) + std::chrono::microseconds(25 * connections / std::max(1, agents * threads));
}

std::chrono::nanoseconds AnswerTimeout(const api::ScenarioSettings& settings) {
  return load_rules::AnswerTimeout(
      settings.timeout, settings.grpc ? settings.grpc->deadline.value_or(api::Duration(0)) : api::Duration(0));
}

std::vector<wire::JobSpec> BuildCellJobs(const api::ScenarioSettings& settings, const api::Cell& cell,
                                         const TargetPlacement& target, int agents,
                                         std::chrono::system_clock::time_point start, const std::string& job_id) {
  agents = std::max(1, agents);
  const std::vector<int64_t> shares = api::SplitEvenly(cell.connections, agents);
  std::vector<wire::JobSpec> jobs;
  int64_t offset = 0;
  for (int i = 0; i < agents; ++i) {
    wire::JobSpec job;
    job.job_id = job_id;
    job.host = target.host;
    job.port = target.port;
    job.scheme = target.scheme;
    job.protocol = WireProtocol(target.protocol, job.scheme);
    job.streams = static_cast<uint32_t>(std::max(1, settings.streams));
    if (settings.grpc) job.grpc = GrpcJob(*settings.grpc);
    job.idle_wait = settings.idle_wait;
    for (const api::WeightedRequest& w : settings.requests) {
      wire::JobRequest r;
      r.method = w.request.method;
      r.target = w.request.path;
      for (const auto& [k, v] : w.request.headers) r.headers.emplace_back(k, v);
      r.body = w.request.EffectiveBody();
      r.weight = static_cast<uint32_t>(w.weight);
      job.requests.push_back(std::move(r));
    }
    // A script goes to every agent whole: each runs setup() for its own
    // threads and its own done().
    if (settings.script)
      job.script = wire::JobScript{settings.script->name, settings.script->text, settings.script->args};
    if (settings.vary) {
      wire::JobVary v;
      v.seed = AgentVarySeed(settings.vary->seed.value_or(api::kDefaultVarySeed), cell.Key(), i);
      v.verify_every = static_cast<uint32_t>(std::max(1, settings.vary->verify_every));
      if (settings.expect.json) {
        v.expect = settings.expect.json->dump();
        v.expect_json = true;
      } else {
        v.expect = settings.expect.body.value_or("");
      }
      job.vary = std::move(v);
    }
    const int64_t conns = shares[static_cast<size_t>(i)];
    job.connections = static_cast<uint32_t>(conns);
    job.threads = static_cast<uint32_t>(std::max<int64_t>(1, std::min<int64_t>(settings.threads, conns)));
    job.warmup = settings.warmup;
    job.duration = settings.duration;
    job.timeout = AnswerTimeout(settings);
    job.interval = std::chrono::seconds(1);
    job.keep_alive = settings.keep_alive;
    job.pipeline = static_cast<uint32_t>(settings.pipeline);
    if (settings.rate > 0) {
      job.rate =
          static_cast<double>(settings.rate) * static_cast<double>(conns) / static_cast<double>(cell.connections);
    }
    job.start = start;
    job.connection_offset = static_cast<uint32_t>(offset);
    job.total_connections = static_cast<uint32_t>(cell.connections);
    job.send_offset = wire::SendOffset(i, agents, job.interval);
    offset += conns;
    jobs.push_back(std::move(job));
  }
  return jobs;
}

Result<int64_t> OfferedRate(const api::BenchmarkRunStatus& status, const api::Cell& cell) {
  if (!cell.rate) return Status::InvalidArgument("cell " + cell.Key() + " has no rate level");
  if (!cell.rate->is_share()) return cell.rate->per_second;
  const api::CellResult* capacity = api::CapacityResult(status, cell);
  const std::string what = api::FormatRateLevel(*cell.rate) + " of capacity";
  if (capacity == nullptr || capacity->state != api::CellState::kSucceeded) {
    return Status::FailedPrecondition(
        what + ": the closed-loop cell that measures the capacity at " + std::to_string(cell.connections) +
        " connections " + (capacity == nullptr ? "has no result" : "did not succeed") +
        (capacity != nullptr && !capacity->message.empty() ? " (" + capacity->message + ")" : ""));
  }
  if (capacity->requests_per_second <= 0) {
    return Status::FailedPrecondition(what + ": the closed-loop cell at " + std::to_string(cell.connections) +
                                      " connections answered no requests");
  }
  const double rate = std::round(capacity->requests_per_second * cell.rate->percent / 100.0);
  return std::max<int64_t>(1, static_cast<int64_t>(rate));
}

report::CellRecord NotRunRecord(const api::Cell& cell, api::CellState state, std::optional<api::CellReason> reason,
                                const std::string& message) {
  report::CellRecord rec;
  rec.result.target = cell.target;
  rec.result.scenario = cell.scenario;
  rec.result.connections = cell.connections;
  rec.result.rate_level = cell.rate;
  rec.result.repetition = cell.repetition;
  rec.result.state = state;
  rec.result.reason = reason;
  rec.result.message = message;
  return rec;
}

namespace {

void PutErrors(const Counters& c, api::ErrorCounts& errors) {
  errors.connect = c.errors.connect;
  errors.read = c.errors.read;
  errors.write = c.errors.write;
  errors.timeout = c.errors.timeout;
  errors.status = c.errors.status;
  errors.port_exhaustion = c.errors.port_exhaustion;
  errors.handshake = c.errors.handshake;
  errors.goaway = c.errors.goaway;
  errors.rst_stream = c.errors.rst_stream;
  errors.h2_protocol = c.errors.h2_protocol;
  errors.script = c.errors.script;
}

// Calls are the cell's requests; one that ended other than as expected is a
// status error, one gRPC does not allow a protocol error.
void PutGrpcCalls(const api::ScenarioSettings& settings, const IntervalStats& measured, api::CellResult& r) {
  const GrpcCounts& g = measured.counters.grpc;
  api::GrpcCalls calls;
  for (size_t code = 0; code < g.status.size(); ++code) {
    if (g.status[code] > 0)
      calls.statuses.push_back(api::GrpcStatusCount{static_cast<api::GrpcCode>(code), g.status[code]});
  }
  calls.status_other = g.status_other;
  calls.no_status = g.no_status;
  calls.bad_status = g.bad_status;
  calls.truncated = g.truncated;
  calls.bad_flag = g.bad_flag;
  calls.too_large = g.too_large;
  calls.unary_messages = g.unary_messages;
  calls.messages = g.messages;
  if (measured.first_message.count() > 0 && settings.grpc->kind != api::GrpcCallSpec::Kind::kUnary) {
    calls.first_message_latency = LatencyOf(measured.first_message);
    calls.last_message_latency = LatencyOf(measured.last_message);
  }
  const auto expected = static_cast<size_t>(settings.expect.grpc_status.value_or(api::GrpcCode::kOk));
  r.errors.status += g.Calls() - g.status[expected];
  r.errors.grpc_protocol = g.ProtocolErrors();
  r.grpc = std::move(calls);
}

api::TlsHandshakes TlsOf(const Counters& c, double secs) {
  api::TlsHandshakes tls;
  tls.count = c.tls_handshakes;
  tls.resumed = c.tls_resumed;
  tls.mean =
      c.tls_handshakes ? static_cast<double>(c.tls_handshake_time_us) / static_cast<double>(c.tls_handshakes) : 0.0;
  tls.per_second = static_cast<double>(c.tls_handshakes) / secs;
  return tls;
}

// Scenarios with vary: what the agents found in the answers they sampled,
// beside what the check before the load found in one answer.
void PutAnswerChecks(const Counters& c, const std::optional<api::AnswerChecks>& before, api::CellResult& r) {
  api::AnswerChecks a = before.value_or(api::AnswerChecks{});
  a.verified = c.answers.verified;
  a.failed = c.answers.failed;
  a.without_date = c.answers.without_date;
  a.date_frozen = c.answers.date_frozen > 0;
  if (a.failed > 0) {
    // A server that caches or makes up its answers is not measured
    // doing the work: its numbers are kept, but the cell is not a result.
    r.state = api::CellState::kFailed;
    r.reason = api::CellReason::kAnswersNotVerified;
    r.message = std::to_string(a.failed) + " of " + std::to_string(a.verified) +
                " sampled answers differed from the expectation with their own request's number for {n}: "
                "the server's answers are cached or made up";
  }
  r.answers = a;
}

// What the wrk-style text of a cell says about how it was run.
SummaryContext SummaryOf(const api::ScenarioSettings& settings, const api::Cell& cell, const TargetPlacement& target,
                         int agents) {
  SummaryContext sc;
  const std::string path = settings.requests.empty() ? "/" : settings.requests.front().request.path;
  sc.url = std::string(ToString(target.scheme)) + "://" + target.host + ":" + std::to_string(target.port) + path;
  sc.threads = static_cast<uint32_t>(std::min<int64_t>(settings.threads, cell.connections) * agents);
  sc.connections = static_cast<uint32_t>(cell.connections);
  sc.duration_s = std::chrono::duration<double>(settings.duration).count();
  sc.rate = static_cast<double>(settings.rate);
  sc.keep_alive = settings.keep_alive;
  sc.pipeline = static_cast<uint32_t>(settings.pipeline);
  sc.protocol = std::string(ToString(WireProtocol(target.protocol, target.scheme)));
  if (IsHttp2(target.protocol)) sc.streams = static_cast<uint32_t>(settings.streams);
  if (settings.grpc) {
    const wire::JobGrpc call = GrpcJob(*settings.grpc);
    sc.url = std::string(ToString(target.scheme)) + "://" + target.host + ":" + std::to_string(target.port);
    sc.grpc_method = "/" + call.method;
    sc.grpc_kind = std::string(ToString(call.kind));
  }
  sc.latency_distribution = true;
  return sc;
}

}  // namespace

report::CellRecord CellRecordFrom(const api::ScenarioSettings& settings, const api::Cell& cell,
                                  const TargetPlacement& target, const CellMeasurement& m) {
  EndReport end = m.end;
  end.connections_requested = static_cast<uint32_t>(cell.connections);
  const IntervalStats& measured = m.totals.measure();
  const double secs = end.measure_seconds > 0 ? end.measure_seconds : 1e-9;
  report::CellRecord rec = NotRunRecord(cell, api::CellState::kSucceeded, std::nullopt, "");
  for (const auto& [agent, text] : m.script_outputs) rec.script_output.push_back(report::ScriptOutput{agent, text});
  api::CellResult& r = rec.result;
  const Counters& c = measured.counters;
  r.requests = c.requests;
  r.bytes = c.bytes_read;
  r.requests_per_second = static_cast<double>(c.requests) / secs;
  r.transfer_per_second = static_cast<double>(c.bytes_read) / secs;
  r.bytes_per_response = c.requests ? static_cast<double>(c.bytes_read) / static_cast<double>(c.requests) : 0.0;
  r.latency = LatencyOf(measured.latency);
  PutErrors(c, r.errors);
  if (settings.grpc) PutGrpcCalls(settings, measured, r);
  if (target.scheme == Scheme::kHttps) r.tls = TlsOf(c, secs);
  if (settings.vary) PutAnswerChecks(c, m.answer_headers, r);
  r.status_classes.c1xx = c.status_classes[1];
  r.status_classes.c2xx = c.status_classes[2];
  r.status_classes.c3xx = c.status_classes[3];
  r.status_classes.c4xx = c.status_classes[4];
  r.status_classes.c5xx = c.status_classes[5];
  r.memory_idle = m.memory_idle;
  if (m.memory_max > 0) r.memory_loaded = m.memory_max;
  if (m.usage_first && m.usage_last) r.target_cpu = CoresBetween(*m.usage_first, *m.usage_last);
  r.agent_cpu = m.totals.agent_cpu_seconds() / secs;
  if (settings.rate > 0) r.offered_rate = static_cast<double>(settings.rate);
  r.start_time = m.measure_start;
  r.end_time = m.measure_start + std::chrono::nanoseconds(static_cast<int64_t>(secs * 1e9));
  rec.timeline = m.totals.timeline();
  rec.latency_histogram = Base64Encode(measured.latency.EncodeCompressed());
  if (settings.rate > 0) rec.uncorrected_histogram = Base64Encode(measured.uncorrected.EncodeCompressed());
  rec.latency_corrected = settings.rate > 0;
  rec.wrk_text = RenderText(SummaryOf(settings, cell, target, m.agents), m.totals, end);
  rec.agents = static_cast<uint32_t>(m.agents);
  rec.connections_peak = end.connections_peak;
  rec.drained = end.drained;
  rec.abandoned = end.abandoned;
  rec.measure_seconds = end.measure_seconds;
  rec.idle = end.idle;
  if (!m.consistent || m.missing_snapshots > 0) rec.flags.push_back(report::CellFlag::kSnapshotGap);
  if (m.usage_first) {
    rec.usage_samples = static_cast<uint32_t>(m.usage_times.size());
    rec.usage_span_seconds = m.usage_times.empty()
                                 ? 0.0
                                 : std::chrono::duration<double>(m.usage_times.back() - m.usage_times.front()).count();
    if (rec.usage_samples < 2 || rec.usage_span_seconds < kMinUsageCoverage * secs) {
      rec.flags.push_back(report::CellFlag::kSparseUsage);
    }
  }
  report::CheckCell(settings, target.protocol, rec);
  return rec;
}

}  // namespace fairbench::controller
