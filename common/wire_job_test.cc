#include "common/wire_job.h"

#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <set>

namespace fairbench::wire {
namespace {

using std::chrono::nanoseconds;
using std::chrono::system_clock;

// Every field differs from JobSpec's default (and every request field from
// JobRequest's), so a field dropped on either side shows up as a difference.
JobSpec FullSpec() {
  JobSpec j;
  j.job_id = "cell-7/rep-2";
  j.host = "target.example";
  j.port = 18081;
  j.host_header = "example.org:8443";
  JobRequest hello;
  hello.name = "hello";
  hello.method = "HEAD";
  hello.target = "/plaintext?x=1";
  hello.headers = {{"Accept", "text/plain"}, {"X-Trace", "a b"}};
  hello.body = std::string("bin\0ary", 7);
  hello.weight = 3;
  JobRequest echo;
  echo.name = "echo";
  echo.method = "POST";
  echo.target = "/api/echo";
  echo.headers = {{"Content-Type", "application/json"}};
  echo.body = R"({"a":1})";
  echo.weight = 5;
  j.requests = {hello, echo};
  j.connections = 250;
  j.threads = 3;
  j.warmup = nanoseconds(1'500'000'001);
  j.duration = nanoseconds(7'000'000'003);
  j.timeout = nanoseconds(900'000'007);
  j.interval = nanoseconds(250'000'009);
  j.keep_alive = false;
  j.scheme = Scheme::kHttps;
  j.protocol = Protocol::kH2;
  j.streams = 10;
  j.idle_wait = IdleWaitMode::kNap;
  j.pipeline = 1;  // a rate excludes pipelining: FullPipelinedSpec covers pipeline
  j.rate = 1234.5;
  j.start = system_clock::time_point(nanoseconds(1'700'000'000'123'456'789));
  j.connection_offset = 100;
  j.total_connections = 1000;
  j.send_offset = nanoseconds(12'500'001);
  return j;
}

// The same with pipelining instead of a rate (the two cannot be combined).
JobSpec FullPipelinedSpec() {
  JobSpec j = FullSpec();
  j.rate = 0;
  j.pipeline = 16;
  return j;
}

JobSpec RoundTrip(const JobSpec& in) {
  v1::LoadJob msg;
  ToProto(in, &msg);
  std::string bytes;
  EXPECT_TRUE(msg.SerializeToString(&bytes));
  v1::LoadJob parsed;
  EXPECT_TRUE(parsed.ParseFromString(bytes));
  auto back = FromProto(parsed);
  EXPECT_TRUE(back.ok()) << back.status().ToString();
  return back.ok() ? *back : JobSpec{};
}

// The smallest job that runs: everything else left at zero/empty.
v1::LoadJob MinimalJob() {
  v1::LoadJob m;
  m.set_job_id("j1");
  m.set_host("127.0.0.1");
  m.set_port(8080);
  m.add_requests();
  m.set_connections(4);
  return m;
}

// Catches: a field dropped by ToProto or by FromProto (job_id, host, port,
// host_header, any request field, connections, threads, any duration,
// keep_alive, rate, start, connection_offset, total_connections), or two
// fields swapped (e.g. warmup ↔ duration: their values differ).
TEST(WireJobTest, FullyPopulatedSpecRoundTripsExactly) {
  const JobSpec full = FullSpec();
  // The fixture itself: every field must differ from the default, or a
  // dropped field would decode to the same value and go unnoticed.
  const JobSpec d;
  const JobRequest dr;
  EXPECT_NE(full.job_id, d.job_id);
  EXPECT_NE(full.host, d.host);
  EXPECT_NE(full.port, d.port);
  EXPECT_NE(full.host_header, d.host_header);
  for (const JobRequest& r : full.requests) {
    EXPECT_NE(r.name, dr.name);
    EXPECT_NE(r.method, dr.method);
    EXPECT_NE(r.target, dr.target);
    EXPECT_NE(r.headers, dr.headers);
    EXPECT_NE(r.body, dr.body);
    EXPECT_NE(r.weight, dr.weight);
  }
  EXPECT_NE(full.connections, d.connections);
  EXPECT_NE(full.threads, d.threads);
  EXPECT_NE(full.warmup, d.warmup);
  EXPECT_NE(full.duration, d.duration);
  EXPECT_NE(full.timeout, d.timeout);
  EXPECT_NE(full.interval, d.interval);
  EXPECT_NE(full.keep_alive, d.keep_alive);
  EXPECT_NE(full.scheme, d.scheme);
  EXPECT_NE(full.idle_wait, d.idle_wait);
  EXPECT_NE(full.protocol, d.protocol);
  EXPECT_NE(full.streams, d.streams);
  EXPECT_NE(full.rate, d.rate);
  EXPECT_NE(full.start, d.start);
  EXPECT_NE(full.connection_offset, d.connection_offset);
  EXPECT_NE(full.total_connections, d.total_connections);
  EXPECT_NE(full.send_offset, d.send_offset);

  EXPECT_EQ(RoundTrip(full), full);
}

// Catches: a protocol the agent cannot speak, or h2/h2c on the wrong
// scheme, accepted (the engine would refuse it only after the job started).
TEST(WireJobTest, ProtocolIsChecked) {
  v1::LoadJob m = MinimalJob();
  EXPECT_EQ(FromProto(m)->protocol, Protocol::kHttp1);
  EXPECT_EQ(FromProto(m)->streams, 1u);
  m.set_protocol("h3");
  EXPECT_NE(FromProto(m).status().message().find("protocol"), std::string::npos);
  m.set_protocol("h2");
  EXPECT_FALSE(FromProto(m).ok()) << "h2 without https";
  m.set_scheme(v1::SCHEME_HTTPS);
  EXPECT_TRUE(FromProto(m).ok());
  m.set_protocol("h2c");
  EXPECT_FALSE(FromProto(m).ok()) << "h2c with https";
  m.set_scheme(static_cast<v1::Scheme>(7));
  EXPECT_EQ(FromProto(m).status().message(), "job.scheme: must be http or https (got 7)");
}

// Catches: an idle_wait value other than the four let through (the agent
// would fall back to auto silently), unset not read as auto, or the codec
// mapping one mode to another.
TEST(WireJobTest, IdleWaitIsOneOfFourSettings) {
  v1::LoadJob m = MinimalJob();
  EXPECT_EQ(FromProto(m)->idle_wait, IdleWaitMode::kAuto);
  for (const auto& [mode, name] : kIdleWaitModeNames) {
    JobSpec spec = *FromProto(m);
    spec.idle_wait = mode;
    EXPECT_EQ(RoundTrip(spec).idle_wait, mode) << name;
  }
  m.set_idle_wait(static_cast<v1::IdleWaitMode>(9));
  EXPECT_EQ(FromProto(m).status().message(), "job.idle_wait: must be auto, block, nap or poll (got 9)");
}

// Catches: a dropped or mis-mapped pipeline field (pipelining cannot be
// combined with a rate, so it has its own fully populated spec).
TEST(WireJobTest, FullyPopulatedPipelinedSpecRoundTripsExactly) {
  const JobSpec full = FullPipelinedSpec();
  EXPECT_NE(full.pipeline, JobSpec{}.pipeline);
  EXPECT_EQ(RoundTrip(full), full);
}

// Catches: a LoadJob field (today's, or one added to agent.proto later) that
// ToProto never writes — i.e. a proto field the codec does not cover. Uses
// reflection, so a new field fails here until JobSpec carries it.
TEST(WireJobTest, ToProtoWritesEveryProtoField) {
  JobSpec spec = FullSpec();
  spec.keep_alive = true;  // proto3 does not mark a false bool as present
  // (A script excludes requests when decoded; ToProto writes both.)
  spec.script = JobScript{"post.lua", "wrk.method = 'POST'", {"a"}};
  spec.probe = true;
  spec.grpc = JobGrpc{"a.B/C", "m", {{"k", "v"}}, nanoseconds(1), 7, GrpcCallKind::kUnary};
  spec.vary = JobVary{9, 10, "{n}", true};
  v1::LoadJob msg;
  ToProto(spec, &msg);
  auto check = [](const google::protobuf::Message& m) {
    const google::protobuf::Descriptor* desc = m.GetDescriptor();
    const google::protobuf::Reflection* refl = m.GetReflection();
    for (int i = 0; i < desc->field_count(); ++i) {
      const google::protobuf::FieldDescriptor* f = desc->field(i);
      const bool set = f->is_repeated() ? refl->FieldSize(m, f) > 0 : refl->HasField(m, f);
      EXPECT_TRUE(set) << desc->full_name() << "." << f->name() << " is not written by ToProto";
    }
  };
  check(msg);
  check(msg.script());
  check(msg.grpc());
  check(msg.vary());
  for (const v1::Request& r : msg.requests()) {
    check(r);
    for (const v1::Header& h : r.headers()) check(h);
  }
}

// Catches: a default changed or lost on the agent side — pipeline 0 read as 0
// instead of 1, weight 0 instead of 1, method "" instead of GET, target ""
// instead of "/", interval/duration/timeout 0 kept as 0 instead of 1 s / 10 s
// / 2 s, threads 0 instead of 1, start_unix_ns 0 read as "start at the epoch"
// instead of unset — and FromProto's defaults drifting from JobSpec's.
TEST(WireJobTest, ZeroAndEmptyFieldsDecodeToTheDefaults) {
  auto got = FromProto(MinimalJob());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const JobSpec& j = *got;
  EXPECT_EQ(j.host_header, "");
  EXPECT_EQ(j.EffectiveHostHeader(), "127.0.0.1:8080");
  ASSERT_EQ(j.requests.size(), 1u);
  EXPECT_EQ(j.requests[0].name, "");
  EXPECT_EQ(j.requests[0].method, "GET");
  EXPECT_EQ(j.requests[0].target, "/");
  EXPECT_TRUE(j.requests[0].headers.empty());
  EXPECT_EQ(j.requests[0].body, "");
  EXPECT_EQ(j.requests[0].weight, 1u);
  EXPECT_EQ(j.threads, 1u);
  EXPECT_EQ(j.warmup, nanoseconds(0));
  EXPECT_EQ(j.duration, std::chrono::seconds(10));
  EXPECT_EQ(j.timeout, std::chrono::seconds(2));
  EXPECT_EQ(j.interval, std::chrono::seconds(1));
  EXPECT_FALSE(j.keep_alive) << "a proto3 bool: false is what was sent";
  EXPECT_EQ(j.pipeline, 1u);
  EXPECT_EQ(j.rate, 0.0);
  EXPECT_FALSE(j.start.has_value());
  EXPECT_EQ(j.connection_offset, 0u);
  EXPECT_EQ(j.total_connections, 0u);

  // One set of defaults: what FromProto fills in is JobSpec's own.
  JobSpec expected;
  expected.job_id = "j1";
  expected.host = "127.0.0.1";
  expected.port = 8080;
  expected.requests = {JobRequest{}};
  expected.connections = 4;
  expected.keep_alive = false;
  EXPECT_EQ(j, expected);
}

// Catches: ToProto skipping defaults or an unset start not written as 0 (a
// default JobSpec must come back as itself, keep_alive true included).
TEST(WireJobTest, DefaultSpecRoundTrips) {
  JobSpec j;
  j.job_id = "j";
  j.host = "localhost";
  j.port = 80;
  j.requests = {JobRequest{}};
  j.connections = 1;
  EXPECT_EQ(RoundTrip(j), j);
}

// Catches: start truncated to micro/milliseconds or seconds (e.g. a cast
// through system_clock::duration on a coarser clock, or via double), or the
// sign/epoch mixed up.
TEST(WireJobTest, StartKeepsNanosecondPrecision) {
  JobSpec j = FullSpec();
  j.start = system_clock::time_point(nanoseconds(1'700'000'000'000'000'001));
  v1::LoadJob msg;
  ToProto(j, &msg);
  EXPECT_EQ(msg.start_unix_ns(), 1'700'000'000'000'000'001);
  auto back = FromProto(msg);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_TRUE(back->start.has_value());
  EXPECT_EQ(std::chrono::duration_cast<nanoseconds>(back->start->time_since_epoch()).count(),
            1'700'000'000'000'000'001);

  j.start.reset();
  ToProto(j, &msg);
  EXPECT_EQ(msg.start_unix_ns(), 0);
  back = FromProto(msg);
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->start.has_value());
}

// Catches: a wrong Host header — the override ignored, the port left out, or
// an IPv6 address without brackets ("::1:8080" is not a valid Host).
TEST(WireJobTest, EffectiveHostHeader) {
  JobSpec j;
  j.host = "10.0.0.5";
  j.port = 8080;
  EXPECT_EQ(j.EffectiveHostHeader(), "10.0.0.5:8080");
  j.host = "::1";
  EXPECT_EQ(j.EffectiveHostHeader(), "[::1]:8080");
  j.host_header = "example.org";
  EXPECT_EQ(j.EffectiveHostHeader(), "example.org");
}

// Catches: a job that cannot run being accepted (so the agent starts an
// engine that fails later with a message that names no job field), or a
// refusal whose message names the wrong field / the wrong request index.
// A job whose requests come from a wrk script: the script's name, text and
// arguments arrive as sent, and a probe stays a probe. Catches: the script
// or its args dropped on the way (the agents would send nothing or call
// init() without its arguments), the probe flag lost (a full load instead).
TEST(WireJobTest, ScriptedJobRoundTrips) {
  JobSpec spec = FullSpec();
  spec.requests.clear();
  spec.script = JobScript{"post_echo.lua", "wrk.method = \"POST\"\n", {"alpha", "b c"}};
  EXPECT_EQ(RoundTrip(spec), spec);
  spec.probe = true;
  EXPECT_EQ(RoundTrip(spec), spec);
  v1::LoadJob both;
  spec.requests.push_back(JobRequest{});
  ToProto(spec, &both);
  auto refused = FromProto(both);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message().rfind("job.requests: must be empty with a script", 0), 0u)
      << refused.status().message();
  JobSpec plain = FullSpec();
  plain.probe = true;
  v1::LoadJob probe;
  ToProto(plain, &probe);
  EXPECT_EQ(FromProto(probe).status().message().rfind("job.probe: only with a script", 0), 0u);
}

// Catches: a field of the gRPC call dropped on either side of the wire (the
// agents would call another method, lose the metadata or the deadline, or
// check unary answers they should not).
TEST(WireJobTest, GrpcJobRoundTripsAndIsChecked) {
  JobSpec spec = FullSpec();
  spec.requests.clear();
  spec.protocol = Protocol::kH2;
  spec.grpc = JobGrpc{"fairbench.echo.v1.Echo/Unary",
                      std::string("\x0a\x02hi\0", 5),
                      {{"x-tenant", "a b"}},
                      nanoseconds(250'000'001),
                      1u << 20,
                      GrpcCallKind::kUnary};
  EXPECT_EQ(RoundTrip(spec), spec);
  spec.grpc->kind = GrpcCallKind::kServerStreaming;
  EXPECT_EQ(RoundTrip(spec), spec);
  v1::LoadJob msg;
  ToProto(spec, &msg);  // every field written: ToProtoWritesEveryProtoField
  struct Case {
    const char* prefix;
    std::function<void(v1::LoadJob&)> mutate;
  };
  const std::vector<Case> cases = {
      {"job.grpc.method: 'Echo' is not", [](v1::LoadJob& m) { m.mutable_grpc()->set_method("Echo"); }},
      {"job.grpc.method: 'a/b/c' is not", [](v1::LoadJob& m) { m.mutable_grpc()->set_method("a/b/c"); }},
      {"job.grpc.metadata[0].name:",
       [](v1::LoadJob& m) { m.mutable_grpc()->mutable_metadata(0)->set_name("bad key"); }},
      {"job.grpc.metadata[0].value:",
       [](v1::LoadJob& m) { m.mutable_grpc()->mutable_metadata(0)->set_value("a\r\nb"); }},
      {"job.grpc.deadline_ns: must be ≥ 0", [](v1::LoadJob& m) { m.mutable_grpc()->set_deadline_ns(-1); }},
      {"job.grpc.kind: must be", [](v1::LoadJob& m) { m.mutable_grpc()->set_kind(static_cast<v1::GrpcCallKind>(3)); }},
      {"job.requests: must be empty with grpc", [](v1::LoadJob& m) { m.add_requests()->set_target("/"); }},
      {"job.grpc: gRPC needs protocol h2 or h2c", [](v1::LoadJob& m) { m.clear_protocol(); }},
      {"job.protocol: must be http1, h2 or h2c", [](v1::LoadJob& m) { m.set_protocol("grpc"); }},
  };
  for (const Case& c : cases) {
    v1::LoadJob bad = msg;
    c.mutate(bad);
    auto r = FromProto(bad);
    ASSERT_FALSE(r.ok()) << c.prefix;
    EXPECT_EQ(r.status().message().rfind(c.prefix, 0), 0u) << r.status().message();
  }
}

// Catches: vary lost or changed on the wire (the agent would send "{n}" as
// it is, or check against another expectation), its verify_every default
// not applied, or a job the engine cannot vary let through to it.
TEST(WireJobTest, VaryJobRoundTripsAndIsChecked) {
  JobSpec spec = FullSpec();
  spec.requests.resize(1);
  spec.pipeline = 1;
  spec.rate = 0;
  spec.protocol = Protocol::kHttp1;
  spec.scheme = Scheme::kHttp;
  spec.vary = JobVary{0xfedcba9876543210ull, 7, R"({"n":"{n}"})", true};
  EXPECT_EQ(RoundTrip(spec), spec);
  v1::LoadJob msg;
  ToProto(spec, &msg);
  msg.mutable_vary()->set_verify_every(0);
  auto r = FromProto(msg);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->vary->verify_every, 100u);
  struct Case {
    const char* prefix;
    std::function<void(v1::LoadJob&)> mutate;
  };
  const std::vector<Case> cases = {
      {"job.vary: needs exactly one request", [](v1::LoadJob& m) { *m.add_requests() = m.requests(0); }},
      {"job.vary: not with pipeline > 1", [](v1::LoadJob& m) { m.set_pipeline(2); }},
      {"job.vary: HTTP/1.1 only", [](v1::LoadJob& m) { m.set_protocol("h2c"); }},
  };
  for (const Case& c : cases) {
    v1::LoadJob bad = msg;
    c.mutate(bad);
    auto refused = FromProto(bad);
    ASSERT_FALSE(refused.ok()) << c.prefix;
    EXPECT_EQ(refused.status().message().rfind(c.prefix, 0), 0u) << refused.status().message();
  }
}

TEST(WireJobTest, RefusesJobsThatCannotRunNamingTheField) {
  struct Case {
    const char* field;  // the message must start with "job.<field>:"
    std::function<void(v1::LoadJob&)> mutate;
  };
  const std::vector<Case> cases = {
      {"job_id", [](v1::LoadJob& m) { m.clear_job_id(); }},
      {"host", [](v1::LoadJob& m) { m.clear_host(); }},
      {"host", [](v1::LoadJob& m) { m.set_host("a b"); }},
      {"port", [](v1::LoadJob& m) { m.set_port(0); }},
      {"port", [](v1::LoadJob& m) { m.set_port(65536); }},
      {"host_header", [](v1::LoadJob& m) { m.set_host_header("a\r\nX: y"); }},
      {"requests", [](v1::LoadJob& m) { m.clear_requests(); }},
      {"requests[1].method", [](v1::LoadJob& m) { m.add_requests()->set_method("G T"); }},
      {"requests[1].target", [](v1::LoadJob& m) { m.add_requests()->set_target("api"); }},
      {"requests[1].target", [](v1::LoadJob& m) { m.add_requests()->set_target("/a b"); }},
      {"requests[1].headers[0].name", [](v1::LoadJob& m) { m.add_requests()->add_headers()->set_name("Bad Name"); }},
      {"requests[1].headers[0].value",
       [](v1::LoadJob& m) {
         v1::Header* h = m.add_requests()->add_headers();
         h->set_name("X");
         h->set_value("a\nb");
       }},
      {"connections", [](v1::LoadJob& m) { m.set_connections(0); }},
      {"threads", [](v1::LoadJob& m) { m.set_threads(5); }},  // 4 connections
      {"threads",
       [](v1::LoadJob& m) {
         m.set_connections(5000);
         m.set_threads(1025);
       }},
      {"warmup_ns", [](v1::LoadJob& m) { m.set_warmup_ns(-1); }},
      {"duration_ns", [](v1::LoadJob& m) { m.set_duration_ns(-1); }},
      {"duration_ns",
       [](v1::LoadJob& m) {
         m.set_warmup_ns(std::numeric_limits<int64_t>::max());
         m.set_duration_ns(1);
       }},
      {"timeout_ns", [](v1::LoadJob& m) { m.set_timeout_ns(-5); }},
      {"interval_ns", [](v1::LoadJob& m) { m.set_interval_ns(-1); }},
      {"interval_ns", [](v1::LoadJob& m) { m.set_interval_ns(9'999'999); }},
      {"pipeline", [](v1::LoadJob& m) { m.set_pipeline(1025); }},
      {"rate", [](v1::LoadJob& m) { m.set_rate(-1); }},
      {"rate", [](v1::LoadJob& m) { m.set_rate(std::numeric_limits<double>::quiet_NaN()); }},
      {"rate", [](v1::LoadJob& m) { m.set_rate(std::numeric_limits<double>::infinity()); }},
      {"rate", [](v1::LoadJob& m) { m.set_rate(1e-4); }},
      {"rate",
       [](v1::LoadJob& m) {
         m.set_rate(100);
         m.set_pipeline(2);
       }},
      {"start_unix_ns", [](v1::LoadJob& m) { m.set_start_unix_ns(-1); }},
      {"send_offset_ns", [](v1::LoadJob& m) { m.set_send_offset_ns(-1); }},
      {"send_offset_ns", [](v1::LoadJob& m) { m.set_send_offset_ns(1'000'000'000); }},  // = the 1 s interval
      {"total_connections",
       [](v1::LoadJob& m) {
         m.set_connection_offset(10);
         m.set_total_connections(12);  // 10 + 4 connections
       }},
  };
  ASSERT_TRUE(FromProto(MinimalJob()).ok());
  for (const Case& c : cases) {
    v1::LoadJob m = MinimalJob();
    c.mutate(m);
    auto r = FromProto(m);
    ASSERT_FALSE(r.ok()) << "accepted a job with a bad " << c.field;
    EXPECT_EQ(r.status().code(), Status::Code::kInvalidArgument) << r.status().ToString();
    const std::string prefix = std::string("job.") + c.field + ": ";
    EXPECT_EQ(r.status().message().rfind(prefix, 0), 0u)
        << "expected '" << prefix << "…', got '" << r.status().message() << "'";
  }
}

// Catches: limits one off — the edges that must still be accepted (port
// 65535, threads == connections, total == offset + connections, interval
// 10 ms, weight 0 → 1 in a later request, target "*").
TEST(WireJobTest, AcceptsTheEdges) {
  v1::LoadJob m = MinimalJob();
  m.set_port(65535);
  m.set_threads(4);
  m.set_connection_offset(10);
  m.set_total_connections(14);
  m.set_interval_ns(10'000'000);
  m.add_requests()->set_target("*");
  m.add_requests()->set_weight(0);
  auto r = FromProto(m);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->port, 65535);
  EXPECT_EQ(r->threads, 4u);
  EXPECT_EQ(r->requests[1].target, "*");
  EXPECT_EQ(r->requests[2].weight, 1u);
}

}  // namespace
}  // namespace fairbench::wire

namespace fairbench::wire {
namespace {
// Catches: the send offsets of a cell's agents not spread (all the same, so
// their snapshots arrive together), spread past a quarter of the interval or
// 250 ms (the live view would lag more), or an offset reaching the interval.
TEST(WireJobTest, SendOffsetsSpreadACellsAgents) {
  using namespace std::chrono_literals;
  EXPECT_EQ(SendOffset(0, 1, 1s), 0ns);
  EXPECT_EQ(SendOffset(0, 100, 1s), 0ns);
  EXPECT_EQ(SendOffset(1, 100, 1s), 2500us);
  EXPECT_EQ(SendOffset(99, 100, 1s), 247500us);
  EXPECT_EQ(SendOffset(1, 2, 1s), 125ms);
  EXPECT_EQ(SendOffset(1, 2, 100ms), 12500us);  // a quarter of a short interval
  std::set<int64_t> seen;
  for (int i = 0; i < 100; ++i) {
    const auto o = SendOffset(i, 100, 1s);
    EXPECT_LT(o, 250ms);
    seen.insert(o.count());
  }
  EXPECT_EQ(seen.size(), 100u);
}
}  // namespace
}  // namespace fairbench::wire
