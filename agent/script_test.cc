// wrk scripts under `fairbench-agent load -s`, checked against what a server
// recorded of every request (the delay server with --record-requests: each
// request's bytes, its connection and its place; nginx's access log over
// TLS and HTTP/2) and, where that is the clearest oracle, against Debian's
// wrk running the same script against the same server. Each test names the
// change to the code it would catch.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "testing/delay_server/delay_server_fixture.h"
#include "testing/support/bin_dir.h"
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
  double seconds = 0;  // wall time
};

// A request as the server read it.
struct Seen {
  uint32_t conn = 0, seq = 0;
  uint64_t index = 0;
  int64_t arrived_ns = 0;
  std::string method, path, body;
  std::map<std::string, std::string> headers;  // lower-case names
};

Seen ParseSeen(const testing::DelayRecord& r) {
  Seen s;
  s.conn = r.conn;
  s.seq = r.seq;
  s.index = r.index;
  s.arrived_ns = r.arrived_ns;
  const size_t head_end = r.request.find("\r\n\r\n");
  std::istringstream head(r.request.substr(0, head_end));
  std::string line;
  std::getline(head, line);
  std::istringstream first(line);
  first >> s.method >> s.path;
  while (std::getline(head, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    s.headers[name] = line.substr(colon + 2);
  }
  if (head_end != std::string::npos) s.body = r.request.substr(head_end + 4);
  return s;
}

class ScriptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::TempDir::Create("fairbench-script");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
  }

  std::string Script(const std::string& name, const std::string& text) {
    const std::string path = (dir_->path() / name).string();
    std::ofstream(path) << text;
    return path;
  }

  // A process under way; Finish() waits for it. Processes under way at once
  // need different tags (their output files).
  struct Started {
    std::optional<testing::Subprocess> process;
    std::string tag;
    std::chrono::steady_clock::time_point began;
  };
  Started Start(const std::vector<std::string>& argv, const std::string& tag = "run") {
    testing::SubprocessOptions o;
    o.argv = argv;
    o.stdout_to = testing::Redirect::File((dir_->path() / (tag + ".out")).string());
    o.stderr_to = testing::Redirect::File((dir_->path() / (tag + ".err")).string());
    Started s;
    s.tag = tag;
    s.began = std::chrono::steady_clock::now();
    auto p = testing::Subprocess::Start(o);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (p.ok()) s.process.emplace(std::move(*p));
    return s;
  }
  Outcome Finish(Started& s) {
    Outcome r;
    if (!s.process) return r;
    auto status = s.process->Wait(60s);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - s.began).count();
    EXPECT_TRUE(status.ok());
    if (status.ok()) r.code = status->exited ? status->exit_code : -1;
    std::ifstream out(dir_->path() / (s.tag + ".out")), err(dir_->path() / (s.tag + ".err"));
    std::stringstream a, b;
    a << out.rdbuf();
    b << err.rdbuf();
    r.out = a.str();
    r.err = b.str();
    return r;
  }
  Outcome Run(const std::vector<std::string>& argv) {
    Started s = Start(argv);
    return Finish(s);
  }
  static std::vector<std::string> AgentArgv(std::vector<std::string> args) {
    args.insert(args.begin(), {testing::BinaryPath("fairbench-agent"), "load"});
    return args;
  }
  static std::vector<std::string> WrkArgv(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"wrk"};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  Outcome Agent(const std::vector<std::string>& args) { return Run(AgentArgv(args)); }
  Outcome Wrk(const std::vector<std::string>& args) { return Run(WrkArgv(args)); }
  nlohmann::json Json(const std::string& name) {
    std::ifstream in(dir_->path() / name);
    return nlohmann::json::parse(in, nullptr, false);
  }
  std::string JsonPath(const std::string& name) { return (dir_->path() / name).string(); }

  std::unique_ptr<testing::DelayServerFixture> Server(bool index_header = false) {
    testing::DelayFixtureOptions o;
    o.record_requests = true;
    o.index_header = index_header;
    auto s = testing::DelayServerFixture::Start(o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }
  static std::string Url(const testing::DelayServerFixture& s, const std::string& path = "/") {
    return "http://127.0.0.1:" + std::to_string(s.port()) + path;
  }
  static std::vector<agent::Seen> Requests(testing::DelayServerFixture& s) {
    auto r = s.Records();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    std::vector<agent::Seen> out;
    if (r.ok()) {
      for (const testing::DelayRecord& rec : r->records) out.push_back(ParseSeen(rec));
    }
    return out;
  }

  std::optional<testing::TempDir> dir_;
};

// The static script of the study (a POST with a JSON body and headers set
// at the top level), the -H headers and init(args) go out exactly as Debian's
// wrk sends them. Catches: wrk.method/body/headers not formatted into the
// request, Content-Length missing or wrong, -H not put into wrk.headers, the
// arguments after "--" not handed to init (or without args[0] = the URL).
TEST_F(ScriptTest, TopLevelTablePostIsWhatWrkSends) {
  const std::string script = Script("post.lua", R"(
wrk.method = "POST"
wrk.body   = '{"name":"Alice","age":30}'
wrk.headers["Content-Type"] = "application/json"
function init(args)
  local s = ""
  for i = 0, #args do s = s .. i .. "=" .. args[i] .. ";" end
  wrk.headers["X-Args"] = s
end
)");
  std::map<std::string, std::vector<agent::Seen>> runs;
  for (const std::string tool : {"wrk", "ours"}) {
    auto server = Server();
    ASSERT_NE(server, nullptr);
    // wrk's -d takes whole seconds.
    const std::vector<std::string> args = {
        "-t1", "-c2",   "-d1s", "-H", "X-From-Flag: yes", "-s", script, Url(*server, "/api/echo?x=1"),
        "--",  "alpha", "beta"};
    const Outcome o = tool == "wrk" ? Wrk(args) : Agent(args);
    ASSERT_EQ(o.code, 0) << tool << ": " << o.err;
    const std::string port = std::to_string(server->port());
    for (agent::Seen& s : Requests(*server)) {
      if (s.method.empty()) continue;  // wrk's address probe sends nothing
      for (auto& [name, value] : s.headers) {
        for (size_t at; (at = value.find(port)) != std::string::npos;) value.replace(at, port.size(), "PORT");
      }
      runs[tool].push_back(std::move(s));
    }
    ASSERT_GT(runs[tool].size(), 10u) << tool;
  }
  const agent::Seen& want = runs["wrk"].front();
  EXPECT_EQ(want.method, "POST");
  EXPECT_EQ(want.body, R"({"name":"Alice","age":30})");
  for (const agent::Seen& s : runs["ours"]) {
    ASSERT_EQ(s.method, want.method);
    ASSERT_EQ(s.path, want.path);
    ASSERT_EQ(s.body, want.body);
    ASSERT_EQ(s.headers, want.headers) << "what wrk sent differs from ours";
  }
  EXPECT_EQ(want.headers.at("x-args").find("0=http://127.0.0.1:PORT/"), 0u);
  EXPECT_NE(want.headers.at("x-args").find("/api/echo?x=1;1=alpha;2=beta;"), std::string::npos);
}

