// Validation rules, one by one, on runs built in code.
#include "api/validate.h"
#include "api/cells.h"

#include <gtest/gtest.h>

namespace fairbench::api {
namespace {

using Lines = std::vector<std::string>;

BenchmarkRun Valid() {
  BenchmarkRun run;
  run.metadata.name = "t";
  Target t;
  t.name = "a";
  t.image = "img";
  run.spec.targets.push_back(t);
  Scenario s;
  s.name = "s";
  s.request = Request{};
  s.request->path = "/";
  run.spec.scenarios.push_back(s);
  return run;
}

Lines Check(const BenchmarkRun& run, Platform platform = Platform::kAny) {
  return Validate(run, ValidateOptions{platform}).Lines("");
}

TEST(ValidateTest, AValidRunHasNoDiagnostics) { EXPECT_EQ(Check(Valid()), Lines{}); }

BenchmarkRun ValidVary() {
  BenchmarkRun run = Valid();
  Scenario& s = run.spec.scenarios[0];
  s.request->path = "/echo/{n}";
  s.expect.body = "{n}";
  s.vary = Vary{};
  return run;
}

// Catches: a scenario with vary that cannot vary or be checked let
// through (its cells would run with "{n}" sent as it is, or check nothing),
// or an error that does not name the field to fix.
TEST(ValidateTest, Vary) {
  EXPECT_EQ(Check(ValidVary()), Lines{});
  BenchmarkRun run = ValidVary();
  run.spec.scenarios[0].request->path = "/echo";
  run.spec.scenarios[0].request->headers["X-Id"] = "{n}";
  EXPECT_EQ(Check(run), Lines{}) << "a header value may carry the number";
  run.spec.scenarios[0].request->headers.clear();
  run.spec.scenarios[0].vary->verify_every = 0;
  EXPECT_EQ(Check(run), (Lines{"spec.scenarios[0].vary: needs \"{n}\" in request.path, request.body or a header "
                               "value of request.headers",
                               "spec.scenarios[0].vary.verifyEvery: must be ≥ 1"}));
  run = ValidVary();
  run.spec.scenarios[0].expect.body = "hello";
  EXPECT_EQ(Check(run), (Lines{"spec.scenarios[0].vary: needs \"{n}\" in expect.body or in a string of expect.json: "
                               "answers are checked against it"}));
  run.spec.scenarios[0].expect.body.reset();
  run.spec.scenarios[0].expect.json = nlohmann::json{{"echo", {{"n", "{n}"}}}};
  EXPECT_EQ(Check(run), Lines{}) << "a nested JSON string may carry the number";
  run = ValidVary();
  run.spec.load.pipeline = 4;
  EXPECT_EQ(Check(run), (Lines{"spec.scenarios[0].vary: cannot be used with load.pipeline > 1"}));
  run = ValidVary();
  run.spec.targets[0].protocol = Protocol::kH2c;
  EXPECT_EQ(Check(run), (Lines{"spec.scenarios[0].vary: HTTP/1.1 targets only: target \"a\" is h2c"}));
  run = ValidVary();
  run.spec.scenarios[0].requests = {WeightedRequest{*run.spec.scenarios[0].request, 1}};
  run.spec.scenarios[0].request.reset();
  EXPECT_EQ(Check(run), (Lines{"spec.scenarios[0].vary: needs one request (request), not a weighted mix (requests)"}));
}

// Catches: "{n}" outside a scenario with vary let through: it would be
// sent as it is, and an expectation with it could never match.
TEST(ValidateTest, VaryTokenWithoutVary) {
  BenchmarkRun run = ValidVary();
  run.spec.scenarios[0].vary.reset();
  run.spec.scenarios[0].request->body = "id={n}";
  run.spec.scenarios[0].request->headers["X-Id"] = "{n}";
  EXPECT_EQ(Check(run),
            (Lines{"spec.scenarios[0].request.path: \"{n}\" is replaced only in a scenario with vary",
                   "spec.scenarios[0].request.headers.X-Id: \"{n}\" is replaced only in a scenario with vary",
                   "spec.scenarios[0].request.body: \"{n}\" is replaced only in a scenario with vary",
                   "spec.scenarios[0].expect.body: \"{n}\" is replaced only in a scenario with vary"}));
}

TEST(ValidateTest, TypeMetaAndMetadata) {
  BenchmarkRun run = Valid();
  run.api_version = "fairbench.dev/v1";
  run.kind = "";
  run.metadata.name = "Cpp_Frameworks";
  run.metadata.namespace_ = "a.b";
  run.metadata.labels["bad key"] = "x";
  run.metadata.labels["ok"] = "bad value";
  EXPECT_EQ(
      Check(run),
      (Lines{"apiVersion: must be fairbench.dev/v1alpha1, got \"fairbench.dev/v1\"", "kind: required (BenchmarkRun)",
             "metadata.name: \"Cpp_Frameworks\" is not a valid name: use lowercase letters, digits, '-' and '.', "
             "starting and ending with a letter or digit (RFC 1123 subdomain)",
             "metadata.namespace: \"a.b\" is not a valid name: use lowercase letters, digits and '-', starting and "
             "ending with a letter or digit (RFC 1123 label)",
             "metadata.labels[\"bad key\"]: \"bad key\" is not a valid key: use letters, digits, '-', '_' and '.', "
             "starting and ending with a letter or digit, after an optional \"prefix/\"",
             "metadata.labels.ok: \"bad value\" is not a valid label value: use letters, digits, '-', '_' and '.', "
             "starting and ending with a letter or digit"}));
  run = Valid();
  run.metadata.name = "";
  EXPECT_EQ(Check(run), (Lines{"metadata.name: required (a lowercase name such as \"cpp-frameworks\")"}));
}

TEST(ValidateTest, EmptyListsAndCollectsEverything) {
  BenchmarkRun run = Valid();
  run.spec.targets.clear();
  run.spec.scenarios.clear();
  run.spec.load.connections.clear();
  run.spec.repetitions = 0;
  EXPECT_EQ(Check(run), (Lines{"spec.targets: must not be empty", "spec.scenarios: must not be empty",
                               "spec.load.connections: must not be empty", "spec.repetitions: must be ≥ 1"}));
}

TEST(ValidateTest, Targets) {
  BenchmarkRun run = Valid();
  run.spec.targets.push_back(run.spec.targets[0]);
  Target& t = run.spec.targets[1];
  t.port = 70000;
  t.nofile = 0;
  t.resources.cpu = CpuQuantity{0};
  t.env["A=B"] = "x";
  t.image = "has space";
  EXPECT_EQ(Check(run),
            (Lines{"spec.targets[1].name: duplicate name \"a\"", "spec.targets[1].image: must not contain spaces",
                   "spec.targets[1].port: must be between 1 and 65535, got 70000",
                   "spec.targets[1].resources.cpu: must be greater than 0",
                   "spec.targets[1].nofile: must be between 1 and 1048576, got 0",
                   "spec.targets[1].env[\"A=B\"]: a variable name cannot contain '='"}));
}

// Catches: h2 allowed over plain HTTP (the agents would fail every
// handshake) or h2c over TLS, streams accepted where nothing uses them,
// HTTP/2 combined with what only HTTP/1.1 does. (A scheme or protocol that
// does not exist is refused by decoding: testdata/invalid/bad-scheme.yaml,
// bad-protocol.yaml.)
TEST(ValidateTest, TargetProtocolAndStreams) {
  BenchmarkRun run = Valid();
  run.spec.load.streams = 10;
  EXPECT_EQ(Check(run), (Lines{"spec.load.streams: only for targets with protocol h2, h2c or grpc"}));
  run.spec.targets[0].protocol = Protocol::kH2;
  EXPECT_EQ(Check(run), (Lines{"spec.targets[0].protocol: h2 is HTTP/2 over TLS and needs scheme https (HTTP/2 "
                               "without TLS is h2c)"}));
  run.spec.targets[0].scheme = Scheme::kHttps;
  EXPECT_EQ(Check(run), Lines{});
  run.spec.targets[0].protocol = Protocol::kH2c;
  EXPECT_EQ(Check(run), (Lines{"spec.targets[0].protocol: h2c is HTTP/2 without TLS and needs scheme http (HTTP/2 "
                               "over TLS is h2)"}));
  run.spec.targets[0].scheme = Scheme::kHttp;
  run.spec.load.streams = 0;
  run.spec.load.pipeline = 2;
  run.spec.load.rate = 100;
  EXPECT_EQ(Check(run),
            (Lines{"spec.targets[0].protocol: h2c cannot be used with load.pipeline > 1 (HTTP/2 uses load.streams)",
                   "spec.load.pipeline: " + std::string(kPipelineWithRate),
                   "spec.load.streams: must be between 1 and 65536, got 0"}));
  run.spec.load.pipeline = 1;
  run.spec.load.streams = 100;
  // A constant rate, and so an slo's capacity search, over HTTP/2 streams.
  // Catches: the refusal from before the agents had an HTTP/2 rate.
  run.spec.scenarios[0].slo = Slo{};
  run.spec.scenarios[0].slo->p99 = std::chrono::milliseconds(10);
  run.spec.load.rate = 0;
  EXPECT_EQ(Check(run), Lines{});
  run.spec.scenarios[0].slo.reset();
  run.spec.load.rate = 100;
  EXPECT_EQ(Check(run), Lines{});
  run.spec.load.rate = 0;
  EXPECT_EQ(EffectiveSettings(run.spec, run.spec.scenarios[0]).streams, 100);
  EXPECT_EQ(EffectiveProtocol(run.spec.targets[0]), Protocol::kH2c);
  run.spec.targets[0].protocol.reset();
  EXPECT_EQ(EffectiveProtocol(run.spec.targets[0]), Protocol::kHttp1);
}

// Catches: a fractional CPU not warned about (the target then shares cores
// and nobody is told), a whole CPU warned about, or a warning that does not
// name its field.
TEST(ValidateTest, WarnsAboutFractionalCpus) {
  BenchmarkRun run = Valid();
  run.spec.targets[0].resources.cpu = CpuQuantity{2000};
  EXPECT_TRUE(Warnings(run.spec).empty());
  run.spec.targets.push_back(run.spec.targets[0]);
  run.spec.targets[1].name = "b";
  run.spec.targets[1].resources.cpu = CpuQuantity{1500};
  const std::vector<std::string> w = Warnings(run.spec);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].rfind("spec.targets[1].resources.cpu: 1500m is not a whole number of CPUs: target b", 0), 0u) << w[0];
  EXPECT_TRUE(Check(run).empty()) << "a warning, not an error";
}

