// The reference targets as real processes: every endpoint's status,
// content type and body, keep-alive, the request log's counts, and a clean
// exit on SIGTERM/SIGINT. Each test runs against httplib, beast and nginx.
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "targets/common/request_log.h"
#include "testing/support/bin_dir.h"
#include "testing/support/http_client.h"
#include "testing/support/ports.h"
#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"
#include "testing/support/test_certs.h"

namespace fairbench::targets {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::BuildRequest;
using testing::HttpConnection;
using testing::HttpResponse;
using testing::Subprocess;
using testing::TempDir;

struct TargetCase {
  std::string name;       // test name suffix
  std::string binary;     // in the build's bin dir
  std::string framework;  // as /api/status reports it
  bool parses_echo;       // false: nginx sends the body back as received
};

std::ostream& operator<<(std::ostream& os, const TargetCase& c) { return os << c.name; }

const std::string kEchoBody = R"({"name":"Alice","age":30,"email":"alice@example.com"})";

class RunningTarget {
 public:
  // Starts the target on a free port and waits until it accepts.
  static std::unique_ptr<RunningTarget> Start(const TargetCase& c, const std::string& request_log = "",
                                              const std::vector<std::string>& extra_args = {}) {
    auto dir = TempDir::Create("fairbench-targets-test");
    EXPECT_TRUE(dir.ok());
    for (int attempt = 0; attempt < 3; ++attempt) {
      auto port = testing::FreeLoopbackPort();
      EXPECT_TRUE(port.ok());
      testing::SubprocessOptions o;
      o.argv = {testing::BinaryPath(c.binary), "--port", std::to_string(*port), "--threads", "2"};
      if (!request_log.empty()) {
        o.argv.push_back("--request-log");
        o.argv.push_back(request_log);
      }
      o.argv.insert(o.argv.end(), extra_args.begin(), extra_args.end());
      o.stdout_to = testing::Redirect::File(dir->File("stdout.log"));
      o.stderr_to = testing::Redirect::File(dir->File("stderr.log"));
      auto proc = Subprocess::Start(std::move(o));
      EXPECT_TRUE(proc.ok()) << proc.status().ToString();
      if (!proc.ok()) return nullptr;
      auto t = std::unique_ptr<RunningTarget>(new RunningTarget(std::move(*dir), std::move(*proc), *port));
      auto deadline = std::chrono::steady_clock::now() + seconds(10);
      while (std::chrono::steady_clock::now() < deadline) {
        if (testing::PortAccepts("127.0.0.1", t->port)) return t;
        if (t->process.Poll()) break;  // exited: the port was taken meanwhile?
        std::this_thread::sleep_for(milliseconds(5));
      }
      if (!t->process.Poll()) {
        ADD_FAILURE() << c.binary << " did not accept within 10 s: " << t->Output();
        return nullptr;
      }
      if (attempt == 2) ADD_FAILURE() << c.binary << " exited during start: " << t->Output();
      dir = std::move(t->dir);
    }
    return nullptr;
  }

  // A graceful stop, so that the nginx launcher removes its temp dir.
  ~RunningTarget() {
    if (process.running()) process.Terminate(SIGTERM, seconds(5));
  }

  HttpConnection Connect() {
    auto c = HttpConnection::Connect("127.0.0.1", port);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return std::move(*c);
  }

  // One request on a fresh connection.
  HttpResponse Fetch(const std::string& method, const std::string& path, const std::string& body = "",
                     std::vector<std::pair<std::string, std::string>> headers = {}) {
    auto conn = Connect();
    auto r = conn.RoundTrip(BuildRequest(method, path, "127.0.0.1", headers, body));
    EXPECT_TRUE(r.ok()) << method << " " << path << ": " << r.status().ToString();
    return r.ok() ? *r : HttpResponse{};
  }

  std::string Output() const {
    std::ifstream out(dir.File("stdout.log")), err(dir.File("stderr.log"));
    std::stringstream ss;
    ss << out.rdbuf() << err.rdbuf();
    return ss.str();
  }

  TempDir dir;
  Subprocess process;
  uint16_t port;

