// The study's six framework servers (targets/<framework>/), run: the
// binaries a user points this test at, since this repository builds no
// framework. FAIRBENCH_FRAMEWORK_BIN_DIR names an absolute folder holding
// fairbench-target-<framework> binaries (any of the six); each one there is
// started on a loopback port and must serve the study's four endpoints
// (statuses, content types, JSON bodies), keep connections alive without
// delayed-ACK stalls, report its fairness facts with --describe (the
// study's version of its framework among them), count requests in
// --request-log and exit 0 on SIGTERM.
//
// The tests are registered at start (::testing::RegisterTest), one suite
// per server found: FrameworkServer/<framework>.<Check>. Without the
// variable there are none, and ctest lists none either (it asks this
// binary for its tests each time it starts: framework_servers_tests.cmake),
// so a run without frameworks shows no skips. A variable naming a relative
// path, or a folder with none of the six, is one test that fails saying so.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

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

constexpr const char* kBinDirVariable = "FAIRBENCH_FRAMEWORK_BIN_DIR";
const std::string kEchoBody = R"({"name":"Alice","age":30,"email":"alice@example.com"})";

struct Framework {
  std::string name;      // fairbench-target-<name>, /api/status's "framework"
  std::string version;   // the study's version, which --describe must report
  bool generic_echo;     // echoes any JSON (false: a typed struct, other fields dropped)
  bool echo_needs_type;  // reads the body as JSON only with Content-Type: application/json
};

const std::vector<Framework>& Frameworks() {
  static const std::vector<Framework> frameworks = {
      {"hical", "2.7", true, false},   {"drogon", "1.9.8", true, true},        {"crow", "1.2.0", true, false},
      {"oatpp", "1.3.0", true, false}, {"cpp-httplib", "0.18.3", true, false}, {"cinatra", "0.3.0", false, false},
  };
  return frameworks;
}

std::filesystem::path BinDir() {
  const char* dir = std::getenv(kBinDirVariable);
  return dir != nullptr ? dir : "";
}

std::string BinaryOf(const Framework& f) { return (BinDir() / ("fairbench-target-" + f.name)).string(); }

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool IsExecutable(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  return !ec && std::filesystem::is_regular_file(status) &&
         (status.permissions() & std::filesystem::perms::owner_exec) != std::filesystem::perms::none;
}