// Catches: an objective with no latency bound, a nonsense error ceiling or
// start rate, or an objective combined with a fixed rate or pipelining
// (the search sets the rate) accepted and failing at run time.
TEST(ValidateTest, LatencyObjectives) {
  BenchmarkRun run = Valid();
  run.spec.scenarios[0].slo = Slo{};
  run.spec.scenarios[0].slo->max_error_rate = 1.5;
  run.spec.scenarios[0].slo->start_rate = 0;
  run.spec.scenarios[0].slo->max_steps = 1;
  EXPECT_EQ(Check(run),
            (Lines{"spec.scenarios[0].slo: needs a latency objective: p50, p90, p99 or p999",
                   "spec.scenarios[0].slo.maxErrorRate: must be between 0 and 1 (a share of the requests, e.g. 0.01)",
                   "spec.scenarios[0].slo.startRate: must be ≥ 1 request/s",
                   "spec.scenarios[0].slo.maxSteps: must be between 2 and 50, got 1"}));
  run.spec.scenarios[0].slo = Slo{};
  run.spec.scenarios[0].slo->p99 = std::chrono::milliseconds(10);
  EXPECT_EQ(Check(run), Lines{});
  run.spec.load.rate = 1000;
  EXPECT_EQ(Check(run),
            (Lines{"spec.scenarios[0].slo: cannot be used with load.rate: the search sets the rate itself"}));
}