 private:
  RunningTarget(TempDir d, Subprocess p, uint16_t port_number)
      : dir(std::move(d)), process(std::move(p)), port(port_number) {}
};

class TargetTest : public ::testing::TestWithParam<TargetCase> {};

TEST_P(TargetTest, HelloWorld) {
  auto t = RunningTarget::Start(GetParam());
  ASSERT_TRUE(t);
  auto r = t->Fetch("GET", "/");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("Content-Type"), "text/plain");
  EXPECT_EQ(r.body, "Hello, World!");
  EXPECT_EQ(r.body.size(), 13u);
}

TEST_P(TargetTest, ApiStatus) {
  auto t = RunningTarget::Start(GetParam());
  ASSERT_TRUE(t);
  auto r = t->Fetch("GET", "/api/status");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("Content-Type"), "application/json");
  EXPECT_EQ(r.body, R"({"status":"running","framework":")" + GetParam().framework + R"("})");
}

TEST_P(TargetTest, EchoSendsTheJsonBack) {
  auto t = RunningTarget::Start(GetParam());
  ASSERT_TRUE(t);
  auto r = t->Fetch("POST", "/api/echo", kEchoBody, {{"Content-Type", "application/json"}});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("Content-Type"), "application/json");
  EXPECT_EQ(r.body, kEchoBody);
  // Whitespace shows whether the body was parsed and serialised again.
  auto spaced = t->Fetch("POST", "/api/echo", R"({ "a" : [1, 2] })");
  EXPECT_EQ(spaced.status, 200);
  EXPECT_EQ(nlohmann::json::parse(spaced.body), nlohmann::json::parse(R"({"a":[1,2]})"));
  if (GetParam().parses_echo) {
    EXPECT_EQ(spaced.body, R"({"a":[1,2]})");
  }
}

TEST_P(TargetTest, EchoOfInvalidJson) {
  auto t = RunningTarget::Start(GetParam());
  ASSERT_TRUE(t);
  auto r = t->Fetch("POST", "/api/echo", "{not json");
  EXPECT_EQ(r.Header("Content-Type"), "application/json");
  if (GetParam().parses_echo) {
    EXPECT_EQ(r.status, 400);
  } else {
    // nginx sends bytes back unparsed (documented in nginx.conf.in).
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "{not json");
  }
}

TEST_P(TargetTest, UserById) {
  auto t = RunningTarget::Start(GetParam());
  ASSERT_TRUE(t);
  auto r = t->Fetch("GET", "/users/42");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("Content-Type"), "application/json");
  EXPECT_EQ(r.body, R"({"id":42,"name":"User 42"})");
  EXPECT_EQ(t->Fetch("GET", "/users/0").body, R"({"id":0,"name":"User 0"})");
  EXPECT_EQ(t->Fetch("GET", "/users/007").body, R"({"id":7,"name":"User 7"})");
  EXPECT_EQ(t->Fetch("GET", "/users/18446744073709551615").status,
            GetParam().parses_echo ? 200 : 404);  // nginx: at most 19 digits
}

TEST_P(TargetTest, EverythingElseIsNotFound) {
  auto t = RunningTarget::Start(GetParam());
  ASSERT_TRUE(t);
  for (const char* path : {"/users/abc", "/users/", "/users/12x", "/users/-1", "/users/42/x", "/nope", "/api",
                           "/users/99999999999999999999999"}) {
    EXPECT_EQ(t->Fetch("GET", path).status, 404) << path;
  }
  EXPECT_EQ(t->Fetch("POST", "/", "x").status, 404);
  EXPECT_EQ(t->Fetch("GET", "/api/echo").status, 404);
  EXPECT_EQ(t->Fetch("DELETE", "/api/status").status, 404);
}

