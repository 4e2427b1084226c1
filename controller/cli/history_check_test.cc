// `fairbench history check` as a CI job runs it: the real binary over a
// store filled with results.json files of known series (a step of a known
// size at a known run, noise-only ones), its exit codes and its three
// formats; the JUnit XML read back by Python's xml.etree.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "testing/support/bin_dir.h"
#include "testing/support/temp_dir.h"

namespace fairbench::controller {
namespace {

const std::string kLocalRun = std::string(RESULTS_TESTDATA) + "/local_run.json";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Outcome {
  int code = -1;
  std::string out, err;
};

// ±1 % noise from a fixed sequence, so that the store is the same every time.
double Noise(uint64_t& state) {
  state = state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (static_cast<double>(state >> 11) / 9007199254740992.0 * 2 - 1) * 0.01;
}

constexpr int kRuns = 24;
constexpr int kStepAt = 12;  // the first run after the step

class HistoryCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::TempDir::Create("fairbench-history-check");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
    db_ = dir_->File("results.db");
    template_ = nlohmann::json::parse(ReadFile(kLocalRun));
  }
  Outcome Fairbench(const std::string& args) {
    const std::string out = dir_->File("stdout"), err = dir_->File("stderr");
    const int status = std::system(
        ("env -u FAIRBENCH_STORE " + testing::BinaryPath("fairbench") + " " + args + " >" + out + " 2>" + err).c_str());
    Outcome o;
    o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    o.out = ReadFile(out);
    o.err = ReadFile(err);
    return o;
  }
  // kRuns runs, one a day, of the testdata's two series (beast/hello at 10
  // and at 20 connections, two repetitions each); `rps(run, connections)`
  // is the level around which each repetition's requests/s lies (±1 %);
  // p99 stays near 500 µs throughout.
  // `build(run)`, when given, is which build of beast the run ran (its
  // "identity:" note).
  void Fill(const std::function<double(int run, int connections)>& rps,
            const std::function<std::string(int run)>& build = nullptr) {
    uint64_t noise = 43;
    std::string files;
    for (int i = 0; i < kRuns; ++i) {
      nlohmann::json d = template_;
      char name[32], start[64], end[64];
      std::snprintf(name, sizeof name, "nightly-%02d", i);
      std::snprintf(start, sizeof start, "2026-11-%02dT02:00:00Z", i + 1);
      std::snprintf(end, sizeof end, "2026-11-%02dT02:10:00Z", i + 1);
      d["run"]["metadata"]["name"] = name;
      d["run"]["metadata"]["uid"] = std::string("uid-") + name;
      d["run"]["status"]["startTime"] = start;
      d["run"]["status"]["completionTime"] = end;
      if (build) d["environment"]["notes"].push_back("target beast: identity: " + build(i));
      for (auto& c : d["cells"]) {
        auto& r = c["result"];
        r["requestsPerSecond"] = std::round(rps(i, r["connections"].get<int>()) * (1 + Noise(noise)));
        r["latency"]["p99"] = std::round(500 * (1 + Noise(noise)));
      }
      const std::string path = dir_->File(std::string(name) + ".json");
      std::ofstream(path, std::ios::binary) << d.dump(1);
      files += " " + path;
    }
    Outcome o = Fairbench("import" + files + " --store " + db_);
    ASSERT_EQ(o.code, 0) << o.err;
  }

  std::optional<testing::TempDir> dir_;
  std::string db_;
  nlohmann::json template_;
};