// Catches: fixed rates accepted beside what sets the rate otherwise (an
// objective's search, load.rate) or beside pipelining, which a constant
// rate cannot carry, or the same level twice (two cells with one key).
TEST(ValidateTest, Rates) {
  BenchmarkRun run = Valid();
  run.spec.scenarios[0].rates = {RateLevel{1000, 0}, RateLevel{0, 50}};
  EXPECT_EQ(Check(run), Lines{});
  run.spec.scenarios[0].rates.push_back(RateLevel{0, 50});
  EXPECT_EQ(Check(run), (Lines{"spec.scenarios[0].rates[2]: duplicate rate 50%"}));
  run.spec.scenarios[0].rates.pop_back();
  run.spec.load.rate = 500;
  EXPECT_EQ(
      Check(run),
      (Lines{"spec.scenarios[0].rates: cannot be used with load.rate: each rate of the list is a cell of its own"}));
  run.spec.load.rate = 0;
  run.spec.load.pipeline = 4;
  EXPECT_EQ(Check(run), (Lines{"spec.scenarios[0].rates: cannot be used with load.pipeline > 1: a constant rate sends "
                               "one request at a time"}));
  run.spec.load.pipeline = 1;
  run.spec.scenarios[0].slo = Slo{};
  run.spec.scenarios[0].slo->p99 = std::chrono::milliseconds(10);
  EXPECT_EQ(Check(run), (Lines{"spec.scenarios[0].rates: cannot be used with slo: a scenario either searches its "
                               "capacity or is measured at fixed rates"}));
}