TEST_P(TargetTest, KeepAliveServesManyRequestsOnOneConnection) {
  auto t = RunningTarget::Start(GetParam());
  ASSERT_TRUE(t);
  auto conn = t->Connect();
  for (int i = 0; i < 30; ++i) {
    auto r = (i % 3 == 0)   ? conn.RoundTrip(BuildRequest("GET", "/", "x"))
             : (i % 3 == 1) ? conn.RoundTrip(BuildRequest("GET", "/users/" + std::to_string(i), "x"))
                            : conn.RoundTrip(BuildRequest("POST", "/api/echo", "x", {}, kEchoBody));
    ASSERT_TRUE(r.ok()) << "request " << i << ": " << r.status().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_NE(r->Header("Connection"), "close");
  }
  // Still open: one more works without reconnecting.
  EXPECT_TRUE(conn.RoundTrip(BuildRequest("GET", "/api/status", "x")).ok());
}

// Reads a request log: the interval lines and the final total.
struct ParsedLog {
  std::vector<std::pair<int64_t, uint64_t>> intervals;
  std::vector<uint64_t> totals;
};

ParsedLog ReadRequestLog(const std::string& path) {
  ParsedLog log;
  std::ifstream in(path);
  std::string first;
  uint64_t second = 0;
  while (in >> first >> second) {
    if (first == "total") {
      log.totals.push_back(second);
    } else {
      log.intervals.emplace_back(std::stoll(first), second);
    }
  }
  return log;
}

TEST_P(TargetTest, RequestLogCountsEveryRequestAndSigtermExitsZero) {
  auto dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  const std::string log_path = dir->File("requests.log");
  const int64_t started_ms = UnixMillisNow();
  auto t = RunningTarget::Start(GetParam(), log_path);
  ASSERT_TRUE(t);
  int sent = 0;
  for (int c = 0; c < 3; ++c) {
    auto conn = t->Connect();
    for (int i = 0; i < 40; ++i, ++sent) {
      const std::string path = (i % 4 == 3) ? "/missing" : "/";
      ASSERT_TRUE(conn.RoundTrip(BuildRequest("GET", path, "x")).ok());
    }
    std::this_thread::sleep_for(milliseconds(120));  // spread over intervals
  }
  ASSERT_TRUE(t->process.Kill(SIGTERM).ok());
  auto exit = t->process.Wait(seconds(10));
  ASSERT_TRUE(exit.ok()) << exit.status().ToString();
  EXPECT_TRUE(exit->success()) << exit->ToString() << "\n" << t->Output();
  const int64_t ended_ms = UnixMillisNow();

  ParsedLog log = ReadRequestLog(log_path);
  ASSERT_EQ(log.totals.size(), 1u);
  EXPECT_EQ(log.totals[0], static_cast<uint64_t>(sent));
  uint64_t sum = 0;
  int64_t previous = 0;
  for (auto [at, count] : log.intervals) {
    EXPECT_EQ(at % kRequestLogIntervalMs, 0);
    EXPECT_GE(at, started_ms / kRequestLogIntervalMs * kRequestLogIntervalMs);
    EXPECT_LE(at, ended_ms);
    EXPECT_GT(at, previous);
    EXPECT_GT(count, 0u);
    previous = at;
    sum += count;
  }
  EXPECT_EQ(sum, static_cast<uint64_t>(sent));
  EXPECT_GE(log.intervals.size(), 2u);  // the pauses split the requests
}

TEST_P(TargetTest, SigtermWithIdleKeepAliveConnectionExitsZero) {
  auto t = RunningTarget::Start(GetParam());
  ASSERT_TRUE(t);
  auto conn = t->Connect();
  ASSERT_TRUE(conn.RoundTrip(BuildRequest("GET", "/", "x")).ok());
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(t->process.Kill(SIGTERM).ok());
  auto exit = t->process.Wait(seconds(10));
  ASSERT_TRUE(exit.ok()) << exit.status().ToString();
  EXPECT_TRUE(exit->success()) << exit->ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, seconds(3));
  EXPECT_TRUE(conn.WaitForClose(seconds(2)));
}

TEST_P(TargetTest, SigintExitsZero) {
  auto t = RunningTarget::Start(GetParam());
  ASSERT_TRUE(t);
  ASSERT_TRUE(t->process.Kill(SIGINT).ok());
  auto exit = t->process.Wait(seconds(10));
  ASSERT_TRUE(exit.ok());
  EXPECT_TRUE(exit->success()) << exit->ToString() << "\n" << t->Output();
}

