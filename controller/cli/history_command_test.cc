// `fairbench import`, `fairbench history` and `fairbench run --store` as a
// user runs them: the real binary on files, its exit codes, what it writes;
// the numbers against the results.json files themselves and the store
// through sqlite3's CLI.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
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

class HistoryCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::TempDir::Create("fairbench-history");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
    db_ = dir_->File("results.db");
  }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_->File(name);
    std::ofstream(path, std::ios::binary) << text;
    return path;
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
  std::string Sql(const std::string& sql) {
    const std::string out = dir_->File("sql.out");
    (void)std::system(("sqlite3 -batch '" + db_ + "' \"" + sql + "\" >" + out + " 2>&1").c_str());
    return ReadFile(out);
  }

  std::optional<testing::TempDir> dir_;
  std::string db_;
};

// Catches: import that stores a run twice, history that lists it without its
// labels or fingerprint, filters that do not filter, a series whose numbers
// are not the file's (the mean of the repetitions' requests/s and p99).
TEST_F(HistoryCommandTest, ImportedRunsAreListedAndTheirSeriesIsTheFilesNumbers) {
  Outcome o = Fairbench("import " + kLocalRun + " --store " + db_);
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("run store-testdata ("), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("4 cells): stored as run 1"), std::string::npos) << o.out;
  o = Fairbench("import " + kLocalRun + " --store " + db_);
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("already stored as run 1"), std::string::npos) << o.out;
  EXPECT_EQ(Sql("SELECT count(*) FROM runs"), "1\n");

  const auto file = nlohmann::json::parse(ReadFile(kLocalRun));
  o = Fairbench("history --store " + db_);
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("store-testdata"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("branch=main,commit=abc1234"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find(file["run"]["status"]["startTime"].get<std::string>().substr(0, 19) + "Z"), std::string::npos)
      << o.out;
  const std::string fingerprint = Sql("SELECT fingerprint FROM runs").substr(0, 64);
  EXPECT_NE(o.out.find(fingerprint.substr(0, 12)), std::string::npos) << o.out;

  o = Fairbench("history --store " + db_ +
                " --label branch=main --target beast --scenario hello --since 2026-01-01 --json");
  ASSERT_EQ(o.code, 0) << o.err;
  auto list = nlohmann::json::parse(o.out);
  ASSERT_EQ(list["runs"].size(), 1u);
  EXPECT_EQ(list["runs"][0]["fingerprint"], fingerprint);
  EXPECT_EQ(list["runs"][0]["cells"], 4);
  for (const char* filter : {"--label branch=other", "--target nginx", "--scenario json", "--since 2100-01-01"}) {
    o = Fairbench("history --store " + db_ + " " + std::string(filter) + " --json");
    ASSERT_EQ(o.code, 0) << o.err;
    EXPECT_EQ(nlohmann::json::parse(o.out)["runs"].size(), 0u) << filter;
  }

  for (int connections : {10, 20}) {
    double rate = 0, p99 = 0;
    int n = 0;
    for (const auto& c : file["cells"]) {
      if (c["result"]["connections"] != connections) continue;
      rate += c["result"]["requestsPerSecond"].get<double>();
      p99 += c["result"]["latency"]["p99"].get<double>();
      ++n;
    }
    ASSERT_EQ(n, 2);
    o = Fairbench("history series --store " + db_ + " --target beast --scenario hello --connections " +
                  std::to_string(connections) + " --json");
    ASSERT_EQ(o.code, 0) << o.err;
    const auto series = nlohmann::json::parse(o.out);
    ASSERT_EQ(series["points"].size(), 1u);
    EXPECT_NEAR(series["points"][0]["requestsPerSecond"].get<double>(), rate / n, 1e-9);
    EXPECT_NEAR(series["points"][0]["p99Us"].get<double>(), p99 / n, 1e-9);
    EXPECT_EQ(series["points"][0]["repetitions"], 2);
    EXPECT_EQ(series["fingerprint"], fingerprint);
  }
  o = Fairbench("history --store " + db_ + " series --target beast --scenario hello --connections 10");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("beast/hello at 10 connections, fingerprint " + fingerprint.substr(0, 12) + ": 1 runs"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("RUN  STARTED"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("store-testdata"), std::string::npos) << o.out;
}

// Catches: a damaged or foreign file stored in part, refused without naming
// the field, or taking the files after it down with it; exit codes other
// than 2 for bad input and 1 for a store that cannot be used.
TEST_F(HistoryCommandTest, BadFilesAreRefusedNamingTheFieldAndNothingOfThemIsStored) {
  auto damaged = nlohmann::json::parse(ReadFile(kLocalRun));
  damaged["cells"][2]["result"]["requestsPerSecond"] = "fast";
  const std::string bad = Write("damaged.json", damaged.dump(1));
  const std::string foreign = Write("foreign.json", R"({"kind": "Pod", "apiVersion": "v1"})");
  const std::string cut = Write("cut.json", ReadFile(kLocalRun).substr(0, 5000));
  Outcome o = Fairbench("import " + bad + " " + foreign + " " + cut + " " + kLocalRun + " --store " + db_);
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_NE(o.err.find("cells[2].result.requestsPerSecond"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find(foreign + ": not a fairbench results.json"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find(cut + ":"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("3 of 4 files refused"), std::string::npos) << o.err;
  EXPECT_NE(o.out.find(kLocalRun + ": run store-testdata"), std::string::npos) << o.out;
  EXPECT_EQ(Sql("SELECT count(*), sum(cells_stored) FROM runs"), "1|4\n");
  EXPECT_EQ(Sql("SELECT count(*) FROM cells"), "4\n");

  o = Fairbench("import " + kLocalRun + " --store " + dir_->File("no/such/dir/results.db"));
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.err.find("no directory"), std::string::npos) << o.err;
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  o = Fairbench("history --store " + dir_->File("absent.db"));
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.err.find("no such file"), std::string::npos) << o.err;
  EXPECT_FALSE(std::filesystem::exists(dir_->File("absent.db")));
  o = Fairbench("history series --store " + db_ + " --target beast --scenario hello --connections 30");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("no stored run has beast/hello at 30 connections"), std::string::npos) << o.err;
  o = Fairbench("history --store " + db_ + " --label nokey");
  EXPECT_EQ(o.code, 2);
  o = Fairbench("history --store " + db_ + " --since yesterday");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("--since"), std::string::npos) << o.err;
  o = Fairbench("import " + kLocalRun);
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("--store"), std::string::npos) << o.err;
}

