// The study's six frameworks as targets (targets/<framework>/).
//
// Servers: each one scripts/build-frameworks built (build-frameworks/bin,
// or $FAIRBENCH_FRAMEWORKS_BIN_DIR) is started on a loopback port and must
// serve the study's four endpoints (statuses, content types, JSON bodies),
// keep connections alive, report its fairness facts with --describe, count
// requests in --request-log and exit 0 on SIGTERM. A framework that was not
// built is SKIPPED, saying how to build it: the normal suite never builds
// frameworks.
//
// Always (no build needed): every Dockerfile pins its framework and is
// multi-stage, non-root and tagless of "latest"; every server builds its
// JSON with its framework's own facility; examples/study-local.yaml is the
// run of examples/study.yaml with local commands.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "common/api/loader.h"
#include "testing/support/http_client.h"
#include "testing/support/ports.h"
#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"

namespace fairbench::targets {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::BuildRequest;
using testing::HttpConnection;
using testing::HttpResponse;
using testing::Subprocess;
using testing::TempDir;

const std::filesystem::path kSourceDir = FAIRBENCH_SOURCE_DIR;
const std::string kEchoBody = R"({"name":"Alice","age":30,"email":"alice@example.com"})";

struct Framework {
  std::string name;     // targets/<name>/, fairbench-target-<name>, /api/status's "framework"
  std::string version;  // what --describe must report
  std::string tag;      // the pinned tag ("" for Hical's commit of main)
  std::string commit;   // the pinned commit (a prefix for Hical)
  // What the server's source must use to build its JSON: the framework's
  // own facility (cpp-httplib has none; the study used nlohmann-json).
  std::vector<std::string> json_tokens;
  bool generic_echo;     // echoes any JSON (false: a typed struct, other fields dropped)
  bool echo_needs_type;  // reads the body as JSON only with Content-Type: application/json
};

std::ostream& operator<<(std::ostream& os, const Framework& f) { return os << f.name; }

const std::vector<Framework>& Frameworks() {
  static const std::vector<Framework> frameworks = {
      {"hical", "2.7", "", "ba28ad0", {"boost::json::"}, true, false},
      {"drogon", "1.9.8", "v1.9.8", "6d9ecb8d8d8dcbbc14db618c0687c7ae4c792f1b", {"Json::Value", "newHttpJsonResponse"}, true,
       true},
      {"crow", "1.2.0", "v1.2.0", "94a011b9f7c0a991e5382927a2dbe5a7d9a056b8", {"crow::json::wvalue", "crow::json::load"},
       true, false},
      {"oatpp", "1.3.0", "1.3.0", "349d96114ae03ae6fd44dd2a398e5cdd9529fb48", {"DTO_FIELD", "createDtoResponse", "ObjectMapper"},
       true, false},
      {"cpp-httplib", "0.18.3", "v0.18.3", "a7bc00e3307fecdb4d67545e93be7b88cfb1e186", {"nlohmann::json"}, true, false},
      {"cinatra", "0.3.0", "v0.3.0", "a920fce8b0d7b6a3a42e459c17ee5b9925d5a2ff", {"iguana::to_json", "REFLECTION("},
       false, false},
  };
  return frameworks;
}

std::string NameOf(const ::testing::TestParamInfo<Framework>& info) {
  std::string name = info.param.name;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string BinDir() {
  const char* env = std::getenv("FAIRBENCH_FRAMEWORKS_BIN_DIR");
  return env != nullptr && *env != '\0' ? env : FAIRBENCH_FRAMEWORKS_BIN_DIR;
}

std::string BinaryOf(const Framework& f) { return BinDir() + "/fairbench-target-" + f.name; }

bool IsExecutable(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  return !ec && std::filesystem::is_regular_file(status) &&
         (status.permissions() & std::filesystem::perms::owner_exec) != std::filesystem::perms::none;
}

bool StartsWith(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

// ------------------------------------------------------------------ servers

class RunningServer {
 public:
  // Starts the server with 2 threads on a free port and waits until it accepts.
  static std::unique_ptr<RunningServer> Start(const Framework& f, const std::string& request_log = "") {
    auto dir = TempDir::Create("fairbench-frameworks-test");
    EXPECT_TRUE(dir.ok());
    for (int attempt = 0; attempt < 3; ++attempt) {
      auto port = testing::FreeLoopbackPort();
      EXPECT_TRUE(port.ok());
      testing::SubprocessOptions o;
      o.argv = {BinaryOf(f), "--port", std::to_string(*port), "--threads", "2"};
      if (!request_log.empty()) {
        o.argv.push_back("--request-log");
        o.argv.push_back(request_log);
      }
      o.stdout_to = testing::Redirect::File(dir->File("stdout.log"));
      o.stderr_to = testing::Redirect::File(dir->File("stderr.log"));
      auto proc = Subprocess::Start(std::move(o));
      EXPECT_TRUE(proc.ok()) << proc.status().ToString();
      if (!proc.ok()) return nullptr;
      auto s = std::unique_ptr<RunningServer>(new RunningServer(std::move(*dir), std::move(*proc), *port));
      const auto deadline = std::chrono::steady_clock::now() + seconds(10);
      while (std::chrono::steady_clock::now() < deadline) {
        if (testing::PortAccepts("127.0.0.1", s->port)) return s;
        if (s->process.Poll()) break;  // exited: the port was taken meanwhile?
        std::this_thread::sleep_for(milliseconds(5));
      }
      if (!s->process.Poll()) {
        ADD_FAILURE() << f.name << " did not accept within 10 s: " << s->Output();
        return nullptr;
      }
      if (attempt == 2) ADD_FAILURE() << f.name << " exited during start: " << s->Output();
      dir = std::move(s->dir);
    }
    return nullptr;
  }

  ~RunningServer() {
    if (process.running()) (void)process.Terminate(SIGTERM, seconds(5));
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

  HttpResponse PostJson(const std::string& body) {
    return Fetch("POST", "/api/echo", body, {{"Content-Type", "application/json"}});
  }

  std::string Output() const { return ReadFile(dir.File("stdout.log")) + ReadFile(dir.File("stderr.log")); }

  TempDir dir;
  Subprocess process;
  uint16_t port;

 private:
  RunningServer(TempDir d, Subprocess p, uint16_t port_number)
      : dir(std::move(d)), process(std::move(p)), port(port_number) {}
};

// Parsed JSON, or a "discarded" value that equals nothing a server sends.
nlohmann::json ParseJson(const std::string& text) { return nlohmann::json::parse(text, nullptr, false); }

class FrameworkServerTest : public ::testing::TestWithParam<Framework> {
 protected:
  void SetUp() override {
    if (!IsExecutable(BinaryOf(GetParam()))) {
      GTEST_SKIP() << BinaryOf(GetParam()) << " is not built: scripts/build-frameworks builds it"
                   << (GetParam().name == "hical" ? " where GCC 14 and Boost >= 1.82 are installed (else its image)"
                                                  : "")
                   << " (set FAIRBENCH_FRAMEWORKS_BIN_DIR for another folder)";
    }
  }
};

TEST_P(FrameworkServerTest, HelloWorld) {
  auto s = RunningServer::Start(GetParam());
  ASSERT_TRUE(s);
  auto r = s->Fetch("GET", "/");
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(StartsWith(r.Header("Content-Type"), "text/plain")) << r.Header("Content-Type");
  EXPECT_EQ(r.body, "Hello, World!");
}

TEST_P(FrameworkServerTest, ApiStatusIsJsonNamingTheFramework) {
  auto s = RunningServer::Start(GetParam());
  ASSERT_TRUE(s);
  auto r = s->Fetch("GET", "/api/status");
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(StartsWith(r.Header("Content-Type"), "application/json")) << r.Header("Content-Type");
  EXPECT_EQ(ParseJson(r.body), (nlohmann::json{{"status", "running"}, {"framework", GetParam().name}})) << r.body;
}

TEST_P(FrameworkServerTest, EchoParsesAndSerialisesAgain) {
  auto s = RunningServer::Start(GetParam());
  ASSERT_TRUE(s);
  auto r = s->PostJson(kEchoBody);
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(StartsWith(r.Header("Content-Type"), "application/json")) << r.Header("Content-Type");
  EXPECT_EQ(ParseJson(r.body), ParseJson(kEchoBody)) << r.body;
  // Whitespace outside strings shows the body was parsed and written anew.
  auto spaced = s->PostJson(R"({ "name" : "Alice",  "age" : 30, "email" : "alice@example.com" })");
  EXPECT_EQ(spaced.status, 200);
  EXPECT_EQ(ParseJson(spaced.body), ParseJson(kEchoBody)) << spaced.body;
  EXPECT_EQ(spaced.body.find(' '), std::string::npos) << spaced.body;
  if (GetParam().generic_echo) {
    const std::string nested = R"({"a":[1,2.5,true,null,"x"],"b":{"c":"d"}})";
    auto any = s->PostJson(nested);
    EXPECT_EQ(any.status, 200);
    EXPECT_EQ(ParseJson(any.body), ParseJson(nested)) << any.body;
  }
}

TEST_P(FrameworkServerTest, EchoOfInvalidJsonIs400) {
  auto s = RunningServer::Start(GetParam());
  ASSERT_TRUE(s);
  for (const std::string body : {"{not json", R"({"name":"Alice")", ""}) {
    EXPECT_EQ(s->PostJson(body).status, 400) << body;
  }
  if (GetParam().echo_needs_type) {
    // Drogon reads a body as JSON only when it is declared so.
    EXPECT_EQ(s->Fetch("POST", "/api/echo", kEchoBody).status, 400);
  }
}

TEST_P(FrameworkServerTest, UserByIdFromThePath) {
  auto s = RunningServer::Start(GetParam());
  ASSERT_TRUE(s);
  auto r = s->Fetch("GET", "/users/42");
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(StartsWith(r.Header("Content-Type"), "application/json")) << r.Header("Content-Type");
  EXPECT_EQ(ParseJson(r.body), (nlohmann::json{{"id", 42}, {"name", "User 42"}})) << r.body;
  EXPECT_EQ(ParseJson(s->Fetch("GET", "/users/007").body), (nlohmann::json{{"id", 7}, {"name", "User 7"}}));
  EXPECT_EQ(ParseJson(s->Fetch("GET", "/users/18446744073709551615").body)["id"],
            nlohmann::json(18446744073709551615ull));
  for (const char* path : {"/users/abc", "/users/12x", "/users/-1", "/users/18446744073709551616"}) {
    EXPECT_EQ(s->Fetch("GET", path).status, 404) << path;
  }
}

TEST_P(FrameworkServerTest, UnknownPathIsNotFound) {
  auto s = RunningServer::Start(GetParam());
  ASSERT_TRUE(s);
  EXPECT_EQ(s->Fetch("GET", "/nope").status, 404);
  EXPECT_EQ(s->Fetch("GET", "/api").status, 404);
}

TEST_P(FrameworkServerTest, KeepAliveServesManyRequestsOnOneConnection) {
  auto s = RunningServer::Start(GetParam());
  ASSERT_TRUE(s);
  auto conn = s->Connect();
  const std::vector<std::pair<std::string, std::string>> json = {{"Content-Type", "application/json"}};
  for (int i = 0; i < 30; ++i) {
    auto r = (i % 3 == 0)   ? conn.RoundTrip(BuildRequest("GET", "/", "x"))
             : (i % 3 == 1) ? conn.RoundTrip(BuildRequest("GET", "/users/" + std::to_string(i), "x"))
                            : conn.RoundTrip(BuildRequest("POST", "/api/echo", "x", json, kEchoBody));
    ASSERT_TRUE(r.ok()) << "request " << i << ": " << r.status().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_NE(r->Header("Connection"), "close");
  }
  EXPECT_TRUE(conn.RoundTrip(BuildRequest("GET", "/api/status", "x")).ok());
}

// A server that writes one response in two small segments without
// TCP_NODELAY makes every keep-alive request after the first wait for the
// client's delayed ACK (40 ms): a benchmark would measure that, not the
// framework. The median of sequential requests shows it, whatever the load
// on the machine does to a few of them.
TEST_P(FrameworkServerTest, KeepAliveRequestsAreNotDelayed) {
  auto s = RunningServer::Start(GetParam());
  ASSERT_TRUE(s);
  auto conn = s->Connect();
  const std::vector<std::pair<std::string, std::string>> json = {{"Content-Type", "application/json"}};
  for (const std::string path : {"/", "/api/status", "/users/42", "/api/echo"}) {
    std::vector<std::chrono::steady_clock::duration> took;
    for (int i = 0; i < 15; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      auto r = path == "/api/echo" ? conn.RoundTrip(BuildRequest("POST", path, "x", json, kEchoBody))
                                   : conn.RoundTrip(BuildRequest("GET", path, "x"));
      ASSERT_TRUE(r.ok()) << path << ": " << r.status().ToString();
      took.push_back(std::chrono::steady_clock::now() - t0);
    }
    std::nth_element(took.begin(), took.begin() + 7, took.end());
    EXPECT_LT(took[7], milliseconds(20)) << path << ": median "
                                         << std::chrono::duration_cast<milliseconds>(took[7]).count() << " ms";
  }
}

// --describe: the fairness facts of the build, one JSON object.
nlohmann::json Describe(const Framework& f, const std::vector<std::string>& extra = {}) {
  auto dir = TempDir::Create("fairbench-frameworks-describe");
  EXPECT_TRUE(dir.ok());
  testing::SubprocessOptions o;
  o.argv = {BinaryOf(f), "--describe"};
  o.argv.insert(o.argv.end(), extra.begin(), extra.end());
  o.stdout_to = testing::Redirect::File(dir->File("out"));
  o.stderr_to = testing::Redirect::File(dir->File("err"));
  auto p = Subprocess::Start(std::move(o));
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  if (!p.ok()) return nullptr;
  auto exit = p->Wait(seconds(10));
  EXPECT_TRUE(exit.ok() && exit->success()) << ReadFile(dir->File("err"));
  return ParseJson(ReadFile(dir->File("out")));
}

TEST_P(FrameworkServerTest, DescribeStatesTheFairnessFacts) {
  const Framework& f = GetParam();
  const nlohmann::json facts = Describe(f, {"--threads", "3"});
  ASSERT_TRUE(facts.is_object()) << facts;
  EXPECT_EQ(facts.value("framework", ""), f.name);
  EXPECT_TRUE(StartsWith(facts.value("version", ""), f.version)) << facts;
  EXPECT_NE(facts.value("revision", "").find(f.commit), std::string::npos) << facts;
  EXPECT_EQ(facts.value("threads", 0), 3);
  for (const char* key : {"versionSource", "workerModel", "connectionThreads", "concurrentConnections",
                          "listenAddress", "jsonLibrary", "echo", "allocator", "compiler", "flags", "frameworkBuild",
                          "study"}) {
    ASSERT_TRUE(facts.contains(key) && facts[key].is_string()) << key << " missing: " << facts;
    EXPECT_FALSE(facts[key].get<std::string>().empty()) << key;
  }
  const std::string compiler = facts["compiler"];
  EXPECT_TRUE(StartsWith(compiler, "gcc ") || StartsWith(compiler, "clang ")) << compiler;
  EXPECT_NE(facts["flags"].get<std::string>().find("-O"), std::string::npos) << facts["flags"];
  EXPECT_NE(facts["allocator"].get<std::string>().find("malloc"), std::string::npos) << facts["allocator"];
  // The default is the study's: 4 threads.
  EXPECT_EQ(Describe(f).value("threads", 0), 4);
  // The truths a reader of the study did not see.
  if (f.name == "oatpp") {
    EXPECT_NE(facts["workerModel"].get<std::string>().find("thread per connection"), std::string::npos);
    EXPECT_TRUE(facts.contains("cpuAffinity"));
  }
  if (f.name == "cpp-httplib") {
    EXPECT_TRUE(StartsWith(facts["concurrentConnections"], "3 ")) << facts["concurrentConnections"];
  }
  if (f.name == "crow") {
    EXPECT_TRUE(StartsWith(facts["connectionThreads"], "2 ")) << facts["connectionThreads"];
    EXPECT_TRUE(facts.contains("tcpNoDelay"));
  }
}

TEST_P(FrameworkServerTest, RequestLogCountsAndSigtermExitsZero) {
  auto dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  const std::string log_path = dir->File("requests.log");
  auto s = RunningServer::Start(GetParam(), log_path);
  ASSERT_TRUE(s);
  int sent = 0;
  auto conn = s->Connect();
  for (int i = 0; i < 40; ++i, ++sent) {
    const std::string path = (i % 2 == 0) ? "/" : "/users/" + std::to_string(i);
    ASSERT_TRUE(conn.RoundTrip(BuildRequest("GET", path, "x")).ok());
  }
  // An idle keep-alive connection stays open while the server stops.
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(s->process.Kill(SIGTERM).ok());
  auto exit = s->process.Wait(seconds(10));
  ASSERT_TRUE(exit.ok()) << exit.status().ToString();
  EXPECT_TRUE(exit->success()) << exit->ToString() << "\n" << s->Output();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, seconds(5));
  const std::string log = ReadFile(log_path);
  EXPECT_NE(log.find("total " + std::to_string(sent) + "\n"), std::string::npos) << log;
}

TEST_P(FrameworkServerTest, PortIsRequired) {
  testing::SubprocessOptions o;
  o.argv = {BinaryOf(GetParam())};
  o.stdout_to = testing::Redirect::Null();
  o.stderr_to = testing::Redirect::Null();
  auto p = Subprocess::Start(std::move(o));
  ASSERT_TRUE(p.ok());
  auto exit = p->Wait(seconds(5));
  ASSERT_TRUE(exit.ok());
  EXPECT_TRUE(exit->exited);
  EXPECT_NE(exit->exit_code, 0);
}

INSTANTIATE_TEST_SUITE_P(Frameworks, FrameworkServerTest, ::testing::ValuesIn(Frameworks()), NameOf);

// ------------------------------------------------------------------ sources

class FrameworkSourceTest : public ::testing::TestWithParam<Framework> {};

// The study's ports, as examples/study.yaml gives them to the images.
std::map<std::string, int32_t> StudyPorts() {
  api::LoadOptions options;
  options.validation.platform = api::Platform::kKubernetes;
  auto run = api::LoadRunFile(kSourceDir / "examples" / "study.yaml", options);
  EXPECT_TRUE(run.ok()) << run.status().message();
  std::map<std::string, int32_t> ports;
  if (run.ok()) {
    for (const api::Target& t : run->spec.targets) ports[t.name] = t.port;
  }
  return ports;
}

TEST_P(FrameworkSourceTest, DockerfilePinsTheFrameworkAndRunsUnprivileged) {
  const Framework& f = GetParam();
  const std::string text = ReadFile(kSourceDir / "targets" / f.name / "Dockerfile");
  ASSERT_FALSE(text.empty()) << "targets/" << f.name << "/Dockerfile";
  std::vector<std::string> lines;
  {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  // Multi-stage: a named build stage, then the runtime stage, every image
  // with an explicit tag that is not "latest".
  const std::regex from(R"(^FROM\s+(\S+)(\s+AS\s+(\S+))?\s*$)", std::regex::icase);
  std::vector<std::string> images;
  size_t last_from = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (std::regex_match(lines[i], m, from)) {
      images.push_back(m[1]);
      last_from = i;
    }
  }
  ASSERT_GE(images.size(), 2u) << "not multi-stage";
  EXPECT_NE(text.find(" AS build"), std::string::npos);
  for (const std::string& image : images) {
    const size_t colon = image.rfind(':');
    ASSERT_NE(colon, std::string::npos) << image << " has no tag";
    EXPECT_NE(image.substr(colon + 1), "latest") << image;
  }
  EXPECT_EQ(text.find(":latest"), std::string::npos);
  EXPECT_EQ(images.front().rfind("debian:bookworm", 0) == 0, f.name != "hical") << images.front();
  if (f.name == "hical") {
    EXPECT_EQ(images.front(), "ubuntu:24.04");  // GCC 14, Boost 1.83
  }
  // The pinned version, cloned and checked against its commit.
  if (!f.tag.empty()) {
    EXPECT_NE(text.find("=" + f.tag + "\n"), std::string::npos) << "tag " << f.tag;
  }
  EXPECT_NE(text.find("_COMMIT=" + f.commit + "\n"), std::string::npos) << "commit " << f.commit;
  EXPECT_NE(text.find("git clone"), std::string::npos);
  EXPECT_NE(text.find("rev-parse HEAD"), std::string::npos);
  // The runtime stage: a numeric non-root user, the server as entrypoint
  // (exec form: no shell), the study's port exposed and listened on.
  std::string user, entrypoint, expose, cmd;
  for (size_t i = last_from; i < lines.size(); ++i) {
    if (StartsWith(lines[i], "USER ")) user = lines[i].substr(5);
    if (StartsWith(lines[i], "ENTRYPOINT ")) entrypoint = lines[i].substr(11);
    if (StartsWith(lines[i], "EXPOSE ")) expose = lines[i].substr(7);
    if (StartsWith(lines[i], "CMD ")) cmd = lines[i].substr(4);
  }
  EXPECT_TRUE(std::regex_match(user, std::regex(R"([1-9][0-9]*(:[0-9]+)?)"))) << "USER " << user;
  EXPECT_EQ(entrypoint, R"(["/usr/local/bin/fairbench-target-)" + f.name + R"("])");
  const int32_t port = StudyPorts()[f.name];
  EXPECT_EQ(expose, std::to_string(port));
  EXPECT_NE(cmd.find(R"("--port", ")" + std::to_string(port) + "\""), std::string::npos) << cmd;
  EXPECT_NE(cmd.find(R"("--host", "0.0.0.0")"), std::string::npos) << cmd;
  for (const char* label : {"org.opencontainers.image.source=\"$FAIRBENCH_SOURCE\"",
                            "org.opencontainers.image.version=\"$FAIRBENCH_VERSION\"",
                            "org.opencontainers.image.revision=\"$FAIRBENCH_REVISION\""}) {
    EXPECT_NE(text.find(label), std::string::npos) << label;
  }
  // The image builds only the repository's own files besides the clone.
  for (const std::string& line : lines) {
    if (StartsWith(line, "COPY ") && line.find("--from=") == std::string::npos) {
      EXPECT_TRUE(line.find(" common/") != std::string::npos || line.find(" targets/") != std::string::npos) << line;
    }
  }
}

TEST_P(FrameworkSourceTest, ServerBuildsItsJsonWithTheFrameworksOwnFacility) {
  const Framework& f = GetParam();
  const std::string source = ReadFile(kSourceDir / "targets" / f.name / "main.cc");
  ASSERT_FALSE(source.empty());
  for (const std::string& token : f.json_tokens) {
    EXPECT_NE(source.find(token), std::string::npos) << f.name << " does not use " << token;
  }
  if (f.name != "cpp-httplib") {
    EXPECT_EQ(source.find("nlohmann"), std::string::npos) << f.name << " builds JSON with nlohmann-json";
  }
  // Every endpoint of the study is there, and the four worker threads.
  for (const char* path : {"\"/\"", "\"/api/status\"", "\"/api/echo\""}) {
    EXPECT_NE(source.find(path), std::string::npos) << path;
  }
  EXPECT_NE(source.find("/users/"), std::string::npos);
  // --describe (and the flags every target takes) through the one parser.
  EXPECT_NE(source.find("ParseTargetCommandLine("), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(kSourceDir / "targets" / f.name / "CMakeLists.txt"));
}

TEST_P(FrameworkSourceTest, BuildScriptPinsTheSameCommit) {
  const std::string script = ReadFile(kSourceDir / "scripts" / "build-frameworks");
  ASSERT_FALSE(script.empty());
  EXPECT_NE(script.find("=" + GetParam().commit + "\n"), std::string::npos) << GetParam().commit;
}

// With scripts/images --sources, the Dockerfile builds from a copy and
// checks it by blob ids: the same ones scripts/build-frameworks checks.
// Catches: a pin updated in one place only (the image would be built from
// other sources than the native build, or refuse the right ones).
TEST_P(FrameworkSourceTest, DockerfileChecksACopyAgainstTheBuildScriptsBlobIds) {
  const Framework& f = GetParam();
  if (f.name == "hical") GTEST_SKIP() << "Hical's pin is a commit of main without blob ids";
  const std::string script = ReadFile(kSourceDir / "scripts" / "build-frameworks");
  const std::string dockerfile = ReadFile(kSourceDir / "targets" / f.name / "Dockerfile");
  const std::regex files(R"re(repo_files\[([a-z-]+)\]="([^"]*)")re");
  std::map<std::string, std::string> blobs;
  for (std::sregex_iterator it(script.begin(), script.end(), files), end; it != end; ++it) blobs[(*it)[1]] = (*it)[2];
  std::vector<std::string> repos = {f.name == "cinatra" ? "yalantinglibs" : f.name};
  if (f.name == "drogon") repos.push_back("trantor");
  for (const std::string& repo : repos) {
    ASSERT_FALSE(blobs[repo].empty()) << repo;
    EXPECT_NE(dockerfile.find("/src/sources/check-blobs /src/" + (repo == "trantor" ? std::string("drogon/trantor") : repo) +
                              " " + blobs[repo]),
              std::string::npos)
        << repo << ": " << blobs[repo];
  }
  EXPECT_NE(dockerfile.find("COPY targets/sources/ /src/sources/"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Frameworks, FrameworkSourceTest, ::testing::ValuesIn(Frameworks()), NameOf);

// ------------------------------------------------------------------ the local study

TEST(StudyLocalTest, IsTheStudysRunWithLocalCommands) {
  api::LoadOptions local_options;
  local_options.validation.platform = api::Platform::kLocal;
  auto local = api::LoadRunFile(kSourceDir / "examples" / "study-local.yaml", local_options);
  ASSERT_TRUE(local.ok()) << local.status().message();
  api::LoadOptions cluster_options;
  cluster_options.validation.platform = api::Platform::kKubernetes;
  auto cluster = api::LoadRunFile(kSourceDir / "examples" / "study.yaml", cluster_options);
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();

  const api::BenchmarkRunSpec& l = local->spec;
  const api::BenchmarkRunSpec& c = cluster->spec;
  EXPECT_EQ(l.scenarios, c.scenarios);
  EXPECT_EQ(l.load, c.load);
  EXPECT_EQ(l.repetitions, c.repetitions);
  EXPECT_EQ(l.cooldown, c.cooldown);
  ASSERT_EQ(l.targets.size(), c.targets.size());
  for (size_t i = 0; i < l.targets.size(); ++i) {
    const api::Target& t = l.targets[i];
    EXPECT_EQ(t.name, c.targets[i].name);
    EXPECT_EQ(t.resources, c.targets[i].resources) << t.name;
    EXPECT_EQ(t.nofile, c.targets[i].nofile) << t.name;
    ASSERT_TRUE(t.local.has_value()) << t.name;
    EXPECT_EQ(t.local->working_dir, "..");
    EXPECT_EQ(t.local->command,
              (std::vector<std::string>{"build-frameworks/bin/fairbench-target-" + t.name, "--port", "{port}",
                                        "--threads", "4"}));
  }
  // The build script writes where the run looks.
  EXPECT_NE(ReadFile(kSourceDir / "scripts" / "build-frameworks").find("out=\"$root/build-frameworks\""),
            std::string::npos);
}

// examples/study-docker.yaml is the study as its author ran it: the same
// scenarios, load, resources and nofile, each framework from the image
// scripts/images tags, on a free loopback port. Catches: the example
// drifting from the study, an image name scripts/images does not build.
TEST(StudyDockerTest, IsTheStudysRunWithTheImagesScriptsImagesBuilds) {
  api::LoadOptions docker_options;
  docker_options.validation.platform = api::Platform::kDocker;
  auto docker = api::LoadRunFile(kSourceDir / "examples" / "study-docker.yaml", docker_options);
  ASSERT_TRUE(docker.ok()) << docker.status().message();
  api::LoadOptions cluster_options;
  cluster_options.validation.platform = api::Platform::kKubernetes;
  auto cluster = api::LoadRunFile(kSourceDir / "examples" / "study.yaml", cluster_options);
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  const api::BenchmarkRunSpec& d = docker->spec;
  const api::BenchmarkRunSpec& c = cluster->spec;
  EXPECT_EQ(d.scenarios, c.scenarios);
  EXPECT_EQ(d.load, c.load);
  EXPECT_EQ(d.repetitions, c.repetitions);
  ASSERT_EQ(d.targets.size(), c.targets.size());
  const std::string images = ReadFile(kSourceDir / "scripts" / "images");
  for (size_t i = 0; i < d.targets.size(); ++i) {
    const api::Target& t = d.targets[i];
    EXPECT_EQ(t.name, c.targets[i].name);
    EXPECT_EQ(t.resources, c.targets[i].resources) << t.name;
    EXPECT_EQ(t.nofile, 65536) << t.name;
    const std::string tag = c.targets[i].image.substr(c.targets[i].image.rfind(':') + 1);
    EXPECT_EQ(t.image, "ghcr.io/fairbench/" + t.name + ":" + tag);
    EXPECT_NE(images.find("[" + t.name + "]=" + tag), std::string::npos) << t.name << " is not tagged " << tag;
    EXPECT_EQ(t.args, (std::vector<std::string>{"--host", "127.0.0.1", "--port", "{port}", "--threads", "4"}));
  }
}

}  // namespace
}  // namespace fairbench::targets
