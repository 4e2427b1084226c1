// `fairbench serve` as a user starts and stops it: the real binary, its
// exit codes, the URL as its first line, $FAIRBENCH_STORE, SIGINT and
// SIGTERM. (The pages: controller/serve/serve_test.cc; in a browser:
// tests/browser/serve_browser_test.cc.)
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "controller/report/run_record.h"
#include "controller/results/result_store.h"
#include "testing/support/bin_dir.h"
#include "testing/support/http_client.h"
#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"

namespace fairbench::controller {
namespace {

using namespace std::chrono_literals;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class ServeCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::TempDir::Create("fairbench-serve-command");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
    db_ = dir_->File("results.db");
    ASSERT_TRUE(results::OpenResultStore(db_).ok());  // an empty store
  }
  testing::Subprocess Start(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {}) {
    testing::SubprocessOptions o;
    o.argv = {testing::BinaryPath("fairbench")};
    if (args.empty() || args[0] != "history") o.argv.push_back("serve");
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    o.env = env;
    if (!env.count("FAIRBENCH_STORE")) o.env["FAIRBENCH_STORE"] = "";
    o.stdout_to = testing::Redirect::File(dir_->File("out"));
    o.stderr_to = testing::Redirect::File(dir_->File("err"));
    auto p = testing::Subprocess::Start(o);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return std::move(*p);
  }
  // The first line on stdout, once there.
  std::string Url(testing::Subprocess& p) {
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    std::string out;
    while ((out = ReadFile(dir_->File("out"))).find('\n') == std::string::npos) {
      if (p.Poll().has_value() || std::chrono::steady_clock::now() > deadline) return "";
      std::this_thread::sleep_for(20ms);
    }
    return out.substr(0, out.find('\n'));
  }
  int Exit(testing::Subprocess& p) {
    auto s = p.Wait(20s);
    EXPECT_TRUE(s.ok());
    return s.ok() && s->exited ? s->exit_code : -1;
  }

  std::optional<testing::TempDir> dir_;
  std::string db_;
};

// Catches: the URL not the first line (or naming another port than the
// one listened on), a server that does not answer there, a signal that
// kills it instead of stopping it (exit 0, saying so).
TEST_F(ServeCommandTest, PrintsItsUrlServesAndStopsOnSigintAndSigterm) {
  for (int signal : {SIGINT, SIGTERM}) {
    testing::Subprocess p = Start({"--store", db_, "--listen", "127.0.0.1:0"});
    const std::string url = Url(p);
    std::smatch m;
    ASSERT_TRUE(std::regex_match(url, m, std::regex(R"(http://127\.0\.0\.1:([0-9]+)/)")))
        << url << ReadFile(dir_->File("err"));
    auto c = testing::HttpConnection::Connect("127.0.0.1", static_cast<uint16_t>(std::stoi(m[1])));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    auto r = c->RoundTrip(testing::BuildRequest("GET", "/", "127.0.0.1"));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_NE(r->body.find("No run matches."), std::string::npos);
    c->Close();
    ASSERT_TRUE(p.Kill(signal).ok());
    EXPECT_EQ(Exit(p), 0) << ReadFile(dir_->File("err"));
    EXPECT_NE(ReadFile(dir_->File("err")).find("stopped"), std::string::npos);
  }
}

