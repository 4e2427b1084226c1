// fairbench and a real Prometheus (Debian's prometheus package), on
// loopback: Prometheus scrapes `fairbench run --metrics-address` during a
// short run, or receives its remote writes; the tests ask Prometheus's HTTP
// API what it stored and compare it with what fairbench wrote in
// results.json. promtool checks the scraped text; the Grafana dashboard's
// queries run against the scraped data.
#include <gtest/gtest.h>

#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "testing/support/bin_dir.h"
#include "testing/support/http_client.h"
#include "testing/support/ports.h"
#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"

namespace fairbench {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::Subprocess;
using testing::SubprocessOptions;

std::string ReadFile(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string UrlEncode(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// Seconds since the epoch of an RFC 3339 UTC time with nanoseconds.
double ParseTime(const std::string& rfc3339) {
  std::tm tm{};
  std::istringstream ss(rfc3339.substr(0, 19));
  ss >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  double frac = 0;
  if (rfc3339.size() > 20 && rfc3339[19] == '.') frac = std::stod("0" + rfc3339.substr(19, rfc3339.find('Z') - 19));
  return static_cast<double>(timegm(&tm)) + frac;
}

Result<testing::HttpResponse> HttpGet(uint16_t port, const std::string& path) {
  auto c = testing::HttpConnection::Connect("127.0.0.1", port, 2s);
  if (!c.ok()) return c.status();
  return c->RoundTrip(testing::BuildRequest("GET", path, "127.0.0.1:" + std::to_string(port)), 10s);
}

struct Sample {
  int64_t ms;
  double value;
};
struct SeriesData {
  std::map<std::string, std::string> labels;
  std::vector<Sample> samples;
};

class PrometheusE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::TempDir::Create("fairbench-prom");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
    ASSERT_TRUE(std::filesystem::exists("/usr/bin/prometheus"))
        << "install Debian's prometheus package (scripts/setup)";
  }
  std::string Path(const std::string& name) const { return dir_->File(name); }

  // Starts Prometheus on a free loopback port; waits until it is ready.
  void StartPrometheus(const std::string& scrape_configs, bool remote_write_receiver) {
    auto port = testing::FreeLoopbackPort();
    ASSERT_TRUE(port.ok());
    prom_port_ = *port;
    std::ofstream(Path("prometheus.yml"))
        << "global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}\n"
        << "scrape_configs:" << scrape_configs << "\n";
    SubprocessOptions o;
    o.argv = {"/usr/bin/prometheus", "--config.file=" + Path("prometheus.yml"), "--storage.tsdb.path=" + Path("tsdb"),
              "--web.listen-address=127.0.0.1:" + std::to_string(prom_port_), "--log.level=warn"};
    if (remote_write_receiver) o.argv.push_back("--web.enable-remote-write-receiver");
    o.stdout_to = testing::Redirect::File(Path("prometheus.log"), true);
    o.stderr_to = testing::Redirect::File(Path("prometheus.log"), true);
    auto p = Subprocess::Start(o);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    prometheus_.emplace(std::move(*p));
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < deadline) {
      auto r = HttpGet(prom_port_, "/-/ready");
      if (r.ok() && r->status == 200) return;
      ASSERT_TRUE(prometheus_->running()) << ReadFile(Path("prometheus.log"));
      std::this_thread::sleep_for(100ms);
    }
    FAIL() << "Prometheus did not become ready: " << ReadFile(Path("prometheus.log"));
  }

