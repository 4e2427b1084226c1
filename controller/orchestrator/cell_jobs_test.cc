#include "controller/orchestrator/cell_jobs.h"

#include <gtest/gtest.h>

#include <set>

#include "api/validate.h"

namespace fairbench::controller {
namespace {

using namespace std::chrono_literals;

api::ScenarioSettings Settings() {
  api::ScenarioSettings s;
  api::WeightedRequest hello;
  hello.request.path = "/";
  hello.weight = 3;
  api::WeightedRequest echo;
  echo.request.method = "POST";
  echo.request.path = "/api/echo";
  echo.request.headers = {{"Content-Type", "application/json"}};
  echo.request.body_file = "echo.json";
  echo.request.body_file_content = R"({"a":1})";
  s.requests = {hello, echo};
  s.threads = 4;
  s.warmup = 2s;
  s.duration = 5s;
  s.timeout = 1500ms;
  s.pipeline = 1;
  s.keep_alive = false;
  s.rate = 1000;
  return s;
}

api::Cell CellOf(int64_t connections) {
  api::Cell c;
  c.target = "nginx";
  c.scenario = "mix";
  c.connections = connections;
  return c;
}

// Catches: the target's protocol or the streams setting not passed on to
// the agents (they would speak HTTP/1.1 to an HTTP/2 target).
TEST(CellJobsTest, ProtocolAndStreamsReachEveryJob) {
  api::ScenarioSettings settings = Settings();
  settings.rate = 0;
  settings.keep_alive = true;
  settings.streams = 10;
  TargetPlacement where{"node-a", "10.0.0.7", 8443};
  where.scheme = Scheme::kHttps;
  where.protocol = Protocol::kH2;
  const auto jobs = BuildCellJobs(settings, CellOf(4), where, 2, std::chrono::system_clock::now(), "j");
  ASSERT_EQ(jobs.size(), 2u);
  for (const wire::JobSpec& j : jobs) {
    EXPECT_EQ(j.protocol, Protocol::kH2);
    EXPECT_EQ(j.streams, 10u);
    EXPECT_EQ(j.scheme, Scheme::kHttps);
  }
  where.protocol = Protocol::kHttp1;
  EXPECT_EQ(BuildCellJobs(settings, CellOf(4), where, 1, std::chrono::system_clock::now(), "j")[0].protocol,
            Protocol::kHttp1);
}

api::ScenarioSettings GrpcSettings() {
  api::ScenarioSettings s = Settings();
  s.requests.clear();
  s.rate = 0;
  s.keep_alive = true;
  s.streams = 10;
  api::GrpcCallSpec call;
  call.method = "fairbench.echo.v1.Echo/ServerStream";
  call.metadata = {{"X-Tenant", "blue"}};
  call.deadline = 3s;
  call.request_message = "\x0a\x02hi";
  call.kind = api::GrpcCallSpec::Kind::kServerStreaming;
  s.grpc = call;
  return s;
}

// Catches: a gRPC target's jobs sent as protocol "grpc" (agents speak h2 or
// h2c), the call not reaching the agents (they would send GET /), metadata
// keys not lower-cased (HTTP/2 forbids upper case), and a timeout shorter
// than the deadline (the agent would give up before the server's
// DEADLINE_EXCEEDED).
TEST(CellJobsTest, GrpcCallsReachEveryJobAsHttp2) {
  TargetPlacement where{"node-a", "10.0.0.7", 50051};
  where.protocol = Protocol::kGrpc;
  const auto jobs = BuildCellJobs(GrpcSettings(), CellOf(4), where, 2, std::chrono::system_clock::now(), "j");
  ASSERT_EQ(jobs.size(), 2u);
  for (const wire::JobSpec& j : jobs) {
    EXPECT_EQ(j.protocol, Protocol::kH2c);
    EXPECT_TRUE(j.requests.empty());
    ASSERT_TRUE(j.grpc.has_value());
    EXPECT_EQ(j.grpc->method, "fairbench.echo.v1.Echo/ServerStream");
    EXPECT_EQ(j.grpc->message, "\x0a\x02hi");
    EXPECT_EQ(j.grpc->metadata, (std::vector<std::pair<std::string, std::string>>{{"x-tenant", "blue"}}));
    EXPECT_EQ(j.grpc->deadline, 3s);
    EXPECT_EQ(j.grpc->kind, GrpcCallKind::kServerStreaming);
    EXPECT_EQ(j.timeout, 4s);
    EXPECT_EQ(j.streams, 10u);
    EXPECT_TRUE(wire::FromProto([&] {
                  v1::LoadJob m;
                  wire::ToProto(j, &m);
                  return m;
                }())
                    .ok());
  }
  where.scheme = Scheme::kHttps;
  EXPECT_EQ(BuildCellJobs(GrpcSettings(), CellOf(4), where, 1, std::chrono::system_clock::now(), "j")[0].protocol,
            Protocol::kH2);
  // The controller waits as long as its agents do (its cell timeline).
  EXPECT_EQ(AnswerTimeout(GrpcSettings()), 4s);
}

// Catches: gRPC counts dropped between the agents' totals and the result,
// codes shifted by one, a call ending other than expect.grpcStatus not
// counted as a status error, protocol errors not counted as errors.
TEST(CellJobsTest, GrpcRecordCountsCallsByStatusAgainstTheExpectedOne) {
  CellMeasurement m;
  Snapshot s;
  s.sequence = 1;
  s.phase = Phase::kMeasure;
  s.end_ns = 1'000'000'000;
  s.stats.counters.requests = 100;
  s.stats.counters.status_classes[2] = 100;
  s.stats.counters.grpc.status[0] = 90;  // OK
  s.stats.counters.grpc.status[14] = 7;  // UNAVAILABLE
  s.stats.counters.grpc.status[4] = 3;   // DEADLINE_EXCEEDED
  s.stats.counters.grpc.truncated = 2;
  s.stats.counters.grpc.unary_messages = 1;
  s.stats.counters.grpc.messages = 900;
  for (int i = 0; i < 90; ++i) {
    s.stats.first_message.Record(1000);
    s.stats.last_message.Record(9000);
  }
  m.totals.Add(s);
  m.end.measure_seconds = 1;
  TargetPlacement where{"n", "127.0.0.1", 9};
  where.protocol = Protocol::kGrpc;
  api::ScenarioSettings settings = GrpcSettings();
  report::CellRecord r = CellRecordFrom(settings, CellOf(10), where, m);
  ASSERT_TRUE(r.result.grpc.has_value());
  const std::vector<api::GrpcStatusCount> expected{
      {api::GrpcCode::kOk, 90}, {api::GrpcCode::kDeadlineExceeded, 3}, {api::GrpcCode::kUnavailable, 7}};
  EXPECT_EQ(r.result.grpc->statuses, expected);
  EXPECT_EQ(r.result.grpc->messages, 900u);
  EXPECT_EQ(r.result.grpc->truncated, 2u);
  // Catches: the first and the last message's latency dropped, or swapped.
  ASSERT_TRUE(r.result.grpc->first_message_latency.has_value());
  EXPECT_NEAR(r.result.grpc->first_message_latency->p50, 1000, 2);
  EXPECT_NEAR(r.result.grpc->last_message_latency->p99, 9000, 10);
  EXPECT_EQ(r.result.errors.status, 10u);
  EXPECT_EQ(r.result.errors.grpc_protocol, 3u);
  EXPECT_EQ(r.result.errors.Total(), 13u);
  EXPECT_NE(r.wrk_text.find("fairbench.echo.v1.Echo/ServerStream"), std::string::npos) << r.wrk_text;
  settings.expect.grpc_status = api::GrpcCode::kUnavailable;
  r = CellRecordFrom(settings, CellOf(10), where, m);
  EXPECT_EQ(r.result.errors.status, 93u);
}

// Catches: load.idleWait not passed on to the agents (each would choose
// auto), or a mode mapped to another's setting.
TEST(CellJobsTest, IdleWaitReachesEveryJob) {
  api::ScenarioSettings settings = Settings();
  const TargetPlacement where{"node-a", "10.0.0.7", 8080};
  for (const auto& [mode, name] : kIdleWaitModeNames) {
    settings.idle_wait = mode;
    for (const wire::JobSpec& j : BuildCellJobs(settings, CellOf(4), where, 2, std::chrono::system_clock::now(), "j")) {
      EXPECT_EQ(j.idle_wait, mode) << name;
    }
  }
}

// Catches: connections or rate not split over the agents (or split with
// a remainder lost), offsets overlapping, threads above an agent's
// connections, agents given different starts, a request field dropped (the
// body of a bodyFile, a header, a weight), the warmup/duration/timeout or
// keep-alive not passed on.
TEST(CellJobsTest, OneJobPerAgentWithItsShare) {
  const auto start = std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000));
  const TargetPlacement where{"node-a", "10.0.0.7", 8080};
  const auto jobs = BuildCellJobs(Settings(), CellOf(10), where, 3, start, "run/nginx/mix/c10/r1/1");
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs[0].connections, 4u);
  EXPECT_EQ(jobs[1].connections, 3u);
  EXPECT_EQ(jobs[2].connections, 3u);
  EXPECT_EQ(jobs[0].connection_offset, 0u);
  EXPECT_EQ(jobs[1].connection_offset, 4u);
  EXPECT_EQ(jobs[2].connection_offset, 7u);
  // Their snapshots are spread over the interval's first quarter.
  EXPECT_EQ(jobs[0].send_offset, 0ms);
  EXPECT_EQ(jobs[1].send_offset, 83333333ns);   // 250 ms × 1/3
  EXPECT_EQ(jobs[2].send_offset, 166666666ns);  // 250 ms × 2/3
  double rate = 0;
  for (const wire::JobSpec& j : jobs) {
    EXPECT_EQ(j.total_connections, 10u);
    EXPECT_EQ(j.threads, std::min<uint32_t>(4, j.connections));
    EXPECT_EQ(j.start, start);
    EXPECT_EQ(j.host, "10.0.0.7");
    EXPECT_EQ(j.port, 8080);
    EXPECT_EQ(j.job_id, "run/nginx/mix/c10/r1/1");
    EXPECT_EQ(j.warmup, 2s);
    EXPECT_EQ(j.duration, 5s);
    EXPECT_EQ(j.timeout, 1500ms);
    EXPECT_FALSE(j.keep_alive);
    rate += j.rate;
  }
  EXPECT_DOUBLE_EQ(jobs[0].rate, 400.0);
  EXPECT_DOUBLE_EQ(rate, 1000.0);
  const wire::JobSpec& j = jobs[0];
  ASSERT_EQ(j.requests.size(), 2u);
  EXPECT_EQ(j.requests[0].method, "GET");
  EXPECT_EQ(j.requests[0].target, "/");
  EXPECT_EQ(j.requests[0].weight, 3u);
  EXPECT_EQ(j.requests[1].method, "POST");
  EXPECT_EQ(j.requests[1].body, R"({"a":1})");
  EXPECT_EQ(j.requests[1].headers,
            (std::vector<std::pair<std::string, std::string>>{{"Content-Type", "application/json"}}));
}

