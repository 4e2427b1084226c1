// Metrics: what a load generator counts, per thread and per interval.
//
// Workers own their counters and histograms outright (nothing shared on the
// hot path). At each interval boundary a worker hands its IntervalStats to
// the engine, which merges the threads' parts into one Snapshot. Everything
// merges by addition, so snapshots of several agents merge the same way and
// totals always equal the sum of the snapshots.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/histogram.h"

namespace fairbench {

struct ErrorCounts {
  uint64_t connect =
      0;  // socket/connect failed, refused (incl. SO_ERROR after a non-blocking connect), or connect timed out
  uint64_t read = 0;             // read failed, parse error, or EOF mid-response / with a request unanswered
  uint64_t write = 0;            // write failed
  uint64_t timeout = 0;          // no complete response within the timeout (the connection is closed and reopened)
  uint64_t status = 0;           // responses with status > 399 (wrk's "Non-2xx or 3xx responses")
  uint64_t port_exhaustion = 0;  // connect failed with EADDRNOTAVAIL (ephemeral ports used up)
  uint64_t handshake = 0;        // TLS handshake failed (alert, bad certificate with verification, EOF, timeout,
                                 // or h2 asked and the server did not choose it by ALPN)
  // HTTP/2, per stream: refused by the server's GOAWAY (its id above the
  // last-stream-id: never processed), reset by the server (RST_STREAM), or
  // lost to a broken frame or response (the server broke HTTP/2).
  uint64_t goaway = 0;
  uint64_t rst_stream = 0;
  uint64_t h2_protocol = 0;
  // A wrk script raised an error while the load ran (request(), response(),
  // delay(), or request() returned no HTTP request): the load stops.
  uint64_t script = 0;

  uint64_t H2Errors() const { return goaway + rst_stream + h2_protocol; }
  uint64_t SocketErrors() const { return connect + read + write + timeout + port_exhaustion + handshake + H2Errors(); }
  void Add(const ErrorCounts& o) {
    connect += o.connect;
    read += o.read;
    write += o.write;
    timeout += o.timeout;
    status += o.status;
    port_exhaustion += o.port_exhaustion;
    handshake += o.handshake;
    goaway += o.goaway;
    rst_stream += o.rst_stream;
    h2_protocol += o.h2_protocol;
    script += o.script;
  }
  bool operator==(const ErrorCounts&) const = default;
};

// gRPC calls (fairbench-agent load --grpc): how each ended. A call that
// ended with a grpc-status is counted under its code (and is one of the
// Counters' requests); a call the server answered in a way gRPC does not
// allow is a protocol error of one kind (and no request). HTTP/2 stream
// errors (GOAWAY, RST_STREAM, a broken frame) stay in ErrorCounts.
struct GrpcCounts {
  std::array<uint64_t, 17> status{};  // calls ended with grpc-status i (OK = 0 … UNAUTHENTICATED = 16)
  uint64_t status_other = 0;          // a numeric grpc-status above 16
  // Protocol errors by kind: the stream ended without a grpc-status in its
  // trailers (or Trailers-Only headers); a grpc-status that is not a
  // number; the stream ended inside a message (shorter than its prefix
  // said); a prefix whose flag byte is neither 0 nor 1 (not gRPC framing,
  // or a message longer than its prefix); a message over
  // --max-message-size; a unary call answered OK with no message or more
  // than one.
  uint64_t no_status = 0;
  uint64_t bad_status = 0;
  uint64_t truncated = 0;
  uint64_t bad_flag = 0;
  uint64_t too_large = 0;
  uint64_t unary_messages = 0;
  uint64_t messages = 0;  // response messages of the calls that ended with a status

  uint64_t Calls() const {
    uint64_t n = status_other;
    for (uint64_t v : status) n += v;
    return n;
  }
  uint64_t NotOk() const { return Calls() - status[0]; }
  uint64_t ProtocolErrors() const { return no_status + bad_status + truncated + bad_flag + too_large + unary_messages; }
  void Add(const GrpcCounts& o) {
    for (size_t i = 0; i < status.size(); ++i) status[i] += o.status[i];
    status_other += o.status_other;
    no_status += o.no_status;
    bad_status += o.bad_status;
    truncated += o.truncated;
    bad_flag += o.bad_flag;
    too_large += o.too_large;
    unary_messages += o.unary_messages;
    messages += o.messages;
  }
  bool operator==(const GrpcCounts&) const = default;
};

// A scenario with vary (agent/vary.h): the sampled answers (every
// verifyEvery-th of a connection) checked against the expectation for
// their request's number, those that failed, those without a Date header,
// and those whose Date had already been seen more than 2 s earlier (a
// frozen clock). Answers with an error status are not sampled.
struct AnswerCounts {
  uint64_t verified = 0;
  uint64_t failed = 0;
  uint64_t without_date = 0;
  uint64_t date_frozen = 0;
  void Add(const AnswerCounts& o) {
    verified += o.verified;
    failed += o.failed;
    without_date += o.without_date;
    date_frozen += o.date_frozen;
  }
  bool operator==(const AnswerCounts&) const = default;
};

// gRPC's name of a status code (grpc/status.h: "OK" … "UNAUTHENTICATED"); "OTHER" above 16.
const char* GrpcStatusName(int code);

struct Counters {
  uint64_t requests = 0;    // complete responses
  uint64_t bytes_read = 0;  // everything read, headers included
  uint64_t bytes_written = 0;
  ErrorCounts errors;
  // Responses by status class: [0] anything outside 100..599, [1] 1xx .. [5] 5xx.
  std::array<uint64_t, 6> status_classes{};
  uint64_t connects = 0;          // connections established
  uint64_t connect_time_us = 0;   // sum of their connect times
  uint64_t closes_by_server = 0;  // clean closes between responses (keep-alive ended), not errors
  // HTTPS: handshakes completed, the sum of their times (from the TCP
  // connect to the handshake's end, apart from request latency), and how
  // many of them resumed an earlier session.
  uint64_t tls_handshakes = 0;
  uint64_t tls_handshake_time_us = 0;
  uint64_t tls_resumed = 0;
  GrpcCounts grpc{};  // gRPC load only
  // Constant rate: requests due by the end of the measurement that were
  // never sent (the target fell behind the schedule). Counted once, in the
  // last interval.
  uint64_t unsent = 0;
  AnswerCounts answers{};  // a scenario with vary only

