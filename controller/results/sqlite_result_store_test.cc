// SqliteResultStore through its API, and what it wrote through sqlite3's own
// CLI and gzip: round trip of a real results.json, migrations, a newer or
// foreign store refused, dedup, a writer killed midway, series and lists.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "controller/results/run_index.h"
#include "controller/results/sqlite_result_store.h"
#include "testing/support/temp_dir.h"

namespace fairbench::results {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Shell(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

const std::string kLocalRun = std::string(RESULTS_TESTDATA) + "/local_run.json";

api::Time At(int64_t seconds) { return api::Time(std::chrono::seconds(seconds)); }

// A run of `rates.size()` repetitions of one cell per connection level,
// started at `start` (seconds since the epoch), on a machine with `kernel`.
report::RunRecord MakeRun(const std::string& name, int64_t start, const std::vector<double>& rates,
                          const std::string& kernel = "Linux 6.1.0", std::vector<int64_t> levels = {100}) {
  report::RunRecord r;
  r.run.metadata.name = name;
  r.run.metadata.labels = {{"branch", "main"}};
  for (const char* t : {"drogon", "nginx"}) {
    api::Target target;
    target.name = t;
    target.image = std::string("example.org/") + t + ":1";
    r.run.spec.targets.push_back(target);
  }
  api::Scenario s;
  s.name = "hello";
  s.request = api::Request{};
  r.run.spec.scenarios = {s};
  r.run.spec.load.connections = levels;
  r.run.spec.repetitions = static_cast<int32_t>(rates.size());
  r.run.status.phase = api::RunPhase::kSucceeded;
  r.run.status.start_time = At(start);
  r.run.status.completion_time = At(start + 60);
  r.environment.platform = "local";
  r.environment.kernel = kernel;
  r.environment.cpu_model = "AMD EPYC";
  r.environment.cpus = 2;
  r.environment.target_cpus = {0};
  r.environment.agent_cpus = {1};
  for (const char* t : {"drogon", "nginx"}) {
    for (int64_t level : levels) {
      for (size_t i = 0; i < rates.size(); ++i) {
        report::CellRecord c;
        c.result.target = t;
        c.result.scenario = "hello";
        c.result.connections = level;
        c.result.repetition = static_cast<int32_t>(i + 1);
        c.result.requests_per_second = rates[i] * (std::string(t) == "nginx" ? 2 : 1);
        c.result.latency.p99 = 1000 + 100 * static_cast<double>(i);
        c.result.errors.timeout = i;
        r.cells.push_back(c);
        r.run.status.results.push_back(c.result);
      }
    }
  }
  r.run.status.progress = {static_cast<int64_t>(r.cells.size()), static_cast<int64_t>(r.cells.size())};
  return r;
}

class SqliteResultStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::TempDir::Create("fairbench-results");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
    db_ = dir_->File("results.db");
  }
  std::unique_ptr<SqliteResultStore> Open(SqliteStoreOptions o = {}) {
    auto s = SqliteResultStore::Open(db_, std::move(o));
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }
  // sqlite3's CLI on the same file: what another program reads.
  std::string Sql(const std::string& sql) { return Shell("sqlite3 -batch '" + db_ + "' \"" + sql + "\" 2>&1"); }

  // Every row of every table (the record as hex).
  std::string Everything() {
    return Sql("SELECT * FROM runs") + Sql("SELECT run_id, encoding, bytes, hex(results) FROM run_records") +
           Sql("SELECT * FROM cells") + Sql("SELECT * FROM run_targets") + Sql("SELECT * FROM run_labels") +
           Sql("SELECT * FROM schema_version");
  }

  std::optional<testing::TempDir> dir_;
  std::string db_;
};