// Catches: prune without a rule or with a bad one doing anything, a dry
// run that removes, --older-than not removing an old run.
TEST_F(HistoryCommandTest, PruneRemovesOldRunsAndSaysWhich) {
  ASSERT_EQ(Fairbench("import " + kLocalRun + " --store " + db_).code, 0);
  Outcome o = Fairbench("history prune --store " + db_);
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("--older-than, --keep or both"), std::string::npos) << o.err;
  o = Fairbench("history prune --store " + db_ + " --older-than soon");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("--older-than"), std::string::npos) << o.err;
  o = Fairbench("history prune --store " + db_ + " --keep 1 --dry-run");
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("0 runs would be removed"), std::string::npos) << o.out;
  // The record's run started 2026-12-05T20:41:48Z.
  o = Fairbench("history prune --store " + db_ + " --older-than 2026-12-05T20:41:48Z");
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("0 runs removed"), std::string::npos) << o.out;
  o = Fairbench("history prune --store " + db_ + " --older-than 2026-12-06 --dry-run");
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("would remove run 1 "), std::string::npos) << o.out;
  EXPECT_EQ(Sql("SELECT count(*) FROM runs"), "1\n");
  o = Fairbench("history prune --store " + db_ + " --older-than 2026-12-06");
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("1 run removed"), std::string::npos) << o.out;
  EXPECT_EQ(Sql("SELECT count(*) FROM runs"), "0\n");
  EXPECT_EQ(Sql("SELECT count(*) FROM cells"), "0\n");
}

// Catches: `run --store` not storing the finished run, or a store that
// fails taking the run's files with it, or failing silently (exit 0).
TEST_F(HistoryCommandTest, RunStoresTheFinishedRunAndKeepsItsFilesWhenTheStoreFails) {
  const std::string run =
      Write("run.yaml",
            "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: stored, labels: "
            "{ci: \"yes\"}}\nspec:\n  targets:\n  - name: beast\n    local:\n      command: [" +
                testing::BinaryPath("fairbench-target-beast") +
                ", --port, \"{port}\", --threads, \"1\"]\n  scenarios:\n  - name: hello\n    "
                "request: {path: /}\n    expect: {status: 200}\n  load: {threads: 1, connections: "
                "[4], warmup: 200ms, duration: 500ms, timeout: 1s}\n  cooldown: 0s\n");
  const std::string lock = dir_->File("load.lock");
  Outcome o =
      Fairbench("run " + run + " -q --output " + dir_->File("out1") + " --lock-file " + lock + " --store " + db_);
  ASSERT_EQ(o.code, 0) << o.err;
  const auto file = nlohmann::json::parse(ReadFile(dir_->File("out1/results.json")));
  char expected[128];
  std::snprintf(expected, sizeof expected, "stored|4|%.17g\n",
                file["cells"][0]["result"]["requestsPerSecond"].get<double>());
  EXPECT_EQ(Sql("SELECT r.name, c.connections, printf('%.17g', c.requests_per_second) FROM runs r JOIN cells c ON "
                "c.run_id = r.id"),
            std::string(expected));
  EXPECT_EQ(Sql("SELECT key, value FROM run_labels"), "ci|yes\n");

  o = Fairbench("run " + run + " --output " + dir_->File("out2") + " --lock-file " + lock + " --store " +
                dir_->File("no/such/dir/results.db"));
  EXPECT_EQ(o.code, 1) << o.err;
  EXPECT_NE(o.err.find("the run was not stored: SQLite store " + dir_->File("no/such/dir/results.db") +
                       ": cannot create it: no directory"),
            std::string::npos)
      << o.err;
  EXPECT_TRUE(std::filesystem::exists(dir_->File("out2/results.json")));
  EXPECT_TRUE(std::filesystem::exists(dir_->File("out2/report.md")));
  o = Fairbench("import " + dir_->File("out2/results.json") + " --store " + db_);
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(Sql("SELECT count(*) FROM runs"), "2\n");
}

}  // namespace
}  // namespace fairbench::controller
