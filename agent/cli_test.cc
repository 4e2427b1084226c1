// fairbench-agent's command line, as a user meets it: wrk's layout line for
// line (checked against Debian's wrk on the same nginx), JSON output, and
// one clear line with exit code 2 for every kind of bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "testing/delay_server/delay_server_fixture.h"
#include "testing/support/bin_dir.h"
#include "testing/support/misbehaving_server_fixture.h"
#include "testing/support/nginx_fixture.h"
#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"
#include "testing/support/test_certs.h"

namespace fairbench::agent {
namespace {

using namespace std::chrono_literals;

struct Outcome {
  int code = -1;
  std::string out;
  std::string err;
};

Outcome RunCommand(const std::vector<std::string>& argv, const std::filesystem::path& dir) {
  testing::SubprocessOptions o;
  o.argv = argv;
  o.stdout_to = testing::Redirect::File((dir / "out").string());
  o.stderr_to = testing::Redirect::File((dir / "err").string());
  Outcome r;
  auto p = testing::Subprocess::Start(o);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  if (!p.ok()) return r;
  auto status = p->Wait(30s);
  EXPECT_TRUE(status.ok());
  if (status.ok()) r.code = status->exited ? status->exit_code : -1;
  std::ifstream out(dir / "out"), err(dir / "err");
  std::stringstream a, b;
  a << out.rdbuf();
  b << err.rdbuf();
  r.out = a.str();
  r.err = b.str();
  return r;
}

// The line's shape: digits, units and padding removed.
std::string Skeleton(const std::string& line) {
  static const std::regex number(R"([0-9]+(\.[0-9]+)?(us|ms|s|m|h|k|M|G|K|B|GB|MB|KB|%)?)");
  std::string s = std::regex_replace(line, number, "N");
  s.erase(std::remove(s.begin(), s.end(), ' '), s.end());
  return s;
}

class AgentCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::TempDir::Create("fairbench-cli");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
  }
  Outcome Agent(std::vector<std::string> args) {
    args.insert(args.begin(), testing::BinaryPath("fairbench-agent"));
    return RunCommand(args, dir_->path());
  }
  std::optional<testing::TempDir> dir_;
};

