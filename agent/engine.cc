#include "agent/engine.h"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <ctime>

#include "agent/script.h"
#include "agent/worker.h"
#include "common/load_rules.h"
#include "common/mutex.h"

namespace fairbench::agent {
namespace {

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

double ProcessCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

}  // namespace

const char* HttpProtocolName(HttpProtocol p) {
  switch (p) {
    case HttpProtocol::kHttp1: return "http1";
    case HttpProtocol::kH2c: return "h2c";
    case HttpProtocol::kH2: return "h2";
  }
  return "unknown";
}

Status BuildH2Requests(EngineOptions& o, const std::vector<RequestSpec>& specs, const std::string& authority) {
  o.h2_requests.clear();
  const std::string scheme = o.protocol == HttpProtocol::kH2 ? "https" : "http";
  for (const RequestSpec& spec : specs) {
    auto r = H2Request::Build(spec, scheme, authority);
    if (!r.ok()) return r.status();
    o.h2_requests.push_back(std::shared_ptr<const H2Request>(std::move(*r)));
  }
  return Status::Ok();
}

Status ValidateOptions(const EngineOptions& o) {
  if (o.addresses.empty()) return Status::InvalidArgument("no target address");
  if (o.requests.empty() && o.script == nullptr) return Status::InvalidArgument("no request to send");
  if (o.script != nullptr) {
    if (o.script->threads() != o.threads)
      return Status::InvalidArgument("the script has a state per thread: set up for " +
                                     std::to_string(o.script->threads()) + " threads, not " +
                                     std::to_string(o.threads));
    if (o.script->has_delay() && o.rate > 0) {
      return Status::InvalidArgument(
          "a script's delay() cannot be combined with a constant rate: each would set the pace");
    }
    if (o.script->dynamic() && o.pipeline > 1) {
      return Status::InvalidArgument(
          "pipelining cannot be combined with a script's request(): it returns the requests to pipeline");
    }
  }
  if (o.threads == 0) return Status::InvalidArgument("threads must be ≥ 1");
  const uint64_t max_threads = load_rules::RangeOf(load_rules::Count::kThreads).max;
  if (o.threads > max_threads) return Status::InvalidArgument("threads must be ≤ " + std::to_string(max_threads));
  if (o.connections < o.threads) {
    return Status::InvalidArgument(std::to_string(o.connections) + " connections cannot be spread over " +
                                   std::to_string(o.threads) + " threads (connections must be ≥ threads)");
  }
  if (o.duration.count() <= 0) return Status::InvalidArgument("duration must be > 0");
  if (o.warmup.count() < 0) return Status::InvalidArgument("warmup must be ≥ 0");
  if (o.timeout.count() <= 0) return Status::InvalidArgument("timeout must be > 0");
  if (o.interval.count() < load_rules::kMinIntervalNs) return Status::InvalidArgument("interval must be ≥ 10ms");
  if (!load_rules::InRange(load_rules::Count::kPipeline, o.pipeline)) {
    return Status::InvalidArgument("pipeline depth must be between 1 and " +
                                   std::to_string(load_rules::RangeOf(load_rules::Count::kPipeline).max));
  }
  if (o.rate < 0 || !std::isfinite(o.rate)) return Status::InvalidArgument("rate must be ≥ 0");
  if (o.rate > 0 && o.pipeline > 1)
    return Status::InvalidArgument("a constant rate cannot be combined with pipelining");
  if (o.rate > 0 && o.rate < load_rules::kMinRate)
    return Status::InvalidArgument("rate must be at least 0.001 requests/s");
  if (o.protocol != HttpProtocol::kHttp1) {
    const std::string p = HttpProtocolName(o.protocol);
    if (o.protocol == HttpProtocol::kH2 && !o.tls.enabled)
      return Status::InvalidArgument("h2 needs TLS (an https target)");
    if (o.protocol == HttpProtocol::kH2c && o.tls.enabled)
      return Status::InvalidArgument("h2c is HTTP/2 without TLS (an http target)");
    if (o.pipeline > 1)
      return Status::InvalidArgument("pipelining cannot be combined with HTTP/2 (" + p + "): use streams");
    if (!o.keep_alive) return Status::InvalidArgument("short connections cannot be combined with HTTP/2 (" + p + ")");
    if (o.script == nullptr && o.h2_requests.size() != o.requests.size())
      return Status::InvalidArgument("HTTP/2 requests not built");
    if (Status s = ValidateH2Options(o.h2); !s.ok()) return s;
  }
  if (o.vary != nullptr) {
    if (o.script != nullptr)
      return Status::InvalidArgument("vary cannot be combined with a script: the script makes the requests");
    if (o.requests.size() != 1) return Status::InvalidArgument("vary needs exactly one request, not a mix");
    if (o.protocol != HttpProtocol::kHttp1) return Status::InvalidArgument("vary is for HTTP/1.1 only");
    if (o.pipeline > 1) return Status::InvalidArgument("vary cannot be combined with pipelining");
    if (o.vary->verify_every == 0) return Status::InvalidArgument("vary's verify_every must be ≥ 1");
  }
  for (const BuiltRequest& r : o.requests) {
    if (r.weight == 0) return Status::InvalidArgument("request '" + r.name + "' has weight 0");
    if (r.bytes.size() > (1u << 30)) return Status::InvalidArgument("request '" + r.name + "' is larger than 1 GiB");
  }
  return Status::Ok();
}

Engine::Engine(EngineOptions options) : options_(std::move(options)) {}

Engine::~Engine() {
  if (started_ && !finished_) {
    Stop();
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
}

Status Engine::Start() {
  if (Status s = ValidateOptions(options_); !s.ok()) return s;
  if (options_.protocol == HttpProtocol::kH2) options_.tls.alpn_h2 = true;
  if (options_.tls.enabled && options_.tls_context == nullptr) {
    auto ctx = TlsContext::Create(options_.tls);
    if (!ctx.ok()) return ctx.status();
    options_.tls_context = std::move(*ctx);
  }
  // Boundaries: every interval through the warmup, then through the measure
  // phase; the last interval of each phase may be shorter.
  const int64_t step = options_.interval.count();
  const int64_t warmup = options_.warmup.count();
  const int64_t end = warmup + options_.duration.count();
  std::vector<Boundary>& boundaries = state_.boundaries;
  for (int64_t t = step; t < warmup; t += step) boundaries.push_back({t, Phase::kWarmup, false});
  if (warmup > 0) boundaries.push_back({warmup, Phase::kWarmup, false});
  for (int64_t t = warmup + step; t < end; t += step) boundaries.push_back({t, Phase::kMeasure, false});
  boundaries.push_back({end, Phase::kMeasure, true});

  const int64_t now = MonotonicNs();
  if (options_.start_at) {
    const auto ahead =
        std::chrono::duration_cast<std::chrono::nanoseconds>(*options_.start_at - std::chrono::system_clock::now());
    state_.load_start_ns = now + std::max<int64_t>(1, ahead.count());
  } else {
    state_.connect_deadline_ns = now + options_.timeout.count();
  }

  const uint32_t per = options_.connections / options_.threads;
  const uint32_t extra = options_.connections % options_.threads;
  uint32_t first = 0;
  for (uint32_t i = 0; i < options_.threads; ++i) {
    const uint32_t n = per + (i < extra ? 1 : 0);
    auto w = std::make_unique<Worker>(static_cast<LoadCoordinator&>(*this), options_, i, first, n);
    if (Status s = w->Init(); !s.ok()) return s;
    workers_.push_back(std::move(w));
    first += n;
  }
  {
    MutexLock lock(mu_);  // no worker runs yet: for the analysis
    final_index_.assign(workers_.size(), kRunning);
  }
  last_cpu_ = ProcessCpuSeconds();
  started_ = true;
  for (auto& w : workers_) threads_.emplace_back([worker = w.get()] { worker->Run(); });
  return Status::Ok();
}

void Engine::Deliver(size_t boundary_index, uint32_t worker, IntervalStats&& stats, uint32_t open_connections,
                     int64_t end_ns, bool final) {
  {
    MutexLock lock(mu_);
    Pending& p = pending_[boundary_index];
    p.parts.push_back(std::move(stats));
    p.open += open_connections;
    p.end_ns = std::max(p.end_ns, end_ns);
    if (final) final_index_[worker] = boundary_index;
  }
  cv_.notify_all();
}

std::optional<Snapshot> Engine::NextSnapshot() {
  if (!started_) return std::nullopt;
  const size_t k = next_boundary_;
  Pending part;
  {
    MutexLock lock(mu_);
    for (;;) {
      bool all_final = true;
      size_t last = 0;
      uint32_t expected = 0;
      for (size_t f : final_index_) {
        if (f == kRunning) {
          all_final = false;
          ++expected;
          continue;
        }
        last = std::max(last, f);
        if (f >= k) ++expected;
      }
      if (all_final && k > last) return std::nullopt;
      const auto it = pending_.find(k);
      if (it != pending_.end() && it->second.parts.size() == expected) {
        part = std::move(it->second);
        pending_.erase(it);
        break;
      }
      cv_.wait(lock);
    }
  }
  Snapshot s;
  s.sequence = ++sequence_;
  s.phase = state_.boundaries[k].phase;
  s.start_ns = last_end_ns_;
  s.end_ns = std::max(part.end_ns, last_end_ns_);
  s.connections_open = part.open;
  for (IntervalStats& p : part.parts) s.stats.Add(p);
  const double cpu = ProcessCpuSeconds();
  s.cpu_seconds = cpu - last_cpu_;
  last_cpu_ = cpu;
  last_end_ns_ = s.end_ns;
  ++next_boundary_;
  return s;
}

void Engine::ReportConnected(int64_t now_ns) {
  // The last worker to have all its connections established starts the load.
  if (connected_workers_.fetch_add(1) + 1 == workers_.size()) SetLoadStart(now_ns);
}

void Engine::SetLoadStart(int64_t now_ns) {
  int64_t expected = 0;
  if (state_.load_start_ns.compare_exchange_strong(expected, now_ns, std::memory_order_acq_rel)) {
    for (auto& w : workers_) w->Wake();
  }
}

bool Engine::Ending() const {
  return next_boundary_ >= state_.boundaries.size() || state_.stop.load(std::memory_order_relaxed);
}

void Engine::HoldUnlessStopped(std::chrono::nanoseconds d) {
  MutexLock lock(mu_);
  cv_.wait_for(lock, d, [&]() REQUIRES(mu_) { return state_.stop.load(std::memory_order_relaxed); });
}

void Engine::Stop() {
  state_.stop.store(true, std::memory_order_relaxed);
  {
    MutexLock lock(mu_);  // a holder between its check and its wait sees the flag
  }
  cv_.notify_all();
  for (auto& w : workers_) w->Wake();
}

EndReport Engine::Finish() {
  EndReport r;
  r.connections_requested = options_.connections;
  r.idle.mode = options_.idle_wait;
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  finished_ = true;
  for (auto& w : workers_) {
    r.drained += w->drained();
    r.abandoned += w->abandoned();
    r.connections_peak += w->peak_open();
    r.idle.Add(w->idle());
  }
  r.measure_seconds = std::max<double>(0, static_cast<double>(last_end_ns_ - options_.warmup.count()) / 1e9);
  r.stopped_early = state_.stop.load();
  return r;
}

}  // namespace fairbench::agent
