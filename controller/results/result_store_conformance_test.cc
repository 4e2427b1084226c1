// Both result stores, SQLite and PostgreSQL (a real server: PostgresServer),
// given the same runs, answer every query alike: each answer is compared
// field by field between the two and with what the test works out from the
// records themselves (a small model of the store's rules, below). Then
// PostgreSQL's own cases: a writer killed mid-store, two writers of one run
// at once, migrations, a newer or foreign schema, an unreachable server and
// a wrong password; psql (the independent client) reads what was written.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "controller/results/pg_result_store.h"
#include "controller/results/run_index.h"
#include "controller/results/sqlite_result_store.h"
#include "testing/support/ports.h"
#include "testing/support/postgres_server.h"
#include "testing/support/temp_dir.h"

namespace fairbench::results {
namespace {

using namespace std::chrono_literals;
using testing::PostgresServer;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::string kLocalRun = std::string(RESULTS_TESTDATA) + "/local_run.json";
constexpr int64_t kSecond = 1'000'000'000;

// One server for the whole test binary, started on first use; stopped at
// exit (forked children leave with _exit, so only the parent stops it).
PostgresServer* Server() {
  static std::unique_ptr<PostgresServer> server;
  static Status failed;
  if (!server && failed.ok()) {
    auto started = PostgresServer::Start();
    if (started.ok()) {
      server = std::move(*started);
    } else {
      failed = started.status();
    }
  }
  EXPECT_TRUE(failed.ok()) << failed.ToString();
  return server.get();
}

// A fresh database per test, named after it. Its default collation is
// ICU's en-US, where "Zeta" sorts after "alpha": the store must sort as
// SQLite does (bytes) whatever the database's locale.
std::string FreshDatabase() {
  static int n = 0;
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = "t" + std::to_string(++n) + "_" + std::string(info->name()).substr(0, 40);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  PostgresServer* s = Server();
  if (s == nullptr) return "";
  auto r = s->Psql("postgres", "CREATE DATABASE " + name +
                                   " TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return name;
}

api::Time At(int64_t seconds) { return api::Time(std::chrono::seconds(seconds)); }

// A run of `rates.size()` repetitions of one cell per target and connection
// level, started at `start` (seconds since the epoch; nullopt: never
// started), on a machine with `kernel`.
report::RunRecord MakeRun(const std::string& name, std::optional<int64_t> start, const std::vector<double>& rates,
                          const std::string& kernel = "Linux 6.1.0", std::vector<int64_t> levels = {100},
                          std::vector<std::string> targets = {"drogon", "nginx"}, int64_t rate = 0) {
  report::RunRecord r;
  r.run.metadata.name = name;
  r.run.metadata.labels = {{"branch", "main"}};
  for (const std::string& t : targets) {
    api::Target target;
    target.name = t;
    target.image = "example.org/" + t + ":1";
    r.run.spec.targets.push_back(target);
  }
  api::Scenario s;
  s.name = "hello";
  s.request = api::Request{};
  r.run.spec.scenarios = {s};
  r.run.spec.load.connections = levels;
  r.run.spec.load.rate = rate;
  r.run.spec.repetitions = static_cast<int32_t>(rates.size());
  r.run.status.phase = api::RunPhase::kSucceeded;
  if (start) {
    r.run.status.start_time = At(*start);
    r.run.status.completion_time = At(*start + 60);
  }
  r.environment.platform = "local";
  r.environment.kernel = kernel;
  r.environment.cpu_model = "AMD EPYC";
  r.environment.cpus = 2;
  r.environment.target_cpus = {0};
  r.environment.agent_cpus = {1};
  for (size_t ti = 0; ti < targets.size(); ++ti) {
    for (int64_t level : levels) {
      for (size_t i = 0; i < rates.size(); ++i) {
        report::CellRecord c;
        c.result.target = targets[ti];
        c.result.scenario = "hello";
        c.result.connections = level;
        c.result.repetition = static_cast<int32_t>(i + 1);
        // Figures that are not sums of halves: a mean's rounding shows.
        c.result.requests_per_second = rates[i] * (1.0 + 0.1 * static_cast<double>(ti)) + 0.1 * static_cast<double>(i);
        c.result.latency.p50 = 500.25 + static_cast<double>(i);
        c.result.latency.p99 = 1000.7 + 100.3 * static_cast<double>(i);
        c.result.errors.timeout = i + ti;
        r.cells.push_back(c);
        r.run.status.results.push_back(c.result);
      }
    }
  }
  r.run.status.progress = {static_cast<int64_t>(r.cells.size()), static_cast<int64_t>(r.cells.size())};
  return r;
}

// What the test knows of a stored run: its id (1, 2, … in the order first
// stored: SQLite's rule, which PostgreSQL follows) and its record.
struct Entry {
  int64_t id;
  report::RunRecord record;
};

std::optional<int64_t> StartNs(const report::RunRecord& r) {
  if (!r.run.status.start_time) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(r.run.status.start_time->time_since_epoch()).count();
}

// Newest first, never-started last; ties by id, highest first.
bool NewerFirst(const Entry& a, const Entry& b) {
  auto sa = StartNs(a.record), sb = StartNs(b.record);
  if (sa.has_value() != sb.has_value()) return sa.has_value();
  if (sa && *sa != *sb) return *sa > *sb;
  return a.id > b.id;
}

// Which build of `target` ran, from the record's last "target T: identity:
// …" note that knows ("unknown" does not); "" for none.
std::string IdentityOf(const report::RunRecord& r, const std::string& target) {
  const std::string prefix = "target " + target + ": identity: ";
  std::string found;
  for (const std::string& note : r.environment.notes) {
    if (note.rfind(prefix, 0) == 0 && note.compare(prefix.size(), 7, "unknown") != 0)
      found = note.substr(prefix.size());
  }
  return found;
}

bool InSeries(const report::CellRecord& c, const report::RunRecord& r, const SeriesKey& k) {
  return c.result.target == k.target && c.result.scenario == k.scenario && c.result.connections == k.connections &&
         r.run.spec.load.rate == k.rate;
}

std::vector<StoredRun> ExpectedRuns(const std::vector<Entry>& entries, const RunFilter& f) {
  std::vector<Entry> sorted = entries;
  std::sort(sorted.begin(), sorted.end(), NewerFirst);
  std::vector<StoredRun> out;
  for (const Entry& e : sorted) {
    const auto& run = e.record.run;
    bool keep = true;
    if (!f.target.empty()) {
      keep = keep && std::any_of(run.spec.targets.begin(), run.spec.targets.end(),
                                 [&](const api::Target& t) { return t.name == f.target; });
    }
    if (!f.scenario.empty()) {
      keep = keep && std::any_of(e.record.cells.begin(), e.record.cells.end(),
                                 [&](const report::CellRecord& c) { return c.result.scenario == f.scenario; });
    }
    for (const auto& [k, v] : f.labels) {
      auto it = run.metadata.labels.find(k);
      keep = keep && it != run.metadata.labels.end() && it->second == v;
    }
    if (f.since_ns) keep = keep && StartNs(e.record) && *StartNs(e.record) >= *f.since_ns;
    if (!keep) continue;
    StoredRun r;
    r.id = e.id;
    r.name = run.metadata.name;
    r.uid = run.metadata.uid;
    r.ns = run.metadata.namespace_;
    r.phase = run.status.phase ? std::string(api::ToString(*run.status.phase)) : "";
    r.start_ns = StartNs(e.record);
    if (run.status.completion_time) {
      r.end_ns =
          std::chrono::duration_cast<std::chrono::nanoseconds>(run.status.completion_time->time_since_epoch()).count();
    }
    r.platform = e.record.environment.platform;
    r.fingerprint = EnvironmentFingerprint(e.record.environment);
    r.labels = run.metadata.labels;
    r.cells = static_cast<int64_t>(e.record.cells.size());
    r.cells_total = run.status.progress.total;
    for (const api::Target& t : run.spec.targets) {
      r.targets.push_back(t.name);
      r.identities.push_back(IdentityOf(e.record, t.name));
    }
    out.push_back(std::move(r));
    if (f.limit > 0 && static_cast<int64_t>(out.size()) == f.limit) break;
  }
  return out;
}

// The series as docs/results.md defines it, from the records.
Series ExpectedSeries(const std::vector<Entry>& entries, const SeriesKey& k, const std::string& fingerprint) {
  std::vector<Entry> with;
  for (const Entry& e : entries) {
    for (const auto& c : e.record.cells) {
      if (InSeries(c, e.record, k)) {
        with.push_back(e);
        break;
      }
    }
  }
  Series s;
  if (with.empty()) return s;
  std::sort(with.begin(), with.end(), NewerFirst);
  s.fingerprint = fingerprint.empty() ? EnvironmentFingerprint(with.front().record.environment) : fingerprint;
  std::reverse(with.begin(), with.end());  // oldest first, never-started first
  std::set<std::string> others;
  for (const Entry& e : with) {
    const std::string fp = EnvironmentFingerprint(e.record.environment);
    if (fp != s.fingerprint) {
      others.insert(fp);
      ++s.runs_elsewhere;
      continue;
    }
    SeriesPoint p;
    p.run_id = e.id;
    p.run_name = e.record.run.metadata.name;
    p.start_ns = StartNs(e.record);
    p.identity = IdentityOf(e.record, k.target);
    double rps = 0, p99 = 0;
    for (const auto& c : e.record.cells) {
      if (!InSeries(c, e.record, k)) continue;
      ++p.repetitions;
      p.errors += c.result.errors.Total();
      if (c.result.state != api::CellState::kSucceeded) continue;
      ++p.succeeded;
      rps += c.result.requests_per_second;
      p99 += c.result.latency.p99;
    }
    if (p.succeeded > 0) {
      p.requests_per_second = rps / static_cast<double>(p.succeeded);
      p.p99_us = p99 / static_cast<double>(p.succeeded);
    }
    s.points.push_back(p);
  }
  s.other_fingerprints.assign(others.begin(), others.end());
  return s;
}

std::vector<SeriesKey> ExpectedSeriesKeys(const std::vector<Entry>& entries, const std::string& target,
                                          const std::string& scenario) {
  std::set<std::tuple<std::string, std::string, int64_t, int64_t>> keys;  // std::string's order: bytes
  for (const Entry& e : entries) {
    for (const auto& c : e.record.cells) {
      if ((target.empty() || c.result.target == target) && (scenario.empty() || c.result.scenario == scenario)) {
        keys.insert({c.result.target, c.result.scenario, c.result.connections, e.record.run.spec.load.rate});
      }
    }
  }
  std::vector<SeriesKey> out;
  for (const auto& [t, s, c, r] : keys) out.push_back(SeriesKey{t, s, c, r});
  return out;
}

// Field by field, with the field's name in the message.
void ExpectSameRun(const StoredRun& a, const StoredRun& b, const std::string& what) {
  SCOPED_TRACE(what + " run " + b.name);
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.uid, b.uid);
  EXPECT_EQ(a.ns, b.ns);
  EXPECT_EQ(a.phase, b.phase);
  EXPECT_EQ(a.start_ns, b.start_ns);
  EXPECT_EQ(a.end_ns, b.end_ns);
  EXPECT_EQ(a.platform, b.platform);
  EXPECT_EQ(a.fingerprint, b.fingerprint);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(a.cells, b.cells);
  EXPECT_EQ(a.cells_total, b.cells_total);
  EXPECT_EQ(a.targets, b.targets);
  EXPECT_EQ(a.identities, b.identities);
}

void ExpectSameRuns(const std::vector<StoredRun>& a, const std::vector<StoredRun>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) ExpectSameRun(a[i], b[i], what + " #" + std::to_string(i));
}

void ExpectSameSeries(const Series& a, const Series& b, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(a.fingerprint, b.fingerprint);
  EXPECT_EQ(a.runs_elsewhere, b.runs_elsewhere);
  EXPECT_EQ(a.other_fingerprints, b.other_fingerprints);
  ASSERT_EQ(a.points.size(), b.points.size());
  for (size_t i = 0; i < a.points.size(); ++i) {
    SCOPED_TRACE("point " + std::to_string(i));
    EXPECT_EQ(a.points[i].run_id, b.points[i].run_id);
    EXPECT_EQ(a.points[i].run_name, b.points[i].run_name);
    EXPECT_EQ(a.points[i].start_ns, b.points[i].start_ns);
    EXPECT_EQ(a.points[i].repetitions, b.points[i].repetitions);
    EXPECT_EQ(a.points[i].succeeded, b.points[i].succeeded);
    EXPECT_DOUBLE_EQ(a.points[i].requests_per_second, b.points[i].requests_per_second);
    EXPECT_DOUBLE_EQ(a.points[i].p99_us, b.points[i].p99_us);
    EXPECT_EQ(a.points[i].errors, b.points[i].errors);
    EXPECT_EQ(a.points[i].identity, b.points[i].identity);
  }
}

std::string Keys(const std::vector<SeriesKey>& keys) {
  std::string out;
  for (const SeriesKey& k : keys) {
    out += k.target + "/" + k.scenario + "@" + std::to_string(k.connections) + "," + std::to_string(k.rate) + " ";
  }
  return out;
}

std::string Pruned(const std::vector<PrunedRun>& runs) {
  std::string out;
  for (const PrunedRun& r : runs) {
    out += std::to_string(r.id) + ":" + r.name + "@" + (r.start_ns ? std::to_string(*r.start_ns) : "-") + " ";
  }
  return out;
}

// Both stores, fresh, side by side: [0] SQLite, [1] PostgreSQL.
class ConformanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::TempDir::Create("fairbench-conformance");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
    auto sqlite = SqliteResultStore::Open(dir_->File("results.db"));
    ASSERT_TRUE(sqlite.ok()) << sqlite.status().ToString();
    stores_[0] = std::move(*sqlite);
    ASSERT_NE(Server(), nullptr);
    database_ = FreshDatabase();
    auto pg = PgResultStore::Open(Server()->Url(database_));
    ASSERT_TRUE(pg.ok()) << pg.status().ToString();
    stores_[1] = std::move(*pg);
  }

  // Stores `record` in both; the receipts must agree, and are returned.
  StoreReceipt StoreBoth(const report::RunRecord& record) {
    StoreReceipt r[2];
    for (int i = 0; i < 2; ++i) {
      auto got = stores_[i]->Store(record);
      EXPECT_TRUE(got.ok()) << stores_[i]->Describe() << ": " << got.status().ToString();
      if (got.ok()) r[i] = *got;
    }
    EXPECT_EQ(r[0].id, r[1].id) << record.run.metadata.name;
    EXPECT_EQ(r[0].outcome, r[1].outcome) << record.run.metadata.name;
    EXPECT_EQ(r[0].cells, r[1].cells) << record.run.metadata.name;
    EXPECT_EQ(r[0].offered_cells, r[1].offered_cells) << record.run.metadata.name;
    EXPECT_EQ(ReceiptText(r[0]), ReceiptText(r[1]));
    return r[1];
  }
  // A new run: stored in both, and in the model.
  void Add(const report::RunRecord& record) {
    const StoreReceipt r = StoreBoth(record);
    EXPECT_EQ(r.outcome, StoreOutcome::kStored) << record.run.metadata.name;
    EXPECT_EQ(r.id, static_cast<int64_t>(entries_.size()) + 1) << record.run.metadata.name;
    entries_.push_back(Entry{r.id, record});
  }

  void ExpectRuns(const RunFilter& f, const std::string& what) {
    auto sqlite = stores_[0]->ListRuns(f);
    auto pg = stores_[1]->ListRuns(f);
    ASSERT_TRUE(sqlite.ok()) << sqlite.status().ToString();
    ASSERT_TRUE(pg.ok()) << pg.status().ToString();
    ExpectSameRuns(*pg, *sqlite, what + " (PostgreSQL vs SQLite)");
    ExpectSameRuns(*sqlite, ExpectedRuns(entries_, f), what + " (SQLite vs the records)");
  }

  void ExpectSeries(SeriesQuery q, const std::string& expected_fingerprint, const std::string& what) {
    auto sqlite = stores_[0]->QuerySeries(q);
    auto pg = stores_[1]->QuerySeries(q);
    ASSERT_TRUE(sqlite.ok()) << what << ": " << sqlite.status().ToString();
    ASSERT_TRUE(pg.ok()) << what << ": " << pg.status().ToString();
    ExpectSameSeries(*pg, *sqlite, what + " (PostgreSQL vs SQLite)");
    ExpectSameSeries(*sqlite,
                     ExpectedSeries(entries_, {q.target, q.scenario, q.connections, q.rate}, expected_fingerprint),
                     what + " (SQLite vs the records)");
  }

  std::optional<testing::TempDir> dir_;
  std::string database_;
  std::unique_ptr<ResultStore> stores_[2];
  std::vector<Entry> entries_;
};