// Catches: the controller and the agent disagreeing on a field — the jobs
// go through the one codec both ends use and come back the same.
TEST(CellJobsTest, JobsSurviveTheWireCodec) {
  const auto start = std::chrono::system_clock::time_point(std::chrono::nanoseconds(1'800'000'000'123'456'789));
  for (const wire::JobSpec& job : BuildCellJobs(Settings(), CellOf(10), {"n", "127.0.0.1", 9}, 2, start, "j")) {
    v1::LoadJob proto;
    wire::ToProto(job, &proto);
    auto back = wire::FromProto(proto);
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(*back, job);
  }
}

// Catches: the run file's validation and the agents disagreeing on
// load.rate with load.pipeline > 1: a spec it lets through whose jobs every
// agent refuses (each cell failing after the target was deployed), or a
// spec it refuses whose jobs would run.
TEST(CellJobsTest, WhatTheAgentsRefuseOfRateAndPipelineTheSpecRefuses) {
  const auto start = std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000));
  for (const int64_t rate : {int64_t{0}, int64_t{1000}}) {
    for (const int32_t pipeline : {1, 4}) {
      SCOPED_TRACE("rate " + std::to_string(rate) + ", pipeline " + std::to_string(pipeline));
      api::BenchmarkRun run;
      run.metadata.name = "r";
      run.spec.targets.push_back(api::Target{});
      run.spec.targets[0].name = "nginx";
      run.spec.targets[0].image = "nginx";
      run.spec.scenarios.push_back(api::Scenario{});
      run.spec.scenarios[0].name = "hello";
      run.spec.scenarios[0].request = api::Request{};
      run.spec.scenarios[0].request->path = "/";
      run.spec.load.connections = {10};
      run.spec.load.agents = 2;
      run.spec.load.threads = 2;
      run.spec.load.rate = rate;
      run.spec.load.pipeline = pipeline;
      const api::Diagnostics spec = api::Validate(run);
      std::string agents;  // what the agents' codec says of the cell's jobs
      const api::ScenarioSettings settings = api::EffectiveSettings(run.spec, run.spec.scenarios[0]);
      for (const wire::JobSpec& job : BuildCellJobs(settings, CellOf(10), {"n", "127.0.0.1", 9}, 2, start, "j")) {
        v1::LoadJob proto;
        wire::ToProto(job, &proto);
        if (auto back = wire::FromProto(proto); !back.ok()) agents = back.status().message();
      }
      EXPECT_EQ(spec.empty(), agents.empty()) << spec.Format("") << agents;
      if (!spec.empty()) {
        EXPECT_EQ(spec.Lines(""),
                  std::vector<std::string>{"spec.load.pipeline: " + std::string(api::kPipelineWithRate)});
        EXPECT_EQ(agents, "job.rate: a constant rate cannot be combined with pipeline > 1");
      }
    }
  }
}