TEST_F(AgentCliTest, BadInputGetsOneLineAndExitCodeTwo) {
  const std::string body_dir = dir_->path().string();
  std::ofstream(body_dir + "/mix.yaml") << "requests:\n  - path: /\n    wieght: 2\n";
  std::ofstream(body_dir + "/not-a-ca.pem") << "hello\n";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"load", "127.0.0.1:8080/"}, "invalid URL"},
      {{"load", "ftp://127.0.0.1/"}, "unsupported scheme 'ftp'"},
      {{"load", "https://127.0.0.1:1/", "--verify", "--target-ca-file", body_dir + "/absent.pem"},
       "--target-ca-file: cannot read '" + body_dir + "/absent.pem'"},
      {{"load", "https://127.0.0.1:1/", "--verify", "--target-ca-file", body_dir + "/not-a-ca.pem"},
       "--target-ca-file: "},
      {{"load", "https://127.0.0.1:1/", "--target-ca-file", body_dir + "/not-a-ca.pem"},
       "--target-ca-file: only used with --verify"},
      {{"load", "https://127.0.0.1:1/", "--verify=maybe"}, "--verify"},
      {{"load", "http://127.0.0.1:1/", "--verify"}, "--verify: only for https:// URLs"},
      {{"load", "http://127.0.0.1:1/", "--sni", "example.org"}, "--sni: only for https:// URLs"},
      {{"load", "https://127.0.0.1:1/", "--sni", "bad name"}, "--sni: 'bad name' is not a host name"},
      {{"load", "http://no-such-host.invalid/"}, "cannot resolve host 'no-such-host.invalid'"},
      {{"load", "http://127.0.0.1:1/", "--body-file", body_dir + "/absent.json"}, "--body-file: cannot read"},
      {{"load", "http://127.0.0.1:1/", "-t", "4", "-c", "2"}, "2 connections cannot be spread over 4 threads"},
      {{"load", "http://127.0.0.1:1/", "-d", "0s"}, "-d/--duration: must be > 0"},
      {{"load", "http://127.0.0.1:1/", "-d", "30x"}, "unknown time unit"},
      {{"load", "http://127.0.0.1:1/", "--bogus"}, "--bogus"},
      {{"load", "http://127.0.0.1:1/", "-H", "NoColon"}, "must look like 'Name: value'"},
      {{"load", "http://127.0.0.1:1/", "--body", "x", "--body-file", "y"}, "excludes"},
      {{"load", "http://127.0.0.1:1/", "--requests", body_dir + "/mix.yaml"},
       "mix.yaml:3:5: requests[0].wieght: unknown field"},
      {{"load", "http://127.0.0.1:1/", "--rate", "10", "--pipeline", "2"},
       "constant rate cannot be combined with pipelining"},
      {{"load", "http://127.0.0.1:1/", "-c", "100000", "-t", "1"}, "open files"},
      {{"load", "http://127.0.0.1:1/", "--cpus", "1-a"}, "--cpus: \"1-a\" is not a CPU list"},
      {{"load", "http://127.0.0.1:1/", "--cpus", "1023"}, "--cpus: CPU list '1023': CPU 1023 is outside 0-"},
      {{"load", "http://127.0.0.1:1/", "--cpus", " "}, "--cpus: CPU list ' ' is empty"},
      {{"--controller", "127.0.0.1:1", "--token", "t", "--cpus", "2-1"}, "--cpus: \"2-1\" is not a CPU list"},
      {{}, "give a command"},
      {{"load", "http://127.0.0.1:1/", "--h2"}, "--h2: needs an https:// URL"},
      {{"load", "https://127.0.0.1:1/", "--h2c"}, "--h2c: needs an http:// URL"},
      {{"load", "https://127.0.0.1:1/", "--h2", "--h2c"}, "--h2"},
      {{"load", "http://127.0.0.1:1/", "--streams", "10"}, "--streams: only with --h2, --h2c or --grpc"},
      {{"load", "http://127.0.0.1:1/", "--h2c", "--streams", "0"}, "--streams: must be between 1 and 65536"},
      {{"load", "http://127.0.0.1:1/", "--h2c", "--streams", "ten"}, "--streams: "},
      {{"load", "http://127.0.0.1:1/", "--h2-stream-window", "1M"},
       "--h2-stream-window: only with --h2, --h2c or --grpc"},
      {{"load", "http://127.0.0.1:1/", "--h2c", "--h2-stream-window", "4G"},
       "--h2-stream-window: must be between 1 and 2147483647"},
      {{"load", "http://127.0.0.1:1/", "--h2c", "--h2-connection-window", "x"},
       "--h2-connection-window: 'x' is not a size"},
      {{"load", "http://127.0.0.1:1/", "--h2c", "--rate", "100", "--pipeline", "2"},
       "--pipeline cannot be combined with --h2c"},
      {{"load", "http://127.0.0.1:1", "--grpc", "a.B/C", "--rate", "100", "--pipeline", "2"},
       "--pipeline cannot be combined with --grpc"},
      {{"load", "http://127.0.0.1:1/", "--h2c", "--pipeline", "4"}, "--pipeline cannot be combined with --h2c"},
      {{"load", "http://127.0.0.1:1/", "--h2c", "--no-keep-alive"}, "--no-keep-alive cannot be combined with --h2c"},
      {{"load", "http://127.0.0.1:1/", "--h2c", "-H", "Connection: close"}, "Connection"},
      {{"load", "http://127.0.0.1:1/", "--idle-wait", "spin"},
       "--idle-wait: must be auto, block, nap or poll, got 'spin'"},
      {{"load", "http://127.0.0.1:1/", "--busy-poll", "--idle-wait", "nap"}, "excludes"},
      {{"load", "http://127.0.0.1:1/e/{n}", "--vary-every", "10"},
       "--vary-every: needs --expect-body or --expect-json with {n}"},
      {{"load", "http://127.0.0.1:1/e/{n}", "--vary-every", "10", "--h2c", "--expect-body", "{n}"},
       "--vary-every: one request over HTTP/1.1"},
      {{"load", "http://127.0.0.1:1/", "--expect-body", "x"}, "--expect-body and --expect-json are for --vary-every"},
  };
  for (const auto& [args, expected] : cases) {
    const Outcome o = Agent(args);
    EXPECT_EQ(o.code, 2) << expected << "\n" << o.err;
    EXPECT_NE(o.err.find(expected), std::string::npos) << "stderr: " << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << "one line, not: " << o.err;
    EXPECT_TRUE(o.out.empty() || o.out.find("Running") == 0) << o.out;
  }
}