// Catches: the series page marking other changes than `history check`
// reports (other code, or other settings: its defaults drifting from the
// page's), at other runs or with other sizes.
TEST_F(ServeCommandTest, MarksTheChangesHistoryCheckReports) {
  // 30 runs: requests/s 40,000, then −10 %, then +3 % of that; p99 steps
  // up 8 % at the 16th run. ±0.5 % noise from a fixed sequence.
  const nlohmann::json tmpl = nlohmann::json::parse(ReadFile(std::string(RESULTS_TESTDATA) + "/local_run.json"));
  auto store = results::OpenResultStore(db_);
  ASSERT_TRUE(store.ok());
  uint64_t state = 5;
  auto noise = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (static_cast<double>(state >> 11) / 9007199254740992.0 * 2 - 1) * 0.005;
  };
  for (int i = 0; i < 30; ++i) {
    nlohmann::json d = tmpl;
    char name[32], start[64];
    std::snprintf(name, sizeof name, "nightly-%02d", i);
    std::snprintf(start, sizeof start, "2026-10-%02dT02:00:00Z", i + 1);
    d["run"]["metadata"]["name"] = name;
    d["run"]["metadata"]["uid"] = std::string("uid-") + name;
    d["run"]["status"]["startTime"] = start;
    d["run"]["status"]["completionTime"] = std::string(start).replace(14, 2, "10");
    const double level = i < 10 ? 40000 : i < 20 ? 36000 : 37080;
    for (auto& c : d["cells"]) {
      c["result"]["requestsPerSecond"] = std::round(level * (1 + noise()));
      c["result"]["latency"]["p99"] = std::round((i < 15 ? 500 : 540) * (1 + noise()));
    }
    auto record = report::RunRecordFromJsonText(d.dump(), name);
    ASSERT_TRUE(record.ok()) << record.status().ToString();
    ASSERT_TRUE((*store)->Store(*record).ok());
  }
  testing::Subprocess check = Start({"history", "check", "--store", db_, "--format", "json"});
  Exit(check);
  const nlohmann::json report = nlohmann::json::parse(ReadFile(dir_->File("out")));

  testing::Subprocess p = Start({"--store", db_, "--listen", "127.0.0.1:0"});
  const std::string url = Url(p);
  ASSERT_FALSE(url.empty()) << ReadFile(dir_->File("err"));
  const uint16_t port = static_cast<uint16_t>(std::stoi(url.substr(url.rfind(':') + 1)));
  size_t compared = 0;
  for (const auto& s : report["series"]) {
    auto c = testing::HttpConnection::Connect("127.0.0.1", port);
    ASSERT_TRUE(c.ok());
    auto r = c->RoundTrip(testing::BuildRequest(
        "GET", "/series?target=beast&scenario=hello&connections=" + std::to_string(s["connections"].get<int>()),
        "127.0.0.1"));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->status, 200);
    for (const auto& m : s["metrics"]) {
      // What the gate reports: kind, the run after, the size to 0.1 %.
      std::multiset<std::string> gate, page;
      for (const auto& ch : m["changes"]) {
        char size[32];
        std::snprintf(size, sizeof size, "%.1f", std::fabs(ch["changePercent"].get<double>()));
        gate.insert(ch["kind"].get<std::string>() + " run " + std::to_string(ch["after"]["run"].get<int>()) + " " +
                    size);
      }
      const std::string id = m["metric"] == "requestsPerSecond" ? "chart-rps" : "chart-p99";
      const size_t from = r->body.find("id=\"" + id + "\"");
      ASSERT_NE(from, std::string::npos);
      const std::string svg = r->body.substr(from, r->body.find("</svg>", from) - from);
      // The marker's kind, run after and title's size (− is U+2212).
      const std::regex marker(
          R"re(<g class="change (regression|improvement)" data-index="[0-9]+" data-run="([0-9]+)"><title>)re"
          R"re([^<]*? (?:regression|improvement) (?:\xE2\x88\x92|\+)([0-9.]+) %)re");
      for (auto it = std::sregex_iterator(svg.begin(), svg.end(), marker); it != std::sregex_iterator(); ++it) {
        page.insert((*it)[1].str() + " run " + (*it)[2].str() + " " + (*it)[3].str());
      }
      EXPECT_EQ(page, gate) << s["connections"] << " " << m["metric"];
      compared += gate.size();
    }
  }
  // The steps the test made: −10 % and +3 % in requests/s, +8 % in p99,
  // in both series.
  EXPECT_EQ(compared, 6u);
  ASSERT_TRUE(p.Kill(SIGTERM).ok());
  EXPECT_EQ(Exit(p), 0);
}

// Catches: $FAIRBENCH_STORE not taken as the store.
TEST_F(ServeCommandTest, TakesTheStoreFromTheEnvironment) {
  testing::Subprocess p = Start({"--listen", "127.0.0.1:0"}, {{"FAIRBENCH_STORE", db_}});
  EXPECT_FALSE(Url(p).empty()) << ReadFile(dir_->File("err"));
  ASSERT_TRUE(p.Kill(SIGTERM).ok());
  EXPECT_EQ(Exit(p), 0);
  EXPECT_NE(ReadFile(dir_->File("err")).find(db_), std::string::npos);
}

// Catches: a missing store made empty (serve only reads) or served as 503
// forever instead of refused at once; a bad --listen or a port in use not
// said; no store given not said.
TEST_F(ServeCommandTest, RefusesWhatItCannotServe) {
  const std::string missing = dir_->File("missing.db");
  testing::Subprocess p = Start({"--store", missing, "--listen", "127.0.0.1:0"});
  EXPECT_EQ(Exit(p), 1);
  EXPECT_NE(ReadFile(dir_->File("err")).find("missing.db"), std::string::npos) << ReadFile(dir_->File("err"));
  EXPECT_FALSE(std::filesystem::exists(missing));
  EXPECT_EQ(ReadFile(dir_->File("out")), "");

  p = Start({"--store", db_, "--listen", "8089"});
  EXPECT_EQ(Exit(p), 2);
  EXPECT_NE(ReadFile(dir_->File("err")).find("--listen"), std::string::npos);

  p = Start({"--listen", "127.0.0.1:0"});
  EXPECT_EQ(Exit(p), 2);
  EXPECT_NE(ReadFile(dir_->File("err")).find("--store"), std::string::npos);

  // A port some other socket holds.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string port = std::to_string(ntohs(addr.sin_port));
  p = Start({"--store", db_, "--listen", "127.0.0.1:" + port});
  EXPECT_EQ(Exit(p), 1);
  EXPECT_NE(ReadFile(dir_->File("err")).find("cannot listen on 127.0.0.1:" + port), std::string::npos)
      << ReadFile(dir_->File("err"));
  close(fd);
}

}  // namespace
}  // namespace fairbench::controller