// Catches: an https target's scheme not reaching the agents' jobs (or lost
// in the codec), the handshake error kind or the handshake figures dropped
// from the cell's record, the wrk text naming http.
TEST(CellJobsTest, HttpsTargetsCarryTheSchemeAndHandshakes) {
  TargetPlacement where{"n", "127.0.0.1", 8443};
  where.scheme = Scheme::kHttps;
  const auto jobs = BuildCellJobs(Settings(), CellOf(4), where, 2, std::chrono::system_clock::now(), "j");
  for (const wire::JobSpec& job : jobs) {
    EXPECT_EQ(job.scheme, Scheme::kHttps);
    v1::LoadJob proto;
    wire::ToProto(job, &proto);
    auto back = wire::FromProto(proto);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->scheme, Scheme::kHttps);
  }
  CellMeasurement m;
  Snapshot s;
  s.sequence = 1;
  s.end_ns = 2'000'000'000;
  s.stats.counters.requests = 100;
  s.stats.counters.errors.handshake = 3;
  s.stats.counters.errors.goaway = 5;
  s.stats.counters.errors.rst_stream = 6;
  s.stats.counters.errors.h2_protocol = 7;
  s.stats.counters.tls_handshakes = 100;
  s.stats.counters.tls_resumed = 96;
  s.stats.counters.tls_handshake_time_us = 25'000;
  m.totals.Add(s);
  m.end.measure_seconds = 2;
  const report::CellRecord r = CellRecordFrom(Settings(), CellOf(4), where, m);
  EXPECT_EQ(r.result.errors.handshake, 3u);
  EXPECT_EQ(r.result.errors.goaway, 5u);
  EXPECT_EQ(r.result.errors.rst_stream, 6u);
  EXPECT_EQ(r.result.errors.h2_protocol, 7u);
  ASSERT_TRUE(r.result.tls.has_value());
  EXPECT_EQ(r.result.tls->count, 100u);
  EXPECT_EQ(r.result.tls->resumed, 96u);
  EXPECT_DOUBLE_EQ(r.result.tls->mean, 250.0);
  EXPECT_DOUBLE_EQ(r.result.tls->per_second, 50.0);
  EXPECT_NE(r.wrk_text.find("@ https://127.0.0.1:8443/"), std::string::npos) << r.wrk_text;
  EXPECT_NE(std::find(r.flags.begin(), r.flags.end(), report::CellFlag::kErrors), r.flags.end());
  // A plain target has no TLS figures.
  EXPECT_FALSE(CellRecordFrom(Settings(), CellOf(4), {"n", "127.0.0.1", 80}, m).result.tls.has_value());
}