// Catches: --vary-every not reaching the engine (the request would go out
// with "{n}" in it and nothing would be checked), or the sampled answers
// missing from the summary and the JSON.
TEST_F(AgentCliTest, VaryEveryChecksAnswers) {
  for (const auto mode : {testing::MisbehavingMode::kEcho, testing::MisbehavingMode::kEchoCached}) {
    testing::MisbehavingFixtureOptions fo;
    fo.mode = mode;
    auto server = testing::MisbehavingServerFixture::Start(fo);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    const std::string json_path = (dir_->path() / "vary.json").string();
    const Outcome o =
        Agent({"load", "http://127.0.0.1:" + std::to_string((*server)->port()) + "/echo/{n}", "-t", "1", "-c", "2",
               "-d", "500ms", "--vary-every", "10", "--expect-body", "{n}", "--json", json_path});
    ASSERT_EQ(o.code, 0) << o.err;
    EXPECT_NE(o.out.find("Answers sampled and verified: "), std::string::npos) << o.out;
    std::ifstream in(json_path);
    const nlohmann::json j = nlohmann::json::parse(in);
    const uint64_t verified = j["answers"]["verified"].get<uint64_t>();
    EXPECT_GT(verified, 0u);
    EXPECT_EQ(j["answers"]["failed"].get<uint64_t>(), mode == testing::MisbehavingMode::kEcho ? 0u : verified)
        << j["answers"];
  }
}

TEST_F(AgentCliTest, PrintsWrksLayoutLineForLine) {
  testing::NginxOptions options;
  options.keepalive_requests = 1000000000;
  testing::NginxFixture nginx(options);
  ASSERT_TRUE(nginx.Start().ok());
  const std::string url = "http://127.0.0.1:" + std::to_string(nginx.port()) + "/";
  const Outcome wrk = RunCommand({"wrk", "-t2", "-c10", "-d1s", "--latency", url}, dir_->path());
  ASSERT_EQ(wrk.code, 0) << wrk.err << " (wrk is installed by scripts/setup)";
  const Outcome ours =
      Agent({"load", url, "-t2", "-c10", "-d1s", "--latency", "--json", (dir_->path() / "r.json").string()});
  ASSERT_EQ(ours.code, 0) << ours.err;
  // Everything wrk prints, in the same order and the same shape; ours may
  // add lines (99.9 %, 99.99 %) and a block after "--- fairbench".
  std::istringstream w(wrk.out), f(ours.out.substr(0, ours.out.find("--- fairbench")));
  std::vector<std::string> wl, fl;
  for (std::string line; std::getline(w, line);) wl.push_back(line);
  for (std::string line; std::getline(f, line);) fl.push_back(line);
  size_t j = 0;
  for (const std::string& line : wl) {
    while (j < fl.size() && Skeleton(fl[j]) != Skeleton(line)) ++j;
    ASSERT_LT(j, fl.size()) << "wrk's line has no counterpart in order: '" << line << "'\nours:\n" << ours.out;
    ++j;
  }
  EXPECT_NE(ours.out.find("   99.9%"), std::string::npos);
  EXPECT_NE(ours.out.find("  99.99%"), std::string::npos);
  EXPECT_NE(ours.out.find("Latency above is RAW"), std::string::npos);
  EXPECT_NE(ours.out.find("Bytes/response:"), std::string::npos);
  std::ifstream in(dir_->path() / "r.json");
  const nlohmann::json j2 = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(j2.is_discarded());
  EXPECT_GT(j2["requests"].get<uint64_t>(), 0u);
  EXPECT_EQ(j2["latencyKind"], "raw");
  EXPECT_EQ(j2["connections"], 10);
  EXPECT_FALSE(j2["latency"]["histogram"].get<std::string>().empty());
  EXPECT_GE(j2["timeline"].size(), 1u);
}

