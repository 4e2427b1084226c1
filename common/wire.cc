#include "common/wire.h"

#include <cmath>
#include <tuple>

namespace fairbench::wire {
namespace {

Status Invalid(const std::string& field, const std::string& what) {
  return Status::InvalidArgument(field + ": " + what);
}

Result<Histogram> DecodeLatency(const v1::Latency& in, const std::string& field) {
  if (in.count() == 0) {
    if (!in.hdr().empty()) return Invalid(field, "counts without a count");
    return Histogram();
  }
  auto h = Histogram::DecodeCompressed(in.hdr());
  if (!h.ok()) return Invalid(field, h.status().message());
  if (h->count() != in.count()) {
    return Invalid(
        field, "histogram holds " + std::to_string(h->count()) + " values, message says " + std::to_string(in.count()));
  }
  // The decoded min and max are the bounds of the lowest and highest
  // non-empty buckets: the exact values must lie in those buckets.
  if (in.min() > in.max())
    return Invalid(field, "min " + std::to_string(in.min()) + " above max " + std::to_string(in.max()));
  if (in.max() > static_cast<uint64_t>(Histogram::kHighestTrackable) ||
      static_cast<uint64_t>(Histogram::LowestEquivalentValue(static_cast<int64_t>(in.min()))) != h->min() ||
      static_cast<uint64_t>(Histogram::HighestEquivalentValue(static_cast<int64_t>(in.max()))) != h->max()) {
    return Invalid(field, "min " + std::to_string(in.min()) + " or max " + std::to_string(in.max()) +
                              " outside the histogram's lowest and highest buckets");
  }
  const uint128_t count = in.count();
  const uint128_t sum = in.sum();
  const uint128_t sum_squares = (static_cast<uint128_t>(in.sum_squares_hi()) << 64) | in.sum_squares_lo();
  if (sum < count * in.min() || sum > count * in.max()) {
    return Invalid(field, "sum " + std::to_string(in.sum()) + " outside count × [min, max]");
  }
  // Σx² ≥ (Σx)²/n (the variance is not negative) and Σx² ≤ max·Σx.
  if (sum_squares < sum * sum / count || sum_squares > sum * in.max()) {
    return Invalid(field, "sum of squares inconsistent with the sum, count and max");
  }
  if (in.clamped() > in.count()) return Invalid(field, "more clamped values than values");
  HistogramMoments m;
  m.count = in.count();
  m.sum = in.sum();
  m.sum_squares = sum_squares;
  m.min = in.min();
  m.max = in.max();
  h->SetMoments(m, in.clamped());
  return h;
}

}  // namespace

void ToProto(const Counters& in, v1::Counters* out) {
  out->set_requests(in.requests);
  out->set_bytes_read(in.bytes_read);
  out->set_bytes_written(in.bytes_written);
  v1::ErrorCounts* e = out->mutable_errors();
  e->set_connect(in.errors.connect);
  e->set_read(in.errors.read);
  e->set_write(in.errors.write);
  e->set_timeout(in.errors.timeout);
  e->set_status(in.errors.status);
  e->set_port_exhaustion(in.errors.port_exhaustion);
  e->set_handshake(in.errors.handshake);
  e->set_goaway(in.errors.goaway);
  e->set_rst_stream(in.errors.rst_stream);
  e->set_h2_protocol(in.errors.h2_protocol);
  e->set_script(in.errors.script);
  out->clear_status_classes();
  for (uint64_t c : in.status_classes) out->add_status_classes(c);
  out->set_connects(in.connects);
  out->set_connect_time_us(in.connect_time_us);
  out->set_closes_by_server(in.closes_by_server);
  out->set_tls_handshakes(in.tls_handshakes);
  out->set_tls_handshake_time_us(in.tls_handshake_time_us);
  out->set_tls_resumed(in.tls_resumed);
  out->set_unsent(in.unsent);
  if (in.answers == AnswerCounts{}) {
    out->clear_answers();
  } else {
    v1::AnswerCounts* a = out->mutable_answers();
    a->set_verified(in.answers.verified);
    a->set_failed(in.answers.failed);
    a->set_without_date(in.answers.without_date);
    a->set_date_frozen(in.answers.date_frozen);
  }
  if (in.grpc == GrpcCounts{}) {
    out->clear_grpc();
    return;
  }
  v1::GrpcCounts* g = out->mutable_grpc();
  g->clear_status();
  for (uint64_t n : in.grpc.status) g->add_status(n);
  g->set_status_other(in.grpc.status_other);
  g->set_no_status(in.grpc.no_status);
  g->set_bad_status(in.grpc.bad_status);
  g->set_truncated(in.grpc.truncated);
  g->set_bad_flag(in.grpc.bad_flag);
  g->set_too_large(in.grpc.too_large);
  g->set_unary_messages(in.grpc.unary_messages);
  g->set_messages(in.grpc.messages);
}

void ToProto(const IdleReport& in, v1::IdleReport* out) {
  out->set_mode(IdleWaitName(in.mode));
  out->set_naps(in.naps);
  out->set_nap_hits(in.nap_hits);
  out->set_nap_seconds(in.nap_seconds);
  out->set_max_nap_ns(in.max_nap_ns);
  out->set_polls(in.polls);
  out->set_empty_polls(in.empty_polls);
  out->set_spin_seconds(in.spin_seconds);
}

IdleReport FromProto(const v1::IdleReport& in) {
  IdleReport r;
  r.mode = in.mode() == "nap" ? IdleWait::kNap : in.mode() == "poll" ? IdleWait::kPoll : IdleWait::kBlock;
  r.naps = in.naps();
  r.nap_hits = in.nap_hits();
  r.nap_seconds = in.nap_seconds();
  r.max_nap_ns = in.max_nap_ns();
  r.polls = in.polls();
  r.empty_polls = in.empty_polls();
  r.spin_seconds = in.spin_seconds();
  return r;
}

Counters FromProto(const v1::Counters& in) {
  Counters c;
  c.requests = in.requests();
  c.bytes_read = in.bytes_read();
  c.bytes_written = in.bytes_written();
  c.errors.connect = in.errors().connect();
  c.errors.read = in.errors().read();
  c.errors.write = in.errors().write();
  c.errors.timeout = in.errors().timeout();
  c.errors.status = in.errors().status();
  c.errors.port_exhaustion = in.errors().port_exhaustion();
  c.errors.handshake = in.errors().handshake();
  c.errors.goaway = in.errors().goaway();
  c.errors.rst_stream = in.errors().rst_stream();
  c.errors.h2_protocol = in.errors().h2_protocol();
  c.errors.script = in.errors().script();
  for (int i = 0; i < in.status_classes_size() && i < static_cast<int>(c.status_classes.size()); ++i) {
    c.status_classes[static_cast<size_t>(i)] = in.status_classes(i);
  }
  c.connects = in.connects();
  c.connect_time_us = in.connect_time_us();
  c.closes_by_server = in.closes_by_server();
  c.tls_handshakes = in.tls_handshakes();
  c.tls_handshake_time_us = in.tls_handshake_time_us();
  c.tls_resumed = in.tls_resumed();
  c.unsent = in.unsent();
  c.answers.verified = in.answers().verified();
  c.answers.failed = in.answers().failed();
  c.answers.without_date = in.answers().without_date();
  c.answers.date_frozen = in.answers().date_frozen();
  const v1::GrpcCounts& g = in.grpc();
  for (int i = 0; i < g.status_size() && i < static_cast<int>(c.grpc.status.size()); ++i) {
    c.grpc.status[static_cast<size_t>(i)] = g.status(i);
  }
  // Codes past the 17 this side knows are "other", as a newer agent's would be.
  for (int i = static_cast<int>(c.grpc.status.size()); i < g.status_size(); ++i) c.grpc.status_other += g.status(i);
  c.grpc.status_other += g.status_other();
  c.grpc.no_status = g.no_status();
  c.grpc.bad_status = g.bad_status();
  c.grpc.truncated = g.truncated();
  c.grpc.bad_flag = g.bad_flag();
  c.grpc.too_large = g.too_large();
  c.grpc.unary_messages = g.unary_messages();
  c.grpc.messages = g.messages();
  return c;
}

void ToProto(const Histogram& in, v1::Latency* out) {
  if (in.count() > 0) out->set_hdr(in.EncodeCompressed());
  const HistogramMoments& m = in.moments();
  out->set_count(m.count);
  out->set_sum(m.sum);
  out->set_sum_squares_hi(static_cast<uint64_t>(m.sum_squares >> 64));
  out->set_sum_squares_lo(static_cast<uint64_t>(m.sum_squares));
  out->set_min(m.min);
  out->set_max(m.max);
  out->set_clamped(in.clamped());
}

Result<Histogram> FromProto(const v1::Latency& in) { return DecodeLatency(in, "latency"); }

void ToProto(const Snapshot& in, const std::string& job_id, v1::Snapshot* out) {
  out->set_job_id(job_id);
  out->set_sequence(in.sequence);
  out->set_phase(in.phase == Phase::kWarmup ? v1::PHASE_WARMUP : v1::PHASE_MEASURE);
  out->set_start_ns(in.start_ns);
  out->set_end_ns(in.end_ns);
  ToProto(in.stats.counters, out->mutable_counters());
  ToProto(in.stats.latency, out->mutable_latency());
  if (in.stats.uncorrected.count() > 0) ToProto(in.stats.uncorrected, out->mutable_uncorrected());
  if (in.stats.first_message.count() > 0) ToProto(in.stats.first_message, out->mutable_first_message());
  if (in.stats.last_message.count() > 0) ToProto(in.stats.last_message, out->mutable_last_message());
  out->clear_rate_samples();
  for (double r : in.stats.rate_samples) out->add_rate_samples(r);
  out->set_connections_open(in.connections_open);
  out->set_cpu_seconds(in.cpu_seconds);
}

Result<Snapshot> FromProto(const v1::Snapshot& in) {
  Snapshot s;
  if (in.sequence() == 0) return Status::InvalidArgument("snapshot: sequence numbers start at 1");
  if (in.sequence() > kMaxSequence) {
    return Invalid("snapshot.sequence", std::to_string(in.sequence()) + " is beyond " + std::to_string(kMaxSequence));
  }
  if (in.phase() != v1::PHASE_WARMUP && in.phase() != v1::PHASE_MEASURE) {
    return Status::InvalidArgument("snapshot: unknown phase");
  }
  if (in.start_ns() < 0 || in.end_ns() < in.start_ns()) {
    return Invalid("snapshot.start_ns/end_ns", "the interval [" + std::to_string(in.start_ns()) + ", " +
                                                   std::to_string(in.end_ns()) + "] is not a time after the start");
  }
  if (in.counters().status_classes_size() > static_cast<int>(s.stats.counters.status_classes.size())) {
    return Invalid("snapshot.counters.status_classes", std::to_string(in.counters().status_classes_size()) +
                                                           " classes, at most " +
                                                           std::to_string(s.stats.counters.status_classes.size()));
  }
  if (in.rate_samples_size() > kMaxRateSamples) {
    return Invalid("snapshot.rate_samples",
                   std::to_string(in.rate_samples_size()) + " samples, at most " + std::to_string(kMaxRateSamples));
  }
  for (double r : in.rate_samples()) {
    if (!std::isfinite(r) || r < 0) return Invalid("snapshot.rate_samples", "a sample is negative or not finite");
  }
  if (!std::isfinite(in.cpu_seconds()) || in.cpu_seconds() < 0) {
    return Invalid("snapshot.cpu_seconds", "negative or not finite");
  }
  s.sequence = in.sequence();
  s.phase = in.phase() == v1::PHASE_WARMUP ? Phase::kWarmup : Phase::kMeasure;
  s.start_ns = in.start_ns();
  s.end_ns = in.end_ns();
  s.stats.counters = FromProto(in.counters());
  auto latency = DecodeLatency(in.latency(), "snapshot.latency");
  if (!latency.ok()) return latency.status();
  s.stats.latency = std::move(*latency);
  if (in.has_uncorrected()) {
    auto u = DecodeLatency(in.uncorrected(), "snapshot.uncorrected");
    if (!u.ok()) return u.status();
    s.stats.uncorrected = std::move(*u);
  }
  for (const auto& [present, message, field, into] :
       {std::tuple{in.has_first_message(), &in.first_message(), "snapshot.first_message", &s.stats.first_message},
        std::tuple{in.has_last_message(), &in.last_message(), "snapshot.last_message", &s.stats.last_message}}) {
    if (!present) continue;
    auto h = DecodeLatency(*message, field);
    if (!h.ok()) return h.status();
    *into = std::move(*h);
  }
  s.stats.rate_samples.assign(in.rate_samples().begin(), in.rate_samples().end());
  s.connections_open = in.connections_open();
  s.cpu_seconds = in.cpu_seconds();
  return s;
}

}  // namespace fairbench::wire