// Catches: a calibration accepted on Kubernetes (no delay server runs
// beside the controller there), or bounds that let a stall through that
// the machine's noise would blur or that does not fit inside its cell.
TEST(ValidateTest, Calibration) {
  BenchmarkRun run = Valid();
  run.spec.calibration = Calibration{};
  EXPECT_EQ(Check(run), Lines{});
  EXPECT_EQ(Check(run, Platform::kDocker), Lines{});
  EXPECT_EQ(Check(run, Platform::kKubernetes),
            (Lines{"spec.calibration: only for fairbench run on one machine (the delay server runs as a process beside "
                   "it), not on Kubernetes"}));
  run.spec.calibration->stall = std::chrono::milliseconds(20);
  EXPECT_EQ(Check(run), (Lines{"spec.calibration.stall: between 50ms and 10s (shorter, the server's own delay and the "
                               "machine's noise blur it)"}));
  run.spec.calibration->stall = std::chrono::seconds(2);
  EXPECT_EQ(Check(run), (Lines{"spec.calibration.duration: at least twice the stall plus 1s, so that the stall lies "
                               "wholly inside the measurement"}));
  run.spec.calibration->stall = std::chrono::milliseconds(100);
  run.spec.calibration->rate = 100;
  EXPECT_EQ(Check(run), (Lines{"spec.calibration.rate: at least 40 requests due during the stall (rate × stall), or "
                               "its percentiles mean little"}));
}

TEST(ValidateTest, TargetsNeedAWayToRunOnThePlatform) {
  BenchmarkRun run = Valid();
  run.spec.targets[0].image.clear();
  EXPECT_EQ(Check(run), (Lines{"spec.targets[0]: needs an image (Kubernetes) or local.command (local runs)"}));
  EXPECT_EQ(Check(run, Platform::kKubernetes), (Lines{"spec.targets[0].image: required on Kubernetes"}));
  EXPECT_EQ(Check(run, Platform::kDocker),
            (Lines{"spec.targets[0].image: required with --platform docker (the container image the target runs)"}));
  EXPECT_EQ(Check(run, Platform::kLocal), (Lines{"spec.targets[0].local: required to run locally (local.command)"}));
  run.spec.targets[0].local = LocalProcess{};
  run.spec.targets[0].local->ready_path = "healthz";
  run.spec.targets[0].local->ready_timeout = Duration(0);
  EXPECT_EQ(Check(run, Platform::kLocal),
            (Lines{"spec.targets[0].local.command: must not be empty (the program and its arguments)",
                   "spec.targets[0].local.readyPath: must start with \"/\", got \"healthz\"",
                   "spec.targets[0].local.readyTimeout: must be greater than 0"}));
  run.spec.targets[0].local = LocalProcess{};
  run.spec.targets[0].local->command = {"", "--port"};
  EXPECT_EQ(Check(run, Platform::kLocal),
            (Lines{"spec.targets[0].local.command[0]: must not be empty (the program to run)"}));
}

// Catches: the platform-neutral readiness or the Kubernetes command left
// unchecked (a target that never becomes ready, args silently dropped).
TEST(ValidateTest, ReadinessAndContainerCommand) {
  BenchmarkRun run = Valid();
  run.spec.targets[0].readiness = Readiness{"healthz", Duration(0), std::nullopt};
  run.spec.targets[0].args = {"--port", "{port}"};
  EXPECT_EQ(Check(run, Platform::kKubernetes),
            (Lines{"spec.targets[0].args: needs command as well: the whole command line is wrapped to set nofile",
                   "spec.targets[0].readiness.path: must start with \"/\", got \"healthz\"",
                   "spec.targets[0].readiness.timeout: must be greater than 0"}));
  run.spec.targets[0].readiness = Readiness{"/healthz", std::chrono::seconds(5), std::nullopt};
  // The Docker platform sets nofile through the engine: args alone replace
  // the image's CMD. Catches: the Kubernetes rule applied to docker runs.
  EXPECT_EQ(Check(run, Platform::kDocker), Lines{});
  run.spec.targets[0].command = {"/usr/bin/server"};
  EXPECT_EQ(Check(run, Platform::kKubernetes), Lines{});
}