// HTTPS end to end through the command line: nginx with a self-signed
// certificate; without --verify the load runs and reports its handshakes,
// with --verify every handshake fails and says so. Both counts are checked
// against nginx's access log.
TEST_F(AgentCliTest, HttpsReportsHandshakesAndVerifies) {
  auto certs = testing::MakeTestCertificates(dir_->path().string());
  ASSERT_TRUE(certs.ok()) << certs.status().ToString();
  testing::NginxOptions options;
  options.keepalive_requests = 1000000000;
  options.tls.emplace();
  options.tls->certificate = certs->self_cert;
  options.tls->certificate_key = certs->self_key;
  testing::NginxFixture nginx(options);
  ASSERT_TRUE(nginx.Start().ok());
  const std::string url = "https://127.0.0.1:" + std::to_string(nginx.port()) + "/";
  const Outcome ok = Agent({"load", url, "-t1", "-c2", "-d500ms", "--json", (dir_->path() / "r.json").string()});
  ASSERT_EQ(ok.code, 0) << ok.err;
  EXPECT_NE(ok.out.find("TLS handshakes: 2 (0 resumed)"), std::string::npos) << ok.out;
  std::ifstream in(dir_->path() / "r.json");
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["tlsHandshakes"], 2);
  EXPECT_EQ(j["errors"]["handshake"], 0);
  const Outcome bad =
      Agent({"load", url, "-t1", "-c2", "-d500ms", "--verify", "--json", (dir_->path() / "v.json").string()});
  ASSERT_EQ(bad.code, 0) << bad.err;
  std::ifstream vin(dir_->path() / "v.json");
  const nlohmann::json v = nlohmann::json::parse(vin, nullptr, false);
  ASSERT_FALSE(v.is_discarded());
  EXPECT_EQ(v["requests"], 0);
  EXPECT_GT(v["errors"]["handshake"].get<uint64_t>(), 0u);
  ASSERT_TRUE(nginx.Stop().ok());
  auto log = nginx.AccessLog();
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log->size(), j["requests"].get<uint64_t>() + j["drained"].get<uint64_t>())
      << "only the run without --verify was served";
}