// request() runs once per request, in each thread's own state: every
// thread (its id set by setup()) numbers its requests with no gap and no
// repeat, in the path and in a header, from 1, except thread 1, whose 1
// went to the check before the load (as in wrk, that text is not sent).
// Catches: request() called once and its text reused (repeats), one state
// shared by the threads (gaps), the per-request text not written (path and
// header disagree), the checked text sent or a thread other than the first
// checked.
TEST_F(ScriptTest, CounterInPathAndHeaderRunsPerRequestPerThread) {
  auto server = Server();
  ASSERT_NE(server, nullptr);
  const std::string script = Script("counter.lua", R"(
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("id", threads)
end
local counter = 0
function request()
  counter = counter + 1
  return wrk.format(nil, "/t/" .. id .. "/" .. counter, { ["X-Counter"] = counter })
end
)");
  const Outcome o = Agent({"-t2", "-c4", "-d500ms", "-s", script, Url(*server)});
  ASSERT_EQ(o.code, 0) << o.err;
  std::map<int, std::vector<int>> per_thread;
  for (const agent::Seen& s : Requests(*server)) {
    int id = 0, n = 0;
    ASSERT_EQ(std::sscanf(s.path.c_str(), "/t/%d/%d", &id, &n), 2) << s.path;
    EXPECT_EQ(s.headers.at("x-counter"), std::to_string(n));
    per_thread[id].push_back(n);
  }
  ASSERT_EQ(per_thread.size(), 2u);
  for (auto& [id, counts] : per_thread) {
    std::sort(counts.begin(), counts.end());
    ASSERT_GT(counts.size(), 20u);
    const int first = id == 1 ? 2 : 1;
    for (size_t i = 0; i < counts.size(); ++i) ASSERT_EQ(counts[i], static_cast<int>(i) + first) << "thread " << id;
  }
}

// A token read in response() is sent on the next request, as with wrk: the
// server numbers its responses (X-Request-Index), and every request but a
// connection's first carries the number of the response before it. Catches:
// response() not called, or called without its headers or body.
TEST_F(ScriptTest, TokenReadInResponseIsSentLater) {
  const std::string script = Script("token.lua", R"(
local token
function response(status, headers, body)
  if status == 200 and body == "Hello, World!" then token = headers["X-Request-Index"] end
end
function request()
  if token then return wrk.format(nil, nil, { ["X-Token"] = token }) end
  return wrk.format()
end
)");
  for (const std::string tool : {"wrk", "ours"}) {
    auto server = Server(/*index_header=*/true);
    ASSERT_NE(server, nullptr);
    const std::vector<std::string> args = {"-t1", "-c1", "-d1s", "-s", script, Url(*server)};
    const Outcome o = tool == "wrk" ? Wrk(args) : Agent(args);
    ASSERT_EQ(o.code, 0) << tool << ": " << o.err;
    std::map<uint32_t, std::vector<agent::Seen>> conns;
    for (agent::Seen& s : Requests(*server)) {
      if (!s.method.empty()) conns[s.conn].push_back(std::move(s));
    }
    ASSERT_EQ(conns.size(), 1u) << tool;
    const std::vector<agent::Seen>& seq = conns.begin()->second;
    ASSERT_GT(seq.size(), 10u) << tool;
    EXPECT_EQ(seq[0].headers.count("x-token"), 0u) << tool;
    for (size_t i = 1; i < seq.size(); ++i) {
      ASSERT_EQ(seq[i].headers.count("x-token"), 1u) << tool << ": request " << i << " has no token";
      EXPECT_EQ(seq[i].headers.at("x-token"), std::to_string(seq[i - 1].index)) << tool << ": request " << i;
    }
  }
}