TEST_P(TargetTest, PortIsRequired) {
  testing::SubprocessOptions o;
  o.argv = {testing::BinaryPath(GetParam().binary)};
  o.stdout_to = testing::Redirect::Null();
  o.stderr_to = testing::Redirect::Null();
  auto p = Subprocess::Start(std::move(o));
  ASSERT_TRUE(p.ok());
  auto exit = p->Wait(seconds(5));
  ASSERT_TRUE(exit.ok());
  EXPECT_TRUE(exit->exited);
  EXPECT_NE(exit->exit_code, 0);
}

INSTANTIATE_TEST_SUITE_P(Targets, TargetTest,
                         ::testing::Values(TargetCase{"cpp_httplib_debian", "fairbench-target-cpp-httplib-debian",
                                                      "cpp-httplib", true},
                                           TargetCase{"beast", "fairbench-target-beast", "beast", true},
                                           TargetCase{"nginx", "fairbench-target-nginx", "nginx", false}),
                         [](const ::testing::TestParamInfo<TargetCase>& param) { return param.param.name; });

// ------------------------------------- the nginx target over HTTPS and HTTP/2

// One request with libcurl, an HTTP/2 client independent of fairbench's.
struct CurlReply {
  CURLcode code = CURLE_OK;
  std::string error;
  long status = 0;
  long http_version = 0;  // CURL_HTTP_VERSION_1_1, CURL_HTTP_VERSION_2_0
  std::string body;
};

struct CurlOptions {
  long http_version = CURL_HTTP_VERSION_1_1;
  std::string ca_file;  // empty: no verification
  long tls_max = 0;     // CURL_SSLVERSION_MAX_TLSv1_2 …
  std::string post_body;
};

CurlReply CurlFetch(const std::string& url, const CurlOptions& options) {
  CurlReply reply;
  CURL* curl = curl_easy_init();
  char error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, options.http_version);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 5000L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  if (options.ca_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
  } else {
    curl_easy_setopt(curl, CURLOPT_CAINFO, options.ca_file.c_str());
  }
  if (options.tls_max != 0) curl_easy_setopt(curl, CURLOPT_SSLVERSION, CURL_SSLVERSION_TLSv1_2 | options.tls_max);
  curl_slist* headers = nullptr;
  if (!options.post_body.empty()) {
    headers = curl_slist_append(headers, "Content-Type: application/json");
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, options.post_body.c_str());
  }
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply.body);
  curl_easy_setopt(
      curl, CURLOPT_WRITEFUNCTION, +[](char* data, size_t size, size_t n, void* out) {
        static_cast<std::string*>(out)->append(data, size * n);
        return size * n;
      });
  reply.code = curl_easy_perform(curl);
  reply.error = error;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply.status);
  curl_easy_getinfo(curl, CURLINFO_HTTP_VERSION, &reply.http_version);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return reply;
}

const TargetCase kNginx{"nginx", "fairbench-target-nginx", "nginx", false};