// HTTP/2 end to end through the command line, counted against nginx's
// access log: h2c with prior knowledge (nginx allows 4 streams, we ask 10:
// a client that ignored its SETTINGS would see streams refused), h2 over
// TLS by ALPN, and a TLS server without h2 refused with one clear line
// before any load. Catches: the flags parsed but not passed on (HTTP/1.1
// sent to an HTTP/2-only listener fails every request), a silent HTTP/1.1
// fallback.
TEST_F(AgentCliTest, Http2CountsEqualTheAccessLog) {
  auto certs = testing::MakeTestCertificates(dir_->path().string());
  ASSERT_TRUE(certs.ok()) << certs.status().ToString();
  for (const bool tls : {false, true}) {
    testing::NginxOptions options;
    options.keepalive_requests = 1000000000;
    options.http2 = true;
    options.http2_max_concurrent_streams = 4;
    if (tls) {
      options.tls.emplace();
      options.tls->certificate = certs->self_cert;
      options.tls->certificate_key = certs->self_key;
    }
    testing::NginxFixture nginx(options);
    ASSERT_TRUE(nginx.Start().ok());
    const std::string url = std::string(tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(nginx.port()) + "/";
    const std::string json = (dir_->path() / "h2.json").string();
    const Outcome o =
        Agent({"load", url, tls ? "--h2" : "--h2c", "--streams", "10", "-t1", "-c2", "-d500ms", "--json", json});
    ASSERT_EQ(o.code, 0) << o.err;
    EXPECT_NE(o.out.find(std::string("Protocol: ") + (tls ? "h2" : "h2c") + ", up to 10 streams"), std::string::npos)
        << o.out;
    std::ifstream in(json);
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    ASSERT_FALSE(j.is_discarded());
    EXPECT_EQ(j["protocol"], tls ? "h2" : "h2c");
    EXPECT_EQ(j["streams"], 10);
    EXPECT_GT(j["requests"].get<uint64_t>(), 100u);
    for (const char* kind :
         {"connect", "read", "write", "timeout", "status", "handshake", "goaway", "rstStream", "h2Protocol"}) {
      EXPECT_EQ(j["errors"][kind], 0) << kind;
    }
    ASSERT_TRUE(nginx.Stop().ok());
    auto log = nginx.AccessLog();
    ASSERT_TRUE(log.ok());
    EXPECT_EQ(log->size(), j["requests"].get<uint64_t>() + j["drained"].get<uint64_t>()) << (tls ? "h2" : "h2c");
  }
  testing::NginxOptions options;
  options.tls.emplace();
  options.tls->certificate = certs->self_cert;
  options.tls->certificate_key = certs->self_key;
  testing::NginxFixture http1_only(options);
  ASSERT_TRUE(http1_only.Start().ok());
  const Outcome refused =
      Agent({"load", "https://127.0.0.1:" + std::to_string(http1_only.port()) + "/", "--h2", "-t1", "-c2", "-d500ms"});
  EXPECT_EQ(refused.code, 1);
  EXPECT_NE(refused.err.find("--h2: the server does not offer h2 in ALPN"), std::string::npos) << refused.err;
  EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
  EXPECT_EQ(refused.out.find("requests in"), std::string::npos) << "no load was run: " << refused.out;
}

TEST_F(AgentCliTest, ConstantRateSaysTheLatencyIsCorrected) {
  testing::NginxFixture nginx;
  ASSERT_TRUE(nginx.Start().ok());
  const std::string url = "http://127.0.0.1:" + std::to_string(nginx.port()) + "/";
  const Outcome o = Agent({"load", url, "-t1", "-c4", "-d1s", "--rate", "200"});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("CORRECTED for coordinated omission"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("Uncorrected latency"), std::string::npos);
}

// --rate with --h2c is accepted and kept: nginx's access log has the
// 1000 requests/s × 1 s asked for, within 3 %, and the summary and the JSON
// carry the rate's lines as for HTTP/1.1. Catches: the flag refused or
// dropped for HTTP/2 (streams as fast as nginx answers: many thousands),
// the correction's lines or fields missing for HTTP/2.
TEST_F(AgentCliTest, ConstantRateWithH2cIsKeptAndSaysTheLatencyIsCorrected) {
  testing::NginxOptions options;
  options.keepalive_requests = 1000000000;
  options.http2 = true;
  testing::NginxFixture nginx(options);
  ASSERT_TRUE(nginx.Start().ok());
  const std::string url = "http://127.0.0.1:" + std::to_string(nginx.port()) + "/";
  const std::string json = (dir_->path() / "rate.json").string();
  const Outcome o =
      Agent({"load", url, "--h2c", "--streams", "4", "-t1", "-c4", "-d1s", "--rate", "1000", "--json", json});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("CORRECTED for coordinated omission"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("Uncorrected latency"), std::string::npos) << o.out;
  std::ifstream in(json);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["protocol"], "h2c");
  EXPECT_EQ(j["rate"].get<double>(), 1000.0);
  EXPECT_EQ(j["latencyKind"], "corrected");
  EXPECT_EQ(j["uncorrectedLatency"]["count"], j["requests"]);
  ASSERT_TRUE(nginx.Stop().ok());
  auto log = nginx.AccessLog();
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log->size(), j["requests"].get<uint64_t>() + j["drained"].get<uint64_t>());
  EXPECT_NEAR(static_cast<double>(log->size()), 1000.0, 30.0);
}