api::ScenarioSettings VarySettings() {
  api::ScenarioSettings s = Settings();
  api::WeightedRequest echo;
  echo.request.path = "/echo/{n}";
  s.requests = {echo};
  s.rate = 0;
  s.expect.json = nlohmann::json{{"n", "{n}"}};
  s.vary = api::Vary{7, 25};
  return s;
}

// Catches: vary not reaching the agents (they would send "{n}" as it is
// and check nothing), agents of a cell sharing a seed (their connections
// would send the same numbers), a seed that does not depend on the cell
// (the next cell would repeat the last one's numbers to a server that may
// have cached them), or the expectation lost on the wire.
TEST(CellJobsTest, VaryReachesEveryJobWithItsOwnSeed) {
  const auto start = std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000));
  const auto jobs = BuildCellJobs(VarySettings(), CellOf(10), {"n", "127.0.0.1", 9}, 3, start, "j");
  ASSERT_EQ(jobs.size(), 3u);
  std::set<uint64_t> seeds;
  for (const wire::JobSpec& job : jobs) {
    ASSERT_TRUE(job.vary.has_value());
    EXPECT_EQ(job.vary->verify_every, 25u);
    EXPECT_TRUE(job.vary->expect_json);
    EXPECT_EQ(nlohmann::json::parse(job.vary->expect), (nlohmann::json{{"n", "{n}"}}));
    seeds.insert(job.vary->seed);
    v1::LoadJob proto;
    wire::ToProto(job, &proto);
    auto back = wire::FromProto(proto);
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(*back, job);
  }
  EXPECT_EQ(seeds.size(), 3u);
  const auto next = BuildCellJobs(VarySettings(), CellOf(20), {"n", "127.0.0.1", 9}, 3, start, "j");
  EXPECT_EQ(seeds.count(next[0].vary->seed), 0u);
  const auto again = BuildCellJobs(VarySettings(), CellOf(10), {"n", "127.0.0.1", 9}, 3, start, "j");
  EXPECT_EQ(again[1].vary->seed, jobs[1].vary->seed) << "the same run must draw the same numbers";
  EXPECT_FALSE(BuildCellJobs(Settings(), CellOf(10), {"n", "127.0.0.1", 9}, 1, start, "j")[0].vary.has_value());
}

