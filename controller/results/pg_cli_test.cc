// `fairbench import` and `fairbench history` (list, series, check, prune)
// through the built binary, once with --store on an SQLite file and once
// with --store postgresql://… on a real server (PostgresServer): the same
// runs give the same text, byte for byte but for where each names its
// store. And a server that does not answer is one line and exit code 1.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "controller/report/run_record.h"
#include "testing/support/bin_dir.h"
#include "testing/support/ports.h"
#include "testing/support/postgres_server.h"
#include "testing/support/temp_dir.h"

namespace fairbench::results {
namespace {

using testing::PostgresServer;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::string kLocalRun = std::string(RESULTS_TESTDATA) + "/local_run.json";

api::Time At(int64_t seconds) { return api::Time(std::chrono::seconds(seconds)); }

// One nightly run of beast and nginx, `day` days after the first.
report::RunRecord Nightly(int day, double rps, const std::string& kernel = "Linux 6.1.0") {
  report::RunRecord r;
  r.run.metadata.name = "nightly-" + std::to_string(day);
  r.run.metadata.labels = {{"branch", day % 3 == 0 ? "release" : "main"}};
  for (const char* t : {"beast", "nginx"}) {
    api::Target target;
    target.name = t;
    target.image = std::string("example.org/") + t + ":1";
    r.run.spec.targets.push_back(target);
  }
  api::Scenario s;
  s.name = "hello";
  s.request = api::Request{};
  r.run.spec.scenarios = {s};
  r.run.spec.load.connections = {10, 100};
  r.run.spec.repetitions = 2;
  r.run.status.phase = api::RunPhase::kSucceeded;
  const int64_t start = 1'780'000'000 + int64_t{86'400} * day;
  r.run.status.start_time = At(start);
  r.run.status.completion_time = At(start + 120);
  r.environment.platform = "local";
  r.environment.kernel = kernel;
  r.environment.cpu_model = "AMD EPYC";
  r.environment.cpus = 4;
  for (const char* t : {"beast", "nginx"}) {
    for (int64_t level : {10, 100}) {
      for (int rep = 1; rep <= 2; ++rep) {
        report::CellRecord c;
        c.result.target = t;
        c.result.scenario = "hello";
        c.result.connections = level;
        c.result.repetition = rep;
        c.result.requests_per_second = rps * static_cast<double>(level) / 10 + 0.37 * rep + (t[0] == 'n' ? 11.1 : 0);
        c.result.latency.p50 = 120.5 + rep;
        c.result.latency.p99 = 950.25 + 3.3 * day + rep;
        c.result.errors.timeout = static_cast<uint64_t>(day % 2);
        r.cells.push_back(c);
        r.run.status.results.push_back(c.result);
      }
    }
  }
  r.run.status.progress = {static_cast<int64_t>(r.cells.size()), static_cast<int64_t>(r.cells.size())};
  return r;
}

struct Outcome {
  int code = -1;
  std::string out, err;
};

class PgCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto s = PostgresServer::Start();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
  }
  static void TearDownTestSuite() { server_.reset(); }

  void SetUp() override {
    ASSERT_NE(server_, nullptr);
    auto dir = testing::TempDir::Create("fairbench-pg-cli");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
    sqlite_ = dir_->File("results.db");
    static int n = 0;
    const std::string db = "cli" + std::to_string(++n);
    auto url = server_->CreateDatabase(db);
    ASSERT_TRUE(url.ok()) << url.status().ToString();
    pg_ = *url;
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

  // `fairbench ARGS --store STORE` on both stores (ARGS holds "{store}"
  // where the store goes); the two outcomes with the store's name replaced.
  std::pair<Outcome, Outcome> Both(const std::string& args) {
    std::pair<Outcome, Outcome> r;
    for (int i = 0; i < 2; ++i) {
      const std::string store = i == 0 ? sqlite_ : pg_;
      std::string a = args;
      a.replace(a.find("{store}"), 7, store);
      Outcome o = Fairbench(a);
      const std::string describe = i == 0 ? "SQLite store " + sqlite_ : "PostgreSQL store " + pg_;
      for (std::string* text : {&o.out, &o.err}) {
        for (const std::string& name : {describe, store}) {
          for (size_t at = text->find(name); at != std::string::npos; at = text->find(name, at)) {
            text->replace(at, name.size(), "STORE");
          }
        }
      }
      (i == 0 ? r.first : r.second) = o;
    }
    return r;
  }

  // The same text from both, and a successful command.
  void ExpectSame(const std::string& args, int code = 0) {
    SCOPED_TRACE(args);
    auto [sqlite, pg] = Both(args);
    EXPECT_EQ(sqlite.code, code) << sqlite.err;
    EXPECT_EQ(pg.code, sqlite.code) << pg.err;
    EXPECT_EQ(pg.out, sqlite.out);
    EXPECT_EQ(pg.err, sqlite.err);
    EXPECT_FALSE(sqlite.out.empty() && sqlite.err.empty());
  }

  static std::unique_ptr<PostgresServer> server_;
  std::optional<testing::TempDir> dir_;
  std::string sqlite_, pg_;
};
std::unique_ptr<PostgresServer> PgCliTest::server_;