// Catches: a PostgreSQL store whose receipts differ from SQLite's (ids from
// a sequence that skips, "replaced" and "kept" decided otherwise), a record
// that does not come back byte for byte (BYTEA escaping, gzip), an unknown
// id that is not NotFound.
TEST_F(ConformanceTest, StoringGivesTheSameReceiptsAndTheRecordsComeBackByteForByte) {
  const std::string text = ReadFile(kLocalRun);
  auto real = report::RunRecordFromJsonText(text, kLocalRun);
  ASSERT_TRUE(real.ok()) << real.status().ToString();
  Add(*real);
  const report::RunRecord whole = MakeRun("nightly", 1'700'000'000, {1000, 1010, 990});
  report::RunRecord partial = whole;
  partial.cells.resize(2);
  partial.run.status.results.resize(2);
  partial.run.status.phase = api::RunPhase::kRunning;

  Add(partial);
  EXPECT_EQ(StoreBoth(partial).outcome, StoreOutcome::kUnchanged);
  const StoreReceipt replaced = StoreBoth(whole);
  EXPECT_EQ(replaced.outcome, StoreOutcome::kReplaced);
  EXPECT_EQ(replaced.id, 2);
  EXPECT_EQ(replaced.cells, 6);
  entries_[1].record = whole;
  const StoreReceipt kept = StoreBoth(partial);
  EXPECT_EQ(kept.outcome, StoreOutcome::kKept);
  EXPECT_EQ(ReceiptText(kept), "kept run 2: it holds 6 cells, this record 2");
  Add(MakeRun("never started", std::nullopt, {500}));

  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(stores_[i]->Describe());
    auto back = stores_[i]->LoadResultsJson(1);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, text);  // the file as `fairbench run` wrote it
    for (const Entry& e : entries_) {
      auto r = stores_[i]->LoadResultsJson(e.id);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(*r, report::ToJsonText(e.record));
    }
    auto missing = stores_[i]->LoadResultsJson(99);
    EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
  }
  ExpectRuns({}, "every run");

  // What PostgreSQL holds, through psql: one row per run, the record's size.
  auto rows = Server()->Psql(database_, "SELECT id, name, cells_stored FROM runs ORDER BY id");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ(*rows, "1|store-testdata|4\n2|nightly|6\n3|never started|2\n");
  auto bytes = Server()->Psql(database_, "SELECT bytes FROM run_records WHERE run_id = 1");
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, std::to_string(text.size()) + "\n");
}