  // An instant query; the "data" member of a successful answer.
  json Query(const std::string& promql) {
    auto r = HttpGet(prom_port_, "/api/v1/query?query=" + UrlEncode(promql));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return json();
    const json j = json::parse(r->body, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r->body;
    EXPECT_EQ(j.value("status", ""), "success") << promql << ": " << r->body;
    return j.is_discarded() ? json() : j.value("data", json());
  }
  // Every raw sample of the series `selector` selects, from the last hour.
  std::vector<SeriesData> RawSamples(const std::string& selector) {
    std::vector<SeriesData> out;
    const json data = Query(selector + "[1h]");
    if (!data.contains("result")) return out;
    for (const json& s : data["result"]) {
      SeriesData d;
      for (auto& [k, v] : s["metric"].items()) d.labels[k] = v.get<std::string>();
      for (const json& v : s["values"]) {
        d.samples.push_back({std::llround(v[0].get<double>() * 1000), std::stod(v[1].get<std::string>())});
      }
      out.push_back(std::move(d));
    }
    return out;
  }

  std::string Target(const std::string& name, const std::string& server) {
    return "  - name: " + name + "\n    local:\n      command: [" + testing::BinaryPath("fairbench-target-" + server) +
           ", --port, \"{port}\", --threads, \"1\"]\n";
  }
  // `scenario_more`: more lines of the scenario (e.g. its rates).
  std::string WriteRun(const std::string& targets, const std::string& scenario_more = "",
                       const std::string& duration = "3s") {
    const std::string text =
        "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: prom-e2e}\nspec:\n  targets:\n" +
        targets +
        "  scenarios:\n"
        "  - name: hello\n    request: {path: /}\n    expect: {status: 200, body: \"Hello, World!\"}\n" +
        scenario_more + "  load: {threads: 1, connections: [8], warmup: 300ms, duration: " + duration +
        ", timeout: 1s, agents: 1}\n"
        "  cooldown: 200ms\n";
    std::ofstream(Path("run.yaml")) << text;
    return Path("run.yaml");
  }
  Result<Subprocess> StartFairbench(std::vector<std::string> extra) {
    SubprocessOptions o;
    o.argv = {testing::BinaryPath("fairbench"),
              "run",
              Path("run.yaml"),
              "--output",
              Path("out"),
              "--lock-file",
              Path("load.lock")};
    o.argv.insert(o.argv.end(), extra.begin(), extra.end());
    o.stdout_to = testing::Redirect::File(Path("stdout.txt"));
    o.stderr_to = testing::Redirect::File(Path("stderr.txt"));
    return Subprocess::Start(o);
  }
  json Results() {
    const json j = json::parse(ReadFile(Path("out/results.json")), nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << ReadFile(Path("stderr.txt"));
    return j;
  }
  // promtool check metrics on a scraped page: OK, or what it says.
  std::string Promtool(const std::string& file) {
    SubprocessOptions o;
    o.argv = {"/usr/bin/promtool", "check", "metrics"};
    o.stdin_from = testing::Redirect::File(file);
    o.stdout_to = testing::Redirect::File(file + ".promtool", true);
    o.stderr_to = testing::Redirect::File(file + ".promtool", true);
    auto p = Subprocess::Start(o);
    if (!p.ok()) return p.status().ToString();
    auto st = p->Wait(30s);
    if (!st.ok()) return "promtool did not finish";
    return st->success() ? "OK" : st->ToString() + ": " + ReadFile(file + ".promtool");
  }

  std::optional<testing::TempDir> dir_;
  std::optional<Subprocess> prometheus_;
  uint16_t prom_port_ = 0;
};

// Metric names a PromQL expression reads (fairbench_* and process_*).
std::set<std::string> MetricNames(const std::string& expr) {
  std::set<std::string> out;
  static const std::regex name(R"(\b(?:fairbench|process)_[a-zA-Z0-9_]+)");
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), name); it != std::sregex_iterator(); ++it) {
    out.insert(it->str());
  }
  return out;
}

std::vector<std::string> DashboardQueries() {
  std::vector<std::string> out;
  const json d = json::parse(ReadFile(FAIRBENCH_DASHBOARD), nullptr, false);
  if (d.is_discarded()) return out;
  for (const json& p : d["panels"]) {
    if (!p.contains("targets")) continue;
    for (const json& t : p["targets"]) out.push_back(t["expr"].get<std::string>());
  }
  return out;
}