// Catches: a stored record that differs from the file by a byte (the
// canonical text not being what `fairbench run` writes, gzip damage), or
// cells indexed with other numbers than the file's.
TEST_F(SqliteResultStoreTest, ARealResultsJsonRoundTripsAndItsCellsAreIndexed) {
  const std::string text = ReadFile(kLocalRun);
  auto record = report::RunRecordFromJsonText(text, kLocalRun);
  ASSERT_TRUE(record.ok());
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto receipt = store->Store(*record);
  ASSERT_TRUE(receipt.ok()) << receipt.status().ToString();
  EXPECT_EQ(receipt->outcome, StoreOutcome::kStored);
  auto back = store->LoadResultsJson(receipt->id);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, text);
  EXPECT_EQ(store->LoadResultsJson(receipt->id + 1).status().code(), Status::Code::kNotFound);
  store.reset();

  // The blob, out through sqlite3 and gzip.
  const std::string gz = dir_->File("blob.gz");
  Sql("SELECT writefile('" + gz + "', results) FROM run_records WHERE run_id = " + std::to_string(receipt->id));
  EXPECT_EQ(Shell("gzip -dc '" + gz + "'"), text);

  const auto j = nlohmann::json::parse(text);
  std::string expected;
  for (const auto& c : j["cells"]) {
    const auto& r = c["result"];
    char line[256];
    std::snprintf(line, sizeof line, "%s|%s|%lld|%d|%s|%.17g|%.17g\n", r["target"].get<std::string>().c_str(),
                  r["scenario"].get<std::string>().c_str(), static_cast<long long>(r["connections"].get<int64_t>()),
                  r["repetition"].get<int>(), r["state"].get<std::string>().c_str(),
                  r["requestsPerSecond"].get<double>(), r["latency"]["p99"].get<double>());
    expected += line;
  }
  EXPECT_EQ(Sql("SELECT target, scenario, connections, repetition, state, printf('%.17g', requests_per_second), "
                "printf('%.17g', p99_us) FROM cells ORDER BY position"),
            expected);
  const std::string start = j["run"]["status"]["startTime"].get<std::string>();
  EXPECT_EQ(Sql("SELECT name, phase, strftime('%Y-%m-%dT%H:%M:%S', start_ns / 1000000000, 'unixepoch'), "
                "cells_stored, labels FROM runs"),
            "store-testdata|Succeeded|" + start.substr(0, 19) + "|4|{\"branch\":\"main\",\"commit\":\"abc1234\"}\n");
  EXPECT_EQ(Sql("SELECT name, image FROM run_targets"), "beast|ghcr.io/fairbench/fairbench-target-beast:0.1.0\n");
  EXPECT_EQ(Sql("SELECT key, value FROM run_labels ORDER BY key"), "branch|main\ncommit|abc1234\n");
}