TEST(ValidateTest, NamesAreDnsLabels) {
  BenchmarkRun run = Valid();
  run.spec.targets[0].name = "Drogon";
  run.spec.scenarios[0].name = "";
  EXPECT_EQ(Check(run), (Lines{"spec.targets[0].name: \"Drogon\" is not a valid name: use lowercase letters, digits "
                               "and '-', starting and ending with a letter or digit (RFC 1123 label)",
                               "spec.scenarios[0].name: required"}));
}

TEST(ValidateTest, RequestOrRequests) {
  BenchmarkRun run = Valid();
  run.spec.scenarios[0].request.reset();
  EXPECT_EQ(Check(run), (Lines{"spec.scenarios[0]: needs request (one request), requests (a weighted mix), script (a "
                               "wrk Lua script) or grpc (a gRPC call)"}));
  run.spec.scenarios[0].request = Request{};
  run.spec.scenarios[0].request->path = "/";
  run.spec.scenarios[0].requests.push_back(WeightedRequest{*run.spec.scenarios[0].request, 0});
  EXPECT_EQ(Check(run), (Lines{"spec.scenarios[0].requests: cannot be used together with request",
                               "spec.scenarios[0].requests[0].weight: must be ≥ 1"}));
}

// A scenario's script: one source of three, not with request or requests,
// each source on the platform that can read it. Catches: a script and a
// request both accepted (which would the agents send?), a file accepted on
// Kubernetes (where no file is read), a ConfigMap accepted locally.
TEST(ValidateTest, Scripts) {
  BenchmarkRun run = Valid();
  run.spec.targets[0].local = LocalProcess{};
  run.spec.targets[0].local->command = {"server"};
  Scenario& s = run.spec.scenarios[0];
  s.script = Script{};
  s.script->inline_text = "wrk.method = 'POST'";
  EXPECT_EQ(Check(run), (Lines{"spec.scenarios[0].script: cannot be used together with request: the script makes the "
                               "requests"}));
  s.request.reset();
  s.requests.push_back(WeightedRequest{Request{}, 1});
  s.requests[0].request.path = "/";
  EXPECT_EQ(Check(run), (Lines{"spec.scenarios[0].script: cannot be used together with requests: the script makes "
                               "the requests"}));
  s.requests.clear();
  EXPECT_EQ(Check(run), Lines{});
  s.script->file = "post.lua";
  EXPECT_EQ(Check(run), (Lines{"spec.scenarios[0].script: give only one of file, inline and configMapRef"}));
  s.script->inline_text.reset();
  EXPECT_EQ(Check(run, Platform::kLocal), Lines{});
  EXPECT_EQ(Check(run, Platform::kKubernetes),
            (Lines{"spec.scenarios[0].script.file: only available in a local run file; use inline or configMapRef"}));
  s.script->file.reset();
  s.script->config_map_ref = ConfigMapKeyRef{"Bad_Name", ""};
  EXPECT_EQ(Check(run, Platform::kKubernetes).size(), 2u);
  EXPECT_EQ(Check(run, Platform::kKubernetes)[1], "spec.scenarios[0].script.configMapRef.key: required");
  s.script->config_map_ref = ConfigMapKeyRef{"scripts", "post.lua"};
  EXPECT_EQ(Check(run, Platform::kKubernetes), Lines{});
  EXPECT_EQ(Check(run, Platform::kLocal),
            (Lines{"spec.scenarios[0].script.configMapRef: only available on Kubernetes; use file or inline"}));
  s.script = Script{};
  EXPECT_EQ(Check(run), (Lines{"spec.scenarios[0].script: needs one of file, inline or configMapRef"}));
}