// Catches: --tls or --http2 not reaching nginx's listen line, a certificate
// that is not self-signed for the loopback names (curl verifies it against
// itself as the only trust anchor), ALPN not offering h2, requests over
// HTTP/2 missing from the request log.
TEST(NginxProtocolsTest, TlsWithHttp2ServesH2ByAlpnAndHttp11WithASelfSignedCertificate) {
  auto dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  const std::string work = dir->File("work");
  std::filesystem::create_directories(work);
  const std::string log_path = dir->File("requests.log");
  auto t = RunningTarget::Start(kNginx, log_path, {"--tls", "--http2", "--work-dir", work});
  ASSERT_TRUE(t);
  const std::string cert = work + "/tls.crt";
  ASSERT_TRUE(std::filesystem::exists(cert)) << t->Output();
  EXPECT_EQ(std::filesystem::status(work + "/tls.key").permissions() & std::filesystem::perms::others_read,
            std::filesystem::perms::none);
  const std::string port = std::to_string(t->port);
  int sent = 0;
  for (const std::string host : {"127.0.0.1", "localhost"}) {
    CurlOptions h2;
    h2.http_version = CURL_HTTP_VERSION_2TLS;
    h2.ca_file = cert;
    CurlReply r = CurlFetch("https://" + host + ":" + port + "/", h2);
    ++sent;
    ASSERT_EQ(r.code, CURLE_OK) << host << ": " << r.error;
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.http_version, CURL_HTTP_VERSION_2_0);
    EXPECT_EQ(r.body, "Hello, World!");
  }
  CurlOptions h2;
  h2.http_version = CURL_HTTP_VERSION_2TLS;
  h2.ca_file = cert;
  h2.post_body = kEchoBody;
  CurlReply echo = CurlFetch("https://127.0.0.1:" + port + "/api/echo", h2);
  ++sent;
  ASSERT_EQ(echo.code, CURLE_OK) << echo.error;
  EXPECT_EQ(echo.http_version, CURL_HTTP_VERSION_2_0);
  EXPECT_EQ(echo.body, kEchoBody);
  // HTTP/1.1 on the same port for a client that does not offer h2, over
  // TLS 1.2 as well as 1.3.
  CurlOptions h1;
  h1.ca_file = cert;
  h1.tls_max = CURL_SSLVERSION_MAX_TLSv1_2;
  CurlReply user = CurlFetch("https://127.0.0.1:" + port + "/users/42", h1);
  ++sent;
  ASSERT_EQ(user.code, CURLE_OK) << user.error;
  EXPECT_EQ(user.http_version, CURL_HTTP_VERSION_1_1);
  EXPECT_EQ(user.body, R"({"id":42,"name":"User 42"})");
  // Plain HTTP is not served on the TLS port.
  CurlReply plain = CurlFetch("http://127.0.0.1:" + port + "/", CurlOptions{});
  EXPECT_NE(plain.status, 200);

  ASSERT_TRUE(t->process.Kill(SIGTERM).ok());
  auto exit = t->process.Wait(seconds(10));
  ASSERT_TRUE(exit.ok());
  EXPECT_TRUE(exit->success()) << exit->ToString() << t->Output();
  ParsedLog log = ReadRequestLog(log_path);
  ASSERT_EQ(log.totals.size(), 1u);
  // nginx answers the plain request on its TLS port with a 400 it logs.
  EXPECT_EQ(log.totals[0], static_cast<uint64_t>(sent + 1));
}

// Catches: h2c served as HTTP/1.1 (curl's prior-knowledge request would
// fail), --http2 dropped without --tls.
TEST(NginxProtocolsTest, Http2WithoutTlsIsH2cWithPriorKnowledge) {
  auto t = RunningTarget::Start(kNginx, "", {"--http2"});
  ASSERT_TRUE(t);
  CurlOptions h2c;
  h2c.http_version = CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE;
  CurlReply r = CurlFetch("http://127.0.0.1:" + std::to_string(t->port) + "/api/status", h2c);
  ASSERT_EQ(r.code, CURLE_OK) << r.error;
  EXPECT_EQ(r.http_version, CURL_HTTP_VERSION_2_0);
  EXPECT_EQ(r.body, R"({"status":"running","framework":"nginx"})");
}

// Catches: ALPN choosing h2 without --http2, a given certificate ignored in
// favour of a self-signed one (curl trusts only the test CA here).
TEST(NginxProtocolsTest, TlsAloneIsHttp11WithTheGivenCertificate) {
  auto dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  auto certs = testing::MakeTestCertificates(dir->path().string());
  ASSERT_TRUE(certs.ok()) << certs.status().ToString();
  auto t = RunningTarget::Start(kNginx, "", {"--tls", "--cert", certs->server_cert, "--key", certs->server_key});
  ASSERT_TRUE(t);
  CurlOptions o;
  o.http_version = CURL_HTTP_VERSION_2TLS;  // offers h2 and http/1.1
  o.ca_file = certs->ca_cert;
  CurlReply r = CurlFetch("https://localhost:" + std::to_string(t->port) + "/", o);
  ASSERT_EQ(r.code, CURLE_OK) << r.error;
  EXPECT_EQ(r.http_version, CURL_HTTP_VERSION_1_1);
  EXPECT_EQ(r.body, "Hello, World!");
}