  void Add(const Counters& o) {
    requests += o.requests;
    bytes_read += o.bytes_read;
    bytes_written += o.bytes_written;
    errors.Add(o.errors);
    for (size_t i = 0; i < status_classes.size(); ++i) status_classes[i] += o.status_classes[i];
    connects += o.connects;
    connect_time_us += o.connect_time_us;
    closes_by_server += o.closes_by_server;
    tls_handshakes += o.tls_handshakes;
    tls_handshake_time_us += o.tls_handshake_time_us;
    tls_resumed += o.tls_resumed;
    grpc.Add(o.grpc);
    unsent += o.unsent;
    answers.Add(o.answers);
  }
  bool operator==(const Counters&) const = default;
};

enum class Phase : uint8_t { kWarmup, kMeasure };
const char* PhaseName(Phase phase);

struct IntervalStats {
  Counters counters;
  // Latency in microseconds from the first byte written to the last byte
  // parsed. With a constant rate this is the *corrected* latency, measured
  // from the time the request should have been sent.
  Histogram latency;
  // Only with a constant rate: latency from the first byte actually written.
  Histogram uncorrected;
  // gRPC calls with response messages: latency to the first and to the
  // last message (from the same start as `latency`).
  Histogram first_message{};
  Histogram last_message{};
  // Each thread's requests/s sampled every 100 ms (wrk's "Req/Sec" row).
  std::vector<double> rate_samples;

  void Add(const IntervalStats& o) {
    counters.Add(o.counters);
    latency.Merge(o.latency);
    uncorrected.Merge(o.uncorrected);
    first_message.Merge(o.first_message);
    last_message.Merge(o.last_message);
    rate_samples.insert(rate_samples.end(), o.rate_samples.begin(), o.rate_samples.end());
  }
};

// One interval of the whole engine (all threads merged).
struct Snapshot {
  uint64_t sequence = 0;  // 1, 2, 3 … across both phases
  Phase phase = Phase::kMeasure;
  int64_t start_ns = 0;  // interval bounds, relative to the engine's start time
  int64_t end_ns = 0;
  IntervalStats stats;
  uint32_t connections_open = 0;  // established connections at the end of the interval
  double cpu_seconds = 0;         // the agent process's CPU time (user + system) in the interval
};

// What a load worker does when nothing is ready while requests are in
// flight (agent/worker.h). On one machine a response sent to a sleeping
// generator makes the server's send pay the generator thread's wake-up (in
// a VM an inter-processor interrupt, a VM exit): a lean generator that
// sleeps often taxes the server it measures.
//   kBlock  wait on the sockets (epoll): the next response wakes the worker;
//   kNap    sleep a short while on the worker's own timer, then look: the
//           server's responses wake nobody; the nap is at most 2 % of the
//           recent mean latency (and 50 us), or 4 % (and 100 us) where
//           responses come faster than one per such nap, so it adds at
//           most that to a response's latency;
//   kPoll   spin on a zero-timeout poll: a whole CPU per worker.
enum class IdleWait : uint8_t { kBlock, kNap, kPoll };
const char* IdleWaitName(IdleWait mode);

// What idle waiting did over a run (summed over workers and agents).
struct IdleReport {
  IdleWait mode = IdleWait::kBlock;  // of several agents: the most active one's
  uint64_t naps = 0;                 // kNap: naps taken
  uint64_t nap_hits = 0;             // naps after which a response (or any event) was ready
  double nap_seconds = 0;            // time asleep in naps
  uint64_t max_nap_ns = 0;           // the longest nap asked for (its timer; the sleep itself may run longer)
  uint64_t polls = 0;                // kPoll: zero-timeout polls
  uint64_t empty_polls = 0;          // of them, those that found nothing
  double spin_seconds = 0;           // wall time of the empty polls

  void Add(const IdleReport& o) {
    if (o.mode > mode) mode = o.mode;
    naps += o.naps;
    nap_hits += o.nap_hits;
    nap_seconds += o.nap_seconds;
    if (o.max_nap_ns > max_nap_ns) max_nap_ns = o.max_nap_ns;
    polls += o.polls;
    empty_polls += o.empty_polls;
    spin_seconds += o.spin_seconds;
  }
  friend bool operator==(const IdleReport&, const IdleReport&) = default;
};

// How a run ended, beyond its snapshots.
struct EndReport {
  uint64_t drained = 0;    // responses that arrived during the drain (not in the snapshots)
  uint64_t abandoned = 0;  // requests fully written but never answered when the load stopped
  uint32_t connections_requested = 0;
  uint32_t connections_peak = 0;  // most connections established at once
  double measure_seconds = 0;     // wall time of the measure phase as run (shorter when stopped early)
  bool stopped_early = false;
  IdleReport idle;

  void Add(const EndReport& o) {
    drained += o.drained;
    abandoned += o.abandoned;
    connections_requested += o.connections_requested;
    connections_peak += o.connections_peak;
    measure_seconds = measure_seconds > o.measure_seconds ? measure_seconds : o.measure_seconds;
    stopped_early = stopped_early || o.stopped_early;
    idle.Add(o.idle);
  }
};

}  // namespace fairbench