// Catches: a change not found, found at the wrong run or with the wrong
// size; a change reported in the noise-only series; the runs before and
// after named wrongly (ids, names, uids); the gate not failing at a
// threshold under the step or failing at one above it; --since and --label
// not keeping only their runs; a series too short to judge judged anyway.
TEST_F(HistoryCheckTest, FindsTheOneRegressionAtItsRunAndGatesOnTheThreshold) {
  Fill([](int run, int connections) { return connections == 10 && run >= kStepAt ? 36000.0 : 40000.0; });

  Outcome o = Fairbench("history check --store " + db_ + " --threshold 5% --format json");
  ASSERT_EQ(o.code, 1) << o.err << o.out;
  const auto j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["failures"], 1);
  EXPECT_EQ(j["passed"], false);
  ASSERT_EQ(j["series"].size(), 2u);
  int changes = 0;
  for (const auto& s : j["series"]) {
    EXPECT_EQ(s["runs"], kRuns);
    for (const auto& m : s["metrics"]) {
      EXPECT_TRUE(m["judged"].get<bool>());
      changes += static_cast<int>(m["changes"].size());
      if (s["connections"] != 10 || m["metric"] != "requestsPerSecond") {
        EXPECT_EQ(m["changes"].size(), 0u) << s["connections"] << " " << m["metric"];
        continue;
      }
      ASSERT_EQ(m["changes"].size(), 1u) << m.dump(1);
      const auto& c = m["changes"][0];
      EXPECT_EQ(c["kind"], "regression");
      EXPECT_NEAR(c["changePercent"].get<double>(), -10.0, 1.0);
      EXPECT_LE(c["pValue"].get<double>(), 0.05);
      EXPECT_TRUE(c["failing"].get<bool>());
      EXPECT_EQ(c["before"]["run"], kStepAt);  // ids count from 1: run kStepAt is nightly-(kStepAt-1)
      EXPECT_EQ(c["before"]["name"], "nightly-11");
      EXPECT_EQ(c["before"]["uid"], "uid-nightly-11");
      EXPECT_EQ(c["before"]["startTime"], "2026-11-12T02:00:00Z");
      EXPECT_EQ(c["after"]["run"], kStepAt + 1);
      EXPECT_EQ(c["after"]["name"], "nightly-12");
      EXPECT_EQ(c["after"]["startTime"], "2026-11-13T02:00:00Z");
    }
  }
  EXPECT_EQ(changes, 1);

  o = Fairbench("history check --store " + db_ + " --threshold 5%");
  EXPECT_EQ(o.code, 1) << o.err;
  EXPECT_NE(o.out.find("beast/hello at 10 connections"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("requests/s regression -"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("between run 12 nightly-11 (2026-11-12T02:00:00Z) and run 13 nightly-12"), std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("1 regression of 5 % or more in force: failed"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("at 20 connections"), std::string::npos) << o.out;

  o = Fairbench("history check --store " + db_ + " --threshold 20%");
  EXPECT_EQ(o.code, 0) << o.err << o.out;
  EXPECT_NE(o.out.find("below the 20 % threshold"), std::string::npos) << o.out;
  o = Fairbench("history check --store " + db_ + " --metric p99");
  EXPECT_EQ(o.code, 0) << o.err << o.out;
  o = Fairbench("history check --store " + db_ + " --target beast --scenario hello --threshold 5");
  EXPECT_EQ(o.code, 1) << o.err << o.out;
  // The runs before the step alone: no change left to see.
  o = Fairbench("history check --store " + db_ + " --since 2026-11-12 --format json");
  EXPECT_EQ(o.code, 0) << o.err << o.out;
  EXPECT_EQ(nlohmann::json::parse(o.out)["series"][0]["runs"], kRuns - 11);
  // Too few runs left to judge: said so, and no failure.
  o = Fairbench("history check --store " + db_ + " --since 2026-11-16");
  EXPECT_EQ(o.code, 0) << o.err << o.out;
  EXPECT_NE(o.out.find("2 series, 0 metrics checked (4 more with fewer than 10 runs: not judged)"), std::string::npos)
      << o.out;
  o = Fairbench("history check --store " + db_ + " --label branch=other --format json");
  EXPECT_EQ(o.code, 0) << o.err << o.out;
  EXPECT_EQ(nlohmann::json::parse(o.out)["series"].size(), 0u);
}

// Catches: an improvement (requests/s up) that fails the gate; a
// regression since undone that still fails it.
// Catches: a change point whose runs ran different builds of the target
// not saying so (the first thing a reader asks), one saying so where the
// build stayed, and the series table without the build of each run.
TEST_F(HistoryCheckTest, AChangeWhereTheBuildChangedSaysSo) {
  auto build = [](int run) {
    return run >= kStepAt ? "image sha256:bbbbbbbbbbbbbbbb" : "image sha256:aaaaaaaaaaaaaaaa";
  };
  Fill([](int run, int connections) { return connections == 10 && run >= kStepAt ? 36000.0 : 40000.0; }, build);
  Outcome o = Fairbench("history check --store " + db_ + " --threshold 5%");
  ASSERT_EQ(o.code, 1) << o.err << o.out;
  EXPECT_NE(o.out.find("between run 12 nightly-11 (2026-11-12T02:00:00Z) and run 13 nightly-12 (2026-11-13T02:00:00Z)"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("; the target's build changed: image sha256:aaaaaaaaaaaaaaaa -> image sha256:bbbbbbbbbbbbbbbb"),
            std::string::npos)
      << o.out;
  o = Fairbench("history check --store " + db_ + " --threshold 5% --format json");
  const auto j = nlohmann::json::parse(o.out);
  int changes = 0;
  for (const auto& s : j["series"]) {
    for (const auto& m : s["metrics"]) {
      for (const auto& c : m["changes"]) {
        ++changes;
        EXPECT_TRUE(c["buildChanged"].get<bool>());
        EXPECT_EQ(c["before"]["identity"], "image sha256:aaaaaaaaaaaaaaaa");
        EXPECT_EQ(c["after"]["identity"], "image sha256:bbbbbbbbbbbbbbbb");
      }
    }
  }
  EXPECT_EQ(changes, 1);
  o = Fairbench("history series --store " + db_ + " --target beast --scenario hello --connections 10");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("BUILD"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("nightly-12"), std::string::npos);
  const size_t row = o.out.find("nightly-12");
  EXPECT_NE(o.out.substr(row, o.out.find('\n', row) - row).find("sha256:bbbbbbbbbbbb"), std::string::npos) << o.out;
}

TEST_F(HistoryCheckTest, ImprovementsAndRegressionsUndonePass) {
  Fill([](int run, int connections) {
    if (connections == 10) return run >= kStepAt ? 44000.0 : 40000.0;  // 10 % better
    return run >= 8 && run < 16 ? 36000.0 : 40000.0;                   // 10 % worse, then back
  });
  Outcome o = Fairbench("history check --store " + db_ + " --threshold 5% --format json");
  ASSERT_EQ(o.code, 0) << o.err << o.out;
  const auto j = nlohmann::json::parse(o.out);
  std::multiset<std::string> kinds;
  for (const auto& s : j["series"]) {
    for (const auto& m : s["metrics"]) {
      for (const auto& c : m["changes"]) {
        kinds.insert(std::to_string(s["connections"].get<int>()) + " " + c["kind"].get<std::string>());
        EXPECT_FALSE(c["failing"].get<bool>());
        EXPECT_FALSE(c["inForce"].get<bool>());
      }
    }
  }
  EXPECT_EQ(kinds, (std::multiset<std::string>{"10 improvement", "20 improvement", "20 regression"}));
  o = Fairbench("history check --store " + db_);
  EXPECT_EQ(o.code, 0);
  EXPECT_NE(o.out.find("(no longer in force)"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("passed"), std::string::npos) << o.out;
}

// Catches: JUnit XML that does not parse, one test case not per series and
// metric, or a failure that the JSON does not report (and the reverse);
// --output not writing the file or not keeping the text on stdout.
TEST_F(HistoryCheckTest, JunitAndJsonSayTheSame) {
  Fill([](int run, int connections) { return connections == 20 && run >= kStepAt ? 35000.0 : 40000.0; });
  const std::string xml = dir_->File("check.xml");
  Outcome o = Fairbench("history check --store " + db_ + " --format junit --output " + xml);
  ASSERT_EQ(o.code, 1) << o.err;
  EXPECT_NE(o.out.find("failed"), std::string::npos) << o.out;  // the text for the log
  const std::string listing = dir_->File("cases.txt");
  ASSERT_EQ(
      std::system(("python3 -c \"import sys, xml.etree.ElementTree as E\n"
                   "r = E.parse(sys.argv[1]).getroot()\n"
                   "print(r.tag, r.get('tests'), r.get('failures'))\n"
                   "for c in r.iter('testcase'):\n"
                   "  print(c.get('classname'), c.get('name'), 'failure' if c.find('failure') is not None else 'ok')\n"
                   "\" " +
                   xml + " >" + listing)
                      .c_str()),
      0);
  std::set<std::string> junit_failed;
  std::istringstream lines(ReadFile(listing));
  std::string header;
  std::getline(lines, header);
  EXPECT_EQ(header, "testsuites 4 1");
  int cases = 0;
  for (std::string classname, name, verdict; lines >> classname >> name >> verdict; ++cases) {
    EXPECT_EQ(classname, "beast/hello");
    if (verdict == "failure") junit_failed.insert(name);
  }
  EXPECT_EQ(cases, 4);

  const std::string json = dir_->File("check.json");
  o = Fairbench("history check --store " + db_ + " --format json --output " + json);
  ASSERT_EQ(o.code, 1) << o.err;
  const auto j = nlohmann::json::parse(ReadFile(json));
  std::set<std::string> json_failed;
  size_t metrics = 0;
  for (const auto& s : j["series"]) {
    for (const auto& m : s["metrics"]) {
      ++metrics;
      const std::string short_name = m["metric"] == "requestsPerSecond" ? "rps" : "p99";
      if (m["failed"].get<bool>()) json_failed.insert(std::to_string(s["connections"].get<int>()) + "/" + short_name);
    }
  }
  EXPECT_EQ(metrics, 4u);
  EXPECT_EQ(json_failed, (std::set<std::string>{"20/rps"}));
  EXPECT_EQ(junit_failed, json_failed);
}

// Catches: bad flag values taken or not named, exit codes other than 2 for
// them and 1 for a store that cannot be used; a mistyped path made into an
// empty store.
TEST_F(HistoryCheckTest, BadInputIsNamed) {
  Fill([](int, int) { return 40000.0; });
  for (const auto& [flags, named] : std::vector<std::pair<std::string, std::string>>{
           {"--threshold fast", "--threshold"},
           {"--threshold -5%", "--threshold"},
           {"--metric p50", "--metric"},
           {"--min-change 1x", "--min-change"},
           {"--format xml", "--format"},
           {"--label nokey", "--label"},
           {"--since yesterday", "--since"},
           {"--target nginx", "nginx"},
           {"--output " + dir_->File("no/such/dir/out.xml") + " --format junit", "--output"},
       }) {
    Outcome o = Fairbench("history check --store " + db_ + " " + flags);
    EXPECT_EQ(o.code, 2) << flags << ": " << o.err;
    EXPECT_NE(o.err.find(named), std::string::npos) << flags << ": " << o.err;
  }
  Outcome o = Fairbench("history check --store " + dir_->File("absent.db"));
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.err.find("no such file"), std::string::npos) << o.err;
  EXPECT_FALSE(std::filesystem::exists(dir_->File("absent.db")));
  std::ofstream(dir_->File("text.db")) << "not a database, not at all, not even close to one\n";
  o = Fairbench("history check --store " + dir_->File("text.db"));
  EXPECT_EQ(o.code, 1) << o.err;
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  o = Fairbench("history check");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("--store"), std::string::npos) << o.err;
}

}  // namespace
}  // namespace fairbench::controller