// Catches: a cell whose sampled answers failed verification recorded as a
// success (a server that caches would be ranked beside honest ones), the
// answers' counts or the check before the load not reaching the result,
// or their flags not raised.
TEST(CellJobsTest, AnswersThatFailVerificationFailTheCell) {
  CellMeasurement m;
  Snapshot s;
  s.sequence = 1;
  s.end_ns = 2'000'000'000;
  s.stats.counters.requests = 1000;
  s.stats.counters.status_classes[2] = 1000;
  s.stats.counters.answers = AnswerCounts{40, 0, 40, 3};
  m.totals.Add(s);
  m.end.measure_seconds = 2;
  m.end.connections_peak = 4;
  api::AnswerChecks before;
  before.content_length = 5;
  before.body_bytes = 6;
  m.answer_headers = before;
  report::CellRecord r = CellRecordFrom(VarySettings(), CellOf(4), {"n", "127.0.0.1", 80}, m);
  EXPECT_EQ(r.result.state, api::CellState::kSucceeded);
  ASSERT_TRUE(r.result.answers.has_value());
  EXPECT_EQ(r.result.answers->verified, 40u);
  EXPECT_EQ(r.result.answers->without_date, 40u);
  EXPECT_TRUE(r.result.answers->date_frozen);
  EXPECT_EQ(r.result.answers->content_length, 5u);
  EXPECT_EQ(r.result.answers->body_bytes, 6u);
  const std::vector<report::CellFlag> want = {report::CellFlag::kContentLengthMismatch, report::CellFlag::kDateMissing,
                                              report::CellFlag::kDateFrozen};
  EXPECT_EQ(r.flags, want);

  m.totals = RunTotals();
  s.stats.counters.answers = AnswerCounts{40, 40, 0, 0};
  m.totals.Add(s);
  r = CellRecordFrom(VarySettings(), CellOf(4), {"n", "127.0.0.1", 80}, m);
  EXPECT_EQ(r.result.state, api::CellState::kFailed);
  EXPECT_EQ(r.result.reason, api::CellReason::kAnswersNotVerified);
  EXPECT_NE(r.result.message.find("40 of 40 sampled answers"), std::string::npos) << r.result.message;
  EXPECT_EQ(r.result.requests, 1000u) << "the numbers are kept for whoever looks";

  m.totals = RunTotals();
  s.stats.counters.answers = AnswerCounts{};
  m.totals.Add(s);
  m.answer_headers.reset();
  r = CellRecordFrom(VarySettings(), CellOf(4), {"n", "127.0.0.1", 80}, m);
  EXPECT_EQ(r.flags, std::vector<report::CellFlag>{report::CellFlag::kAnswersUnsampled});
  // Without vary there is nothing to check and nothing recorded.
  EXPECT_FALSE(CellRecordFrom(Settings(), CellOf(4), {"n", "127.0.0.1", 80}, m).result.answers.has_value());
}