// Catches: a filter that one backend applies otherwise (labels, since,
// target, scenario), never-started runs sorted first on PostgreSQL (NULLs
// sort high there), a limit that keeps the oldest, targets out of spec
// order.
TEST_F(ConformanceTest, EveryListOfRunsIsTheSame) {
  auto real = report::RunRecordFromJsonText(ReadFile(kLocalRun), kLocalRun);
  ASSERT_TRUE(real.ok());
  Add(*real);
  for (int i = 0; i < 5; ++i) {
    report::RunRecord r = MakeRun("run" + std::to_string(i), 1'700'000'000 + i * 100, {1000}, "Linux 6.1.0", {100},
                                  {"zeta", "Alpha", "beta"});
    if (i % 2 == 1) r.run.metadata.labels["branch"] = "feature";
    r.run.metadata.labels["team"] = i < 3 ? "web" : "db";
    Add(r);
  }
  Add(MakeRun("unstarted", std::nullopt, {1000}));
  report::RunRecord lone = MakeRun("lone", 1'600'000'000, {1000});
  lone.run.spec.targets.resize(1);
  lone.cells.resize(1);
  lone.cells[0].result.scenario = "json";
  lone.run.status.results = {lone.cells[0].result};
  Add(lone);
  // Two runs that started at the same instant: the higher id first.
  Add(MakeRun("twin-a", 1'700'000'400, {1000}, "Linux 6.1.0", {100}, {"drogon"}));
  Add(MakeRun("twin-b", 1'700'000'400, {1000}, "Linux 6.1.0", {100}, {"drogon"}));

  ExpectRuns({}, "no filter");
  RunFilter f;
  f.limit = 0;
  ExpectRuns(f, "no limit");
  f.limit = 2;
  ExpectRuns(f, "limit 2");
  f = {};
  f.labels = {{"branch", "feature"}};
  ExpectRuns(f, "label");
  f.labels = {{"branch", "feature"}, {"team", "db"}};
  ExpectRuns(f, "two labels");
  f.labels = {{"branch", "nope"}};
  ExpectRuns(f, "a label no run has");
  f = {};
  f.since_ns = 1'700'000'200 * kSecond;
  ExpectRuns(f, "since");
  f = {};
  f.target = "nginx";
  ExpectRuns(f, "target");
  f.target = "Alpha";
  ExpectRuns(f, "target Alpha");
  f = {};
  f.scenario = "json";
  ExpectRuns(f, "scenario");
  f = {};
  f.target = "drogon";
  f.scenario = "hello";
  f.since_ns = 1'650'000'000 * kSecond;
  f.limit = 3;
  ExpectRuns(f, "all at once");

  // Spot checks against numbers written here, not computed.
  auto runs = stores_[1]->ListRuns({});
  ASSERT_TRUE(runs.ok());
  ASSERT_GE(runs->size(), 4u);
  EXPECT_EQ((*runs)[0].name, "store-testdata");  // started in 2026
  EXPECT_EQ((*runs)[1].name, "twin-b");
  EXPECT_EQ((*runs)[2].name, "twin-a");
  EXPECT_EQ((*runs)[3].name, "run4");  // the twins' start too, stored before them
  EXPECT_EQ(runs->back().name, "unstarted");
  EXPECT_EQ((*runs)[3].targets, (std::vector<std::string>{"zeta", "Alpha", "beta"}));
}

// Catches: series points in another order on PostgreSQL (a never-started
// run's place), another build's identity, means over failed repetitions, a run with every
// repetition failed reading other than 0, a fingerprint prefix matched
// otherwise (or an ambiguous one not refused), constant-rate series mixed
// with closed-loop ones, runs elsewhere miscounted.
TEST_F(ConformanceTest, EverySeriesIsTheSame) {
  report::RunRecord b = MakeRun("b", 1'700'000'200, {1200, 1300, 1250});
  b.environment.notes = {"target drogon: identity: image sha256:0ld", "target drogon: identity: image sha256:b1d",
                         "target nginx: identity: unknown, the engine did not say which image ran"};
  Add(b);
  report::RunRecord a = MakeRun("a", 1'700'000'100, {1000, 1100, 1049.5});
  a.environment.notes = {"target drogon: identity: binary /usr/bin/drogon sha256:a1d"};
  Add(a);
  report::RunRecord c = MakeRun("c", 1'700'000'300, {1400, 9999, 1433.3});
  c.cells[1].result.state = api::CellState::kFailed;  // drogon's second repetition
  c.run.status.results[1].state = api::CellState::kFailed;
  Add(c);
  report::RunRecord dead = MakeRun("all-failed", 1'700'000'350, {1500, 1600});
  for (auto& cell : dead.cells) cell.result.state = api::CellState::kFailed;
  Add(dead);
  Add(MakeRun("unstarted", std::nullopt, {900}));
  Add(MakeRun("elsewhere", 1'700'000'250, {5000}, "Linux 6.12.0"));
  Add(MakeRun("constant-rate", 1'700'000'260, {700}, "Linux 6.1.0", {100}, {"drogon", "nginx"}, 5000));
  // Two more machines whose fingerprints share their first hex digit: a
  // one-digit prefix names neither.
  std::string shared_a, shared_b;
  {
    std::map<char, std::string> by_digit;
    for (int k = 0; k < 200 && shared_a.empty(); ++k) {
      report::RunRecord probe = MakeRun("probe", 0, {1});
      probe.environment.kernel = "Linux 7." + std::to_string(k);
      const std::string fp = EnvironmentFingerprint(probe.environment);
      auto [it, fresh] = by_digit.emplace(fp[0], probe.environment.kernel);
      if (!fresh) {
        shared_a = it->second;
        shared_b = probe.environment.kernel;
      }
    }
    ASSERT_FALSE(shared_a.empty());
  }
  Add(MakeRun("shared-a", 1'700'000'150, {2000}, shared_a));
  Add(MakeRun("shared-b", 1'700'000'160, {2100}, shared_b));

  SeriesQuery q;
  q.target = "drogon";
  q.scenario = "hello";
  q.connections = 100;
  const std::string main_fp = EnvironmentFingerprint(c.environment);
  ExpectSeries(q, "", "the latest fingerprint");
  auto latest = stores_[1]->QuerySeries(q);
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->fingerprint, main_fp);
  ASSERT_EQ(latest->points.size(), 5u);  // unstarted, a, b, c, all-failed
  EXPECT_EQ(latest->points[0].run_name, "unstarted");
  EXPECT_EQ(latest->points[1].run_name, "a");
  EXPECT_DOUBLE_EQ(latest->points[1].requests_per_second, (1000.0 + 1100.1 + 1049.7) / 3);
  EXPECT_DOUBLE_EQ(latest->points[3].requests_per_second, (1400.0 + 1433.5) / 2);  // the failed one left out
  EXPECT_EQ(latest->points[3].succeeded, 2);
  EXPECT_EQ(latest->points[4].succeeded, 0);
  EXPECT_EQ(latest->points[4].requests_per_second, 0);
  EXPECT_EQ(latest->points[4].errors, 0u + 1u);
  EXPECT_EQ(latest->runs_elsewhere, 3);
  EXPECT_EQ(latest->points[1].identity, "binary /usr/bin/drogon sha256:a1d");
  EXPECT_EQ(latest->points[2].identity, "image sha256:b1d");
  EXPECT_EQ(latest->points[3].identity, "");

  q.target = "nginx";
  ExpectSeries(q, "", "another target");
  for (const std::string& fp : latest->other_fingerprints) {
    q.fingerprint = fp.substr(0, 10);
    ExpectSeries(q, fp, "a prefix of " + fp);
  }
  q.fingerprint = main_fp;
  ExpectSeries(q, main_fp, "the whole fingerprint");
  q.fingerprint.clear();
  q.rate = 5000;
  ExpectSeries(q, "", "constant rate");

  // Refused alike: no such series, a prefix of nothing, an ambiguous one.
  q.rate = 0;
  q.connections = 1000;
  auto refusals = [&](const SeriesQuery& query, Status::Code code) {
    auto sqlite = stores_[0]->QuerySeries(query);
    auto pg = stores_[1]->QuerySeries(query);
    EXPECT_EQ(sqlite.status().code(), code) << sqlite.status().ToString();
    EXPECT_EQ(pg.status().code(), code) << pg.status().ToString();
    EXPECT_EQ(pg.status().message(), sqlite.status().message());
  };
  refusals(q, Status::Code::kNotFound);
  q.connections = 100;
  q.fingerprint = "zz";
  refusals(q, Status::Code::kNotFound);
  report::RunRecord probe = MakeRun("probe", 0, {1}, shared_a);
  q.fingerprint = EnvironmentFingerprint(probe.environment).substr(0, 1);
  refusals(q, Status::Code::kInvalidArgument);
}

// Catches: series listed in another order on PostgreSQL (the database's
// collation: "Alpha" before "beta" before "zeta" in bytes, not in en-US),
// once per run, or filters applied otherwise.
TEST_F(ConformanceTest, EveryListOfSeriesIsTheSame) {
  Add(MakeRun("a", 1'700'000'100, {1000, 1100}, "Linux 6.1.0", {100, 10}, {"zeta", "Alpha", "beta", "alpha"}));
  Add(MakeRun("b", 1'700'000'200, {1000}, "Linux 6.12.0", {1000}));
  Add(MakeRun("c", 1'700'000'300, {1000}, "Linux 6.1.0", {100}, {"nginx"}, 2500));
  for (const auto& [target, scenario] : std::vector<std::pair<std::string, std::string>>{
           {"", ""}, {"nginx", ""}, {"", "hello"}, {"nginx", "hello"}, {"", "json"}, {"Alpha", ""}}) {
    SCOPED_TRACE(target + "/" + scenario);
    auto sqlite = stores_[0]->ListSeries(target, scenario);
    auto pg = stores_[1]->ListSeries(target, scenario);
    ASSERT_TRUE(sqlite.ok()) << sqlite.status().ToString();
    ASSERT_TRUE(pg.ok()) << pg.status().ToString();
    EXPECT_EQ(Keys(*pg), Keys(*sqlite));
    EXPECT_EQ(Keys(*sqlite), Keys(ExpectedSeriesKeys(entries_, target, scenario)));
  }
  auto all = stores_[1]->ListSeries("", "");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(Keys(*all).substr(0, 40), "Alpha/hello@10,0 Alpha/hello@100,0 alpha");
}

// Catches: pruning that picks other runs on PostgreSQL (NULL start times
// ranked first, the fingerprint left out of a series), a dry run that
// removes, the rows of a removed run left behind.
TEST_F(ConformanceTest, PruningRemovesTheSameRuns) {
  Add(MakeRun("a1", 100, {1000}));
  Add(MakeRun("a2", 200, {1000}));
  Add(MakeRun("a3", 300, {1000}));
  Add(MakeRun("b1", 150, {1000}, "Linux 6.1.0", {1000}));  // its own load
  Add(MakeRun("k1", 250, {1000}, "Linux 6.12.0"));         // its own machine
  Add(MakeRun("u1", std::nullopt, {1000}));                // never started: the oldest of its series
  Add(MakeRun("a4", 400, {1000}));
  auto prune_both = [&](const PruneRule& rule) {
    auto sqlite = stores_[0]->Prune(rule);
    auto pg = stores_[1]->Prune(rule);
    EXPECT_TRUE(sqlite.ok()) << sqlite.status().ToString();
    EXPECT_TRUE(pg.ok()) << pg.status().ToString();
    const std::string s = sqlite.ok() ? Pruned(*sqlite) : "?", p = pg.ok() ? Pruned(*pg) : "?";
    EXPECT_EQ(p, s);
    return s;
  };
  PruneRule keep;
  keep.keep_per_series = 2;
  keep.dry_run = true;
  // The newest two of drogon/hello@100 under Linux 6.1.0 are a4 and a3; u1
  // (no start) and a1, a2 go; b1 and k1 are alone in their series.
  const std::string would = "6:u1@- 1:a1@100000000000 2:a2@200000000000 ";
  EXPECT_EQ(prune_both(keep), would);
  ExpectRuns({}, "after a dry run");
  keep.dry_run = false;
  EXPECT_EQ(prune_both(keep), would);
  std::erase_if(entries_, [](const Entry& e) { return e.id <= 2 || e.id == 6; });
  ExpectRuns({}, "after pruning by count");

  PruneRule old;
  old.older_than_ns = 260 * kSecond;
  EXPECT_EQ(prune_both(old), "4:b1@150000000000 5:k1@250000000000 ");
  std::erase_if(entries_, [](const Entry& e) { return e.id == 4 || e.id == 5; });
  ExpectRuns({}, "after pruning by age");
  for (const char* table : {"cells", "run_records", "run_targets", "run_labels"}) {
    auto left = Server()->Psql(
        database_, std::string("SELECT count(*) FROM ") + table + " WHERE run_id NOT IN (SELECT id FROM runs)");
    ASSERT_TRUE(left.ok()) << left.status().ToString();
    EXPECT_EQ(*left, "0\n") << table;
  }

  PruneRule none;
  for (int i = 0; i < 2; ++i) EXPECT_EQ(stores_[i]->Prune(none).status().code(), Status::Code::kInvalidArgument);
  none.keep_per_series = 0;
  for (int i = 0; i < 2; ++i) EXPECT_EQ(stores_[i]->Prune(none).status().code(), Status::Code::kInvalidArgument);
}

// ---- PostgreSQL's own cases ----

class PgStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(Server(), nullptr);
    database_ = FreshDatabase();
    url_ = Server()->Url(database_);
  }
  std::unique_ptr<PgResultStore> Open(PgStoreOptions o = {}) {
    auto s = PgResultStore::Open(url_, std::move(o));
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }
  std::string Sql(const std::string& sql) {
    auto r = Server()->Psql(database_, sql);
    return r.ok() ? *r : "psql failed: " + r.status().message();
  }
  // Every row of every table, the record as hex.
  std::string Everything() {
    return Sql("SELECT * FROM runs ORDER BY id") +
           Sql("SELECT run_id, encoding, bytes, encode(results, 'hex') FROM run_records ORDER BY run_id") +
           Sql("SELECT * FROM cells ORDER BY run_id, position") +
           Sql("SELECT * FROM run_targets ORDER BY run_id, position") +
           Sql("SELECT * FROM run_labels ORDER BY run_id, key") + Sql("SELECT * FROM schema_version");
  }

  std::string database_, url_;
};

// Catches: a store that is not one transaction on PostgreSQL (a killed
// writer's run left with some of its cells), a killed writer that damages
// the runs stored before it or leaves the store locked (the advisory lock
// held by a dead connection).
TEST_F(PgStoreTest, AWriterKilledMidStoreLosesNoRunStoredBeforeIt) {
  {
    auto store = Open();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->Store(MakeRun("first", 1'700'000'000, {1000, 1001})).ok());
    ASSERT_TRUE(store->Store(MakeRun("second", 1'700'000'050, {1100})).ok());
  }
  const std::string before = Everything();
  ASSERT_NE(before.find("first"), std::string::npos);
  const report::RunRecord victim = MakeRun("victim", 1'700'000'100, {2000, 2001, 2002}, "Linux 6.1.0", {10, 100});
  ASSERT_EQ(victim.cells.size(), 12u);
  for (const char* kill_at : {"run", "target nginx", "cell 3"}) {
    SCOPED_TRACE(kill_at);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      PgStoreOptions o;
      o.between_inserts = [&](std::string_view step) {
        if (step == std::string_view(kill_at)) raise(SIGKILL);
      };
      auto store = PgResultStore::Open(url_, o);
      if (!store.ok()) _exit(3);
      (void)(*store)->Store(victim);  // never returns: killed inside
      _exit(4);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer was not killed midway (exit " << WEXITSTATUS(status) << ")";
    EXPECT_EQ(WTERMSIG(status), SIGKILL);
    EXPECT_EQ(Everything(), before);
    EXPECT_EQ(Sql("SELECT count(*) FROM runs WHERE name = 'victim'"), "0\n");
  }
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto runs = store->ListRuns({});
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].name, "second");
  EXPECT_EQ((*runs)[1].name, "first");
  auto stored = store->Store(victim);  // within the lock's wait: nobody holds it
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ(stored->outcome, StoreOutcome::kStored);
  EXPECT_EQ(stored->id, 3);
  EXPECT_EQ(Sql("SELECT name, count(*) FROM cells JOIN runs ON runs.id = cells.run_id GROUP BY name ORDER BY name"),
            "first|4\nsecond|2\nvictim|12\n");
}

// Catches: two processes storing the same run at once keeping two copies
// (or failing on the unique key), or two different runs given one id.
TEST_F(PgStoreTest, ConcurrentWritersOfOneRunKeepOneCopy) {
  ASSERT_NE(Open(), nullptr);  // the schema, made once
  const report::RunRecord same = MakeRun("same", 1'700'000'000, {1000, 1001, 1002});
  constexpr int kWriters = 4;
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  std::vector<pid_t> children;
  for (int i = 0; i < kWriters; ++i) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(go[1]);
      PgStoreOptions o;
      // Slow inserts: the others arrive while the first is inside.
      o.between_inserts = [](std::string_view) { usleep(20'000); };
      auto store = PgResultStore::Open(url_, o);
      if (!store.ok()) _exit(10);
      char c;
      if (read(go[0], &c, 1) != 0) _exit(11);  // waits for the parent to close its end
      auto r = (*store)->Store(same);
      auto other = (*store)->Store(MakeRun("own-" + std::to_string(i), 1'700'000'100 + i, {500}));
      if (!r.ok() || !other.ok() || other->outcome != StoreOutcome::kStored) _exit(12);
      _exit(r->outcome == StoreOutcome::kStored ? 0 : r->outcome == StoreOutcome::kUnchanged ? 1 : 13);
    }
    children.push_back(child);
  }
  close(go[0]);
  close(go[1]);  // all start now
  int stored = 0, unchanged = 0;
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    const int code = WEXITSTATUS(status);
    ASSERT_TRUE(code == 0 || code == 1) << "a writer failed with " << code;
    (code == 0 ? stored : unchanged)++;
  }
  EXPECT_EQ(stored, 1);
  EXPECT_EQ(unchanged, kWriters - 1);
  EXPECT_EQ(Sql("SELECT count(*) FROM runs WHERE name = 'same'"), "1\n");
  EXPECT_EQ(Sql("SELECT count(*), count(DISTINCT id), min(id), max(id) FROM runs"), "5|5|1|5\n");
  EXPECT_EQ(Sql("SELECT count(*) FROM cells JOIN runs ON runs.id = cells.run_id WHERE name = 'same'"), "6\n");
  EXPECT_EQ(Sql("SELECT count(*) FROM run_records"), "5\n");
}

// Catches: an older store opened without its migrations (the label table
// or the identity column missing), migrations that lose the runs stored
// before them or skip the labels' or identities' backfill, a version not
// recorded.
TEST_F(PgStoreTest, AnOlderSchemaIsMigratedOnOpen) {
  {
    PgStoreOptions v1;
    v1.schema_version = 1;
    auto store = Open(v1);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->schema_version(), 1);
    report::RunRecord r = MakeRun("old", 1'700'000'000, {1000});
    r.run.metadata.labels = {{"branch", "release-1"}, {"commit", "0ld"}};
    r.environment.notes = {"target nginx ran /usr/sbin/nginx",
                           "target nginx: identity: binary /usr/sbin/nginx "
                           "sha256:00aa",
                           "target drogon: identity: unknown, not recorded"};
    ASSERT_TRUE(store->Store(r).ok());
  }
  EXPECT_EQ(Sql("SELECT version FROM schema_version"), "1\n");
  EXPECT_EQ(Sql("SELECT count(*) FROM information_schema.tables WHERE table_name = 'run_labels'"), "0\n");

  auto store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->schema_version(), kPgSchemaVersion);
  EXPECT_EQ(Sql("SELECT version FROM schema_version"), std::to_string(kPgSchemaVersion) + "\n");
  EXPECT_EQ(Sql("SELECT key, value FROM run_labels ORDER BY key"), "branch|release-1\ncommit|0ld\n");
  EXPECT_EQ(Sql("SELECT name, identity FROM run_targets ORDER BY position"),
            "drogon|\nnginx|binary /usr/sbin/nginx sha256:00aa\n");
  RunFilter f;
  f.labels = {{"commit", "0ld"}};
  auto runs = store->ListRuns(f);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].name, "old");
}

// Catches: a newer schema written to by an older build, refused without
// naming both versions; another application's tables taken for a store;
// history (create false) making an empty store in a mistyped database.
TEST_F(PgStoreTest, ANewerOrForeignSchemaIsRefused) {
  ASSERT_NE(Open(), nullptr);
  EXPECT_EQ(Sql("UPDATE schema_version SET version = 99"), "");
  auto newer = PgResultStore::Open(url_);
  ASSERT_FALSE(newer.ok());
  EXPECT_EQ(newer.status().code(), Status::Code::kUnavailable);
  EXPECT_NE(newer.status().message().find("version 99"), std::string::npos) << newer.status().message();
  EXPECT_NE(newer.status().message().find("(" + std::to_string(kPgSchemaVersion) + ")"), std::string::npos)
      << newer.status().message();
  EXPECT_EQ(Sql("SELECT version FROM schema_version"), "99\n");

  const std::string foreign_db = FreshDatabase();
  auto f = Server()->Psql(foreign_db, "CREATE TABLE runs (lap INTEGER, seconds REAL)");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto foreign = PgResultStore::Open(Server()->Url(foreign_db));
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.status().message().find("not a fairbench result store (it has a table 'runs'"), std::string::npos)
      << foreign.status().message();
  EXPECT_EQ(*Server()->Psql(foreign_db, "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"),
            "1\n");

  const std::string empty_db = FreshDatabase();
  OpenOptions read_only;
  read_only.create = false;
  // postgres:// as well as postgresql://, through the factory `history` uses.
  auto absent =
      OpenResultStore("postgres://postgres@127.0.0.1:" + std::to_string(Server()->port()) + "/" + empty_db, read_only);
  ASSERT_FALSE(absent.ok());
  EXPECT_EQ(absent.status().code(), Status::Code::kUnavailable);
  EXPECT_NE(absent.status().message().find("holds no fairbench result store"), std::string::npos)
      << absent.status().message();
  EXPECT_EQ(*Server()->Psql(empty_db, "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"),
            "0\n");
  auto made = OpenResultStore(Server()->Url(empty_db));
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_EQ((*made)->Describe(),
            "PostgreSQL store postgresql://postgres@127.0.0.1:" + std::to_string(Server()->port()) + "/" + empty_db);
  for (const Status& s : {newer.status(), foreign.status(), absent.status()}) {
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
  }
}

// A port on loopback that accepts connections and never answers: a server
// that hangs.
class SilentListener {
 public:
  SilentListener() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&a), len) == 0 && listen(fd_, 16) == 0 &&
        getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      port_ = ntohs(a.sin_port);
    }
  }
  ~SilentListener() { close(fd_); }
  uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

// Catches: an unreachable database that hangs (no connect timeout, or the
// URL's own ignored) or fails with a message that names neither the store
// nor the reason, or a code other than Unavailable.
TEST_F(PgStoreTest, AnUnreachableServerIsAClearErrorAndFast) {
  auto closed = testing::FreeLoopbackPort();
  ASSERT_TRUE(closed.ok());
  const std::string url = "postgresql://postgres@127.0.0.1:" + std::to_string(*closed) + "/results";
  auto t0 = std::chrono::steady_clock::now();
  auto refused = OpenResultStore(url);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 6s);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Status::Code::kUnavailable);
  EXPECT_EQ(refused.status().message().rfind("PostgreSQL store " + url + ": cannot connect: ", 0), 0u)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find("Connection refused"), std::string::npos) << refused.status().message();
  EXPECT_EQ(refused.status().message().find('\n'), std::string::npos);

  // A server that accepts and then says nothing: the timeout ends it — the
  // URL's own (2 s) over the option's, the option's (5 s) by default.
  SilentListener silent;
  ASSERT_NE(silent.port(), 0);
  const std::string hanging = "postgresql://postgres@127.0.0.1:" + std::to_string(silent.port()) + "/results";
  PgStoreOptions patient;
  patient.connect_timeout = 60s;
  t0 = std::chrono::steady_clock::now();
  auto own = PgResultStore::Open(hanging + "?connect_timeout=2", patient);
  auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(own.ok());
  EXPECT_EQ(own.status().code(), Status::Code::kUnavailable);
  EXPECT_GE(took, 1500ms);
  EXPECT_LT(took, 4s);
  EXPECT_NE(own.status().message().find("timeout"), std::string::npos) << own.status().message();
  t0 = std::chrono::steady_clock::now();
  auto by_default = OpenResultStore(hanging);
  took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(by_default.ok());
  EXPECT_GE(took, 4s);
  EXPECT_LT(took, 6500ms);
}

// Catches: a wrong password reported vaguely or with the password in it (a
// message that copies the URL); a right one refused; the password in the
// store's description.
TEST_F(PgStoreTest, AWrongPasswordIsAClearErrorWithoutThePassword) {
  const std::string db = "pw_" + database_;
  auto made = Server()->CreateDatabase(db, PostgresServer::kPasswordUser);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  const std::string wrong = "Wr0ng-Pa55word";
  auto refused = OpenResultStore(Server()->PasswordUrl(db, wrong));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Status::Code::kUnavailable);
  const std::string& m = refused.status().message();
  EXPECT_NE(m.find("password authentication failed for user \"fairbench\""), std::string::npos) << m;
  EXPECT_NE(m.find("PostgreSQL store postgresql://fairbench@127.0.0.1:"), std::string::npos) << m;
  EXPECT_EQ(m.find(wrong), std::string::npos) << m;

  auto store = OpenResultStore(Server()->PasswordUrl(db));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((*store)->Describe().find(PostgresServer::kPassword), std::string::npos);
  ASSERT_TRUE((*store)->Store(MakeRun("with-password", 1'700'000'000, {1000})).ok());
  EXPECT_EQ(*Server()->Psql(db, "SELECT name FROM runs"), "with-password\n");
  // The password elsewhere in libpq's key=value form, and a URL libpq cannot read.
  EXPECT_EQ(PgUrlWithoutPassword("host=/tmp/sock port=5433 user=u password=p dbname=d"),
            "postgresql://u@%2Ftmp%2Fsock:5433/d");
  auto bad = OpenResultStore("postgresql://u:Sekr1t@[::1/d");  // libpq quotes what it cannot read
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(bad.status().message().find("Sekr1t"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("postgresql://u:****@[::1/d"), std::string::npos) << bad.status().message();
}

}  // namespace
}  // namespace fairbench::results
