// `fairbench-agent load --grpc` end to end: the agent's binary against the
// reference gRPC target (targets/grpc/, real gRPC C++, both server APIs) in
// this process — whose own counts are the truth — and against nghttp2's
// server session answering with broken gRPC (H2SocketServer, raw
// responses), and its descriptor-set errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "agent/grpc_frame.h"
#include "agent/h2_socket_server.h"
#include "agent/rate_bounds.h"
#include "echo.pb.h"
#include "common/metrics.h"
#include "targets/grpc/echo_server.h"
#include "testing/support/bin_dir.h"
#include "testing/support/subprocess.h"
#include "testing/support/test_certs.h"
#include "testing/support/temp_dir.h"

namespace fairbench::agent {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr const char* kUnary = "fairbench.echo.v1.Echo/Unary";
constexpr const char* kStream = "fairbench.echo.v1.Echo/ServerStream";

struct Outcome {
  int code = -1;
  std::string out;
  std::string err;
  json doc;  // --json, when the run wrote it
};

class GrpcLoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::TempDir::Create("fairbench-grpc");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
  }
  std::string Path(const std::string& name) const { return (dir_->path() / name).string(); }

  // Runs fairbench-agent load with `args` (and --json) and reads what it wrote.
  Outcome Agent(std::vector<std::string> args) {
    args.insert(args.begin(), {testing::BinaryPath("fairbench-agent"), "load"});
    args.insert(args.end(), {"--json", Path("out.json")});
    std::filesystem::remove(Path("out.json"));
    testing::SubprocessOptions o;
    o.argv = args;
    o.stdout_to = testing::Redirect::File(Path("stdout"));
    o.stderr_to = testing::Redirect::File(Path("stderr"));
    Outcome r;
    auto p = testing::Subprocess::Start(o);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (!p.ok()) return r;
    auto status = p->Wait(60s);
    EXPECT_TRUE(status.ok());
    if (status.ok()) r.code = status->exited ? status->exit_code : -1;
    r.out = Slurp(Path("stdout"));
    r.err = Slurp(Path("stderr"));
    if (std::filesystem::exists(Path("out.json"))) r.doc = json::parse(Slurp(Path("out.json")));
    return r;
  }
  static std::string Slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  static std::string Url(uint16_t port) { return "http://127.0.0.1:" + std::to_string(port); }

  std::optional<testing::TempDir> dir_;
};

// The grpc-status count under `name` in the JSON.
uint64_t StatusCount(const json& doc, const std::string& name) { return doc["grpc"]["status"][name].get<uint64_t>(); }

// A call the agent counted was served; the server may have served more
// (drained after the end, or left unanswered when the agent exited).
void ExpectServerCount(const json& doc, uint64_t agent_calls, uint64_t server_calls) {
  const auto drained = doc["drained"].get<uint64_t>();
  const auto abandoned = doc["abandoned"].get<uint64_t>();
  EXPECT_GE(server_calls, agent_calls + drained);
  EXPECT_LE(server_calls, agent_calls + drained + abandoned);
}

targets::EchoServerOptions Echo(targets::GrpcApi api, uint32_t delay_ms = 0) {
  targets::EchoServerOptions o;
  o.api = api;
  o.threads = 2;
  o.delay_ms = delay_ms;
  return o;
}