// Catches: the start lead not growing with connections per thread.
TEST(CellJobsTest, StartLeadGrowsWithConnectionsPerThread) {
  EXPECT_EQ(StartLead(100, 1, 4), 100ms + 625us);
  EXPECT_EQ(StartLead(10000, 2, 4), 100ms + 31250us);
}

// Catches: requests/s divided by the configured duration instead of the
// measured time, bytes per response or agent CPU from the wrong totals,
// flags not set for a stream with gaps.
TEST(CellJobsTest, RecordFromMeasurement) {
  CellMeasurement m;
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    Snapshot s;
    s.sequence = seq;
    s.phase = seq == 1 ? Phase::kWarmup : Phase::kMeasure;
    s.start_ns = static_cast<int64_t>(seq - 1) * 1'000'000'000;
    s.end_ns = static_cast<int64_t>(seq) * 1'000'000'000;
    s.stats.counters.requests = 500;
    s.stats.counters.bytes_read = 100'000;
    s.stats.counters.status_classes[2] = 500;
    for (int i = 0; i < 500; ++i) s.stats.latency.Record(2000);
    s.cpu_seconds = 0.3;
    m.totals.Add(s);
  }
  m.end.measure_seconds = 2.5;  // measured, not the configured 5 s
  m.end.idle.mode = IdleWait::kNap;
  m.end.idle.naps = 1234;
  m.end.idle.max_nap_ns = 40'000;
  m.consistent = false;
  m.memory_max = 1 << 20;
  m.usage_first = TargetUsage{1, 10.0, api::Time(std::chrono::seconds(100))};
  m.usage_last = TargetUsage{1, 13.0, api::Time(std::chrono::seconds(104))};
  const report::CellRecord r = CellRecordFrom(Settings(), CellOf(10), {"n", "127.0.0.1", 9}, m);
  EXPECT_EQ(r.result.requests, 1000u);  // the warmup interval is not counted
  EXPECT_DOUBLE_EQ(r.result.requests_per_second, 400.0);
  EXPECT_DOUBLE_EQ(r.result.bytes_per_response, 200.0);
  EXPECT_DOUBLE_EQ(*r.result.target_cpu, 0.75);  // 3 CPU-s over the platform's 4 s
  EXPECT_NEAR(*r.result.agent_cpu, 0.6 / 2.5, 1e-12);
  EXPECT_EQ(r.result.memory_loaded, std::optional<uint64_t>(1 << 20));
  EXPECT_NEAR(r.result.latency.p99, 2000, 2);
  EXPECT_NE(std::find(r.flags.begin(), r.flags.end(), report::CellFlag::kSnapshotGap), r.flags.end());
  EXPECT_EQ(r.timeline.size(), 3u);
  EXPECT_EQ(r.idle,
            std::optional<IdleReport>(m.end.idle));  // catches: the agents' idle waiting dropped from the record
  EXPECT_NE(r.wrk_text.find("Idle wait: nap: 1234 naps of at most 40.00us"), std::string::npos) << r.wrk_text;
}