// delay() spaces a connection's requests by its milliseconds. Catches:
// delay() not called, its value taken as seconds or microseconds, the wait
// counted in the latency.
TEST_F(ScriptTest, DelaySpacesAConnectionsRequests) {
  auto server = Server();
  ASSERT_NE(server, nullptr);
  const std::string script = Script("delay.lua", "function delay() return 40 end\n");
  const Outcome o = Agent({"-t1", "-c2", "-d1s", "-s", script, Url(*server), "--json", JsonPath("d.json")});
  ASSERT_EQ(o.code, 0) << o.err;
  std::map<uint32_t, std::vector<int64_t>> arrivals;
  for (const agent::Seen& s : Requests(*server)) arrivals[s.conn].push_back(s.arrived_ns);
  ASSERT_EQ(arrivals.size(), 2u);
  for (const auto& [conn, times] : arrivals) {
    EXPECT_GE(times.size(), 15u) << "connection " << conn;
    EXPECT_LE(times.size(), 27u) << "connection " << conn;
    for (size_t i = 1; i < times.size(); ++i) EXPECT_GE(times[i] - times[i - 1], 39'000'000) << "connection " << conn;
  }
  const nlohmann::json j = Json("d.json");
  EXPECT_LT(j["latency"]["maxUs"].get<double>(), 30'000) << "the delay is not latency";
}

// Requests built in init() and returned together are pipelined, and each
// response counts: the server reads /p/1, /p/2, /p/3 in that order on each
// connection, and what it served equals our requests plus those drained.
// Catches: a text counted as one request, the batch written in pieces
// waiting for answers, the count taken once instead of from each text.
TEST_F(ScriptTest, PipelinedRequestsFromInitEachCount) {
  auto server = Server();
  ASSERT_NE(server, nullptr);
  const std::string script = Script("pipeline.lua", R"(
function init(args)
  local r = {}
  for i = 1, 3 do r[i] = wrk.format(nil, "/p/" .. i) end
  req = table.concat(r)
end
function request() return req end
)");
  const Outcome o = Agent({"-t1", "-c2", "-d500ms", "-s", script, Url(*server), "--json", JsonPath("p.json")});
  ASSERT_EQ(o.code, 0) << o.err;
  std::map<uint32_t, std::vector<std::string>> paths;
  const std::vector<agent::Seen> seen = Requests(*server);
  for (const agent::Seen& s : seen) paths[s.conn].push_back(s.path);
  for (const auto& [conn, p] : paths) {
    for (size_t i = 0; i < p.size(); ++i) ASSERT_EQ(p[i], "/p/" + std::to_string(i % 3 + 1)) << conn;
  }
  const nlohmann::json j = Json("p.json");
  EXPECT_GT(j["requests"].get<uint64_t>(), 30u);
  EXPECT_EQ(seen.size(), j["requests"].get<uint64_t>() + j["drained"].get<uint64_t>() + j["abandoned"].get<uint64_t>());
}

// setup() hands values (a number, a table) to each thread, and done() reads
// each thread's globals back: two threads, two ids, two tags, and the
// responses they counted add up to the summary's requests. Catches:
// thread:get reading another thread's state (one id twice), thread:set
// dropping tables, response() called during the drain or not at all.
TEST_F(ScriptTest, SetupPassesValuesInAndDoneReadsThemPerThread) {
  auto server = Server();
  ASSERT_NE(server, nullptr);
  const std::string script = Script("threads.lua", R"(
local threads = {}
function setup(thread)
  table.insert(threads, thread)
  thread:set("id", #threads)
  thread:set("conf", { tag = "t" .. #threads, list = { 1, 2, 3 } })
end
function init(args)
  tag = conf.tag .. "-" .. #conf.list
  responses = 0
  wrk.path = "/" .. tag
  -- The thread's own userdata works in its own state too.
  wrk.thread:set("copy", { tag = wrk.thread:get("tag"), n = 2 })
end
function response() responses = responses + 1 end
function done(summary)
  local total = 0
  for _, t in ipairs(threads) do
    io.write(string.format("thread %d tag %s responses %d copy %s/%d\n", t:get("id"), t:get("tag"), t:get("responses"),
                           t:get("copy").tag, t:get("copy").n))
    total = total + t:get("responses")
  end
  io.write(string.format("total %d summary %d\n", total, summary.requests))
end
)");
  const Outcome o = Agent({"-t2", "-c2", "-d500ms", "-s", script, Url(*server)});
  ASSERT_EQ(o.code, 0) << o.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(o.out, m, std::regex(R"(thread 1 tag t1-3 responses (\d+) copy t1-3/2)"))) << o.out;
  ASSERT_TRUE(std::regex_search(o.out, m, std::regex(R"(thread 2 tag t2-3 responses (\d+) copy t2-3/2)"))) << o.out;
  ASSERT_TRUE(std::regex_search(o.out, m, std::regex(R"(total (\d+) summary (\d+))"))) << o.out;
  EXPECT_EQ(m[1], m[2]);
  EXPECT_GT(std::stoi(m[1]), 20);
  std::set<std::string> paths;
  for (const agent::Seen& s : Requests(*server)) paths.insert(s.path);
  EXPECT_EQ(paths, (std::set<std::string>{"/t1-3", "/t2-3"}));
  // done()'s lines come after wrk's and before ours, as wrk prints them.
  EXPECT_LT(o.out.find("Transfer/sec"), o.out.find("thread 1 tag"));
  EXPECT_LT(o.out.find("total "), o.out.find("--- fairbench"));
}

// thread.addr set in setup() from wrk.lookup is where the thread connects:
// the URL names a port nobody listens on. Catches: the address set but the
// first resolved address used.
TEST_F(ScriptTest, ThreadAddrFromLookupIsWhereItConnects) {
  auto server = Server();
  ASSERT_NE(server, nullptr);
  const std::string script = Script("addr.lua", "function setup(thread)\n  thread.addr = wrk.lookup(\"127.0.0.1\", \"" +
                                                    std::to_string(server->port()) +
                                                    "\")[1]\n  seen = tostring(thread.addr)\nend\n"
                                                    "function done() print(\"addr \" .. seen) end\n");
  const Outcome o = Agent({"-t1", "-c1", "-d300ms", "-s", script, "http://127.0.0.1:1/", "--json", JsonPath("a.json")});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("addr 127.0.0.1:" + std::to_string(server->port())), std::string::npos) << o.out;
  const nlohmann::json j = Json("a.json");
  EXPECT_EQ(j["errors"]["connect"], 0);
  EXPECT_GT(Requests(*server).size(), 10u);
}

// thread:stop() after ten responses: that thread sends nothing more, and
// the run still lasts its duration, as with wrk. Catches: stop() ignored,
// stop() ending the whole run at once.
TEST_F(ScriptTest, ThreadStopAfterTenResponses) {
  const std::string script = Script("stop.lua", R"(
local n = 0
function response()
  n = n + 1
  if n == 10 then wrk.thread:stop() end
end
)");
  for (const std::string tool : {"wrk", "ours"}) {
    auto server = Server();
    ASSERT_NE(server, nullptr);
    const std::vector<std::string> args = {"-t1", "-c1", "-d1s", "-s", script, Url(*server)};
    const Outcome o = tool == "wrk" ? Wrk(args) : Agent(args);
    ASSERT_EQ(o.code, 0) << tool << ": " << o.err;
    size_t sent = 0;
    for (const agent::Seen& s : Requests(*server)) sent += s.method.empty() ? 0 : 1;
    EXPECT_GE(sent, 10u) << tool;
    EXPECT_LE(sent, 11u) << tool;
    EXPECT_GE(o.seconds, 0.95) << tool;
  }
}

// done() gets the run's summary and the latency histogram of all threads:
// its percentiles, extremes and counts equal the JSON's (the same merged
// histogram), its requests what the server served less the drain. Catches:
// done() given one thread's histogram (its count ≈ half), summary fields
// from the wrong counters, percentile(p) not HdrHistogram's rank.
TEST_F(ScriptTest, DoneSeesTheMergedHistogramAndTheSummary) {
  auto server = Server();
  ASSERT_NE(server, nullptr);
  const std::string script = Script("done.lua", R"(
function done(summary, latency, requests)
  local n = 0
  for i = 1, #latency do
    local v, c = latency(i)
    n = n + c
  end
  io.write(string.format("requests %d bytes %d duration %d errors %d %d %d %d %d\n", summary.requests, summary.bytes,
    summary.duration, summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.status,
    summary.errors.timeout))
  io.write(string.format("p50 %d p90 %d p99 %d min %d max %d mean %.3f count %d\n", latency:percentile(50),
    latency:percentile(90), latency:percentile(99), latency.min, latency.max, latency.mean, n))
  io.write(string.format("rate samples %d max %d mean %.1f\n", #requests, requests.max, requests.mean))
end
)");
  const Outcome o = Agent({"-t2", "-c4", "-d1s", "-s", script, Url(*server), "--json", JsonPath("done.json")});
  ASSERT_EQ(o.code, 0) << o.err;
  const nlohmann::json j = Json("done.json");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(o.out, m, std::regex(R"(requests (\d+) bytes (\d+) duration (\d+) errors 0 0 0 0 0)")))
      << o.out;
  EXPECT_EQ(std::stoull(m[1]), j["requests"].get<uint64_t>());
  EXPECT_EQ(std::stoull(m[2]), j["bytesRead"].get<uint64_t>());
  EXPECT_NEAR(std::stod(m[3]), j["measureSeconds"].get<double>() * 1e6, 1);
  const size_t served = Requests(*server).size();
  EXPECT_EQ(std::stoull(m[1]) + j["drained"].get<uint64_t>() + j["abandoned"].get<uint64_t>(), served);
  ASSERT_TRUE(std::regex_search(
      o.out, m, std::regex(R"(p50 (\d+) p90 (\d+) p99 (\d+) min (\d+) max (\d+) mean ([\d.]+) count (\d+))")))
      << o.out;
  const nlohmann::json& lat = j["latency"];
  EXPECT_EQ(std::stoull(m[1]), lat["percentilesUs"]["p50"].get<uint64_t>());
  EXPECT_EQ(std::stoull(m[2]), lat["percentilesUs"]["p90"].get<uint64_t>());
  EXPECT_EQ(std::stoull(m[3]), lat["percentilesUs"]["p99"].get<uint64_t>());
  EXPECT_EQ(std::stoull(m[4]), lat["minUs"].get<uint64_t>());
  EXPECT_EQ(std::stoull(m[5]), lat["maxUs"].get<uint64_t>());
  EXPECT_NEAR(std::stod(m[6]), lat["meanUs"].get<double>(), 1e-3);
  EXPECT_EQ(std::stoull(m[7]), j["requests"].get<uint64_t>());
  ASSERT_TRUE(std::regex_search(o.out, m, std::regex(R"(rate samples (\d+) max (\d+))"))) << o.out;
  EXPECT_GT(std::stoull(m[1]), 5u);
  EXPECT_NEAR(std::stod(m[2]), j["threadRequestsPerSecond"]["max"].get<double>(), 0.5);
}

// Bad scripts are bad input before any load: one line naming file:line and
// the Lua message, exit code 2, nothing sent. Catches: an error swallowed,
// a message without its place, load started before init() ran.
TEST_F(ScriptTest, ScriptErrorsBeforeTheLoadAreOneLineWithTheirPlace) {
  auto server = Server();
  ASSERT_NE(server, nullptr);
  const std::string url = Url(*server);
  struct Case {
    std::string name, text, want;
    std::vector<std::string> extra;
  };
  const std::vector<Case> cases = {
      {"syntax.lua", "wrk.method = \"POST\"\n\nfunction request(\n", "syntax.lua:4:", {}},
      {"setup.lua",
       "function setup(thread)\n  local t = nil\n  return t.x\nend\n",
       "setup.lua:3: attempt to index",
       {}},
      {"init.lua", "function init(args)\n  error(\"no config\")\nend\n", "init.lua:2: no config", {}},
      {"cfn.lua", "function init(args)\n  string.rep()\nend\n", "cfn.lua:2: bad argument #1 to 'rep'", {}},
      {"nil.lua",
       "function request()\n  return nil\nend\n",
       "nil.lua:1: request() returned a nil value, not an HTTP request",
       {}},
      {"junk.lua",
       "\nfunction request()\n  return \"GET /\\r\\n\"\nend\n",
       "junk.lua:2: request() returned not an HTTP request",
       {}},
      {"get.lua",
       "function setup(thread)\n  thread:set(\"f\", print)\nend\n",
       "get.lua:2: thread:set('f'): cannot transfer a function",
       {}},
      {"delay.lua",
       "function delay() return 1 end\n",
       "--rate cannot be combined with the script's delay()",
       {"--rate", "100"}},
      {"pipe.lua",
       "function request() return wrk.format() end\n",
       "--pipeline cannot be combined",
       {"--pipeline", "2"}},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"-t1", "-c1", "-d1s", "-s", Script(c.name, c.text), url};
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    const Outcome o = Agent(args);
    EXPECT_EQ(o.code, 2) << c.name << ": " << o.err;
    EXPECT_NE(o.err.find(c.want), std::string::npos) << c.name << ": " << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << c.name << ": " << o.err;
    EXPECT_EQ(o.out, "") << c.name;
  }
  const Outcome missing = Agent({"-s", (dir_->path() / "nope.lua").string(), url});
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("nope.lua: cannot read the script"), std::string::npos) << missing.err;
  const Outcome stray = Agent({url, "--", "a"});
  EXPECT_EQ(stray.code, 2);
  EXPECT_NE(stray.err.find("for a script"), std::string::npos) << stray.err;
  EXPECT_EQ(Requests(*server).size(), 0u) << "a bad script sent requests";
}

// An error raised while the load runs stops it within a second: exit 1,
// the message with its place, and the summary of what was measured, with
// the error counted in the `script` kind. Catches: the error ignored (the
// run lasts its 5 s), the summary lost, the kind not counted.
TEST_F(ScriptTest, ScriptErrorsDuringTheLoadStopItWithTheSummary) {
  auto server = Server();
  ASSERT_NE(server, nullptr);
  struct Case {
    std::string name, text, want;
  };
  const std::vector<Case> cases = {
      {"req.lua",
       "local n = 0\nfunction request()\n  n = n + 1\n  if n > 20 then error(\"out of ids\") end\n  return wrk.format()\nend\n",
       "req.lua:4: out of ids"},
      {"resp.lua",
       "local n = 0\nfunction response(status)\n  n = n + 1\n  if n > 20 then local x = nil; x.y = 1 end\nend\n",
       "resp.lua:4: attempt to index"},
      {"delay.lua",
       "local n = 0\nfunction delay()\n  n = n + 1\n  if n > 20 then error(\"late\") end\n  return 0\nend\n",
       "delay.lua:4: late"},
      {"text.lua",
       "local n = 0\nfunction request()\n  n = n + 1\n  if n > 20 then return \"not http\" end\n  return wrk.format()\nend\n",
       "text.lua:2: request() returned not an HTTP request (incomplete request line): \"not http\""},
  };
  for (const Case& c : cases) {
    const Outcome o =
        Agent({"-t1", "-c1", "-d5s", "-s", Script(c.name, c.text), Url(*server), "--json", JsonPath("e.json")});
    EXPECT_EQ(o.code, 1) << c.name << ": " << o.err;
    EXPECT_NE(o.err.find(c.want), std::string::npos) << c.name << ": " << o.err;
    EXPECT_LT(o.seconds, 2.5) << c.name << ": the load went on after the error";
    EXPECT_NE(o.out.find("requests in"), std::string::npos) << c.name << ": " << o.out;
    EXPECT_NE(o.out.find("Script errors: 1"), std::string::npos) << c.name << ": " << o.out;
    const nlohmann::json j = Json("e.json");
    EXPECT_EQ(j["errors"]["script"], 1) << c.name;
    EXPECT_GE(j["requests"].get<uint64_t>(), 19u) << c.name;
  }
}

// With --rate the texts request() builds go out on the schedule and the
// latency is corrected for coordinated omission. Catches: the rate ignored
// with a script (thousands of requests), the uncorrected latency printed as
// if corrected.
TEST_F(ScriptTest, RateWithAScriptIsPacedAndCorrected) {
  auto server = Server();
  ASSERT_NE(server, nullptr);
  const std::string script =
      Script("rate.lua", "local n = 0\nfunction request()\n  n = n + 1\n  return wrk.format(nil, \"/r/\" .. n)\nend\n");
  const Outcome o = Agent({"-t1", "-c2", "-d1s", "--rate", "200", "-s", script, Url(*server)});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("CORRECTED for coordinated omission"), std::string::npos) << o.out;
  const std::vector<agent::Seen> seen = Requests(*server);
  EXPECT_GE(seen.size(), 180u);
  EXPECT_LE(seen.size(), 215u);
  std::set<std::string> paths;
  for (const agent::Seen& s : seen) paths.insert(s.path);
  EXPECT_EQ(paths.size(), seen.size()) << "each request from its own request() call";
}