// --pipeline reaches the engine: the delay server (answering 2 ms after each
// request arrives) sees every connection's requests come four at a time,
// all four before the first of them is answered. Catches: the flag parsed
// but not passed on (one request per write: the second arrives only after
// the first answer).
TEST_F(AgentCliTest, PipelineWritesBatchesThatArriveBeforeTheFirstAnswer) {
  testing::DelayFixtureOptions so;
  so.delay = 2ms;
  auto server = testing::DelayServerFixture::Start(so);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const std::string url = "http://127.0.0.1:" + std::to_string((*server)->port()) + "/";
  const Outcome o = Agent({"load", url, "-t1", "-c2", "-d500ms", "--pipeline", "4"});
  ASSERT_EQ(o.code, 0) << o.err;
  auto records = (*server)->Stop();
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  std::map<std::pair<uint32_t, uint32_t>, std::vector<testing::DelayRecord>> batches;  // (conn, batch)
  for (const testing::DelayRecord& r : records->records) batches[{r.conn, r.seq / 4}].push_back(r);
  size_t whole = 0, late = 0;
  std::string first_late;
  for (const auto& [key, batch] : batches) {
    if (batch.size() < 4) continue;  // cut short by the end of the load
    ++whole;
    for (const testing::DelayRecord& r : batch) {
      if (r.arrived_ns < batch.front().sent_ns) continue;
      if (late++ == 0) first_late = "connection " + std::to_string(key.first) + " request " + std::to_string(r.seq);
    }
  }
  EXPECT_GT(whole, 50u) << o.out;
  EXPECT_EQ(late, 0u) << "requests that arrived only after their batch's first answer, the first: " << first_late;
}

// --idle-wait reaches the engine and is reported: against the delay server
// (2 ms per request, on loopback) the default (auto) naps and says so in the
// summary and the JSON, every nap within 2 % of the latency and 50 us;
// --idle-wait block never naps and prints no such line. The server's own
// count is the oracle for what was sent. Catches: auto not taken as nap for
// a loopback target, the flag parsed but not passed on, the summary line or
// the JSON dropped, a request lost across naps.
TEST_F(AgentCliTest, IdleWaitNapsForATargetOnThisMachineAndSaysSo) {
  testing::DelayFixtureOptions so;
  so.delay = 2ms;
  auto server = testing::DelayServerFixture::Start(so);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const std::string url = "http://127.0.0.1:" + std::to_string((*server)->port()) + "/";
  uint64_t sent = 0;
  for (const char* mode : {"auto", "block"}) {
    const std::string json = (dir_->path() / (std::string(mode) + ".json")).string();
    std::vector<std::string> args = {"load", url, "-t1", "-c8", "-d600ms", "--json", json};
    if (std::string(mode) != "auto") args.insert(args.end(), {"--idle-wait", mode});
    const Outcome o = Agent(args);
    ASSERT_EQ(o.code, 0) << o.err;
    std::ifstream in(json);
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    ASSERT_FALSE(j.is_discarded());
    const nlohmann::json& idle = j["idleWait"];
    sent += j["requests"].get<uint64_t>() + j["drained"].get<uint64_t>() + j["abandoned"].get<uint64_t>();
    if (std::string(mode) == "auto") {
      EXPECT_EQ(idle["mode"], "nap") << o.out;
      EXPECT_NE(o.out.find("  Idle wait: nap: "), std::string::npos) << o.out;
      EXPECT_GT(idle["naps"].get<uint64_t>(), 10u);
      EXPECT_LE(idle["maxNapUs"].get<double>(), 50.0);
      EXPECT_LE(idle["maxNapUs"].get<double>(), j["latency"]["maxUs"].get<double>() / 50);
    } else {
      EXPECT_EQ(idle["mode"], "block") << o.out;
      EXPECT_EQ(o.out.find("Idle wait"), std::string::npos) << o.out;
      EXPECT_EQ(idle["naps"].get<uint64_t>(), 0u);
    }
  }
  auto records = (*server)->Stop();
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  EXPECT_EQ(records->requests, sent);
}

}  // namespace
}  // namespace fairbench::agent