bool StartsWith(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

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

void HelloWorld(const Framework& f) {
  auto s = RunningServer::Start(f);
  ASSERT_TRUE(s);
  auto r = s->Fetch("GET", "/");
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(StartsWith(r.Header("Content-Type"), "text/plain")) << r.Header("Content-Type");
  EXPECT_EQ(r.body, "Hello, World!");
}

void ApiStatusIsJsonNamingTheFramework(const Framework& f) {
  auto s = RunningServer::Start(f);
  ASSERT_TRUE(s);
  auto r = s->Fetch("GET", "/api/status");
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(StartsWith(r.Header("Content-Type"), "application/json")) << r.Header("Content-Type");
  EXPECT_EQ(ParseJson(r.body), (nlohmann::json{{"status", "running"}, {"framework", f.name}})) << r.body;
}

void EchoParsesAndSerialisesAgain(const Framework& f) {
  auto s = RunningServer::Start(f);
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
  if (f.generic_echo) {
    const std::string nested = R"({"a":[1,2.5,true,null,"x"],"b":{"c":"d"}})";
    auto any = s->PostJson(nested);
    EXPECT_EQ(any.status, 200);
    EXPECT_EQ(ParseJson(any.body), ParseJson(nested)) << any.body;
  }
}

void EchoOfInvalidJsonIs400(const Framework& f) {
  auto s = RunningServer::Start(f);
  ASSERT_TRUE(s);
  for (const std::string body : {"{not json", R"({"name":"Alice")", ""}) {
    EXPECT_EQ(s->PostJson(body).status, 400) << body;
  }
  if (f.echo_needs_type) {
    // Drogon reads a body as JSON only when it is declared so.
    EXPECT_EQ(s->Fetch("POST", "/api/echo", kEchoBody).status, 400);
  }
}

void UserByIdFromThePath(const Framework& f) {
  auto s = RunningServer::Start(f);
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

void UnknownPathIsNotFound(const Framework& f) {
  auto s = RunningServer::Start(f);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->Fetch("GET", "/nope").status, 404);
  EXPECT_EQ(s->Fetch("GET", "/api").status, 404);
}

void KeepAliveServesManyRequestsOnOneConnection(const Framework& f) {
  auto s = RunningServer::Start(f);
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
void KeepAliveRequestsAreNotDelayed(const Framework& f) {
  auto s = RunningServer::Start(f);
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

void DescribeStatesTheFairnessFacts(const Framework& f) {
  const nlohmann::json facts = Describe(f, {"--threads", "3"});
  ASSERT_TRUE(facts.is_object()) << facts;
  EXPECT_EQ(facts.value("framework", ""), f.name);
  EXPECT_TRUE(StartsWith(facts.value("version", ""), f.version)) << facts;
  EXPECT_EQ(facts.value("threads", 0), 3);
  for (const char* key :
       {"versionSource", "revision", "workerModel", "connectionThreads", "concurrentConnections", "listenAddress",
        "jsonLibrary", "echo", "allocator", "compiler", "flags", "frameworkBuild", "study"}) {
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

void RequestLogCountsAndSigtermExitsZero(const Framework& f) {
  auto dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  const std::string log_path = dir->File("requests.log");
  auto s = RunningServer::Start(f, log_path);
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

void PortIsRequired(const Framework& f) {
  testing::SubprocessOptions o;
  o.argv = {BinaryOf(f)};
  o.stdout_to = testing::Redirect::Null();
  o.stderr_to = testing::Redirect::Null();
  auto p = Subprocess::Start(std::move(o));
  ASSERT_TRUE(p.ok());
  auto exit = p->Wait(seconds(5));
  ASSERT_TRUE(exit.ok());
  EXPECT_TRUE(exit->exited);
  EXPECT_NE(exit->exit_code, 0);
}

// ------------------------------------------------------------------ registration

// One check of one server, or the one failure that says why there is none.
class ServerTest : public ::testing::Test {
 public:
  explicit ServerTest(std::function<void()> body) : body_(std::move(body)) {}
  void TestBody() override { body_(); }

 private:
  std::function<void()> body_;
};

struct Check {
  const char* name;
  void (*run)(const Framework&);
};

const Check kChecks[] = {
    {"HelloWorld", HelloWorld},
    {"ApiStatusIsJsonNamingTheFramework", ApiStatusIsJsonNamingTheFramework},
    {"EchoParsesAndSerialisesAgain", EchoParsesAndSerialisesAgain},
    {"EchoOfInvalidJsonIs400", EchoOfInvalidJsonIs400},
    {"UserByIdFromThePath", UserByIdFromThePath},
    {"UnknownPathIsNotFound", UnknownPathIsNotFound},
    {"KeepAliveServesManyRequestsOnOneConnection", KeepAliveServesManyRequestsOnOneConnection},
    {"KeepAliveRequestsAreNotDelayed", KeepAliveRequestsAreNotDelayed},
    {"DescribeStatesTheFairnessFacts", DescribeStatesTheFairnessFacts},
    {"RequestLogCountsAndSigtermExitsZero", RequestLogCountsAndSigtermExitsZero},
    {"PortIsRequired", PortIsRequired},
};

void RegisterServerTests() {
  const std::filesystem::path dir = BinDir();
  if (dir.empty()) return;
  std::vector<const Framework*> found;
  if (dir.is_absolute()) {
    for (const Framework& f : Frameworks()) {
      if (IsExecutable(BinaryOf(f))) found.push_back(&f);
    }
  }
  if (found.empty()) {
    const std::string why =
        dir.is_relative()
            ? std::string(kBinDirVariable) + "=" + dir.string() + " is relative: name the folder by its absolute path"
            : std::string(kBinDirVariable) + "=" + dir.string() +
                  " holds none of fairbench-target-{hical,drogon,crow,oatpp,cpp-httplib,cinatra}";
    ::testing::RegisterTest("FrameworkServer", "BinDirHoldsServers", nullptr, nullptr, __FILE__, __LINE__,
                            [why]() -> ServerTest* { return new ServerTest([why] { FAIL() << why; }); });
    return;
  }
  for (const Framework* f : found) {
    // No '-' in a name: --gtest_filter reads it as the start of the negative patterns.
    std::string suite = "FrameworkServer/" + f->name;
    std::replace(suite.begin(), suite.end(), '-', '_');
    for (const Check& check : kChecks) {
      ::testing::RegisterTest(suite.c_str(), check.name, nullptr, nullptr, __FILE__, __LINE__,
                              [f, run = check.run]() -> ServerTest* { return new ServerTest([f, run] { run(*f); }); });
    }
  }
}

}  // namespace
}  // namespace fairbench::targets

// Its own main(): the tests are registered from the environment before they
// run. (This object's main() is linked in place of GoogleTest's gtest_main.)
int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  fairbench::targets::RegisterServerTests();
  return RUN_ALL_TESTS();
}