TEST(ValidateTest, Requests) {
  BenchmarkRun run = Valid();
  Request& r = *run.spec.scenarios[0].request;
  r.method = "GE T";
  r.path = "api/status";
  r.headers["Content-Length"] = "3";
  r.headers["X Y"] = "1";
  r.headers["X-Ok"] = "a\r\nInjected: 1";
  r.headers["connection"] = "close";
  r.body = "x";
  r.body_file = "b.json";
  EXPECT_EQ(Check(run),
            (Lines{"spec.scenarios[0].request.method: \"GE T\" is not an HTTP method (a token such as GET "
                   "or POST)",
                   "spec.scenarios[0].request.path: must start with \"/\", got \"api/status\"",
                   "spec.scenarios[0].request.headers.Content-Length: set from the body; remove this header",
                   "spec.scenarios[0].request.headers[\"X Y\"]: \"X Y\" is not a valid header name",
                   "spec.scenarios[0].request.headers.X-Ok: must not contain line breaks",
                   "spec.scenarios[0].request.headers.connection: set from load.keepAlive; remove this header",
                   "spec.scenarios[0].request.bodyFile: cannot be used together with body"}));
  r = Request{};
  r.method = "post";
  r.path = "/a b";
  EXPECT_EQ(Check(run), (Lines{"spec.scenarios[0].request.method: methods are case-sensitive; did you mean \"POST\"?",
                               "spec.scenarios[0].request.path: must not contain spaces or control characters "
                               "(percent-encode them)"}));
  r = Request{};
  r.body_file = "b.json";
  EXPECT_EQ(Check(run, Platform::kKubernetes),
            (Lines{"spec.scenarios[0].request.path: required (e.g. \"/\")",
                   "spec.scenarios[0].request.bodyFile: only available in a local run file; use body"}));
}

TEST(ValidateTest, Expect) {
  BenchmarkRun run = Valid();
  Expect& e = run.spec.scenarios[0].expect;
  e.status = 700;
  e.body = "x";
  e.json = nlohmann::json::object();
  e.content_type = "";
  EXPECT_EQ(Check(run), (Lines{"spec.scenarios[0].expect.status: must be between 100 and 599, got 700",
                               "spec.scenarios[0].expect.json: cannot be used together with body",
                               "spec.scenarios[0].expect.contentType: must not be empty"}));
}

TEST(ValidateTest, ConnectionsCoverEveryThreadOfEveryAgent) {
  BenchmarkRun run = Valid();
  run.spec.load.connections = {2, 4, 0, 4};
  EXPECT_EQ(Check(run),
            (Lines{"spec.load.connections[0]: 2 connections cannot be spread over 4 threads",
                   "spec.load.connections[2]: must be ≥ 1", "spec.load.connections[3]: duplicate level 4"}));
  run.spec.load.connections = {6, 8};
  run.spec.load.agents = 2;
  EXPECT_EQ(Check(run), (Lines{"spec.load.connections[0]: 6 connections cannot be spread over 2 agents × 4 threads "
                               "(each agent gets 3)"}));
  run = Valid();
  run.spec.scenarios.push_back(run.spec.scenarios[0]);
  run.spec.scenarios.push_back(run.spec.scenarios[0]);
  run.spec.scenarios[1].name = "s1";
  run.spec.scenarios[2].name = "s2";
  run.spec.scenarios[2].connections = {0, 2000000};
  EXPECT_EQ(Check(run), (Lines{"spec.scenarios[2].connections[0]: must be ≥ 1",
                               "spec.scenarios[2].connections[1]: must be at most 1000000"}));
}

TEST(ValidateTest, Load) {
  BenchmarkRun run = Valid();
  Load& l = run.spec.load;
  l.threads = 0;
  l.duration = Duration(0);
  l.warmup = Duration(-1);
  l.timeout = Duration(0);
  l.pipeline = 0;
  l.rate = -5;
  l.agents = 1000;
  run.spec.cooldown = Duration(-1);
  run.spec.scenarios[0].duration = Duration(0);
  EXPECT_EQ(Check(run), (Lines{"spec.scenarios[0].duration: must be greater than 0", "spec.load.threads: must be ≥ 1",
                               "spec.load.duration: must be greater than 0", "spec.load.warmup: must not be negative",
                               "spec.load.timeout: must be greater than 0", "spec.load.pipeline: must be ≥ 1",
                               "spec.load.rate: must not be negative", "spec.load.agents: must be at most 256",
                               "spec.cooldown: must not be negative"}));
}