// Catches: an older store opened without its migrations (the label table
// missing), migrations that lose the runs stored before them or skip the
// backfill, a version not recorded.
TEST_F(SqliteResultStoreTest, AnOlderStoreIsMigratedAndKeepsItsRuns) {
  {
    SqliteStoreOptions v1;
    v1.schema_version = 1;
    auto store = Open(v1);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->schema_version(), 1);
    report::RunRecord r = MakeRun("old", 1'700'000'000, {1000});
    r.run.metadata.labels = {{"branch", "release-1"}, {"commit", "0ld"}};
    ASSERT_TRUE(store->Store(r).ok());
  }
  EXPECT_EQ(Sql("SELECT version FROM schema_version"), "1\n");
  EXPECT_NE(Sql("SELECT count(*) FROM run_labels").find("no such table"), std::string::npos);

  auto store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->schema_version(), kSqliteSchemaVersion);
  RunFilter f;
  f.labels = {{"branch", "release-1"}};
  auto runs = store->ListRuns(f);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].name, "old");
  ASSERT_TRUE(store->Store(MakeRun("new", 1'700'000'100, {1100})).ok());
  store.reset();
  EXPECT_EQ(Sql("SELECT version FROM schema_version"), std::to_string(kSqliteSchemaVersion) + "\n");
  EXPECT_EQ(Sql("SELECT r.name, l.key, l.value FROM run_labels l JOIN runs r ON r.id = l.run_id ORDER BY r.id, l.key"),
            "old|branch|release-1\nold|commit|0ld\nnew|branch|main\n");
}

// Catches: no identity (which build of a target ran) in the index, a note
// saying it is unknown taken for one, the identity missing from a run's
// listing or from a series' points, and a store of version 2 not given the
// identities of the runs it already held (the migration reads their notes).
TEST_F(SqliteResultStoreTest, WhichBuildRanIsIndexedAndMigratedFromTheNotes) {
  auto with_identity = [](report::RunRecord r, const std::string& drogon) {
    r.environment.notes = {"target drogon: nofile in force: 1024", "target drogon: identity: " + drogon,
                           "target nginx: identity: unknown, the engine did not say which image ran"};
    return r;
  };
  {
    SqliteStoreOptions v2;
    v2.schema_version = 2;
    auto store = Open(v2);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->Store(with_identity(MakeRun("before", 1'700'000'000, {1000}), "image sha256:aaa")).ok());
  }
  EXPECT_NE(Sql("SELECT identity FROM run_targets").find("no such column"), std::string::npos);
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(
      store->Store(with_identity(MakeRun("after", 1'700'000'100, {1100}), "binary /usr/bin/x sha256:bbb")).ok());
  EXPECT_EQ(
      Sql("SELECT r.name, t.name, t.identity FROM run_targets t JOIN runs r ON r.id = t.run_id ORDER BY r.id, t.name"),
      "before|drogon|image sha256:aaa\nbefore|nginx|\nafter|drogon|binary /usr/bin/x sha256:bbb\nafter|nginx|\n");
  auto runs = store->ListRuns({});
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].identities, (std::vector<std::string>{"binary /usr/bin/x sha256:bbb", ""}));
  EXPECT_EQ((*runs)[1].identities, (std::vector<std::string>{"image sha256:aaa", ""}));
  SeriesQuery q;
  q.target = "drogon";
  q.scenario = "hello";
  q.connections = 100;
  auto series = store->QuerySeries(q);
  ASSERT_TRUE(series.ok()) << series.status().ToString();
  ASSERT_EQ(series->points.size(), 2u);
  EXPECT_EQ(series->points[0].identity, "image sha256:aaa");
  EXPECT_EQ(series->points[1].identity, "binary /usr/bin/x sha256:bbb");
}

// Catches: a newer store written to by an older build (its data misread),
// or refused without saying which versions.
TEST_F(SqliteResultStoreTest, ANewerStoreIsRefusedNamingBothVersions) {
  ASSERT_NE(Open(), nullptr);
  Sql("UPDATE schema_version SET version = 7");
  auto store = SqliteResultStore::Open(db_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), Status::Code::kUnavailable);
  EXPECT_NE(store.status().message().find("version 7"), std::string::npos) << store.status().message();
  EXPECT_NE(store.status().message().find("(" + std::to_string(kSqliteSchemaVersion) + ")"), std::string::npos)
      << store.status().message();
  EXPECT_EQ(Sql("SELECT version FROM schema_version"), "7\n");
}

// Catches: another program's database taken over (tables added to it), a
// file that is no database written over, a missing directory or store
// reported vaguely.
TEST_F(SqliteResultStoreTest, WhatIsNoStoreIsRefusedInOneLine) {
  Sql("CREATE TABLE notes (text TEXT)");
  auto foreign = SqliteResultStore::Open(db_);
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.status().message().find("not a fairbench result store"), std::string::npos)
      << foreign.status().message();
  EXPECT_EQ(Sql("SELECT name FROM sqlite_master WHERE type = 'table'"), "notes\n");

  const std::string text_file = dir_->File("notes.txt");
  std::ofstream(text_file) << "these are not the tables you are looking for\n";
  auto not_db = SqliteResultStore::Open(text_file);
  ASSERT_FALSE(not_db.ok());
  EXPECT_EQ(not_db.status().code(), Status::Code::kUnavailable);
  EXPECT_NE(not_db.status().message().find("not a database"), std::string::npos) << not_db.status().message();
  EXPECT_EQ(ReadFile(text_file), "these are not the tables you are looking for\n");

  auto no_dir = SqliteResultStore::Open(dir_->File("missing/results.db"));
  ASSERT_FALSE(no_dir.ok());
  EXPECT_NE(no_dir.status().message().find("no directory " + dir_->File("missing")), std::string::npos)
      << no_dir.status().message();
  SqliteStoreOptions existing;
  existing.create = false;
  auto absent = SqliteResultStore::Open(dir_->File("absent.db"), existing);
  ASSERT_FALSE(absent.ok());
  EXPECT_NE(absent.status().message().find("no such file"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir_->File("absent.db")));
  for (const Status& s : {foreign.status(), not_db.status(), no_dir.status(), absent.status()}) {
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
  }
}

// Catches: a run stored twice kept twice; a re-indented copy of the same
// record taken for another run; a finished record not replacing the
// in-progress one stored before it, or an in-progress one replacing the
// finished one.
TEST_F(SqliteResultStoreTest, TheSameRunStoredTwiceIsKeptOnce) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  const report::RunRecord whole = MakeRun("nightly", 1'700'000'000, {1000, 1010, 990});
  report::RunRecord partial = whole;
  partial.cells.resize(2);
  partial.run.status.results.resize(2);
  partial.run.status.phase = api::RunPhase::kRunning;

  auto first = store->Store(partial);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->outcome, StoreOutcome::kStored);
  auto again = store->Store(partial);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->outcome, StoreOutcome::kUnchanged);
  EXPECT_EQ(again->id, first->id);
  auto finished = store->Store(whole);
  ASSERT_TRUE(finished.ok());
  EXPECT_EQ(finished->outcome, StoreOutcome::kReplaced);
  EXPECT_EQ(finished->id, first->id);
  auto late = store->Store(partial);
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(late->outcome, StoreOutcome::kKept);
  EXPECT_EQ(late->cells, 6);
  EXPECT_EQ(ReceiptText(*late), "kept run " + std::to_string(first->id) + ": it holds 6 cells, this record 2");

  // The same record, indented otherwise: one record.
  const auto reparsed = report::RunRecordFromJsonText(report::ToJson(whole).dump(), "compact");
  ASSERT_TRUE(reparsed.ok()) << reparsed.status().ToString();
  auto compact = store->Store(*reparsed);
  ASSERT_TRUE(compact.ok());
  EXPECT_EQ(compact->outcome, StoreOutcome::kUnchanged);

  // Another run of the same name: another start.
  auto other = store->Store(MakeRun("nightly", 1'700'086'400, {1000}));
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->outcome, StoreOutcome::kStored);
  store.reset();
  EXPECT_EQ(Sql("SELECT id, phase, cells_stored FROM runs ORDER BY id"),
            std::to_string(first->id) + "|Succeeded|6\n" + std::to_string(other->id) + "|Succeeded|2\n");
  EXPECT_EQ(Sql("SELECT run_id, count(*) FROM cells GROUP BY run_id ORDER BY run_id"),
            std::to_string(first->id) + "|6\n" + std::to_string(other->id) + "|2\n");
  EXPECT_EQ(Sql("SELECT count(*) FROM run_targets"), "4\n");
  EXPECT_EQ(Sql("SELECT count(*) FROM run_records"), "2\n");
  EXPECT_EQ(Sql("SELECT bytes FROM run_records WHERE run_id = " + std::to_string(first->id)),
            std::to_string(report::ToJsonText(whole).size()) + "\n");
  EXPECT_EQ(Sql("SELECT count(*) FROM run_labels"), "2\n");
}

// Catches: a store that is not one transaction: a writer killed between
// its inserts leaving a run without its cells (or half of them), or
// damaging the runs stored before it.
TEST_F(SqliteResultStoreTest, AWriterKilledMidStoreLeavesTheStoreAsItWas) {
  {
    auto store = Open();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->Store(MakeRun("before", 1'700'000'000, {1000, 1001})).ok());
  }
  const std::string before = Everything();
  const report::RunRecord victim = MakeRun("victim", 1'700'000'100, {2000, 2001, 2002}, "Linux 6.1.0", {10, 100});
  ASSERT_EQ(victim.cells.size(), 12u);
  for (const char* kill_at : {"run", "target nginx", "cell 5"}) {
    SCOPED_TRACE(kill_at);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      SqliteStoreOptions o;
      o.between_inserts = [&](std::string_view step) {
        if (step == std::string_view(kill_at)) raise(SIGKILL);
      };
      auto store = SqliteResultStore::Open(db_, o);
      if (!store.ok()) _exit(3);
      (void)(*store)->Store(victim);  // never returns: killed inside
      _exit(4);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer was not killed midway (exit " << WEXITSTATUS(status) << ")";
    EXPECT_EQ(WTERMSIG(status), SIGKILL);
    EXPECT_EQ(Sql("PRAGMA integrity_check"), "ok\n");
    EXPECT_EQ(Everything(), before);
  }
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto runs = store->ListRuns({});
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].name, "before");
  auto stored = store->Store(victim);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ(stored->outcome, StoreOutcome::kStored);
  store.reset();
  EXPECT_EQ(Sql("SELECT count(*) FROM cells"), "16\n");
}

// Catches: a series mixing environments, points out of time order, a
// repetition's figures counted as a point of their own, failed repetitions
// averaged in, errors not summed, the other fingerprints not counted.
TEST_F(SqliteResultStoreTest, ASeriesIsOneLoadUnderOneFingerprintOverTime) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  // Stored out of order; the last one on another kernel.
  ASSERT_TRUE(store->Store(MakeRun("b", 1'700'000'200, {1200, 1300})).ok());
  ASSERT_TRUE(store->Store(MakeRun("a", 1'700'000'100, {1000, 1100})).ok());
  report::RunRecord c = MakeRun("c", 1'700'000'300, {1400, 9999});
  c.cells[1].result.state = api::CellState::kFailed;  // drogon's second repetition
  c.run.status.results[1].state = api::CellState::kFailed;
  ASSERT_TRUE(store->Store(c).ok());
  ASSERT_TRUE(store->Store(MakeRun("elsewhere", 1'700'000'250, {5000}, "Linux 6.12.0")).ok());

  SeriesQuery q;
  q.target = "drogon";
  q.scenario = "hello";
  q.connections = 100;
  auto series = store->QuerySeries(q);
  ASSERT_TRUE(series.ok()) << series.status().ToString();
  ASSERT_EQ(series->points.size(), 3u);
  EXPECT_EQ(series->points[0].run_name, "a");
  EXPECT_EQ(series->points[1].run_name, "b");
  EXPECT_EQ(series->points[2].run_name, "c");
  EXPECT_DOUBLE_EQ(series->points[0].requests_per_second, (1000.0 + 1100.0) / 2);
  EXPECT_DOUBLE_EQ(series->points[0].p99_us, (1000.0 + 1100.0) / 2);
  EXPECT_EQ(series->points[0].errors, 0u + 1u);
  EXPECT_EQ(series->points[0].repetitions, 2);
  EXPECT_DOUBLE_EQ(series->points[2].requests_per_second, 1400.0);
  EXPECT_EQ(series->points[2].succeeded, 1);
  EXPECT_EQ(series->points[2].repetitions, 2);
  EXPECT_EQ(*series->points[1].start_ns, 1'700'000'200LL * 1'000'000'000);
  EXPECT_EQ(series->runs_elsewhere, 1);
  ASSERT_EQ(series->other_fingerprints.size(), 1u);
  EXPECT_EQ(series->fingerprint, EnvironmentFingerprint(c.environment));

  // The other environment, chosen by a prefix of its fingerprint.
  q.fingerprint = series->other_fingerprints[0].substr(0, 12);
  auto other = store->QuerySeries(q);
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  ASSERT_EQ(other->points.size(), 1u);
  EXPECT_EQ(other->points[0].run_name, "elsewhere");
  EXPECT_EQ(other->runs_elsewhere, 3);

  q.fingerprint.clear();
  q.connections = 1000;
  EXPECT_EQ(store->QuerySeries(q).status().code(), Status::Code::kNotFound);
}

// Catches: a series listed once per run or per repetition, one missing
// (another connection level, another fingerprint), filters that do not
// filter, an order other than target, scenario, connections.
TEST_F(SqliteResultStoreTest, EverySeriesIsListedOnce) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Store(MakeRun("a", 1'700'000'100, {1000, 1100}, "Linux 6.1.0", {100, 10})).ok());
  ASSERT_TRUE(store->Store(MakeRun("b", 1'700'000'200, {1000}, "Linux 6.12.0", {1000})).ok());
  auto text = [](const std::vector<SeriesKey>& keys) {
    std::string out;
    for (const SeriesKey& k : keys) {
      out += k.target + "/" + k.scenario + "@" + std::to_string(k.connections) + "," + std::to_string(k.rate) + " ";
    }
    return out;
  };
  auto all = store->ListSeries("", "");
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(text(*all),
            "drogon/hello@10,0 drogon/hello@100,0 drogon/hello@1000,0 nginx/hello@10,0 nginx/hello@100,0 "
            "nginx/hello@1000,0 ");
  auto nginx = store->ListSeries("nginx", "hello");
  ASSERT_TRUE(nginx.ok());
  EXPECT_EQ(text(*nginx), "nginx/hello@10,0 nginx/hello@100,0 nginx/hello@1000,0 ");
  auto none = store->ListSeries("", "json");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

// Retention: all but the newest N runs of each series (a run that is among
// the newest of any of its series stays), or by age; the records, cells,
// targets and labels of a removed run go with it. Counted with sqlite3's
// CLI on the file.
// Catches: a run removed while another series still needs it, the
// fingerprint left out of a series, a dry run that removes, rows of a
// removed run left behind.
TEST_F(SqliteResultStoreTest, PruneKeepsTheNewestRunsOfEachSeriesOrRemovesByAge) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Store(MakeRun("a1", 100, {1000})).ok());
  ASSERT_TRUE(store->Store(MakeRun("a2", 200, {1000})).ok());
  ASSERT_TRUE(store->Store(MakeRun("a3", 300, {1000})).ok());
  ASSERT_TRUE(store->Store(MakeRun("b1", 150, {1000}, "Linux 6.1.0", {1000})).ok());  // its own load
  ASSERT_TRUE(store->Store(MakeRun("k1", 250, {1000}, "Linux 6.12.0")).ok());         // its own machine
  auto names = [](const std::vector<PrunedRun>& runs) {
    std::string out;
    for (const PrunedRun& r : runs) out += r.name + " ";
    return out;
  };
  PruneRule keep;
  keep.keep_per_series = 2;
  keep.dry_run = true;
  auto would = store->Prune(keep);
  ASSERT_TRUE(would.ok()) << would.status().ToString();
  EXPECT_EQ(names(*would), "a1 ");
  EXPECT_EQ(Sql("SELECT count(*) FROM runs"), "5\n") << "a dry run removed something";
  keep.dry_run = false;
  auto gone = store->Prune(keep);
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(names(*gone), "a1 ");
  EXPECT_EQ(Sql("SELECT group_concat(name, ' ') FROM (SELECT name FROM runs ORDER BY start_ns)"), "b1 a2 k1 a3\n");
  for (const char* table : {"cells", "run_records", "run_targets", "run_labels"}) {
    EXPECT_EQ(Sql(std::string("SELECT count(*) FROM ") + table + " WHERE run_id NOT IN (SELECT id FROM runs)"), "0\n")
        << table;
  }
  EXPECT_EQ(Sql("PRAGMA integrity_check"), "ok\n");

  PruneRule old;
  old.older_than_ns = int64_t{260} * 1'000'000'000;
  auto aged = store->Prune(old);
  ASSERT_TRUE(aged.ok());
  EXPECT_EQ(names(*aged), "b1 a2 k1 ");
  EXPECT_EQ(Sql("SELECT name FROM runs"), "a3\n");

  PruneRule none;
  EXPECT_FALSE(store->Prune(none).ok());
  none.keep_per_series = 0;
  EXPECT_FALSE(store->Prune(none).ok());
}

// Catches: list filters that do not filter (target, scenario, label, since),
// a limit that keeps the oldest instead of the latest.
TEST_F(SqliteResultStoreTest, RunsAreListedLatestFirstAndFiltered) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  for (int i = 0; i < 5; ++i) {
    report::RunRecord r = MakeRun("run" + std::to_string(i), 1'700'000'000 + i * 100, {1000});
    if (i % 2 == 1) r.run.metadata.labels["branch"] = "feature";
    ASSERT_TRUE(store->Store(r).ok());
  }
  report::RunRecord lone = MakeRun("lone", 1'600'000'000, {1000});
  lone.run.spec.targets.resize(1);
  lone.cells.resize(1);
  lone.cells[0].result.scenario = "json";
  lone.run.status.results = {lone.cells[0].result};
  ASSERT_TRUE(store->Store(lone).ok());

  auto names = [&](const RunFilter& f) {
    std::string out;
    auto runs = store->ListRuns(f);
    EXPECT_TRUE(runs.ok()) << runs.status().ToString();
    if (runs.ok()) {
      for (const StoredRun& r : *runs) out += (out.empty() ? "" : ",") + r.name;
    }
    return out;
  };
  EXPECT_EQ(names({}), "run4,run3,run2,run1,run0,lone");
  RunFilter f;
  f.limit = 2;
  EXPECT_EQ(names(f), "run4,run3");
  f = {};
  f.labels = {{"branch", "feature"}};
  EXPECT_EQ(names(f), "run3,run1");
  f = {};
  f.since_ns = (1'700'000'200LL) * 1'000'000'000;
  EXPECT_EQ(names(f), "run4,run3,run2");
  f = {};
  f.target = "nginx";
  EXPECT_EQ(names(f), "run4,run3,run2,run1,run0");
  f = {};
  f.scenario = "json";
  EXPECT_EQ(names(f), "lone");
  auto runs = store->ListRuns({});
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(runs->front().targets, (std::vector<std::string>{"drogon", "nginx"}));
  EXPECT_EQ(runs->front().cells, 2);
  EXPECT_EQ(runs->front().labels.at("branch"), "main");
}

}  // namespace
}  // namespace fairbench::results
