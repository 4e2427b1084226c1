// common/load_rules.h and the gates that consult it: the run file's
// validation, the wire codec, the agent's `load` flags and its engine. At
// each count's maximum every gate lets the load through; one more, every
// gate refuses it, naming its own field.
#include "common/load_rules.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "agent/engine.h"
#include "agent/h2_connection.h"
#include "agent/load_command.h"
#include "agent/request.h"
#include "api/validate.h"
#include "common/wire_job.h"

namespace fairbench::agent {
namespace {

using load_rules::Count;
using load_rules::RangeOf;

uint32_t Max(Count c) { return static_cast<uint32_t>(RangeOf(c).max); }

// --- the run file -----------------------------------------------------------

api::BenchmarkRun RunFile() {
  api::BenchmarkRun run;
  run.metadata.name = "t";
  api::Target t;
  t.name = "a";
  t.image = "img";
  run.spec.targets.push_back(t);
  api::Scenario s;
  s.name = "s";
  s.request = api::Request{};
  s.request->path = "/";
  run.spec.scenarios.push_back(s);
  return run;
}

// The diagnostics about `field` (e.g. "spec.load.threads").
std::vector<std::string> RunFileSays(const api::BenchmarkRun& run, const std::string& field) {
  std::vector<std::string> about;
  for (const std::string& line : api::Validate(run).Lines("")) {
    if (line.find(field) != std::string::npos) about.push_back(line);
  }
  return about;
}

// --- the wire ---------------------------------------------------------------

v1::LoadJob WireJob() {
  v1::LoadJob m;
  m.set_job_id("j");
  m.set_host("127.0.0.1");
  m.set_port(8080);
  m.add_requests()->set_target("/");
  m.set_connections(Max(Count::kThreads) + 1);
  return m;
}

std::string WireSays(const v1::LoadJob& m) {
  auto job = wire::FromProto(m);
  return job.ok() ? "" : job.status().message();
}

// --- the agent --------------------------------------------------------------

std::string FlagsSay(LoadFlags f) {
  f.url = f.url.empty() ? "http://127.0.0.1:8080/" : f.url;
  auto load = JobFromFlags(f);
  return load.ok() ? "" : load.status().message();
}

EngineOptions Engine1() {
  EngineOptions o;
  o.addresses.resize(1);
  o.requests.push_back(BuildRequest(RequestSpec{}, "127.0.0.1:8080", true));
  o.threads = 1;
  o.connections = 1;
  return o;
}

std::string EngineSays(const EngineOptions& o) {
  Status s = ValidateOptions(o);
  return s.ok() ? "" : s.message();
}

// Catches: a gate that stops consulting the table for threads (its own
// number drifting from the run file's, so that a run file is accepted that
// the agents then refuse, or the reverse).
TEST(LoadRulesTest, ThreadsAtEveryGate) {
  const uint32_t max = Max(Count::kThreads);
  api::BenchmarkRun run = RunFile();
  run.spec.load.threads = static_cast<int32_t>(max);
  run.spec.load.connections = {max + 1};
  EXPECT_EQ(RunFileSays(run, "load.threads"), std::vector<std::string>{});
  run.spec.load.threads = static_cast<int32_t>(max + 1);
  run.spec.load.connections = {max + 1};
  EXPECT_EQ(RunFileSays(run, "load.threads").size(), 1u);

  v1::LoadJob m = WireJob();
  m.set_threads(max);
  EXPECT_EQ(WireSays(m), "");
  m.set_threads(max + 1);
  EXPECT_NE(WireSays(m).find("job.threads: must be ≤ " + std::to_string(max)), std::string::npos) << WireSays(m);

  LoadFlags f;
  f.threads = std::to_string(max);
  f.connections = std::to_string(max + 1);
  EXPECT_EQ(FlagsSay(f), "");
  f.threads = std::to_string(max + 1);
  EXPECT_EQ(FlagsSay(f), "-c/-t: too large");

  EngineOptions o = Engine1();
  o.threads = max;
  o.connections = max;
  EXPECT_EQ(EngineSays(o), "");
  o.threads = max + 1;
  o.connections = max + 1;
  EXPECT_EQ(EngineSays(o), "threads must be ≤ " + std::to_string(max));
}

// Catches: the same for connections, pipeline and HTTP/2 streams.
TEST(LoadRulesTest, ConnectionsPipelineAndStreamsAtEveryGate) {
  const uint32_t conns = Max(Count::kConnections);
  api::BenchmarkRun run = RunFile();
  run.spec.load.connections = {conns + 1};
  EXPECT_EQ(RunFileSays(run, "load.connections").size(), 1u);
  v1::LoadJob m = WireJob();
  m.set_connections(conns);
  EXPECT_EQ(WireSays(m), "");
  m.set_connections(conns + 1);
  EXPECT_NE(WireSays(m).find("job.connections: must be ≤"), std::string::npos) << WireSays(m);
  LoadFlags f;
  f.connections = std::to_string(conns + 1);
  EXPECT_EQ(FlagsSay(f), "-c/-t: too large");

  const uint32_t pipeline = Max(Count::kPipeline);
  run = RunFile();
  run.spec.load.pipeline = static_cast<int32_t>(pipeline + 1);
  EXPECT_EQ(RunFileSays(run, "load.pipeline").size(), 1u);
  m = WireJob();
  m.set_pipeline(pipeline);
  EXPECT_EQ(WireSays(m), "");
  m.set_pipeline(pipeline + 1);
  EXPECT_NE(WireSays(m).find("job.pipeline: must be ≤"), std::string::npos) << WireSays(m);
  EngineOptions o = Engine1();
  o.pipeline = pipeline;
  EXPECT_EQ(EngineSays(o), "");
  o.pipeline = pipeline + 1;
  EXPECT_NE(EngineSays(o), "");

  const uint32_t streams = Max(Count::kStreams);
  run = RunFile();
  run.spec.targets[0].protocol = Protocol::kH2c;
  run.spec.load.streams = static_cast<int32_t>(streams + 1);
  EXPECT_EQ(RunFileSays(run, "load.streams").size(), 1u);
  m = WireJob();
  m.set_streams(streams + 1);
  EXPECT_NE(WireSays(m).find("job.streams: must be ≤"), std::string::npos) << WireSays(m);
  f = LoadFlags{};
  f.h2c = true;
  f.streams = std::to_string(streams);
  EXPECT_EQ(FlagsSay(f), "");
  f.streams = std::to_string(streams + 1);
  EXPECT_EQ(FlagsSay(f), "--streams: must be between 1 and " + std::to_string(streams) + ", got " + f.streams);
  H2Options h2;
  h2.max_streams = streams + 1;
  EXPECT_FALSE(ValidateH2Options(h2).ok());
}

// Catches: a gate with its own idea of a method or header-name token, or
// of a request target (one letting through what another refuses).
TEST(LoadRulesTest, RequestSyntaxAtEveryGate) {
  EXPECT_TRUE(load_rules::IsToken("GET"));
  EXPECT_TRUE(load_rules::IsToken("X-Custom_1"));
  for (const char* bad : {"", "GE T", "GET\r", "Na:me", "caf\xc3\xa9"}) {
    EXPECT_FALSE(load_rules::IsToken(bad)) << bad;
    api::BenchmarkRun run = RunFile();
    run.spec.scenarios[0].request->method = bad;
    EXPECT_EQ(RunFileSays(run, "request.method").size(), 1u) << bad;
    v1::LoadJob m = WireJob();
    m.mutable_requests(0)->set_method(bad);
    if (*bad != '\0') {  // an empty method on the wire is the default, GET
      EXPECT_NE(WireSays(m).find("job.requests[0].method"), std::string::npos) << bad;
    }
    RequestSpec spec;
    spec.method = bad;
    EXPECT_FALSE(ValidateRequest(spec, "").ok()) << bad;
    spec = RequestSpec{};
    spec.headers = {{bad, "v"}};
    EXPECT_FALSE(ValidateRequest(spec, "").ok()) << bad;
  }
  for (const char* bad : {"path", "/a b", "/a\x7f"}) {
    EXPECT_FALSE(load_rules::StartsLikeTarget(bad) && !load_rules::HasSpaceOrControl(bad)) << bad;
    api::BenchmarkRun run = RunFile();
    run.spec.scenarios[0].request->path = bad;
    EXPECT_EQ(RunFileSays(run, "request.path").size(), 1u) << bad;
    v1::LoadJob m = WireJob();
    m.mutable_requests(0)->set_target(bad);
    EXPECT_NE(WireSays(m).find("job.requests[0].target"), std::string::npos) << bad;
    RequestSpec spec;
    spec.target = bad;
    EXPECT_FALSE(ValidateRequest(spec, "").ok()) << bad;
  }
}

// Catches: a gate letting through metadata gRPC sets itself (the run
// file, the wire and --metadata must agree on which keys those are).
TEST(LoadRulesTest, GrpcOwnMetadataAtEveryGate) {
  for (const char* own : {"content-type", "te", "grpc-timeout", "grpc-encoding"}) {
    EXPECT_TRUE(load_rules::IsGrpcOwnMetadata(own)) << own;
    api::BenchmarkRun run = RunFile();
    run.spec.targets[0].protocol = Protocol::kGrpc;
    run.spec.scenarios[0].request.reset();
    run.spec.scenarios[0].grpc = api::GrpcCallSpec{};
    run.spec.scenarios[0].grpc->method = "a.B/C";
    run.spec.scenarios[0].grpc->metadata = {{own, "x"}};
    EXPECT_EQ(RunFileSays(run, "grpc.metadata").size(), 1u) << own;
    v1::LoadJob m = WireJob();
    m.clear_requests();
    m.set_protocol("h2c");
    m.mutable_grpc()->set_method("a.B/C");
    v1::Header* h = m.mutable_grpc()->add_metadata();
    h->set_name(own);
    h->set_value("x");
    EXPECT_NE(WireSays(m).find("job.grpc.metadata[0].name"), std::string::npos) << own;
    LoadFlags f;
    f.url = "http://127.0.0.1:8080";
    f.grpc = "a.B/C";
    f.metadata = {std::string(own) + ": x"};
    EXPECT_NE(FlagsSay(f).find("is gRPC's own"), std::string::npos) << own;
  }
  EXPECT_FALSE(load_rules::IsGrpcOwnMetadata("x-tenant"));
}

// Catches: the agent giving up on a gRPC call before its deadline's
// DEADLINE_EXCEEDED can come, or a timeout raised for calls without one.
TEST(LoadRulesTest, AGrpcDeadlineRaisesTheAnswerTimeout) {
  using std::chrono::nanoseconds;
  using std::chrono::seconds;
  EXPECT_EQ(load_rules::AnswerTimeout(seconds(2), nanoseconds(0)), seconds(2));
  EXPECT_EQ(load_rules::AnswerTimeout(seconds(2), seconds(3)), seconds(4));
  EXPECT_EQ(load_rules::AnswerTimeout(seconds(10), seconds(3)), seconds(10));
  // The agent's gate: JobOptionsTest.GrpcFlagsAndJobBuildEqualOptions; the
  // controller's: CellJobsTest.GrpcCallsReachEveryJobAsHttp2.
}

}  // namespace
}  // namespace fairbench::agent