// nginx opens its port before it installs its signal handlers and writes
// its pid file after. A stand-in with that start (no SIGQUIT handler for
// 300 ms, then the pid file) makes the race certain: a stop asked for as
// soon as the launcher has started it must wait for the pid file, or the
// launcher's graceful SIGQUIT kills nginx (signal 3, exit 1).
// Catches: the launcher sending SIGQUIT before the pid file names nginx
// (the real nginx lost about 1 stop in 100 that way in SigintExitsZero).
TEST(NginxLauncherTest, AStopDuringNginxsStartWaitsForItsSignalHandlers) {
  auto dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  const std::string fake = dir->File("nginx");
  {
    std::ofstream out(fake);
    // Called as nginx -p DIR -c CONF -e LOG.
    out << "#!/bin/sh\nsleep 0.3\ntrap 'exit 0' QUIT\necho $$ > \"$2/nginx.pid\"\n"
           "while :; do sleep 0.05; done\n";
  }
  ASSERT_EQ(chmod(fake.c_str(), 0755), 0);
  testing::SubprocessOptions o;
  o.argv = {testing::BinaryPath("fairbench-target-nginx"),
            "--port",
            "1",
            "--nginx",
            fake,
            "--work-dir",
            dir->path().string()};
  o.stdout_to = testing::Redirect::File(dir->File("stdout"));
  o.stderr_to = testing::Redirect::File(dir->File("stderr"));
  auto p = Subprocess::Start(std::move(o));
  ASSERT_TRUE(p.ok());
  // The launcher prints its line once it has forked nginx.
  const auto deadline = std::chrono::steady_clock::now() + seconds(5);
  std::string out;
  while (out.find("nginx pid") == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(2));
    std::ifstream f(dir->File("stdout"));
    std::stringstream text;
    text << f.rdbuf();
    out = text.str();
  }
  ASSERT_NE(out.find("nginx pid"), std::string::npos) << out;
  ASSERT_TRUE(p->Kill(SIGINT).ok());
  auto exit = p->Wait(seconds(10));
  ASSERT_TRUE(exit.ok());
  std::ifstream err(dir->File("stderr"));
  std::stringstream err_text;
  err_text << err.rdbuf();
  EXPECT_TRUE(exit->success()) << exit->ToString() << "\n" << err_text.str();
}

// Each bad combination is refused before nginx starts, naming the flags.
TEST(NginxProtocolsTest, BadCertificateFlagsAreRefusedNamingTheFlag) {
  auto dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  auto certs = testing::MakeTestCertificates(dir->path().string());
  ASSERT_TRUE(certs.ok());
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--cert", certs->server_cert, "--key", certs->server_key}, "--cert and --key need --tls"},
      {{"--tls", "--cert", certs->server_cert}, "give both or neither"},
      {{"--tls", "--cert", certs->server_key, "--key", certs->server_key}, "--cert:"},
      {{"--tls", "--cert", certs->server_cert, "--key", certs->self_key}, "--cert and --key"},
  };
  for (const auto& [args, message] : cases) {
    testing::SubprocessOptions o;
    o.argv = {testing::BinaryPath("fairbench-target-nginx"), "--port", "1"};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    o.stdout_to = testing::Redirect::Null();
    o.stderr_to = testing::Redirect::File(dir->File("stderr"));
    auto p = Subprocess::Start(std::move(o));
    ASSERT_TRUE(p.ok());
    auto exit = p->Wait(seconds(5));
    ASSERT_TRUE(exit.ok());
    EXPECT_EQ(exit->exit_code, 2) << message;
    std::ifstream err(dir->File("stderr"));
    std::stringstream text_stream;
    text_stream << err.rdbuf();
    const std::string text = text_stream.str();
    EXPECT_NE(text.find(message), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace fairbench::targets
