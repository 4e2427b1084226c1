// Test support for the stores and the status writer: run records with every
// field set (timelines, real HdrHistograms of random latencies, wrk text,
// flags, optionals, times to the nanosecond), a field-by-field comparison,
// and the BenchmarkRun CRD from manifests/crd installed into the shared
// Kubernetes cluster. Header-only; deterministic for a given seed.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <cmath>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "api/codec.h"
#include "common/base64.h"
#include "common/histogram.h"
#include "controller/report/run_record.h"
#include "controller/kube/client.h"
#include "controller/kube/credentials.h"
#include "controller/kube/curl_transport.h"
#include "controller/kube/exec_credential.h"
#include "testing/support/kube_cluster.h"

namespace fairbench::controller::testrecords {

// Asks the server for uncompressed responses: the fault proxy's HTTP library
// compresses large bodies with brotli when curl offers it, which costs about
// a second per MiB — most of a large-record test's time.
class IdentityEncodingTransport final : public kube::HttpTransport {
 public:
  explicit IdentityEncodingTransport(std::unique_ptr<kube::HttpTransport> inner) : inner_(std::move(inner)) {}
  Result<kube::HttpResponse> Do(const kube::HttpRequest& request) override {
    kube::HttpRequest r = request;
    r.headers.emplace_back("Accept-Encoding", "identity");
    return inner_->Do(r);
  }
  Result<kube::HttpResponse> Stream(const kube::HttpRequest& request,
                                    const std::function<bool(std::string_view)>& on_data,
                                    std::stop_token stop) override {
    return inner_->Stream(request, on_data, std::move(stop));
  }