// Over TLS and over HTTP/2 (h2c: a request text parsed into a stream),
// request() and response() run per request, as nginx's access log shows:
// every counter once, and response() called for each response. Catches:
// scripts bypassed for TLS or HTTP/2 connections, the HTTP/2 stream built
// from the flags instead of the text, response() not called for streams.
TEST_F(ScriptTest, HttpsAndHttp2RunTheScriptPerRequest) {
  auto certs = testing::MakeTestCertificates(dir_->path().string());
  ASSERT_TRUE(certs.ok()) << certs.status().ToString();
  const std::string script = Script("both.lua", R"(
local n = 0
responses = 0
function request()
  n = n + 1
  return wrk.format("GET", "/n/" .. n .. "?k=" .. n, { ["X-N"] = n })
end
function response(status, headers, body)
  if status == 200 and (headers["content-type"] or headers["Content-Type"]) and body == "ok" then
    responses = responses + 1
  end
end
function setup(thread) t = thread end
function done(summary) io.write(string.format("responses %d requests %d\n", t:get("responses"), summary.requests)) end
)");
  for (const std::string mode : {"https", "h2c"}) {
    testing::NginxOptions options;
    options.keepalive_requests = 1000000000;
    if (mode == "https") {
      options.tls.emplace();
      options.tls->certificate = certs->self_cert;
      options.tls->certificate_key = certs->self_key;
    } else {
      options.http2 = true;
    }
    testing::NginxFixture nginx(options);
    ASSERT_TRUE(nginx.Start().ok()) << mode;
    const std::string url =
        std::string(mode == "https" ? "https" : "http") + "://127.0.0.1:" + std::to_string(nginx.port()) + "/";
    std::vector<std::string> args = {"-t1", "-c2", "-d500ms", "-s", script, url, "--json", JsonPath(mode + ".json")};
    if (mode == "h2c") args.insert(args.end(), {"--h2c", "--streams", "4"});
    const Outcome o = Agent(args);
    ASSERT_EQ(o.code, 0) << mode << ": " << o.err;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(o.out, m, std::regex(R"(responses (\d+) requests (\d+))"))) << o.out;
    EXPECT_EQ(m[1], m[2]) << mode;
    ASSERT_TRUE(nginx.Stop().ok());
    auto log = nginx.AccessLog();
    ASSERT_TRUE(log.ok());
    const nlohmann::json j = Json(mode + ".json");
    EXPECT_EQ(log->size(),
              j["requests"].get<uint64_t>() + j["drained"].get<uint64_t>() + j["abandoned"].get<uint64_t>())
        << mode;
    std::set<std::string> uris;
    for (const testing::AccessLogEntry& e : *log) {
      int a = 0, b = 0;
      EXPECT_EQ(std::sscanf(e.uri.c_str(), "/n/%d?k=%d", &a, &b), 2) << e.uri;
      EXPECT_EQ(a, b);
      uris.insert(e.uri);
    }
    EXPECT_EQ(uris.size(), log->size()) << mode << ": a counter went out twice";
    EXPECT_GT(uris.size(), 20u) << mode;
  }
}