std::string Substitute(std::string expr) {
  const std::vector<std::pair<std::string, std::string>> vars = {
      {"$__rate_interval", "5s"}, {"$run", "prom-e2e"}, {"$target", ".*"}, {"$scenario", ".*"}};
  for (const auto& [k, v] : vars) {
    for (size_t at = expr.find(k); at != std::string::npos; at = expr.find(k, at + v.size()))
      expr.replace(at, k.size(), v);
  }
  return expr;
}

TEST_F(PrometheusE2eTest, ScrapedDuringARunRequestsRiseToTheResult) {
  auto metrics_port = testing::FreeLoopbackPort();
  ASSERT_TRUE(metrics_port.ok());
  const std::string metrics_address = "127.0.0.1:" + std::to_string(*metrics_port);
  StartPrometheus("\n- job_name: fairbench\n  static_configs: [{targets: ['" + metrics_address + "']}]", false);
  if (HasFatalFailure()) return;
  // Prometheus hands new targets to its scrapers up to 5 s after start:
  // wait for the first (failing) scrape, so that the run is watched from
  // its beginning.
  const auto ready_by = std::chrono::steady_clock::now() + 20s;
  for (;;) {
    const json t = Query("up{job=\"fairbench\"}");
    if (t.contains("result") && !t["result"].empty()) break;
    ASSERT_LT(std::chrono::steady_clock::now(), ready_by) << "Prometheus never scraped";
    std::this_thread::sleep_for(100ms);
  }
  WriteRun(Target("alpha", "beast") + Target("beta", "cpp-httplib-debian"));
  auto run = StartFairbench({"--metrics-address", metrics_address, "--metrics-linger", "3s"});
  ASSERT_TRUE(run.ok()) << run.status().ToString();

  // Our own scrapes: one while the first cell measures, one after the run.
  std::string during, after;
  const auto deadline = std::chrono::steady_clock::now() + 90s;
  while (run->running() && std::chrono::steady_clock::now() < deadline) {
    auto r = HttpGet(*metrics_port, "/metrics");
    if (r.ok() && r->status == 200) {
      if (during.empty() && r->body.find("fairbench_requests_per_second{") != std::string::npos) during = r->body;
      if (r->body.find("fairbench_runs{phase=\"Succeeded\"} 1") != std::string::npos) after = r->body;
    }
    if (!after.empty()) break;
    run->Poll();
    std::this_thread::sleep_for(200ms);
  }
  auto status = run->Wait(60s);
  ASSERT_TRUE(status.ok());
  ASSERT_TRUE(status->success()) << status->ToString() << ReadFile(Path("stderr.txt"));
  ASSERT_FALSE(during.empty()) << "never saw a measuring cell on /metrics";
  ASSERT_FALSE(after.empty()) << "never saw the finished run on /metrics";

  // promtool accepts what we serve.
  std::ofstream(Path("during.txt")) << during;
  std::ofstream(Path("after.txt")) << after;
  EXPECT_EQ(Promtool(Path("during.txt")), "OK");
  EXPECT_EQ(Promtool(Path("after.txt")), "OK");

  const json results = Results();
  ASSERT_EQ(results["cells"].size(), 2u);
  std::map<std::string, uint64_t> expected;
  for (const json& c : results["cells"]) {
    ASSERT_EQ(c["result"]["state"], "Succeeded");
    expected[c["result"]["target"].get<std::string>()] = c["result"]["requests"].get<uint64_t>();
  }

  // What Prometheus stored: one rising series per target, ending at the result.
  const auto series = RawSamples("fairbench_requests_total");
  ASSERT_EQ(series.size(), 2u) << ReadFile(Path("prometheus.log"));
  for (const SeriesData& s : series) {
    const std::string target = s.labels.at("target");
    std::string trace = target + ":";
    for (const Sample& x : s.samples) trace += " " + std::to_string(x.ms % 100000) + "=" + std::to_string(x.value);
    SCOPED_TRACE(trace);
    ASSERT_TRUE(expected.count(target));
    EXPECT_EQ(s.labels.at("run"), "prom-e2e");
    EXPECT_EQ(s.labels.at("scenario"), "hello");
    EXPECT_EQ(s.labels.at("connections"), "8");
    EXPECT_EQ(s.labels.count("rate"), 0u) << "a closed-loop cell has no rate level";
    EXPECT_EQ(s.labels.at("job"), "fairbench");
    EXPECT_EQ(s.labels.at("instance"), metrics_address);
    ASSERT_GE(s.samples.size(), 3u);
    bool between = false;
    for (size_t i = 1; i < s.samples.size(); ++i) {
      EXPECT_GE(s.samples[i].value, s.samples[i - 1].value) << "a counter never falls";
      between = between || (s.samples[i].value > 0 && s.samples[i].value < static_cast<double>(expected[target]));
    }
    EXPECT_TRUE(between) << "scraped while rising";
    EXPECT_EQ(s.samples.front().value, 0) << "the series starts at zero when the warmup starts";
    EXPECT_EQ(s.samples.back().value, static_cast<double>(expected[target]));
  }

  // The dashboard: every series it names is served, every query runs.
  const std::vector<std::string> queries = DashboardQueries();
  ASSERT_GE(queries.size(), 10u);
  for (const std::string& q : queries) {
    for (const std::string& name : MetricNames(q)) {
      EXPECT_TRUE(during.find("\n" + name) != std::string::npos || after.find("\n" + name) != std::string::npos)
          << name << " in '" << q << "' is not served";
    }
    Query(Substitute(q));  // checks that Prometheus accepts it
  }
  for (const std::string q : {"fairbench_requests_per_second", "fairbench_request_duration_percentile_seconds",
                              "fairbench_target_memory_bytes", "fairbench_request_duration_seconds_bucket"}) {
    EXPECT_GE(Query("count(last_over_time(" + q + "{run=\"prom-e2e\"}[1h]))")["result"].size(), 1u) << q;
  }
}