 private:
  std::unique_ptr<kube::HttpTransport> inner_;
};

// A client of `url` (plain HTTP) through `wrap(curl transport)`.
inline std::unique_ptr<kube::Client> ClientWith(
    const std::string& url,
    const std::function<std::unique_ptr<kube::HttpTransport>(std::unique_ptr<kube::HttpTransport>)>& wrap) {
  kube::RestConfig cfg;
  cfg.server = url;
  cfg.timeout = std::chrono::milliseconds(10000);
  kube::ClientOptions o;
  o.max_attempts = 5;
  o.retry_backoff = {std::chrono::milliseconds(5), std::chrono::milliseconds(50), 2.0, 0.0};
  o.max_retry_after = std::chrono::seconds(2);
  auto transport = std::make_unique<kube::CurlTransport>(cfg.server, cfg.tls, cfg.user_agent);
  return std::make_unique<kube::Client>(cfg, wrap(std::move(transport)), o);
}

inline std::unique_ptr<kube::Client> FastClient(const std::string& url) {
  return ClientWith(url, [](std::unique_ptr<kube::HttpTransport> t) {
    return std::make_unique<IdentityEncodingTransport>(std::move(t));
  });
}

inline std::string RandomHistogram(std::mt19937_64& rng, int samples) {
  Histogram h;
  // Log-uniform latencies from 10 µs to 10 s: most buckets get a count.
  std::uniform_real_distribution<double> exponent(1.0, 7.0);
  for (int i = 0; i < samples; ++i) h.Record(static_cast<int64_t>(std::pow(10.0, exponent(rng))));
  return Base64Encode(h.EncodeCompressed());
}

inline api::Time TimeAt(int64_t unix_ns) { return api::Time(std::chrono::nanoseconds(unix_ns)); }

// A number in [0, 1) from `rng`.
inline double Unit(std::mt19937_64& rng) { return std::uniform_real_distribution<double>(0.0, 1.0)(rng); }

// The run of Record(): two targets, one scenario, running, with a
// condition and progress.
inline void FillRun(api::BenchmarkRun& run, const std::string& name, const std::string& ns, size_t cells) {
  run.metadata.name = name;
  run.metadata.namespace_ = ns;
  for (const char* t : {"drogon", "nginx"}) {
    api::Target target;
    target.name = t;
    target.image = std::string("example.org/fairbench/") + t + ":1";
    target.port = 8080;
    run.spec.targets.push_back(target);
  }
  api::Scenario hello;
  hello.name = "hello";
  hello.request = api::Request{};
  hello.request->path = "/";
  hello.expect.body = "Hello, World!";
  run.spec.scenarios.push_back(hello);
  run.status.phase = api::RunPhase::kRunning;
  run.status.observed_generation = 1;
  run.status.start_time = TimeAt(1'790'000'000'123'456'789);
  api::Condition progressing;
  progressing.type = "Progressing";
  progressing.status = api::ConditionStatus::kTrue;
  progressing.reason = "Started";
  progressing.message = "0 of " + std::to_string(cells) + " cells finished";
  progressing.last_transition_time = TimeAt(1'790'000'000'000'000'000);
  progressing.observed_generation = 1;
  run.status.conditions.push_back(progressing);
  run.status.progress = {static_cast<int64_t>(cells), static_cast<int64_t>(cells) + 2};
}

inline report::Environment TestEnvironment() {
  report::Environment e;
  e.hostname = "node-1";
  e.kernel = "6.1.0-test";
  e.cpu_model = "AMD EPYC (test)";
  e.cpus = 2;
  e.memory_bytes = uint64_t{8} << 30;
  e.platform = "kubernetes";
  e.fairbench_version = "0.1.0";
  e.target_cpus = {0};
  e.agent_cpus = {1};
  e.notes = {"container runtime: test", "sysctl net.core.somaxconn=4096"};
  return e;
}

// Cell i's result: every seventh fails; three draws of `rng`.
inline api::CellResult TestCellResult(size_t i, std::mt19937_64& rng) {
  api::CellResult res;
  res.target = i % 2 == 0 ? "drogon" : "nginx";
  res.scenario = "hello";
  res.connections = 100 * static_cast<int64_t>(i / 2 + 1);
  res.repetition = 1;
  res.state = i % 7 == 3 ? api::CellState::kFailed : api::CellState::kSucceeded;
  if (res.state == api::CellState::kFailed) {
    res.reason = api::CellReason::kTargetExited;
    res.message = "the target exited: OOMKilled";
  }
  res.requests_per_second = 100000.0 * Unit(rng) + 0.125;
  res.latency = {812.5 + Unit(rng), 157.03, 5840, 837, 900, 1010, 1340, 2480, 5000};
  res.errors = {1, 2, 3, 4, 5, 6};
  res.status_classes = {1, 1136866, 2, 7, 1};
  res.requests = 1136866 + i;
  res.bytes = 183035426;
  res.bytes_per_response = 161.0;
  res.transfer_per_second = 18303542.6;
  res.memory_idle = uint64_t{4} << 20;
  res.memory_loaded = uint64_t{12} << 20;
  res.target_cpu = 0.98 + Unit(rng) / 100;
  res.agent_cpu = 0.9;
  res.start_time = TimeAt(1'790'000'100'000'000'001 + static_cast<int64_t>(i) * 1'000'000'000);
  res.end_time = TimeAt(1'790'000'110'500'000'000 + static_cast<int64_t>(i) * 1'000'000'000);
  return res;
}

// Second `s` of a cell's timeline (two of warm-up, then measured).
inline TimelinePoint RandomTimelinePoint(uint64_t s, std::mt19937_64& rng) {
  TimelinePoint p;
  p.sequence = s;
  p.phase = s < 2 ? Phase::kWarmup : Phase::kMeasure;
  p.start_s = static_cast<double>(s);
  p.end_s = static_cast<double>(s + 1);
  p.counters.requests = rng() % 200000;
  p.counters.bytes_read = rng() % 40000000;
  p.counters.bytes_written = rng() % 4000000;
  p.counters.status_classes[2] = p.counters.requests;
  p.counters.connects = rng() % 100;
  p.counters.connect_time_us = rng() % 10000;
  p.p50_us = 800 + rng() % 100;
  p.p90_us = 1000 + rng() % 100;
  p.p99_us = 1300 + rng() % 100;
  p.max_us = 5000 + rng() % 1000;
  p.mean_us = 850.25 + Unit(rng);
  p.connections_open = 100;
  p.cpu_seconds = 0.9 + Unit(rng) / 10;
  return p;
}

// Cell i's idle report: none for every third cell, else nap or poll.
inline std::optional<IdleReport> TestIdleReport(size_t i) {
  if (i % 3 == 0) return std::nullopt;
  IdleReport idle;
  idle.mode = i % 3 == 1 ? IdleWait::kNap : IdleWait::kPoll;
  idle.naps = 1000 + i;
  idle.nap_hits = 900 + i;
  idle.nap_seconds = 0.125;
  idle.max_nap_ns = 25'000;
  idle.polls = 50'000 + i;
  idle.empty_polls = 40'000;
  idle.spin_seconds = 1.5;
  return idle;
}

// Cell i of Record(), its result included (in c.result).
inline report::CellRecord TestCell(size_t i, std::mt19937_64& rng, int histogram_samples) {
  report::CellRecord c;
  c.result = TestCellResult(i, rng);
  const api::CellResult& res = c.result;
  for (uint64_t s = 0; s < 12; ++s) c.timeline.push_back(RandomTimelinePoint(s, rng));
  c.latency_histogram = RandomHistogram(rng, histogram_samples);
  if (i % 3 == 0) {
    c.latency_corrected = true;
    c.uncorrected_histogram = RandomHistogram(rng, histogram_samples / 2);
  }
  c.wrk_text = "Running 10s test @ http://10.0.0.1:8080/\n  1 threads and " + std::to_string(res.connections) +
               " connections\nRequests/sec: " + std::to_string(res.requests_per_second) + "\n";
  c.agents = 1;
  c.connections_peak = static_cast<uint32_t>(res.connections);
  c.drained = 100;
  c.abandoned = i;
  c.measure_seconds = 10.000125;
  c.idle = TestIdleReport(i);
  c.littles_law_connections = 98.5;
  c.littles_law_in_flight = 100;
  if (i % 4 == 1) c.flags = {report::CellFlag::kGeneratorSaturated, report::CellFlag::kErrors};
  return c;
}

// A record of `cells` cells over two targets; `histogram_samples` latencies
// per histogram (more samples: larger, less compressible histograms).
inline report::RunRecord Record(const std::string& name, size_t cells, uint64_t seed = 1, int histogram_samples = 2000,
                                const std::string& ns = "default") {
  std::mt19937_64 rng(seed);
  report::RunRecord r;
  FillRun(r.run, name, ns, cells);
  r.environment = TestEnvironment();
  for (size_t i = 0; i < cells; ++i) {
    report::CellRecord c = TestCell(i, rng, histogram_samples);
    r.run.status.results.push_back(c.result);
    r.cells.push_back(std::move(c));
  }
  return r;
}

inline void ExpectSameTimeline(const std::vector<TimelinePoint>& a, const std::vector<TimelinePoint>& b,
                               const std::string& where) {
  ASSERT_EQ(a.size(), b.size()) << where;
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(where + ".timeline[" + std::to_string(i) + "]");
    EXPECT_EQ(a[i].sequence, b[i].sequence);
    EXPECT_EQ(a[i].phase, b[i].phase);
    EXPECT_EQ(a[i].start_s, b[i].start_s);
    EXPECT_EQ(a[i].end_s, b[i].end_s);
    EXPECT_TRUE(a[i].counters == b[i].counters);
    EXPECT_EQ(a[i].p50_us, b[i].p50_us);
    EXPECT_EQ(a[i].p90_us, b[i].p90_us);
    EXPECT_EQ(a[i].p99_us, b[i].p99_us);
    EXPECT_EQ(a[i].max_us, b[i].max_us);
    EXPECT_EQ(a[i].mean_us, b[i].mean_us);
    EXPECT_EQ(a[i].connections_open, b[i].connections_open);
    EXPECT_EQ(a[i].cpu_seconds, b[i].cpu_seconds);
  }
}

// Every field of two records, one by one (and results.json as a whole).
inline void ExpectSameRecord(const report::RunRecord& a, const report::RunRecord& b) {
  EXPECT_TRUE(a.run == b.run) << "run differs:\n" << api::ToJson(a.run).dump(1) << "\n" << api::ToJson(b.run).dump(1);
  const report::Environment& ea = a.environment;
  const report::Environment& eb = b.environment;
  EXPECT_EQ(ea.hostname, eb.hostname);
  EXPECT_EQ(ea.kernel, eb.kernel);
  EXPECT_EQ(ea.cpu_model, eb.cpu_model);
  EXPECT_EQ(ea.cpus, eb.cpus);
  EXPECT_EQ(ea.memory_bytes, eb.memory_bytes);
  EXPECT_EQ(ea.platform, eb.platform);
  EXPECT_EQ(ea.fairbench_version, eb.fairbench_version);
  EXPECT_EQ(ea.target_cpus, eb.target_cpus);
  EXPECT_EQ(ea.agent_cpus, eb.agent_cpus);
  EXPECT_EQ(ea.notes, eb.notes);
  ASSERT_EQ(a.cells.size(), b.cells.size());
  for (size_t i = 0; i < a.cells.size(); ++i) {
    const std::string where = "cells[" + std::to_string(i) + "]";
    SCOPED_TRACE(where);
    const report::CellRecord& ca = a.cells[i];
    const report::CellRecord& cb = b.cells[i];
    EXPECT_TRUE(ca.result == cb.result);
    ExpectSameTimeline(ca.timeline, cb.timeline, where);
    EXPECT_EQ(ca.latency_histogram, cb.latency_histogram);
    EXPECT_EQ(ca.uncorrected_histogram, cb.uncorrected_histogram);
    EXPECT_EQ(ca.latency_corrected, cb.latency_corrected);
    EXPECT_EQ(ca.wrk_text, cb.wrk_text);
    EXPECT_EQ(ca.agents, cb.agents);
    EXPECT_EQ(ca.connections_peak, cb.connections_peak);
    EXPECT_EQ(ca.drained, cb.drained);
    EXPECT_EQ(ca.abandoned, cb.abandoned);
    EXPECT_EQ(ca.measure_seconds, cb.measure_seconds);
    EXPECT_EQ(ca.idle, cb.idle);
    EXPECT_EQ(ca.littles_law_connections, cb.littles_law_connections);
    EXPECT_EQ(ca.littles_law_in_flight, cb.littles_law_in_flight);
    EXPECT_EQ(ca.flags, cb.flags);
  }
  EXPECT_EQ(report::ToJson(a).dump(1), report::ToJson(b).dump(1));
}

// The product's CRD in `cluster` (testing::InstallProductCrd: one for every
// test of the shared cluster, never changed nor deleted), and BenchmarkRuns
// served to `client` in `ns`.
inline void InstallGeneratedCrd(const fairbench::testing::KubeCluster& cluster, kube::Client& client,
                                const std::string& ns) {
  const Status installed = fairbench::testing::InstallProductCrd(cluster);
  ASSERT_TRUE(installed.ok()) << installed.ToString();
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!client.List(kube::resources::BenchmarkRuns(), ns).ok()) {
    ASSERT_LT(std::chrono::steady_clock::now(), until) << "BenchmarkRuns not served 30 s after the CRD was established";
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Writes to `path` the cluster's administrator kubeconfig (TLS to the API
// server itself, a client certificate) with `ns` as its context's namespace:
// what kubectl and the controller's own clients use in a test's namespace.
inline void WriteAdminKubeconfig(const fairbench::testing::KubeCluster& cluster, const std::string& ns,
                                 const std::string& path) {
  std::ofstream out(path);
  out << fairbench::testing::KubeconfigFor(cluster, ns);
  ASSERT_TRUE(out.good()) << path;
}

// Creates a BenchmarkRun `name` in `ns`; returns the stored object.
inline kube::Json CreateRun(kube::Client& client, const std::string& name, const std::string& ns) {
  kube::Json run = {{"apiVersion", "fairbench.dev/v1alpha1"},
                    {"kind", "BenchmarkRun"},
                    {"metadata", {{"name", name}, {"namespace", ns}}},
                    {"spec",
                     {{"targets", {{{"name", "drogon"}, {"image", "example.org/fairbench/drogon:1"}, {"port", 8080}}}},
                      {"scenarios", {{{"name", "hello"}, {"request", {{"path", "/"}}}}}}}}};
  auto created = client.Create(kube::resources::BenchmarkRuns(), ns, run);
  EXPECT_TRUE(created.ok()) << created.error().ToString();
  return created.ok() ? *created : kube::Json();
}

}  // namespace fairbench::controller::testrecords