// What a tool printed and what nginx logged for one run of a script.
struct ExampleRun {
  Outcome outcome;
  std::vector<std::string> script_lines;  // the script's own lines, the port as PORT
  uint64_t reported = 0;                  // "N requests in": responses counted
  std::vector<testing::AccessLogEntry> log;
};

// The lines a script printed: those before wrk's "Running" line and those
// after its "Transfer/sec" line (up to fairbench's own block).
std::vector<std::string> ScriptLines(const std::string& out, const std::string& port) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  std::string line;
  bool report = false;
  while (std::getline(in, line)) {
    if (line.rfind("Running ", 0) == 0) report = true;
    if (line.rfind("--- fairbench", 0) == 0) break;
    if (!report) {
      for (size_t at; (at = line.find(port)) != std::string::npos;) line.replace(at, port.size(), "PORT");
      lines.push_back(line);
    }
    if (line.rfind("Transfer/sec:", 0) == 0) report = false;
  }
  return lines;
}

// Each nginx connection's URIs in the order it served them.
std::map<uint64_t, std::vector<std::string>> UrisPerConnection(const std::vector<testing::AccessLogEntry>& log) {
  std::map<uint64_t, std::vector<std::pair<uint64_t, std::string>>> by;
  for (const testing::AccessLogEntry& e : log) by[e.connection].emplace_back(e.connection_requests, e.uri);
  std::map<uint64_t, std::vector<std::string>> out;
  for (auto& [conn, v] : by) {
    std::sort(v.begin(), v.end());
    for (auto& [n, uri] : v) out[conn].push_back(uri);
  }
  return out;
}