// Catches: load.rate with load.pipeline > 1 accepted, so that `fairbench
// run` and the operator deploy and verify the target and then every cell
// fails at the agent (job.rate: a constant rate cannot be combined with
// pipeline > 1); or the refusal naming another field than spec.load.pipeline.
TEST(ValidateTest, AConstantRateIsNotPipelined) {
  BenchmarkRun run = Valid();
  run.spec.load.rate = 100;
  run.spec.load.pipeline = 2;
  EXPECT_EQ(Check(run), (Lines{"spec.load.pipeline: cannot be combined with load.rate: a constant rate sends one "
                               "request at a time on each connection (set pipeline to 1, or remove rate)"}));
  EXPECT_EQ(Check(run, Platform::kKubernetes), (Lines{"spec.load.pipeline: " + std::string(kPipelineWithRate)}));
  run.spec.load.pipeline = 1;
  EXPECT_EQ(Check(run), Lines{});
  run.spec.load.rate = 0;
  run.spec.load.pipeline = 16;
  EXPECT_EQ(Check(run), Lines{});
}

// Catches: a request header HTTP/2 forbids (RFC 9113 §8.2.2: connection-
// specific fields, TE other than "trailers") or an empty Host (the
// :authority) accepted for an h2/h2c target, or gRPC metadata of that kind,
// each then refused by every agent after the target was deployed; a gRPC
// content-length that would override the message's own; or the same
// headers refused for HTTP/1.1, where they are allowed.
TEST(ValidateTest, Http2RequestsCarryNoConnectionSpecificHeaders) {
  BenchmarkRun run = Valid();
  Request& r = *run.spec.scenarios[0].request;
  r.headers["Keep-Alive"] = "timeout=5";
  r.headers["Proxy-Connection"] = "keep-alive";
  r.headers["Upgrade"] = "websocket";
  r.headers["TE"] = "gzip";
  r.headers["Host"] = "";
  r.headers["X-Ok"] = "1";
  EXPECT_EQ(Check(run), Lines{}) << "HTTP/1.1 allows them";
  run.spec.targets.push_back(run.spec.targets[0]);
  run.spec.targets[1].name = "b";
  run.spec.targets[1].protocol = Protocol::kH2c;
  EXPECT_EQ(
      Check(run),
      (Lines{"spec.scenarios[0].request.headers.Host: must not be empty: it becomes the request's :authority in "
             "HTTP/2 (target \"b\" is h2c)",
             "spec.scenarios[0].request.headers.Keep-Alive: \"Keep-Alive\" is connection-specific, not allowed in "
             "HTTP/2 (RFC 9113 §8.2.2): target \"b\" is h2c",
             "spec.scenarios[0].request.headers.Proxy-Connection: \"Proxy-Connection\" is connection-specific, not "
             "allowed in HTTP/2 (RFC 9113 §8.2.2): target \"b\" is h2c",
             "spec.scenarios[0].request.headers.TE: TE may only be \"trailers\" in HTTP/2 (RFC 9113 §8.2.2): "
             "target \"b\" is h2c",
             "spec.scenarios[0].request.headers.Upgrade: \"Upgrade\" is connection-specific, not allowed in "
             "HTTP/2 (RFC 9113 §8.2.2): target \"b\" is h2c"}));
  r.headers = {{"TE", "Trailers"}, {"Host", "example.org"}};
  EXPECT_EQ(Check(run), Lines{});

  // gRPC runs on HTTP/2 always.
  run = Valid();
  run.spec.targets[0].protocol = Protocol::kGrpc;
  run.spec.scenarios[0].request.reset();
  run.spec.scenarios[0].grpc = GrpcCallSpec{};
  GrpcCallSpec& g = *run.spec.scenarios[0].grpc;
  g.method = "pkg.Svc/Call";
  g.metadata = {{"Upgrade", "h2c"}, {"connection", "close"}, {"content-length", "5"}, {"host", ""}, {"x-tenant", "a"}};
  EXPECT_EQ(Check(run),
            (Lines{"spec.scenarios[0].grpc.metadata.Upgrade: \"Upgrade\" is connection-specific, not allowed in "
                   "HTTP/2 (RFC 9113 §8.2.2), which gRPC runs on",
                   "spec.scenarios[0].grpc.metadata.connection: \"connection\" is connection-specific, not allowed in "
                   "HTTP/2 (RFC 9113 §8.2.2), which gRPC runs on",
                   "spec.scenarios[0].grpc.metadata.content-length: set from the message; remove this key",
                   "spec.scenarios[0].grpc.metadata.host: must not be empty: it becomes the call's :authority"}));
}