TEST_F(PrometheusE2eTest, RemoteWrittenSamplesAreOneSecondApartAndMatchTheTimeline) {
  StartPrometheus(" []", true);
  if (HasFatalFailure()) return;
  WriteRun(Target("alpha", "beast"));
  auto run = StartFairbench({"--remote-write-url", "http://127.0.0.1:" + std::to_string(prom_port_) + "/api/v1/write"});
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  auto status = run->Wait(90s);
  ASSERT_TRUE(status.ok());
  ASSERT_TRUE(status->success()) << status->ToString() << ReadFile(Path("stderr.txt"));
  const std::string err = ReadFile(Path("stderr.txt"));
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(err, m, std::regex(R"(remote write: (\d+) samples sent in (\d+) requests, (\d+) dropped)")))
      << err;
  EXPECT_GT(std::stoull(m[1]), 0u);
  EXPECT_EQ(m[3], "0") << err;

  const json results = Results();
  ASSERT_EQ(results["cells"].size(), 1u);
  const json& cell = results["cells"][0];
  const json& timeline = cell["timeline"];
  const double warmup = 0.3;
  const auto measure_start_ms = static_cast<int64_t>(std::floor(ParseTime(cell["result"]["startTime"]) * 1000));
  // The wall-clock end of a timeline point, in ms.
  auto end_ms = [&](const json& p) {
    return measure_start_ms + std::llround((p["end"].get<double>() - warmup) * 1000);
  };

  // The counter: one sample at the measurement's start (0), then one per
  // measured second, one second apart, equal to the timeline's running sum.
  const auto requests = RawSamples("fairbench_requests_total");
  ASSERT_EQ(requests.size(), 1u) << ReadFile(Path("prometheus.log"));
  const SeriesData& r = requests[0];
  EXPECT_EQ(r.labels.at("run"), "prom-e2e");
  EXPECT_EQ(r.labels.at("target"), "alpha");
  EXPECT_EQ(r.labels.at("scenario"), "hello");
  EXPECT_EQ(r.labels.at("connections"), "8");
  std::vector<Sample> want = {{measure_start_ms, 0}};
  double sum = 0;
  for (const json& p : timeline) {
    if (p["phase"] != "measure") continue;
    sum += p["requests"].get<double>();
    want.push_back({end_ms(p), sum});
  }
  ASSERT_EQ(want.size(), 4u) << "3 s measured";
  ASSERT_EQ(r.samples.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(static_cast<double>(r.samples[i].ms), static_cast<double>(want[i].ms), 1) << i;
    EXPECT_EQ(r.samples[i].value, want[i].value) << i;
    if (i > 0) {
      EXPECT_EQ(r.samples[i].ms - r.samples[i - 1].ms, 1000) << "one second apart";
    }
  }
  EXPECT_EQ(r.samples.back().value, cell["result"]["requests"].get<double>());

  // The gauges: every interval (the warmup's too) at its end.
  const auto rps = RawSamples("fairbench_requests_per_second");
  ASSERT_EQ(rps.size(), 1u);
  ASSERT_EQ(rps[0].samples.size(), timeline.size());
  const auto p99 = RawSamples("fairbench_request_duration_percentile_seconds{percentile=\"99\"}");
  ASSERT_EQ(p99.size(), 1u);
  ASSERT_EQ(p99[0].samples.size(), timeline.size());
  for (size_t i = 0; i < timeline.size(); ++i) {
    const json& p = timeline[i];
    const double secs = p["end"].get<double>() - p["start"].get<double>();
    EXPECT_NEAR(static_cast<double>(rps[0].samples[i].ms), static_cast<double>(end_ms(p)), 1) << i;
    EXPECT_NEAR(rps[0].samples[i].value, p["requests"].get<double>() / secs, 1e-6 * rps[0].samples[i].value) << i;
    EXPECT_DOUBLE_EQ(p99[0].samples[i].value, p["latencyUs"]["p99"].get<double>() / 1e6) << i;
  }
  // The histogram's +Inf bucket counts what the counter counts.
  const auto inf = RawSamples("fairbench_request_duration_seconds_bucket{le=\"+Inf\"}");
  ASSERT_EQ(inf.size(), 1u);
  EXPECT_EQ(inf[0].samples.back().value, cell["result"]["requests"].get<double>());
}