// Catches: a share of capacity taken of anything but the closed-loop cell
// of the same connections and repetition (another repetition's, another
// level's), not rounded, a rate of 0 offered after a capacity of almost
// nothing, or a rate level run although its capacity cell failed.
TEST(CellJobsTest, OfferedRateIsItsLevelOrItsShareOfTheClosedLoop) {
  api::Cell cell = CellOf(100);
  cell.repetition = 2;
  cell.rate = api::RateLevel{2000, 0};
  api::BenchmarkRunStatus status;
  auto offered = OfferedRate(status, cell);
  ASSERT_TRUE(offered.ok()) << offered.status().ToString();
  EXPECT_EQ(*offered, 2000);

  cell.rate = api::RateLevel{0, 50};
  EXPECT_FALSE(OfferedRate(status, cell).ok());
  auto closed = [](int64_t connections, int32_t repetition, double rps) {
    api::CellResult r;
    r.target = "nginx";
    r.scenario = "mix";
    r.connections = connections;
    r.repetition = repetition;
    r.requests_per_second = rps;
    return r;
  };
  status.results = {closed(100, 1, 9000), closed(1000, 2, 7000), closed(100, 2, 10001)};
  api::CellResult other_level = closed(100, 2, 2000);
  other_level.rate_level = api::RateLevel{2000, 0};
  status.results.push_back(other_level);
  offered = OfferedRate(status, cell);
  ASSERT_TRUE(offered.ok()) << offered.status().ToString();
  EXPECT_EQ(*offered, 5001) << "half of 10,001, rounded";

  status.results[2].requests_per_second = 0.4;
  offered = OfferedRate(status, cell);
  ASSERT_TRUE(offered.ok());
  EXPECT_EQ(*offered, 1);

  status.results[2].state = api::CellState::kFailed;
  status.results[2].message = "target nginx exited";
  offered = OfferedRate(status, cell);
  ASSERT_FALSE(offered.ok());
  EXPECT_EQ(offered.status().message(),
            "50% of capacity: the closed-loop cell that measures the capacity at 100 connections did not succeed "
            "(target nginx exited)");
}

// Catches: a record of a rate level that does not say which level it was
// or what was offered (the report, compare and the store key on them).
TEST(CellJobsTest, RecordsCarryTheRateLevelAndTheRateOffered) {
  api::Cell cell = CellOf(10);
  cell.rate = api::RateLevel{0, 25};
  api::ScenarioSettings settings = Settings();
  settings.rate = 1234;
  CellMeasurement m;
  const report::CellRecord rec = CellRecordFrom(settings, cell, TargetPlacement{}, m);
  EXPECT_EQ(rec.result.rate_level, cell.rate);
  EXPECT_EQ(rec.result.offered_rate, 1234.0);
  EXPECT_EQ(NotRunRecord(cell, api::CellState::kSkipped, std::nullopt, "").result.rate_level, cell.rate);
  settings.rate = 0;
  EXPECT_FALSE(CellRecordFrom(settings, CellOf(10), TargetPlacement{}, m).result.offered_rate.has_value());
}

}  // namespace
}  // namespace fairbench::controller