TEST(ValidateTest, Placement) {
  BenchmarkRun run = Valid();
  Placement& p = run.spec.placement;
  p.target.node_name = "node-a";
  p.agents.node_name = "node-a";
  p.target.node_selector["fairbench.dev/role"] = "target";
  p.agents.node_selector["role"] = "a b";
  p.agents.tolerations.push_back(Toleration{"", "Equal", "x", "Sometimes", 5});
  p.agents.tolerations.push_back(Toleration{"k", "Exists", "v", "", std::nullopt});
  p.agents.tolerations.push_back(Toleration{"k", "Maybe", "", "NoExecute", 5});
  EXPECT_EQ(
      Check(run),
      (Lines{"spec.placement.agents.nodeName: must differ from the target's node: agents never share the "
             "target's node",
             "spec.placement.agents.nodeSelector.role: \"a b\" is not a valid label value: use letters, digits, "
             "'-', '_' and '.', starting and ending with a letter or digit",
             "spec.placement.agents.tolerations[0].key: required unless the operator is Exists",
             "spec.placement.agents.tolerations[0].effect: must be NoSchedule, PreferNoSchedule or NoExecute, got "
             "\"Sometimes\"",
             "spec.placement.agents.tolerations[0].tolerationSeconds: only applies with the effect NoExecute",
             "spec.placement.agents.tolerations[1].value: must be empty when the operator is Exists",
             "spec.placement.agents.tolerations[2].operator: must be Exists or Equal, got \"Maybe\""}));
}

TEST(ValidateTest, LocalCpusAreDisjoint) {
  BenchmarkRun run = Valid();
  run.spec.local.target_cpus.cpus = {0, 1, 2, 3};
  run.spec.local.agent_cpus.cpus = {2, 3, 4};
  EXPECT_EQ(Check(run),
            (Lines{"spec.local.agentCpus: CPUs 2-3 are also in targetCpus; targets and agents never share a CPU"}));
  run.spec.local.agent_cpus.cpus = {3, 4};
  EXPECT_EQ(Check(run),
            (Lines{"spec.local.agentCpus: CPU 3 is also in targetCpus; targets and agents never share a CPU"}));
}

// A profile must select cells that exist: each selector field is checked
// against the spec and the first that matches nothing is named. Catches: a
// typo that would silently profile nothing.
TEST(ValidateTest, AProfileSelectsCellsThatExist) {
  BenchmarkRun run = Valid();
  run.spec.load.connections = {100, 1000};
  run.spec.profile = Profile{};
  EXPECT_EQ(Check(run), (Lines{"spec.profile: needs all: true or cells (the cells to profile)"}));
  run.spec.profile->all = true;
  EXPECT_EQ(Check(run), Lines{});
  run.spec.profile->cells = {ProfileCell{"a", "", 0}};
  run.spec.profile->frequency = 0;
  EXPECT_EQ(Check(run), (Lines{"spec.profile.cells: cannot be used together with all",
                               "spec.profile.frequency: must be between 1 and 10000, got 0"}));
  run.spec.profile = Profile{};
  run.spec.profile->cells = {ProfileCell{"a", "s", 1000}, ProfileCell{"b", "", 0}, ProfileCell{"", "x", 0},
                             ProfileCell{"", "s", 500},   ProfileCell{"", "", 10}, ProfileCell{}};
  EXPECT_EQ(Check(run),
            (Lines{"spec.profile.cells[1].target: no target \"b\" in spec.targets (did you mean \"a\"?)",
                   "spec.profile.cells[2].scenario: no scenario \"x\" in spec.scenarios (did you mean \"s\"?)",
                   "spec.profile.cells[3].connections: no cell runs at 500 connections (scenario s runs "
                   "at: 100, 1000)",
                   "spec.profile.cells[4].connections: no cell runs at 10 connections (levels in this "
                   "run: 100, 1000)",
                   "spec.profile.cells[5]: must name a target, a scenario or connections (or use "
                   "profile.all)"}));
}

TEST(ValidateTest, TheRunFitsInItsStatus) {
  BenchmarkRun run = Valid();
  run.spec.load.connections = {100, 200, 300, 400, 500, 600};
  run.spec.repetitions = 100;
  run.spec.targets.push_back(run.spec.targets[0]);
  run.spec.targets[1].name = "b";
  EXPECT_EQ(Check(run), (Lines{"spec: expands into 1200 cells (targets × scenarios × connection levels × repetitions); "
                               "at most 1000 fit in one run's status"}));
}

}  // namespace
}  // namespace fairbench::api