// Catches: the cells of scenarios[].rates (one per level, at the same
// connections) written into one series, or the closed-loop cell they start
// from given a rate label: Prometheus stores a series per level, each
// ending at its cell's result.
TEST_F(PrometheusE2eTest, EachRateLevelIsASeriesOfItsOwn) {
  StartPrometheus(" []", true);
  if (HasFatalFailure()) return;
  WriteRun(Target("alpha", "beast"), "    rates: [200, \"50%\"]\n", "1s");
  auto run = StartFairbench({"--remote-write-url", "http://127.0.0.1:" + std::to_string(prom_port_) + "/api/v1/write"});
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  auto status = run->Wait(90s);
  ASSERT_TRUE(status.ok());
  ASSERT_TRUE(status->success()) << status->ToString() << ReadFile(Path("stderr.txt"));
  std::map<std::string, double> want;  // rate label ("" for none): the cell's requests
  const json results = Results();
  for (const json& c : results["cells"]) {
    const json& r = c["result"];
    ASSERT_EQ(r["state"], "Succeeded") << r.dump();
    std::string level;
    if (r.contains("rateLevel"))
      level = r["rateLevel"].is_string() ? r["rateLevel"].get<std::string>()
                                         : std::to_string(r["rateLevel"].get<int>()) + "/s";
    want[level] = r["requests"].get<double>();
  }
  ASSERT_EQ(want.size(), 3u) << "a closed loop, 200/s and 50%";
  std::map<std::string, double> got;
  for (const SeriesData& s : RawSamples("fairbench_requests_total")) {
    ASSERT_FALSE(s.samples.empty());
    got[s.labels.count("rate") ? s.labels.at("rate") : ""] = s.samples.back().value;
  }
  EXPECT_EQ(got, want) << ReadFile(Path("prometheus.log"));
}

}  // namespace
}  // namespace fairbench