// Catches: a --store URL not routed to PostgreSQL, or a PostgreSQL store
// whose answers print otherwise than SQLite's anywhere in import, the run
// list (table and JSON, filtered), a series (table and JSON, another
// fingerprint), the change check or a prune.
TEST_F(PgCliTest, ImportAndHistoryPrintTheSameOnBothStores) {
  std::string files = kLocalRun;
  for (int day = 0; day < 12; ++day) {
    // A step down in requests/s after day 6; days 4 and 9 on a newer kernel.
    const report::RunRecord r =
        Nightly(day, day < 6 ? 4000 + 7 * day : 3500 + 5 * day, day == 4 || day == 9 ? "Linux 6.12.0" : "Linux 6.1.0");
    const std::string path = dir_->File("run" + std::to_string(day) + ".json");
    std::ofstream(path, std::ios::binary) << report::ToJsonText(r);
    files += " " + path;
  }
  ExpectSame("import " + files + " --store {store}");
  ExpectSame("import " + files + " --store {store}");  // already stored
  ExpectSame("history --store {store}");
  ExpectSame("history --store {store} --json");
  ExpectSame("history --store {store} --label branch=release --limit 3");
  ExpectSame("history --store {store} --target nginx --since 2026-06-01");
  ExpectSame("history series --store {store} --target beast --scenario hello --connections 100");
  ExpectSame("history series --store {store} --target nginx --scenario hello --connections 10 --json");
  auto [sqlite, pg] = Both("history --store {store} --json --limit 0");
  const size_t at = pg.out.find("\"fingerprint\"");
  ASSERT_NE(at, std::string::npos) << pg.out;
  ExpectSame("history series --store {store} --target beast --scenario hello --connections 10 --fingerprint " +
             pg.out.substr(pg.out.find(':', at) + 3, 8));
  ExpectSame("history series --store {store} --target beast --scenario hello --connections 1000", 2);
  ExpectSame("history check --store {store} --format json", 1);
  ExpectSame("history check --store {store} --metric p99");
  ExpectSame("history prune --store {store} --keep 3 --dry-run");
  ExpectSame("history prune --store {store} --keep 3");
  ExpectSame("history --store {store} --limit 0");

  // The record stored whole, by psql: its size.
  auto bytes = server_->Psql(pg_.substr(pg_.rfind('/') + 1), "SELECT bytes FROM run_records WHERE run_id = 1");
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(*bytes, std::to_string(ReadFile(kLocalRun).size()) + "\n");
}

// Catches: an unreachable PostgreSQL store that hangs the command, prints
// more than one line, or exits 0.
TEST_F(PgCliTest, AnUnreachableStoreIsOneLineAndExitCode1) {
  auto port = testing::FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  const std::string url = "postgresql://fairbench@127.0.0.1:" + std::to_string(*port) + "/results";
  const auto t0 = std::chrono::steady_clock::now();
  Outcome o = Fairbench("history --store " + url);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(6));
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err.rfind("fairbench history: PostgreSQL store " + url + ": cannot connect: ", 0), 0u) << o.err;
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  o = Fairbench("import " + kLocalRun + " --store " + url);
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.err.find("PostgreSQL store " + url + ": cannot connect: "), std::string::npos) << o.err;
}

}  // namespace
}  // namespace fairbench::results