// Counts against the target's own: every unary call the agent counts as OK
// the server counted (catches a call counted twice, or a status table that
// drops or double-counts OK); the payload is what --message-json said, as
// the server's echo makes the response size (catches a JSON message sent
// empty). Both server APIs.
TEST_F(GrpcLoadTest, UnaryCountsMatchTheTargetsOwnForBothApis) {
  for (const targets::GrpcApi api : {targets::GrpcApi::kCallback, targets::GrpcApi::kSync}) {
    targets::RequestCounter counter;
    targets::EchoServer server(Echo(api), &counter);
    ASSERT_TRUE(server.Start().ok());
    const Outcome r = Agent({"--grpc", kUnary, Url(server.port()), "-t", "1", "-c", "4", "--streams", "8", "-d", "1s",
                             "--descriptor-set", FAIRBENCH_ECHO_DESCRIPTOR_SET, "--message-json",
                             R"({"payload":"aGVsbG8gZ3JwYw=="})"});
    server.Stop();
    ASSERT_EQ(r.code, 0) << r.err << r.out;
    const json& d = r.doc;
    const auto rpcs = d["requests"].get<uint64_t>();
    EXPECT_GT(rpcs, 100u);
    EXPECT_EQ(StatusCount(d, "OK"), rpcs);
    EXPECT_EQ(d["grpc"]["calls"].get<uint64_t>(), rpcs);
    EXPECT_EQ(d["grpc"]["messages"].get<uint64_t>(), rpcs);
    EXPECT_EQ(d["grpc"]["kind"], "unary");
    ExpectServerCount(d, rpcs, server.counts().unary.load());
    EXPECT_EQ(server.counts().by_status[0].load(), server.counts().unary.load());
    // Nothing refused before the handler (the sync API's RESOURCE_EXHAUSTED).
    EXPECT_EQ(d["grpc"]["calls"].get<uint64_t>(), StatusCount(d, "OK"));
    EXPECT_EQ(d["errors"]["h2Protocol"].get<uint64_t>(), 0u);
    EXPECT_NE(r.out.find(" RPCs in "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("RPCs/sec:"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("OK"), std::string::npos) << r.out;
  }
}

// https:// is h2 chosen by ALPN, against gRPC's own TLS server (catches
// the TLS path sending h2c, or not offering h2: gRPC refuses both).
TEST_F(GrpcLoadTest, HttpsIsH2ByAlpnAgainstGrpcsTlsServer) {
  auto certs = testing::SharedTestCertificates();
  ASSERT_TRUE(certs.ok()) << certs.status().ToString();
  targets::EchoServerOptions o = Echo(targets::GrpcApi::kCallback);
  o.tls_cert = (*certs)->self_cert;
  o.tls_key = (*certs)->self_key;
  targets::RequestCounter counter;
  targets::EchoServer server(o, &counter);
  ASSERT_TRUE(server.Start().ok());
  const Outcome r = Agent({"--grpc", kUnary, "https://127.0.0.1:" + std::to_string(server.port()), "-t", "1", "-c", "2",
                           "--streams", "4", "-d", "500ms"});
  server.Stop();
  ASSERT_EQ(r.code, 0) << r.err;
  const auto rpcs = r.doc["requests"].get<uint64_t>();
  EXPECT_GT(rpcs, 50u);
  EXPECT_EQ(StatusCount(r.doc, "OK"), rpcs);
  EXPECT_EQ(r.doc["protocol"], "h2");
  EXPECT_EQ(r.doc["tlsHandshakes"].get<uint64_t>(), 2u);
  ExpectServerCount(r.doc, rpcs, server.counts().unary.load());
}

// The target's standard health service answers Check with one message
// for "" and for its echo service, and NOT_FOUND for another service
// (catches the health service left out: UNIMPLEMENTED).
TEST_F(GrpcLoadTest, TargetAnswersTheStandardHealthCheck) {
  targets::RequestCounter counter;
  targets::EchoServer server(Echo(targets::GrpcApi::kSync), &counter);
  ASSERT_TRUE(server.Start().ok());
  // HealthCheckRequest{service}: field 1, length-delimited.
  const auto request = [](const std::string& service) {
    return std::string{'\x0a', static_cast<char>(service.size())} + service;
  };
  for (const auto& [service, status] : std::vector<std::pair<std::string, std::string>>{
           {"", "OK"}, {"fairbench.echo.v1.Echo", "OK"}, {"no.such.Service", "NOT_FOUND"}}) {
    std::ofstream(Path("health.bin"), std::ios::binary) << request(service);
    const Outcome r = Agent({"--grpc", "grpc.health.v1.Health/Check", Url(server.port()), "-t", "1", "-c", "1", "-d",
                             "100ms", "--message-file", Path("health.bin")});
    ASSERT_EQ(r.code, 0) << r.err;
    const auto rpcs = r.doc["requests"].get<uint64_t>();
    EXPECT_GT(rpcs, 0u) << service;
    EXPECT_EQ(StatusCount(r.doc, status), rpcs) << service;
    if (status == "OK") {
      EXPECT_EQ(r.doc["grpc"]["messages"].get<uint64_t>(), rpcs) << service;
    }
  }
  server.Stop();
  EXPECT_EQ(server.counts().unary.load() + server.counts().stream.load(), 0u) << "health checks are not echo calls";
}

// Latency bracketed by a known server delay: each call waits --delay-ms 40
// on the server, so no call is faster and, on loopback, few are much
// slower (catches latency taken from the wrong start or a clock scaled).
TEST_F(GrpcLoadTest, UnaryLatencyIsBracketedByTheServersDelay) {
  targets::RequestCounter counter;
  targets::EchoServer server(Echo(targets::GrpcApi::kCallback, 40), &counter);
  ASSERT_TRUE(server.Start().ok());
  const Outcome r = Agent({"--grpc", kUnary, Url(server.port()), "-t", "1", "-c", "2", "--streams", "4", "-d", "1s"});
  server.Stop();
  ASSERT_EQ(r.code, 0) << r.err;
  const json& lat = r.doc["latency"];
  EXPECT_GE(lat["minUs"].get<double>(), 40'000);
  EXPECT_LT(lat["percentilesUs"]["p50"].get<double>(), 40'000 + 25'000);
  EXPECT_GT(r.doc["requests"].get<uint64_t>(), 20u);
  // Kind unknown without a descriptor set: the message count is not checked.
  EXPECT_EQ(r.doc["grpc"]["kind"], "unknown");
}

// Server streaming: 5 messages 30 ms apart, so the first arrives after
// 30 ms and the last after 150 ms (catches first and last swapped, message
// times not taken per read, messages not counted); the server's count of
// messages written is the truth for the agent's.
TEST_F(GrpcLoadTest, ServerStreamingTimesTheFirstAndTheLastMessage) {
  targets::RequestCounter counter;
  targets::EchoServer server(Echo(targets::GrpcApi::kSync), &counter);
  ASSERT_TRUE(server.Start().ok());
  const Outcome r =
      Agent({"--grpc", kStream, Url(server.port()), "-t", "1", "-c", "2", "--streams", "2", "-d", "1s",
             "--descriptor-set", FAIRBENCH_ECHO_DESCRIPTOR_SET, "--message-json", R"({"messages":5,"delayMs":30})"});
  server.Stop();
  ASSERT_EQ(r.code, 0) << r.err;
  const json& g = r.doc["grpc"];
  const auto rpcs = r.doc["requests"].get<uint64_t>();
  EXPECT_GE(rpcs, 8u);
  EXPECT_EQ(g["kind"], "server-streaming");
  EXPECT_EQ(g["messages"].get<uint64_t>(), 5 * rpcs);
  ExpectServerCount(r.doc, rpcs, server.counts().stream.load());
  EXPECT_GE(server.counts().stream_messages.load(), g["messages"].get<uint64_t>());
  const json& first = g["firstMessageLatency"];
  const json& last = g["lastMessageLatency"];
  EXPECT_EQ(first["count"].get<uint64_t>(), rpcs);
  EXPECT_GE(first["minUs"].get<double>(), 30'000);
  EXPECT_LT(first["percentilesUs"]["p50"].get<double>(), 30'000 + 20'000);
  EXPECT_GE(last["minUs"].get<double>(), 150'000);
  EXPECT_LT(last["percentilesUs"]["p50"].get<double>(), 150'000 + 40'000);
  EXPECT_GE(r.doc["latency"]["minUs"].get<double>(), last["minUs"].get<double>());
  EXPECT_NE(r.out.find("Latency to the first message"), std::string::npos) << r.out;
}

// --rate with --grpc: 1000 calls/s over 2 connections × 8 streams for
// 2 s; the target's own count of unary calls is 2000, within 3 %, and the
// summary and the JSON say the latency is corrected (from each call's due
// time) and give the uncorrected one. Catches: the rate ignored for gRPC
// (as fast as answered: tens of thousands), a per-connection share off by
// the number of connections, calls left unsent with the target keeping up,
// the rate's lines missing from a gRPC summary.
TEST_F(GrpcLoadTest, ConstantRateCallsMatchTheTargetsCount) {
  targets::RequestCounter counter;
  targets::EchoServer server(Echo(targets::GrpcApi::kCallback), &counter);
  ASSERT_TRUE(server.Start().ok());
  const Outcome r =
      Agent({"--grpc", kUnary, Url(server.port()), "-t", "1", "-c", "2", "--streams", "8", "-d", "2s", "--rate", "1000",
             "--descriptor-set", FAIRBENCH_ECHO_DESCRIPTOR_SET, "--message-json", R"({"payload":"aGVsbG8="})"});
  server.Stop();
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const json& d = r.doc;
  const auto served = server.counts().unary.load();
  std::cout << "target served " << served << " calls at --rate 1000 for 2 s; agent counted "
            << d["requests"].get<uint64_t>() << ", p99 " << d["latency"]["percentilesUs"]["p99"] << " µs" << std::endl;
  EXPECT_NEAR(static_cast<double>(served), 2000.0, 2000.0 * 0.03);
  const auto rpcs = d["requests"].get<uint64_t>();
  EXPECT_EQ(StatusCount(d, "OK"), rpcs);
  ExpectServerCount(d, rpcs, served);
  EXPECT_EQ(d["rate"].get<double>(), 1000.0);
  EXPECT_EQ(d["latencyKind"], "corrected");
  EXPECT_EQ(d["uncorrectedLatency"]["count"].get<uint64_t>(), rpcs);
  EXPECT_LE(d["unsent"].get<uint64_t>(), 20u) << "a target that keeps up leaves no backlog";
  EXPECT_NE(r.out.find("CORRECTED for coordinated omission"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Uncorrected latency"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("latency per stream: due to response complete"), std::string::npos) << r.out;
}

// Server streaming at a rate the streams cannot carry: each call writes 3
// messages 20 ms apart (its stream busy ≥ 60 ms), one connection × 2
// streams carry ≤ 33 calls/s, and --rate asks for 100. Calls wait for a
// free stream; the latency to the first and to the last message runs from
// each call's due time, so at the median it is at least what the schedule
// implies (agent/rate_bounds.h: ~290 ms and ~330 ms), while a call itself
// takes ~60 ms. The calls due but never sent are reported. Catches: message
// latency taken from the actual send (the median first message ≈ 20 ms),
// the backlog left out of the summary and the JSON, or lost from the
// accounting (served + unsent short of rate × duration).
TEST_F(GrpcLoadTest, ServerStreamingAtARateAboveCapacityTimesMessagesFromTheDueTime) {
  targets::RequestCounter counter;
  targets::EchoServer server(Echo(targets::GrpcApi::kCallback), &counter);
  ASSERT_TRUE(server.Start().ok());
  const Outcome r =
      Agent({"--grpc", kStream, Url(server.port()), "-t", "1", "-c", "1", "--streams", "2", "-d", "1s", "--rate", "100",
             "--descriptor-set", FAIRBENCH_ECHO_DESCRIPTOR_SET, "--message-json", R"({"messages":3,"delayMs":20})"});
  server.Stop();
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const json& d = r.doc;
  const json& g = d["grpc"];
  const auto rpcs = d["requests"].get<uint64_t>();
  ASSERT_GE(rpcs, 10u);
  EXPECT_EQ(g["messages"].get<uint64_t>(), 3 * rpcs);
  ExpectServerCount(d, rpcs, server.counts().stream.load());
  const double period = 10'000, slot = 60'000;  // µs
  const json& first = g["firstMessageLatency"];
  const json& last = g["lastMessageLatency"];
  std::cout << "first/last message p50 " << first["percentilesUs"]["p50"] << "/" << last["percentilesUs"]["p50"]
            << " µs over " << rpcs << " calls, uncorrected p50 " << d["uncorrectedLatency"]["percentilesUs"]["p50"]
            << " µs, unsent " << d["unsent"] << std::endl;
  for (const double p : {50.0, 90.0}) {
    const std::string key = p == 50.0 ? "p50" : "p90";
    EXPECT_GE(first["percentilesUs"][key].get<double>(), RankLowerBound(p, rpcs, 1, 2, slot, 20'000, period)) << key;
    EXPECT_GE(last["percentilesUs"][key].get<double>(), RankLowerBound(p, rpcs, 1, 2, slot, 60'000, period)) << key;
  }
  EXPECT_GE(d["uncorrectedLatency"]["minUs"].get<double>(), 60'000);
  EXPECT_LT(d["uncorrectedLatency"]["percentilesUs"]["p50"].get<double>(), 60'000 + 30'000);
  // Due by the end: 100; each was answered, is still in flight, or unsent.
  const auto unsent = d["unsent"].get<uint64_t>();
  EXPECT_GT(unsent, 30u);
  const auto accounted = rpcs + d["drained"].get<uint64_t>() + d["abandoned"].get<uint64_t>() + unsent;
  EXPECT_NEAR(static_cast<double>(accounted), 100.0, 3.0);
  EXPECT_NE(r.out.find("Behind schedule: " + std::to_string(unsent) + " RPCs due by the end were never sent"),
            std::string::npos)
      << r.out;
}

// Every status code produced on purpose (the request's status field: the
// real server ends the call with it, as a Trailers-Only response) is
// counted under its own name and nowhere else (catches a status read from
// the wrong frame, codes shifted, a non-OK call counted as OK or as a
// protocol error).
TEST_F(GrpcLoadTest, EveryStatusCodeIsCountedUnderItsName) {
  targets::RequestCounter counter;
  targets::EchoServer server(Echo(targets::GrpcApi::kCallback), &counter);
  ASSERT_TRUE(server.Start().ok());
  uint64_t before = 0;
  for (int code = 1; code <= 16; ++code) {
    const Outcome r = Agent({"--grpc", kUnary, Url(server.port()), "-t", "1", "-c", "1", "--streams", "4", "-d",
                             "150ms", "--descriptor-set", FAIRBENCH_ECHO_DESCRIPTOR_SET, "--message-json",
                             R"({"status":)" + std::to_string(code) + R"(,"errorMessage":"on purpose"})"});
    ASSERT_EQ(r.code, 0) << r.err;
    const auto rpcs = r.doc["requests"].get<uint64_t>();
    const std::string name = GrpcStatusName(code);
    EXPECT_GT(rpcs, 0u) << name;
    EXPECT_EQ(StatusCount(r.doc, name), rpcs) << name;
    EXPECT_EQ(r.doc["grpc"]["calls"].get<uint64_t>(), rpcs) << name;
    for (const auto& [kind, n] : r.doc["grpc"]["protocolErrors"].items()) EXPECT_EQ(n.get<uint64_t>(), 0u) << kind;
    const uint64_t served = server.counts().by_status[static_cast<size_t>(code)].load();
    ExpectServerCount(r.doc, rpcs, served);
    EXPECT_EQ(server.counts().unary.load() - before, served) << name;
    before = server.counts().unary.load();
    EXPECT_NE(r.out.find("Non-OK grpc-status: " + std::to_string(rpcs)), std::string::npos) << r.out;
  }
  server.Stop();
}

// --deadline goes out as grpc-timeout: the server gives up at 30 ms on a
// call it would answer at 300 ms and says DEADLINE_EXCEEDED, which is
// counted as that timeout — not as the agent's own (catches grpc-timeout
// not sent, or the agent's --timeout firing first). gRPC's server times the
// deadline from its cached clock, which may lag a few ms: hence 20 ms.
TEST_F(GrpcLoadTest, DeadlineExceededIsItsOwnTimeout) {
  targets::RequestCounter counter;
  targets::EchoServer server(Echo(targets::GrpcApi::kCallback, 300), &counter);
  ASSERT_TRUE(server.Start().ok());
  const Outcome r = Agent({"--grpc", kUnary, Url(server.port()), "-t", "1", "-c", "1", "--streams", "4", "-d", "1s",
                           "--deadline", "30ms", "--timeout", "100ms"});
  server.Stop();
  ASSERT_EQ(r.code, 0) << r.err;
  const auto rpcs = r.doc["requests"].get<uint64_t>();
  EXPECT_GT(rpcs, 20u);
  EXPECT_EQ(StatusCount(r.doc, "DEADLINE_EXCEEDED"), rpcs);
  EXPECT_EQ(r.doc["grpc"]["timeouts"]["deadlineExceeded"].get<uint64_t>(), rpcs);
  EXPECT_EQ(r.doc["grpc"]["timeouts"]["noAnswer"].get<uint64_t>(), 0u);
  EXPECT_GE(r.doc["latency"]["minUs"].get<double>(), 20'000);
  EXPECT_LT(r.doc["latency"]["percentilesUs"]["p50"].get<double>(), 100'000);
}

// A server that breaks gRPC (nghttp2's server session sending the bytes
// each case names): each response is counted as its protocol error kind,
// as many as the server sent, and the agent ends normally (catches a kind
// counted under another, a broken response counted as a call, a crash).
struct Broken {
  const char* name;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers, trailers;
  const char* kind;  // the JSON's protocolErrors key
  std::vector<std::string> extra;
};

std::string Frame(const std::string& m) { return EncodeGrpcFrame(m); }
// A prefix announcing `n` bytes.
std::string Prefix(uint32_t n) {
  return std::string(1, '\0') + std::string{static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                                            static_cast<char>(n >> 8), static_cast<char>(n)};
}

TEST_F(GrpcLoadTest, MisbehavingServerIsCountedByKind) {
  const std::vector<std::pair<std::string, std::string>> grpc = {{"content-type", "application/grpc"}};
  const std::vector<std::pair<std::string, std::string>> ok = {{"grpc-status", "0"}};
  const std::vector<Broken> cases = {
      {"a prefix promising more than comes", Prefix(100) + "0123456789", grpc, ok, "truncated", {}},
      {"a message longer than its prefix", Prefix(2) + "0123456789", grpc, ok, "badFlag", {}},
      {"no trailers", Frame("hello"), grpc, {}, "noStatus", {}},
      {"status in headers, none in trailers",
       Frame("hello"),
       {{"content-type", "application/grpc"}, {"grpc-status", "0"}},
       {{"x-other", "1"}},
       "noStatus",
       {}},
      {"a headers-only response without status", "", grpc, {}, "noStatus", {}},
      {"a status that is not a number", Frame("hello"), grpc, {{"grpc-status", "OK"}}, "badStatus", {}},
      {"a message over --max-message-size",
       Frame(std::string(100, 'x')),
       grpc,
       ok,
       "tooLarge",
       {"--max-message-size", "50"}},
      {"a unary OK without a message",
       "",
       grpc,
       ok,
       "unaryMessageCount",
       {"--descriptor-set", FAIRBENCH_ECHO_DESCRIPTOR_SET}},
  };
  for (const Broken& c : cases) {
    H2SocketServerOptions so;
    so.server.raw = true;
    so.server.raw_body = c.body;
    so.server.headers = c.headers;
    so.server.trailers = c.trailers;
    H2SocketServer server(so);
    ASSERT_TRUE(server.Start().ok());
    std::vector<std::string> args = {"--grpc", kUnary, Url(server.port()), "-t", "1", "-c", "2", "--streams", "4",
                                     "-d",     "300ms"};
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    const Outcome r = Agent(args);
    server.Stop();
    ASSERT_EQ(r.code, 0) << c.name << ": " << r.err;
    const json& errors = r.doc["grpc"]["protocolErrors"];
    const auto counted = errors[c.kind].get<uint64_t>();
    EXPECT_GT(counted, 10u) << c.name;
    for (const auto& [kind, n] : errors.items()) {
      if (kind != c.kind) {
        EXPECT_EQ(n.get<uint64_t>(), 0u) << c.name << ": " << kind;
      }
    }
    EXPECT_EQ(r.doc["requests"].get<uint64_t>(), 0u) << c.name;
    EXPECT_EQ(r.doc["grpc"]["calls"].get<uint64_t>(), 0u) << c.name;
    ExpectServerCount(r.doc, counted, server.totals().responses);
    EXPECT_NE(r.out.find("gRPC protocol errors: " + std::to_string(counted)), std::string::npos) << r.out;
  }
}

// What goes on the wire, as nghttp2's server session read it: POST to
// /SERVICE/METHOD with gRPC's headers, --deadline as grpc-timeout, the
// --metadata fields (names lowercased), and a body that is the message
// protoc's generated code encodes from the same fields, in one 5-byte
// frame (catches a header dropped or misspelt, a deadline in the wrong
// unit, JSON encoded differently, a prefix missing).
TEST_F(GrpcLoadTest, SendsGrpcsRequestAsTheSpecSays) {
  H2SocketServerOptions so;
  so.server.raw = true;
  so.server.raw_body = Frame("");
  so.server.headers = {{"content-type", "application/grpc"}};
  so.server.trailers = {{"grpc-status", "0"}};
  H2SocketServer server(so);
  ASSERT_TRUE(server.Start().ok());
  const Outcome r =
      Agent({"--grpc", kUnary, Url(server.port()), "-t", "1", "-c", "1", "-d", "200ms", "--descriptor-set",
             FAIRBENCH_ECHO_DESCRIPTOR_SET, "--message-json", R"({"payload":"aGk=","messages":3,"errorMessage":"é"})",
             "--metadata", "X-Tenant: blue", "--metadata", "authorization: Bearer t", "--deadline", "250ms"});
  server.Stop();
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_GT(StatusCount(r.doc, "OK"), 0u);
  const H2SocketTotals t = server.totals();
  std::map<std::string, std::string> fields(t.first_request_fields.begin(), t.first_request_fields.end());
  EXPECT_EQ(fields[":method"], "POST");
  EXPECT_EQ(fields[":scheme"], "http");
  EXPECT_EQ(fields[":path"], "/fairbench.echo.v1.Echo/Unary");
  EXPECT_EQ(fields["content-type"], "application/grpc");
  EXPECT_EQ(fields["te"], "trailers");
  EXPECT_EQ(fields["grpc-timeout"], "250000u");
  EXPECT_EQ(fields["x-tenant"], "blue");
  EXPECT_EQ(fields["authorization"], "Bearer t");
  fairbench::echo::v1::EchoRequest expected;
  expected.set_payload("hi");
  expected.set_messages(3);
  expected.set_error_message("é");
  EXPECT_EQ(t.first_request_body, EncodeGrpcFrame(expected.SerializeAsString()));
}

// A valid Trailers-Only response (grpc-status in the only HEADERS frame)
// is a call with that status, not a protocol error (catches a status read
// only from trailers).
TEST_F(GrpcLoadTest, TrailersOnlyResponseIsACallWithItsStatus) {
  H2SocketServerOptions so;
  so.server.raw = true;
  so.server.headers = {{"content-type", "application/grpc"}, {"grpc-status", "8"}, {"grpc-message", "busy"}};
  H2SocketServer server(so);
  ASSERT_TRUE(server.Start().ok());
  const Outcome r =
      Agent({"--grpc", kUnary, Url(server.port()), "-t", "1", "-c", "1", "--streams", "4", "-d", "300ms"});
  server.Stop();
  ASSERT_EQ(r.code, 0) << r.err;
  const auto rpcs = r.doc["requests"].get<uint64_t>();
  EXPECT_GT(rpcs, 10u);
  EXPECT_EQ(StatusCount(r.doc, "RESOURCE_EXHAUSTED"), rpcs);
  ExpectServerCount(r.doc, rpcs, server.totals().responses);
}

// Bad input before the load: one line naming the flag (and what it found),
// exit code 2 (catches a method or JSON error found only under load, or an
// error that is not one line).
TEST_F(GrpcLoadTest, DescriptorSetErrorsAreOneLineBeforeTheLoad) {
  std::ofstream(Path("not-a-set.desc")) << "hello, not protobuf\xff\xff";
  std::ofstream(Path("bad.bin")) << "\xff\xff\xff";
  const std::string desc = FAIRBENCH_ECHO_DESCRIPTOR_SET;
  const std::string url = "http://127.0.0.1:9";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--grpc", "fairbench.echo.v1.Nope/Unary", url, "--descriptor-set", desc},
       "--grpc: no service 'fairbench.echo.v1.Nope'"},
      {{"--grpc", "fairbench.echo.v1.Echo/Nope", url, "--descriptor-set", desc},
       "--grpc: service fairbench.echo.v1.Echo has no method 'Nope' (methods: Unary, ServerStream, Stats)"},
      {{"--grpc", kUnary, url, "--descriptor-set", desc, "--message-json", R"({"paylod":"x"})"},
       "--message-json: not a fairbench.echo.v1.EchoRequest"},
      {{"--grpc", kUnary, url, "--descriptor-set", desc, "--message-json", R"({"status":"many"})"},
       "--message-json: not a fairbench.echo.v1.EchoRequest"},
      {{"--grpc", kUnary, url, "--descriptor-set", Path("not-a-set.desc")}, "is not a FileDescriptorSet"},
      {{"--grpc", kUnary, url, "--descriptor-set", Path("missing.desc")}, "--descriptor-set: cannot read"},
      {{"--grpc", kUnary, url, "--message-json", "{}"}, "--message-json: needs --descriptor-set"},
      {{"--grpc", kUnary, url, "--descriptor-set", desc, "--message-file", Path("bad.bin")},
       "is not a binary fairbench.echo.v1.EchoRequest"},
      {{"--grpc", "Echo", url}, "--grpc: 'Echo' is not SERVICE/METHOD"},
      {{"--grpc", kUnary, url + "/path"}, "the URL names the server only"},
      {{"--grpc", kUnary, url, "--metadata", "grpc-timeout: 1S"}, "--metadata: 'grpc-timeout' is gRPC's own"},
      {{"--grpc", kUnary, url, "--deadline", "soon"}, "--deadline:"},
      {{"--grpc", kUnary, url, "--max-message-size", "0"}, "--max-message-size:"},
      {{url, "--message-json", "{}"}, "are for --grpc SERVICE/METHOD"},
  };
  for (const auto& [args, expected] : cases) {
    const Outcome r = Agent(args);
    EXPECT_EQ(r.code, 2) << expected << "\n" << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out.find("Running"), std::string::npos) << "the load started: " << r.out;
  }
}

}  // namespace
}  // namespace fairbench::agent