std::string DigitsAsN(std::string s) { return std::regex_replace(s, std::regex(R"(\d+)"), "N"); }

// Every example script Debian's wrk ships (/usr/share/doc/wrk/examples/
// scripts, gunzipped when compressed) runs under fairbench-agent with
// wrk's results: `-t2 -c2 -d1s` of each under Debian's wrk and under ours
// against nginx, whose access log is the count of requests made and the
// record of their methods, URIs and statuses. Both tools print the same
// script lines (numbers aside), nginx serves the same methods, URIs and
// statuses, and what it logged matches what each tool reported; then what
// each script's behaviour fixes exactly (see each case). Catches:
// wrk.request() missing (setup.lua's request() calls it: "attempt to call
// field 'request'"), wrk.init/wrk.setup/wrk.addrs missing from the table,
// request() not called once before the load in thread 0 alone with its
// text thrown away (counter.lua's /0 sent twice, setup.lua's thread 1 one
// request short), and any example script wrk runs that ours refuses.
TEST_F(ScriptTest, WrksExampleScriptsRunAsUnderWrk) {
  const std::filesystem::path examples = "/usr/share/doc/wrk/examples/scripts";
  ASSERT_TRUE(std::filesystem::is_directory(examples)) << examples << " is missing: install Debian's wrk package";
  std::map<std::string, std::string> scripts;  // name (without .gz) -> path
  for (const auto& entry : std::filesystem::directory_iterator(examples)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 7 && name.compare(name.size() - 7, 7, ".lua.gz") == 0) {
      const Outcome g = Run({"gunzip", "-c", entry.path().string()});
      ASSERT_EQ(g.code, 0) << name << ": " << g.err;
      scripts[name.substr(0, name.size() - 3)] = Script(name.substr(0, name.size() - 3), g.out);
    } else if (name.size() > 4 && name.compare(name.size() - 4, 4, ".lua") == 0) {
      scripts[name] = entry.path().string();
    }
  }
  // The nine of wrk 4.1.0; a new one runs through the common checks.
  for (const char* want : {"addr.lua", "auth.lua", "counter.lua", "delay.lua", "pipeline.lua", "post.lua", "report.lua",
                           "setup.lua", "stop.lua"}) {
    EXPECT_EQ(scripts.count(want), 1u) << want;
  }
  for (const auto& [name, path] : scripts) {
    SCOPED_TRACE(name);
    // Both tools at once, each against its own nginx.
    std::map<std::string, ExampleRun> runs;
    std::map<std::string, std::unique_ptr<testing::NginxFixture>> servers;
    std::map<std::string, Started> started;
    for (const std::string tool : {"wrk", "ours"}) {
      testing::NginxOptions options;
      options.keepalive_requests = 1000000000;  // one nginx connection per tool connection
      auto& nginx = servers[tool] = std::make_unique<testing::NginxFixture>(options);
      ASSERT_TRUE(nginx->Start().ok()) << tool;
      const std::vector<std::string> args = {"-t2", "-c2", "-d1s",
                                             "-s",  path,  "http://127.0.0.1:" + std::to_string(nginx->port()) + "/"};
      started[tool] = Start(tool == "wrk" ? WrkArgv(args) : AgentArgv(args), tool);
    }
    for (const std::string tool : {"wrk", "ours"}) runs[tool].outcome = Finish(started[tool]);
    // Both servers stop at once (each waits for its workers to finish).
    testing::NginxFixture* const ours_server = servers.at("ours").get();
    auto ours_log = std::async(std::launch::async, [ours_server] { return ours_server->StopAndReadAccessLog(); });
    std::map<std::string, Result<std::vector<testing::AccessLogEntry>>> logs;
    logs.emplace("wrk", servers["wrk"]->StopAndReadAccessLog());
    logs.emplace("ours", ours_log.get());
    for (const std::string tool : {"wrk", "ours"}) {
      ExampleRun& r = runs[tool];
      ASSERT_EQ(r.outcome.code, 0) << tool << ": " << r.outcome.err << r.outcome.out;
      EXPECT_EQ(r.outcome.err, "") << tool;
      auto& log = logs.at(tool);
      ASSERT_TRUE(log.ok()) << tool << ": " << log.status().ToString();
      r.log = std::move(*log);
      r.script_lines = ScriptLines(r.outcome.out, std::to_string(servers[tool]->port()));
      std::smatch m;
      ASSERT_TRUE(std::regex_search(r.outcome.out, m, std::regex(R"(\n  (\d+) requests in )")))
          << tool << ": " << r.outcome.out;
      r.reported = std::stoull(m[1]);
      ASSERT_GT(r.reported, 0u) << tool;
      // Every response counted was logged; what is logged beyond them was in
      // flight at the end (at most one batch per connection; pipeline.lua's
      // batch is 3).
      EXPECT_GE(r.log.size(), r.reported) << tool;
      EXPECT_LE(r.log.size(), r.reported + 2 * 3) << tool;
    }
    const ExampleRun& wrk = runs["wrk"];
    const ExampleRun& ours = runs["ours"];
    std::vector<std::string> want_lines, got_lines;
    for (const std::string& l : wrk.script_lines) want_lines.push_back(DigitsAsN(l));
    for (const std::string& l : ours.script_lines) got_lines.push_back(DigitsAsN(l));
    EXPECT_EQ(got_lines, want_lines) << "the script printed other lines than under wrk";
    auto served = [](const ExampleRun& r) {
      std::set<std::string> s;
      for (const testing::AccessLogEntry& e : r.log)
        s.insert(e.method + " " + DigitsAsN(e.uri) + " " + std::to_string(e.status));
      return s;
    };
    EXPECT_EQ(served(ours), served(wrk)) << "nginx served other requests than under wrk";
    auto count_uri = [](const ExampleRun& r, const std::string& uri) {
      return std::count_if(r.log.begin(), r.log.end(), [&](const testing::AccessLogEntry& e) { return e.uri == uri; });
    };

    for (const std::string tool : {"wrk", "ours"}) {
      const ExampleRun& r = runs[tool];
      const std::map<uint64_t, std::vector<std::string>> conns = UrisPerConnection(r.log);
      if (name == "addr.lua") {
        // init() prints the address setup() picked from wrk.lookup().
        EXPECT_EQ(r.script_lines,
                  (std::vector<std::string>{"thread addr: 127.0.0.1:PORT", "thread addr: 127.0.0.1:PORT"}))
            << tool;
      } else if (name == "auth.lua") {
        // One /authenticate per connection (none has a response before its
        // first request); after the first 200 every request is /resource.
        EXPECT_EQ(count_uri(r, "/authenticate"), 2) << tool;
        EXPECT_EQ(count_uri(r, "/resource"), static_cast<long>(r.log.size()) - 2) << tool;
      } else if (name == "counter.lua") {
        // Each thread counts from 0, but wrk's check of thread 0's request()
        // before the load takes its 0: "/0" is sent once, by thread 1, and
        // every connection counts up by one.
        EXPECT_EQ(count_uri(r, "/0"), 1) << tool;
        ASSERT_EQ(conns.size(), 2u) << tool;
        std::set<std::string> firsts;
        for (const auto& [conn, uris] : conns) {
          firsts.insert(uris.front());
          const int first = std::stoi(uris.front().substr(1));
          for (size_t i = 0; i < uris.size(); ++i)
            ASSERT_EQ(uris[i], "/" + std::to_string(first + static_cast<int>(i))) << tool;
        }
        EXPECT_EQ(firsts, (std::set<std::string>{"/0", "/1"})) << tool;
      } else if (name == "delay.lua") {
        // 10–50 ms before each request: about 1000 / 30 per connection.
        for (const auto& [conn, uris] : conns) {
          EXPECT_GE(uris.size(), 15u) << tool;
          EXPECT_LE(uris.size(), 101u) << tool;
        }
      } else if (name == "pipeline.lua") {
        // Three pipelined requests, in order, on each connection. A batch
        // cut short shows only as the last: the tool closed the connection
        // at the end with it in flight, and nginx logs what it answered
        // (wrk's own last batch was seen logged as two of three). Any
        // other short batch breaks the cycle for the requests after it.
        const std::vector<std::string> cycle = {"/?foo", "/?bar", "/?baz"};
        for (const auto& [conn, uris] : conns) {
          ASSERT_GE(uris.size(), 3u) << tool;
          for (size_t i = 0; i < uris.size(); ++i) ASSERT_EQ(uris[i], cycle[i % 3]) << tool;
        }
      } else if (name == "post.lua") {
        // The same POST, byte for byte as long (header names' case aside).
        std::set<uint64_t> lengths;
        for (const testing::AccessLogEntry& e : r.log) lengths.insert(e.request_length);
        std::set<uint64_t> wrk_lengths;
        for (const testing::AccessLogEntry& e : wrk.log) wrk_lengths.insert(e.request_length);
        EXPECT_EQ(lengths, wrk_lengths) << tool;
        EXPECT_EQ(lengths.size(), 1u) << tool;
      } else if (name == "report.lua") {
        ASSERT_EQ(r.script_lines.size(), 5u) << tool;
        uint64_t last = 0;
        for (size_t i = 1; i < 5; ++i) {
          const uint64_t v = std::stoull(r.script_lines[i].substr(r.script_lines[i].find(',') + 1));
          EXPECT_GE(v, last) << tool << ": percentiles out of order";
          last = v;
        }
      } else if (name == "setup.lua") {
        // done() reads each thread's counters: its responses are what was
        // reported, and its requests what nginx logged plus the one request
        // wrk's check took from thread 1 (sent by no one).
        uint64_t requests = 0, responses = 0;
        std::set<std::string> ids;
        std::string text = r.outcome.out;
        const std::regex line(R"(thread (\d+) made (\d+) requests and got (\d+) responses)");
        for (std::sregex_iterator it(text.begin(), text.end(), line), end; it != end; ++it) {
          ids.insert((*it)[1]);
          requests += std::stoull((*it)[2]);
          responses += std::stoull((*it)[3]);
        }
        EXPECT_EQ(ids, (std::set<std::string>{"1", "2"})) << tool;
        EXPECT_EQ(responses, r.reported) << tool;
        EXPECT_EQ(requests, r.log.size() + 1) << tool;
      } else if (name == "stop.lua") {
        // Each thread stops at its 100th response.
        EXPECT_GE(r.log.size(), 200u) << tool;
        EXPECT_LE(r.log.size(), 202u) << tool;
        EXPECT_GE(r.outcome.seconds, 0.95) << tool;
      }
    }
  }
}

