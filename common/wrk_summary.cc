#include "common/wrk_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <iterator>

#include "common/base64.h"
#include "common/units.h"

namespace fairbench {

const char* PhaseName(Phase phase) { return phase == Phase::kWarmup ? "warmup" : "measure"; }

const char* GrpcStatusName(int code) {
  static const char* const kNames[] = {
      "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
      "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
      "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
      "DATA_LOSS", "UNAUTHENTICATED"};
  return code >= 0 && code < static_cast<int>(std::size(kNames)) ? kNames[code] : "OTHER";
}

const char* IdleWaitName(IdleWait mode) {
  switch (mode) {
    case IdleWait::kBlock: return "block";
    case IdleWait::kNap: return "nap";
    case IdleWait::kPoll: return "poll";
  }
  return "block";
}

void RunTotals::Reserve(size_t intervals, size_t rate_samples) {
  if (keep_timeline_) timeline_.reserve(intervals);
  measure_.rate_samples.reserve(rate_samples);
}

void RunTotals::Add(const Snapshot& s) {
  if (keep_timeline_) AddToTimeline(s);
  if (s.phase != Phase::kMeasure) return;
  measure_.Add(s.stats);
  cpu_seconds_ += s.cpu_seconds;
}

void RunTotals::AddToTimeline(const Snapshot& s) {
  TimelinePoint p;
  p.sequence = s.sequence;
  p.phase = s.phase;
  p.start_s = static_cast<double>(s.start_ns) / 1e9;
  p.end_s = static_cast<double>(s.end_ns) / 1e9;
  p.counters = s.stats.counters;
  p.p50_us = s.stats.latency.ValueAtPercentile(50);
  p.p90_us = s.stats.latency.ValueAtPercentile(90);
  p.p99_us = s.stats.latency.ValueAtPercentile(99);
  p.max_us = s.stats.latency.max();
  p.mean_us = s.stats.latency.Mean();
  p.connections_open = s.connections_open;
  p.cpu_seconds = s.cpu_seconds;
  timeline_.push_back(p);
}

SampleStats ComputeSampleStats(const std::vector<double>& samples) {
  SampleStats st;
  if (samples.empty()) return st;
  double sum = 0;
  for (double v : samples) {
    sum += v;
    st.max = std::max(st.max, v);
  }
  st.mean = sum / static_cast<double>(samples.size());
  if (samples.size() > 1) {
    double ss = 0;
    for (double v : samples) ss += (v - st.mean) * (v - st.mean);
    st.stdev = std::sqrt(ss / static_cast<double>(samples.size() - 1));
  }
  size_t within = 0;
  for (double v : samples) {
    if (v >= st.mean - st.stdev && v <= st.mean + st.stdev) ++within;
  }
  st.within = 100.0 * static_cast<double>(within) / static_cast<double>(samples.size());
  return st;
}

namespace {

std::string Printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string Printf(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

std::string StatsRow(const char* name, double mean, double stdev, double max, double within,
                     std::string (*fmt)(double)) {
  std::string row = Printf("    %-10s", name);
  row += PadUnits(fmt(mean), 8);
  row += PadUnits(fmt(stdev), 10);
  row += PadUnits(fmt(max), 9);
  row += Printf("%8.2f%%\n", within);
  return row;
}

std::string PercentileRow(double p, uint64_t value) {
  std::string label;
  if (p == std::floor(p)) label = Printf("%7.0f%%", p);
  else if (p * 10 == std::floor(p * 10)) label = Printf("%7.1f%%", p);
  else label = Printf("%7.2f%%", p);
  return label + PadUnits(FormatTimeUs(static_cast<double>(value)), 10) + "\n";
}

double Seconds(const EndReport& end) { return end.measure_seconds > 0 ? end.measure_seconds : 1e-9; }

// The gRPC part of the summary: the status table, protocol errors by kind,
// the two kinds of timeout, and message latency.
std::string GrpcText(const SummaryContext& ctx, const IntervalStats& m, const ErrorCounts& e) {
  const GrpcCounts& g = m.counters.grpc;
  std::string out = Printf("  gRPC: %s (%s), %llu calls with a status, %llu response messages\n",
                           ctx.grpc_method.c_str(), ctx.grpc_kind.c_str(), static_cast<unsigned long long>(g.Calls()),
                           static_cast<unsigned long long>(g.messages));
  out += "  grpc-status:\n";
  for (size_t i = 0; i < g.status.size(); ++i) {
    if (g.status[i] == 0 && i != 0) continue;
    out += Printf("    %-20s %2zu %12llu\n", GrpcStatusName(static_cast<int>(i)), i,
                  static_cast<unsigned long long>(g.status[i]));
  }
  if (g.status_other)
    out += Printf("    %-20s    %12llu\n", "(above 16)", static_cast<unsigned long long>(g.status_other));
  out +=
      Printf("  Timeouts: DEADLINE_EXCEEDED %llu (the server's, after --deadline), no answer within --timeout %llu\n",
             static_cast<unsigned long long>(g.status[4]), static_cast<unsigned long long>(e.timeout));
  if (g.ProtocolErrors() > 0) {
    out += Printf(
        "  gRPC protocol errors: no status %llu, bad status %llu, truncated %llu, bad flag %llu, "
        "too large %llu, unary message count %llu\n",
        static_cast<unsigned long long>(g.no_status), static_cast<unsigned long long>(g.bad_status),
        static_cast<unsigned long long>(g.truncated), static_cast<unsigned long long>(g.bad_flag),
        static_cast<unsigned long long>(g.too_large), static_cast<unsigned long long>(g.unary_messages));
  }
  if (m.first_message.count() > 0 && ctx.grpc_kind != "unary") {
    for (const auto& [name, h] : {std::pair<const char*, const Histogram*>{"first", &m.first_message},
                                  std::pair<const char*, const Histogram*>{"last", &m.last_message}}) {
      out += Printf("  Latency to the %-5s message: p50 %s, p99 %s, max %s\n", name,
                    FormatTimeUs(static_cast<double>(h->ValueAtPercentile(50))).c_str(),
                    FormatTimeUs(static_cast<double>(h->ValueAtPercentile(99))).c_str(),
                    FormatTimeUs(static_cast<double>(h->max())).c_str());
    }
  }
  return out;
}

}  // namespace

namespace {

// The part wrk itself prints, in wrk's layout, so tools that read wrk's
// output read ours.
std::string WrkText(const SummaryContext& ctx, const IntervalStats& m, const EndReport& end) {
  const Counters& k = m.counters;
  const Histogram& lat = m.latency;
  const bool grpc = !ctx.grpc_method.empty();
  std::string out;
  out += "Running " + FormatTimeS(ctx.duration_s) + " test @ " + ctx.url + "\n";
  out += Printf("  %u threads and %u connections\n", ctx.threads, ctx.connections);
  out += Printf("  Thread Stats%6s%11s%8s%12s\n", "Avg", "Stdev", "Max", "+/- Stdev");
  out += StatsRow("Latency", lat.Mean(), lat.Stdev(), static_cast<double>(lat.max()), lat.WithinStdevPercent(),
                  FormatTimeUs);
  const SampleStats rs = ComputeSampleStats(m.rate_samples);
  out += StatsRow(grpc ? "RPC/Sec" : "Req/Sec", rs.mean, rs.stdev, rs.max, rs.within, FormatMetric);
  if (ctx.latency_distribution) {
    out += "  Latency Distribution\n";
    for (double p : {50.0, 75.0, 90.0, 99.0, 99.9, 99.99}) out += PercentileRow(p, lat.ValueAtPercentile(p));
  }
  out +=
      Printf("  %llu %s in %s, %sB read\n", static_cast<unsigned long long>(k.requests), grpc ? "RPCs" : "requests",
             FormatTimeUs(end.measure_seconds * 1e6).c_str(), FormatBinary(static_cast<double>(k.bytes_read)).c_str());
  const ErrorCounts& e = k.errors;
  if (e.connect || e.read || e.write || e.timeout) {
    out += Printf("  Socket errors: connect %llu, read %llu, write %llu, timeout %llu\n",
                  static_cast<unsigned long long>(e.connect), static_cast<unsigned long long>(e.read),
                  static_cast<unsigned long long>(e.write), static_cast<unsigned long long>(e.timeout));
  }
  if (e.status) out += Printf("  Non-2xx or 3xx responses: %llu\n", static_cast<unsigned long long>(e.status));
  if (e.H2Errors() > 0) {
    out += Printf("  HTTP/2 stream errors: goaway %llu, rst_stream %llu, protocol %llu\n",
                  static_cast<unsigned long long>(e.goaway), static_cast<unsigned long long>(e.rst_stream),
                  static_cast<unsigned long long>(e.h2_protocol));
  }
  if (e.script > 0) out += Printf("  Script errors: %llu\n", static_cast<unsigned long long>(e.script));
  if (grpc && k.grpc.NotOk() > 0)
    out += Printf("  Non-OK grpc-status: %llu\n", static_cast<unsigned long long>(k.grpc.NotOk()));
  if (grpc && k.grpc.ProtocolErrors() > 0) {
    out += Printf("  gRPC protocol errors: %llu\n", static_cast<unsigned long long>(k.grpc.ProtocolErrors()));
  }
  const double secs = Seconds(end);
  out += Printf(grpc ? "RPCs/sec: %13.2f\n" : "Requests/sec: %9.2f\n", static_cast<double>(k.requests) / secs);
  out += Printf("Transfer/sec: %10sB\n", FormatBinary(static_cast<double>(k.bytes_read) / secs).c_str());
  return out;
}

// Whether the latency above counts coordinated omission, and the latency the
// other way; the percentiles when the distribution was not printed.
std::string LatencyKindText(const SummaryContext& ctx, const IntervalStats& m) {
  const Counters& k = m.counters;
  const Histogram& lat = m.latency;
  std::string out;
  if (ctx.rate > 0) {
    out += Printf(
        "  Latency above is CORRECTED for coordinated omission: measured from each request's scheduled send time (rate %.2f/s).\n",
        ctx.rate);
    const Histogram& u = m.uncorrected;
    out += "  Uncorrected latency (from the first byte actually written):\n";
    out += StatsRow("Latency", u.Mean(), u.Stdev(), static_cast<double>(u.max()), u.WithinStdevPercent(), FormatTimeUs);
    if (ctx.latency_distribution) {
      for (double p : {50.0, 75.0, 90.0, 99.0, 99.9, 99.99}) out += PercentileRow(p, u.ValueAtPercentile(p));
    }
    if (k.unsent > 0) {
      out +=
          Printf("  Behind schedule: %llu %s due by the end were never sent (the connections fell behind the rate).\n",
                 static_cast<unsigned long long>(k.unsent), ctx.grpc_method.empty() ? "requests" : "RPCs");
    }
  } else {
    out +=
        "  Latency above is RAW: first byte written to last byte read; no coordinated-omission correction is added.\n";
  }
  if (!ctx.latency_distribution) {
    out += Printf("  Latency p50 %s, p99 %s, p99.9 %s, p99.99 %s\n",
                  FormatTimeUs(static_cast<double>(lat.ValueAtPercentile(50))).c_str(),
                  FormatTimeUs(static_cast<double>(lat.ValueAtPercentile(99))).c_str(),
                  FormatTimeUs(static_cast<double>(lat.ValueAtPercentile(99.9))).c_str(),
                  FormatTimeUs(static_cast<double>(lat.ValueAtPercentile(99.99))).c_str());
  }
  return out;
}

std::string AnswersText(const AnswerCounts& a) {
  std::string out =
      Printf("  Answers sampled and verified: %llu, of which %llu differed from what their requests asked for",
             static_cast<unsigned long long>(a.verified), static_cast<unsigned long long>(a.failed));
  if (a.without_date > 0) out += Printf(", %llu without Date", static_cast<unsigned long long>(a.without_date));
  if (a.date_frozen > 0) out += ", Date frozen";
  out += "\n";
  return out;
}

// Connections, status classes, port exhaustion and TLS handshakes.
std::string ConnectionsText(const Counters& k, const EndReport& end) {
  const ErrorCounts& e = k.errors;
  std::string out;
  out += Printf("  Connections: %u requested, %u established at peak", end.connections_requested, end.connections_peak);
  if (k.connects > 0)
    out += Printf(", mean connect time %s",
                  FormatTimeUs(static_cast<double>(k.connect_time_us) / static_cast<double>(k.connects)).c_str());
  if (k.closes_by_server > 0)
    out += Printf(", %llu closed by the server", static_cast<unsigned long long>(k.closes_by_server));
  out += "\n";
  if (end.connections_peak < end.connections_requested) {
    out += Printf("  WARNING: only %u of %u connections were ever established at once.\n", end.connections_peak,
                  end.connections_requested);
  }
  out += "  Status classes:";
  const char* names[] = {"other", "1xx", "2xx", "3xx", "4xx", "5xx"};
  for (size_t i = 1; i < 6; ++i) {
    if (k.status_classes[i]) out += Printf(" %s %llu", names[i], static_cast<unsigned long long>(k.status_classes[i]));
  }
  if (k.status_classes[0]) out += Printf(" other %llu", static_cast<unsigned long long>(k.status_classes[0]));
  out += "\n";
  if (e.port_exhaustion) {
    out += Printf("  Port exhaustion (EADDRNOTAVAIL): %llu\n", static_cast<unsigned long long>(e.port_exhaustion));
  }
  if (k.tls_handshakes > 0 || e.handshake > 0) {
    // Handshake time is not in the latency above: it runs from the TCP
    // connect to the end of the TLS handshake, before the first request.
    out += Printf("  TLS handshakes: %llu (%llu resumed), mean %s, %.2f/s; handshake errors %llu\n",
                  static_cast<unsigned long long>(k.tls_handshakes), static_cast<unsigned long long>(k.tls_resumed),
                  FormatTimeUs(k.tls_handshakes ? static_cast<double>(k.tls_handshake_time_us) /
                                                      static_cast<double>(k.tls_handshakes)
                                                : 0.0)
                      .c_str(),
                  static_cast<double>(k.tls_handshakes) / Seconds(end), static_cast<unsigned long long>(e.handshake));
  }
  return out;
}

// What the load generator itself cost and how its threads waited.
std::string GeneratorText(const SummaryContext& ctx, const RunTotals& totals, const EndReport& end) {
  const Counters& k = totals.measure().counters;
  const double secs = Seconds(end);
  std::string out;
  const double cores = totals.agent_cpu_seconds() / secs;
  out += Printf("  Generator CPU: %.2f cores for %u threads (%.1f us per %s)\n", cores, ctx.threads,
                k.requests ? totals.agent_cpu_seconds() * 1e6 / static_cast<double>(k.requests) : 0.0,
                ctx.grpc_method.empty() ? "request" : "RPC");
  if (cores >= 0.9 * ctx.threads) {
    out += "  WARNING: the generator's threads were busy nearly all the time; it may have been the bottleneck.\n";
  }
  const IdleReport& idle = end.idle;
  if (idle.mode == IdleWait::kNap) {
    // A response that came during a nap waited at most one nap to be read.
    out += Printf("  Idle wait: nap: %llu naps of at most %s, %.0f%% found a response ready, %.2fs asleep\n",
                  static_cast<unsigned long long>(idle.naps),
                  FormatTimeUs(static_cast<double>(idle.max_nap_ns) / 1e3).c_str(),
                  idle.naps ? 100.0 * static_cast<double>(idle.nap_hits) / static_cast<double>(idle.naps) : 0.0,
                  idle.nap_seconds);
  } else if (idle.mode == IdleWait::kPoll) {
    // The share of the workers' measured time spent polling an empty set:
    // CPU a sleeping generator would not have used.
    const double worker_seconds = end.measure_seconds * ctx.threads;
    out += Printf("  Idle wait: poll: %llu empty polls of %llu, %.2fs spinning (%.0f%% of the workers' time)\n",
                  static_cast<unsigned long long>(idle.empty_polls), static_cast<unsigned long long>(idle.polls),
                  idle.spin_seconds, worker_seconds > 0 ? 100 * idle.spin_seconds / worker_seconds : 0.0);
  }
  return out;
}

}  // namespace

std::string RenderText(const SummaryContext& ctx, const RunTotals& totals, const EndReport& end) {
  const IntervalStats& m = totals.measure();
  const Counters& k = m.counters;
  std::string out = WrkText(ctx, m, end);

  // What wrk does not say.
  out += "--- fairbench\n";
  if (ctx.protocol != "http1") {
    out += Printf("  Protocol: %s, up to %u streams per connection (latency per stream: %s to response complete)\n",
                  ctx.protocol.c_str(), ctx.streams, ctx.rate > 0 ? "due" : "submitted");
  }
  if (!ctx.grpc_method.empty()) out += GrpcText(ctx, m, k.errors);
  out += LatencyKindText(ctx, m);
  if (k.requests > 0) {
    out += Printf("  Bytes/response: %.1f\n", static_cast<double>(k.bytes_read) / static_cast<double>(k.requests));
  }
  if (k.answers != AnswerCounts{}) out += AnswersText(k.answers);
  out += ConnectionsText(k, end);
  out += Printf("  After the end: %llu responses drained (not counted), %llu requests unanswered\n",
                static_cast<unsigned long long>(end.drained), static_cast<unsigned long long>(end.abandoned));
  out += GeneratorText(ctx, totals, end);
  if (end.stopped_early) out += "  Stopped early.\n";
  return out;
}

nlohmann::json IdleJson(const IdleReport& idle) {
  return {{"mode", IdleWaitName(idle.mode)},
          {"naps", idle.naps},
          {"napHits", idle.nap_hits},
          {"napSeconds", idle.nap_seconds},
          {"maxNapUs", static_cast<double>(idle.max_nap_ns) / 1e3},
          {"polls", idle.polls},
          {"emptyPolls", idle.empty_polls},
          {"spinSeconds", idle.spin_seconds}};
}

namespace {

using nlohmann::json;

json LatencyJson(const Histogram& h) {
  json j;
  j["count"] = h.count();
  j["meanUs"] = h.Mean();
  j["stdevUs"] = h.Stdev();
  j["minUs"] = h.min();
  j["maxUs"] = h.max();
  j["withinStdevPercent"] = h.WithinStdevPercent();
  json p;
  for (double q : {50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 99.999}) {
    char key[16];
    std::snprintf(key, sizeof key, "p%g", q);
    p[key] = h.ValueAtPercentile(q);
  }
  j["percentilesUs"] = p;
  j["histogram"] = Base64Encode(h.EncodeCompressed());
  j["histogramEncoding"] = "HdrHistogram V2 compressed, base64; values in microseconds";
  return j;
}

json ErrorsJson(const ErrorCounts& e) {
  return json{{"connect", e.connect},        {"read", e.read},     {"write", e.write},
              {"timeout", e.timeout},        {"status", e.status}, {"portExhaustion", e.port_exhaustion},
              {"handshake", e.handshake},    {"goaway", e.goaway}, {"rstStream", e.rst_stream},
              {"h2Protocol", e.h2_protocol}, {"script", e.script}};
}

json ClassesJson(const Counters& c) {
  return json{{"other", c.status_classes[0]}, {"1xx", c.status_classes[1]}, {"2xx", c.status_classes[2]},
              {"3xx", c.status_classes[3]},   {"4xx", c.status_classes[4]}, {"5xx", c.status_classes[5]}};
}

json TimelineJson(const std::vector<TimelinePoint>& points) {
  json timeline = json::array();
  for (const TimelinePoint& p : points) {
    timeline.push_back(
        {{"sequence", p.sequence},
         {"phase", PhaseName(p.phase)},
         {"start", p.start_s},
         {"end", p.end_s},
         {"requests", p.counters.requests},
         {"bytesRead", p.counters.bytes_read},
         {"errors", ErrorsJson(p.counters.errors)},
         {"statusClasses", ClassesJson(p.counters)},
         {"latencyUs",
          {{"mean", p.mean_us}, {"p50", p.p50_us}, {"p90", p.p90_us}, {"p99", p.p99_us}, {"max", p.max_us}}},
         {"connectionsOpen", p.connections_open},
         {"agentCpuSeconds", p.cpu_seconds}});
  }
  return timeline;
}

json GrpcJson(const SummaryContext& ctx, const IntervalStats& m) {
  const Counters& k = m.counters;
  const GrpcCounts& g = k.grpc;
  json status = json::object();
  for (size_t i = 0; i < g.status.size(); ++i) status[GrpcStatusName(static_cast<int>(i))] = g.status[i];
  status["other"] = g.status_other;
  json grpc_json = {{"method", ctx.grpc_method},
                    {"kind", ctx.grpc_kind},
                    {"calls", g.Calls()},
                    {"messages", g.messages},
                    {"status", status},
                    {"timeouts", {{"deadlineExceeded", g.status[4]}, {"noAnswer", k.errors.timeout}}},
                    {"protocolErrors",
                     {{"noStatus", g.no_status},
                      {"badStatus", g.bad_status},
                      {"truncated", g.truncated},
                      {"badFlag", g.bad_flag},
                      {"tooLarge", g.too_large},
                      {"unaryMessageCount", g.unary_messages}}}};
  if (m.first_message.count() > 0 && ctx.grpc_kind != "unary") {
    grpc_json["firstMessageLatency"] = LatencyJson(m.first_message);
    grpc_json["lastMessageLatency"] = LatencyJson(m.last_message);
  }
  return grpc_json;
}

}  // namespace

nlohmann::json RenderJson(const SummaryContext& ctx, const RunTotals& totals, const EndReport& end) {
  const IntervalStats& m = totals.measure();
  const Counters& k = m.counters;
  const double secs = Seconds(end);
  json j;
  j["url"] = ctx.url;
  j["threads"] = ctx.threads;
  j["connections"] = ctx.connections;
  j["durationSeconds"] = ctx.duration_s;
  j["keepAlive"] = ctx.keep_alive;
  j["pipeline"] = ctx.pipeline;
  j["protocol"] = ctx.protocol;
  if (ctx.protocol != "http1") j["streams"] = ctx.streams;
  if (ctx.rate > 0) j["rate"] = ctx.rate;
  j["measureSeconds"] = end.measure_seconds;
  j["requests"] = k.requests;
  j["bytesRead"] = k.bytes_read;
  j["bytesWritten"] = k.bytes_written;
  j["requestsPerSecond"] = static_cast<double>(k.requests) / secs;
  j["transferPerSecond"] = static_cast<double>(k.bytes_read) / secs;
  j["bytesPerResponse"] = k.requests ? static_cast<double>(k.bytes_read) / static_cast<double>(k.requests) : 0.0;
  j["latencyKind"] = ctx.rate > 0 ? "corrected" : "raw";
  j["latency"] = LatencyJson(m.latency);
  if (ctx.rate > 0) {
    j["uncorrectedLatency"] = LatencyJson(m.uncorrected);
    j["unsent"] = k.unsent;
  }
  const SampleStats rs = ComputeSampleStats(m.rate_samples);
  j["threadRequestsPerSecond"] = {
      {"mean", rs.mean}, {"stdev", rs.stdev}, {"max", rs.max}, {"withinStdevPercent", rs.within}};
  j["errors"] = ErrorsJson(k.errors);
  j["statusClasses"] = ClassesJson(k);
  j["connectionsRequested"] = end.connections_requested;
  j["connectionsPeak"] = end.connections_peak;
  j["connects"] = k.connects;
  j["meanConnectUs"] = k.connects ? static_cast<double>(k.connect_time_us) / static_cast<double>(k.connects) : 0.0;
  j["closesByServer"] = k.closes_by_server;
  if (k.answers != AnswerCounts{}) {
    j["answers"] = {{"verified", k.answers.verified},
                    {"failed", k.answers.failed},
                    {"withoutDate", k.answers.without_date},
                    {"dateFrozen", k.answers.date_frozen}};
  }
  j["tlsHandshakes"] = k.tls_handshakes;
  j["tlsResumed"] = k.tls_resumed;
  j["meanTlsHandshakeUs"] =
      k.tls_handshakes ? static_cast<double>(k.tls_handshake_time_us) / static_cast<double>(k.tls_handshakes) : 0.0;
  j["drained"] = end.drained;
  j["abandoned"] = end.abandoned;
  j["agentCpuSeconds"] = totals.agent_cpu_seconds();
  j["stoppedEarly"] = end.stopped_early;
  j["idleWait"] = IdleJson(end.idle);
  j["timeline"] = TimelineJson(totals.timeline());
  if (!ctx.grpc_method.empty()) j["grpc"] = GrpcJson(ctx, m);
  return j;
}

}  // namespace fairbench