// The wrk table in each state and at each step, and the order in which
// setup(), init(), request(), delay(), response() and done() run, printed by
// the script under Debian's wrk and under ours: the same lines. wrk's
// wrk.lua builds the table (resolve, setup, init, format; request once init
// ran; addrs in the setup state) and calls setup(thread) through
// wrk.setup, init(args) through wrk.init (the Host header from wrk.host and
// wrk.port as they are then), request() once in thread 0 before the load,
// then per connection delay() before each request and response() after
// each. Catches: a wrk field or function missing or extra, Host taken from
// the URL instead of wrk.host, init() called before the Host header is set
// or wrk.request set before init() returns, the check before the load
// skipped or made in every thread, delay() not asked before the first
// request, response() after the next delay().
TEST_F(ScriptTest, TheWrkTableAndTheOrderOfCallsAreWrks) {
  const std::string script = Script("order.lua", R"(
wrk.host = "example.test"
local function keys(where)
  local k = {}
  for name, v in pairs(wrk) do k[#k + 1] = name .. ":" .. type(v) end
  table.sort(k)
  print(where .. " " .. table.concat(k, ","))
end
keys("top")
local threads = {}
function setup(thread)
  keys("setup")
  print("setup addr " .. tostring(thread.addr) .. " " .. #wrk.addrs)
  table.insert(threads, thread)
  thread:set("id", #threads)
end
function init(args)
  keys("init " .. id)
  print("init host " .. wrk.headers.Host .. " args " .. #args)
end
trace = {}
local function note(s)
  if #trace < 9 then trace[#trace + 1] = s end
end
function delay()
  note("delay")
  return 1
end
function request()
  if #trace == 0 then keys("request " .. id) end
  note("request")
  return wrk.request()
end
function response(status)
  note("response " .. status)
end
function done()
  keys("done")
  for _, t in ipairs(threads) do print("thread " .. t:get("id") .. ": " .. table.concat(t:get("trace"), " ")) end
end
)");
  std::map<std::string, std::unique_ptr<testing::NginxFixture>> servers;
  std::map<std::string, Started> started;
  for (const std::string tool : {"wrk", "ours"}) {
    auto& nginx = servers[tool] = std::make_unique<testing::NginxFixture>();
    ASSERT_TRUE(nginx->Start().ok()) << tool;
    const std::vector<std::string> args = {
        "-t2", "-c2", "-d1s", "-s", script, "http://127.0.0.1:" + std::to_string(nginx->port()) + "/", "--", "x"};
    started[tool] = Start(tool == "wrk" ? WrkArgv(args) : AgentArgv(args), tool);
  }
  std::map<std::string, std::vector<std::string>> lines;
  for (const std::string tool : {"wrk", "ours"}) {
    const Outcome o = Finish(started[tool]);
    ASSERT_EQ(o.code, 0) << tool << ": " << o.err << o.out;
    lines[tool] = ScriptLines(o.out, std::to_string(servers[tool]->port()));
  }
  EXPECT_EQ(lines["ours"], lines["wrk"]);
  // What wrk printed, spelt out once (a change of Debian's wrk shows here).
  ASSERT_GE(lines["wrk"].size(), 4u);
  EXPECT_EQ(lines["wrk"][0],
            "top connect:function,format:function,headers:table,host:string,init:function,lookup:function,"
            "method:string,path:string,port:string,resolve:function,scheme:string,setup:function");
  EXPECT_NE(std::find(lines["wrk"].begin(), lines["wrk"].end(), "init host example.test:PORT args 1"),
            lines["wrk"].end());
  EXPECT_NE(std::find(lines["wrk"].begin(), lines["wrk"].end(),
                      "thread 2: delay request response 200 delay request response 200 delay request response 200"),
            lines["wrk"].end());
}

}  // namespace
}  // namespace fairbench::agent
