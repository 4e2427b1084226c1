#include "controller/results/sqlite_result_store.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "controller/results/run_index.h"
#include "controller/store/configmap_run_store.h"

namespace fairbench::results {
namespace {

// The migrations, in order: kMigrations[i] takes a store from version i to
// i + 1. Released ones are never edited; a change is a new one. The SQL is
// kept to what PostgreSQL reads too, but for the id column (PostgreSQL:
// BIGINT GENERATED ALWAYS AS IDENTITY), BLOB (BYTEA) and json_each
// (jsonb_each_text): a libpq backend keeps its own copy of the list.
constexpr const char* kMigrations[] = {
    // 1: runs, their records, their targets and their cells. The record
    // (hundreds of KiB) has a table of its own, so that the runs' rows a
    // series joins stay small; the series index covers what a series reads.
    R"sql(
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  run_key TEXT NOT NULL UNIQUE,
  content_sha256 TEXT NOT NULL,
  name TEXT NOT NULL,
  uid TEXT NOT NULL,
  namespace TEXT NOT NULL,
  phase TEXT NOT NULL,
  start_ns BIGINT,
  end_ns BIGINT,
  platform TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  environment TEXT NOT NULL,
  labels TEXT NOT NULL,
  fairbench_version TEXT NOT NULL,
  cells_total BIGINT NOT NULL,
  cells_stored BIGINT NOT NULL,
  stored_ns BIGINT NOT NULL
);
CREATE INDEX runs_by_start ON runs (start_ns);
CREATE TABLE run_records (
  run_id INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
  encoding TEXT NOT NULL,
  bytes BIGINT NOT NULL,
  results BLOB NOT NULL
);
CREATE TABLE run_targets (
  run_id BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  image TEXT NOT NULL,
  command TEXT NOT NULL,
  facts TEXT NOT NULL,
  PRIMARY KEY (run_id, name)
);
CREATE INDEX run_targets_by_name ON run_targets (name, run_id);
CREATE TABLE cells (
  run_id BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  target TEXT NOT NULL,
  scenario TEXT NOT NULL,
  connections BIGINT NOT NULL,
  rate BIGINT NOT NULL,
  repetition INTEGER NOT NULL,
  state TEXT NOT NULL,
  requests_per_second DOUBLE PRECISION NOT NULL,
  p50_us DOUBLE PRECISION NOT NULL,
  p90_us DOUBLE PRECISION NOT NULL,
  p99_us DOUBLE PRECISION NOT NULL,
  p999_us DOUBLE PRECISION NOT NULL,
  errors_total BIGINT NOT NULL,
  cpu_us_per_request DOUBLE PRECISION,
  memory_loaded_bytes BIGINT,
  flags TEXT NOT NULL,
  PRIMARY KEY (run_id, position)
);
CREATE INDEX cells_by_series ON cells (target, scenario, connections, rate, run_id, state, requests_per_second,
  p99_us, errors_total);
CREATE INDEX cells_by_scenario ON cells (scenario, run_id);
)sql",
    // 2: labels one per row, for `history --label k=v`; filled from the
    // runs already stored.
    R"sql(
CREATE TABLE run_labels (
  run_id BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (run_id, key)
);
CREATE INDEX run_labels_by_label ON run_labels (key, value, run_id);
INSERT INTO run_labels (run_id, key, value) SELECT runs.id, l.key, l.value FROM runs, json_each(runs.labels) AS l;
)sql",
    // 3: which build of each target ran (its "identity:" note), filled
    // from the notes of the runs already stored.
    R"sql(
ALTER TABLE run_targets ADD COLUMN identity TEXT NOT NULL DEFAULT '';
UPDATE run_targets SET identity = COALESCE((
  SELECT substr(f.value, length('target ' || run_targets.name || ': identity: ') + 1)
  FROM json_each(run_targets.facts) AS f
  WHERE substr(f.value, 1, length('target ' || run_targets.name || ': identity: ')) =
        'target ' || run_targets.name || ': identity: '
    AND substr(f.value, length('target ' || run_targets.name || ': identity: ') + 1, 7) <> 'unknown'
  ORDER BY f.key DESC LIMIT 1), '');
)sql",
};
static_assert(std::size(kMigrations) == kSqliteSchemaVersion);

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A prepared statement; binds in order (Bind(a, b, c) → ?1, ?2, ?3).
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr); }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // A blob parameter (a std::string is bound as text).
  struct AsBlob {
    std::string_view bytes;
  };
  static AsBlob BlobOf(std::string_view bytes) { return AsBlob{bytes}; }

  // False once preparing, binding or stepping failed (sqlite3_errmsg says why).
  bool ok() const { return rc_ == SQLITE_OK || rc_ == SQLITE_ROW || rc_ == SQLITE_DONE; }

  template <typename... Args>
  Statement& Bind(const Args&... args) {
    Reset();
    (Add(args), ...);
    return *this;
  }
  // For a number of parameters known at run time: Reset, then Add each.
  void Reset() {
    if (!ok()) return;
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    next_ = 0;
  }
  template <typename T>
  void Add(const T& v) {
    if (ok()) BindOne(++next_, v);
  }
  // true: a row; false: done or an error (ok() tells).
  bool Step() {
    if (!ok()) return false;
    rc_ = sqlite3_step(stmt_);
    return rc_ == SQLITE_ROW;
  }
  // Runs a statement that returns no rows.
  bool Run() {
    Step();
    return rc_ == SQLITE_DONE;
  }

  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Double(int col) const { return sqlite3_column_double(stmt_, col); }
  std::optional<int64_t> OptionalInt(int col) const { return IsNull(col) ? std::nullopt : std::optional(Int(col)); }
  std::string Text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p == nullptr ? std::string() : std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
  }
  std::string Blob(int col) const {
    const auto* p = static_cast<const char*>(sqlite3_column_blob(stmt_, col));
    return p == nullptr ? std::string() : std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
  }

 private:
  void Check(int rc) {
    if (rc != SQLITE_OK && ok()) rc_ = rc;
  }
  void BindOne(int i, int64_t v) { Check(sqlite3_bind_int64(stmt_, i, v)); }
  void BindOne(int i, int32_t v) { Check(sqlite3_bind_int64(stmt_, i, v)); }
  void BindOne(int i, uint64_t v) { Check(sqlite3_bind_int64(stmt_, i, static_cast<int64_t>(v))); }
  void BindOne(int i, double v) {
    // SQLite stores a NaN as NULL, which the figures' NOT NULL columns
    // refuse: a record read from JSON has none (JSON cannot spell NaN).
    Check(std::isfinite(v) ? sqlite3_bind_double(stmt_, i, v) : sqlite3_bind_null(stmt_, i));
  }
  void BindOne(int i, const std::string& v) {
    Check(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
  }
  void BindOne(int i, const char* v) { Check(sqlite3_bind_text(stmt_, i, v, -1, SQLITE_TRANSIENT)); }
  void BindOne(int i, const AsBlob& v) {
    Check(sqlite3_bind_blob64(stmt_, i, v.bytes.data(), v.bytes.size(), SQLITE_TRANSIENT));
  }
  template <typename T>
  void BindOne(int i, const std::optional<T>& v) {
    if (v) {
      BindOne(i, *v);
    } else {
      Check(sqlite3_bind_null(stmt_, i));
    }
  }

  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_OK;
  int next_ = 0;
};

bool Exec(sqlite3* db, const char* sql) { return sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK; }

// Rolls back unless committed: every early return of a transaction undoes it.
class Transaction {
 public:
  explicit Transaction(sqlite3* db) : db_(db) { begun_ = Exec(db, "BEGIN IMMEDIATE"); }
  ~Transaction() {
    if (begun_ && !done_) Exec(db_, "ROLLBACK");
  }
  bool begun() const { return begun_; }
  bool Commit() {
    done_ = Exec(db_, "COMMIT");
    return done_;
  }

 private:
  sqlite3* db_;
  bool begun_ = false;
  bool done_ = false;
};

std::string JsonArray(const std::vector<std::string>& items) { return nlohmann::json(items).dump(); }

}  // namespace

Status SqliteResultStore::Fail(const std::string& what) const {
  return Status::Unavailable(Describe() + ": " + what + ": " + sqlite3_errmsg(db_));
}

Result<std::unique_ptr<SqliteResultStore>> SqliteResultStore::Open(const std::string& path,
                                                                   SqliteStoreOptions options) {
  namespace fs = std::filesystem;
  const std::string name = "SQLite store " + path;
  std::error_code ec;
  if (path.empty()) return Status::InvalidArgument("--store: empty path");
  if (!options.create && !fs::exists(path, ec)) return Status::Unavailable(name + ": no such file");
  if (fs::is_directory(path, ec)) return Status::Unavailable(name + ": is a directory, not a file");
  const fs::path parent = fs::absolute(path, ec).parent_path();
  if (options.create && !fs::is_directory(parent, ec)) {
    return Status::Unavailable(name + ": cannot create it: no directory " + parent.string());
  }
  sqlite3* db = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | (options.create ? SQLITE_OPEN_CREATE : 0);
  if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    std::string why = db != nullptr ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Status::Unavailable(name + ": cannot open it: " + why);
  }
  std::unique_ptr<SqliteResultStore> store(new SqliteResultStore(path, db, std::move(options)));
  sqlite3_busy_timeout(db, static_cast<int>(store->options_.busy_timeout.count()));
  sqlite3_extended_result_codes(db, 1);
  if (Status s = store->Migrate(); !s.ok()) return s;
  return store;
}

SqliteResultStore::~SqliteResultStore() { sqlite3_close(db_); }

Status SqliteResultStore::Migrate() {
  // The first read tells a file that is not a database from a store.
  Statement tables(db_, "SELECT name FROM sqlite_master WHERE type = 'table'");
  bool has_version_table = false;
  std::vector<std::string> names;
  while (tables.Step()) {
    names.push_back(tables.Text(0));
    if (names.back() == "schema_version") has_version_table = true;
  }
  if (!tables.ok()) return Fail("cannot read it");
  if (!has_version_table && !names.empty()) {
    return Status::Unavailable(Describe() + ": not a fairbench result store (it has tables such as '" + names[0] +
                               "' but no schema_version)");
  }
  auto read_version = [&]() -> std::optional<int> {
    Statement v(db_, "SELECT version FROM schema_version");
    if (!v.Step()) return std::nullopt;
    return static_cast<int>(v.Int(0));
  };
  if (has_version_table) {
    auto v = read_version();
    if (!v) return Fail("cannot read its schema version");
    schema_version_ = *v;
  }
  if (schema_version_ > kSqliteSchemaVersion) {
    return Status::Unavailable(Describe() + ": its schema is version " + std::to_string(schema_version_) +
                               ", newer than this fairbench's (" + std::to_string(kSqliteSchemaVersion) +
                               "): use a fairbench at least as new as the one that wrote it");
  }
  // Set up only once it is known to be a store this build may write to (the
  // journal mode is kept in the file).
  const bool read_only = sqlite3_db_readonly(db_, "main") == 1;
  if ((!read_only && !Exec(db_, "PRAGMA journal_mode = WAL")) || !Exec(db_, "PRAGMA synchronous = FULL") ||
      !Exec(db_, "PRAGMA foreign_keys = ON")) {
    return Fail("cannot set it up");
  }
  const int target = std::min(options_.schema_version, kSqliteSchemaVersion);
  if (schema_version_ >= target) return Status::Ok();
  if (read_only) {
    return Status::Unavailable(Describe() + ": its schema is version " + std::to_string(schema_version_) +
                               " and needs migrating to " + std::to_string(target) + ", but it is read-only");
  }
  Transaction tx(db_);
  if (!tx.begun()) return Fail("cannot start migrating it");
  // Another process may have migrated it since the read above.
  if (!Exec(db_, "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")) {
    return Fail("cannot create schema_version");
  }
  std::optional<int> now = read_version();
  if (!now) {
    if (!Exec(db_, "INSERT INTO schema_version (version) VALUES (0)")) return Fail("cannot create schema_version");
    now = 0;
  }
  if (*now > kSqliteSchemaVersion) {
    return Status::Unavailable(Describe() + ": a newer fairbench migrated it to schema version " +
                               std::to_string(*now) + " meanwhile; this one reads up to " +
                               std::to_string(kSqliteSchemaVersion));
  }
  for (int v = *now; v < target; ++v) {
    if (!Exec(db_, kMigrations[v])) return Fail("migration to schema version " + std::to_string(v + 1) + " failed");
  }
  Statement set(db_, "UPDATE schema_version SET version = ?");
  if (*now < target && !set.Bind(target).Run()) return Fail("cannot record the schema version");
  if (!tx.Commit()) return Fail("cannot commit the migration");
  schema_version_ = std::max(*now, target);
  return Status::Ok();
}

Result<StoreReceipt> SqliteResultStore::Store(const report::RunRecord& record) {
  const std::string text = report::ToJsonText(record);
  const RunIndex x = IndexRun(record, text);
  auto hook = [&](std::string_view step) {
    if (options_.between_inserts) options_.between_inserts(step);
  };

  Transaction tx(db_);
  if (!tx.begun()) return Fail("cannot start a transaction");
  StoreReceipt receipt;
  receipt.offered_cells = static_cast<int64_t>(x.cells.size());
  receipt.cells = receipt.offered_cells;
  std::optional<int64_t> existing;
  {
    Statement find(db_, "SELECT id, content_sha256, cells_stored FROM runs WHERE run_key = ?");
    if (find.Bind(x.key).Step()) {
      existing = find.Int(0);
      receipt.id = *existing;
      if (find.Text(1) == x.content_sha256) {
        receipt.outcome = StoreOutcome::kUnchanged;
        return receipt;  // the transaction rolls back: nothing was written
      }
      if (find.Int(2) > receipt.offered_cells) {
        receipt.outcome = StoreOutcome::kKept;
        receipt.cells = find.Int(2);
        return receipt;
      }
    } else if (!find.ok()) {
      return Fail("cannot look the run up");
    }
  }

  auto gz = controller::Gzip(text);
  if (!gz.ok()) return Status::Internal("gzip: " + gz.status().message());
  const char* kRunColumns =
      "run_key, content_sha256, name, uid, namespace, phase, start_ns, end_ns, platform, fingerprint, environment, "
      "labels, fairbench_version, cells_total, cells_stored, stored_ns";
  if (existing) {
    receipt.outcome = StoreOutcome::kReplaced;
    std::vector<const char*> deletes = {"DELETE FROM cells WHERE run_id = ?",
                                        "DELETE FROM run_targets WHERE run_id = ?"};
    if (schema_version_ >= 2) deletes.push_back("DELETE FROM run_labels WHERE run_id = ?");
    for (const char* sql : deletes) {
      Statement del(db_, sql);
      if (!del.Bind(*existing).Run()) return Fail("cannot replace run " + std::to_string(*existing));
    }
    Statement update(db_, (std::string("UPDATE runs SET (") + kRunColumns +
                           ") = (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) WHERE id = ?")
                              .c_str());
    update.Bind(x.key, x.content_sha256, x.name, x.uid, x.ns, x.phase, x.start_ns, x.end_ns, x.platform, x.fingerprint,
                x.environment_json, x.labels_json, x.fairbench_version, x.cells_total, receipt.offered_cells, NowNs(),
                *existing);
    Statement record_update(db_, "UPDATE run_records SET (encoding, bytes, results) = (?, ?, ?) WHERE run_id = ?");
    record_update.Bind("gzip", static_cast<int64_t>(text.size()), Statement::BlobOf(*gz), *existing);
    if (!update.Run() || !record_update.Run()) return Fail("cannot replace run " + std::to_string(*existing));
  } else {
    const std::string sql = std::string("INSERT INTO runs (") + kRunColumns +
                            ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id";
    Statement insert(db_, sql.c_str());
    insert.Bind(x.key, x.content_sha256, x.name, x.uid, x.ns, x.phase, x.start_ns, x.end_ns, x.platform, x.fingerprint,
                x.environment_json, x.labels_json, x.fairbench_version, x.cells_total, receipt.offered_cells, NowNs());
    if (!insert.Step()) return Fail("cannot insert the run");
    receipt.id = insert.Int(0);
    if (insert.Step() || !insert.ok()) return Fail("cannot insert the run");
    Statement record_insert(db_, "INSERT INTO run_records (run_id, encoding, bytes, results) VALUES (?, ?, ?, ?)");
    record_insert.Bind(receipt.id, "gzip", static_cast<int64_t>(text.size()), Statement::BlobOf(*gz));
    if (!record_insert.Run()) return Fail("cannot insert the run's record");
  }
  hook("run");

  Statement target(db_, schema_version_ >= 3
                            ? "INSERT INTO run_targets (run_id, name, image, command, facts, identity) "
                              "VALUES (?, ?, ?, ?, ?, ?)"
                            : "INSERT INTO run_targets (run_id, name, image, command, facts) VALUES (?, ?, ?, ?, ?)");
  for (const TargetRow& t : x.targets) {
    const bool inserted =
        schema_version_ >= 3 ? target.Bind(receipt.id, t.name, t.image, t.command, JsonArray(t.facts), t.identity).Run()
                             : target.Bind(receipt.id, t.name, t.image, t.command, JsonArray(t.facts)).Run();
    if (!inserted) {
      return Fail("cannot insert target " + t.name);
    }
    hook("target " + t.name);
  }
  if (schema_version_ >= 2) {
    Statement label(db_, "INSERT INTO run_labels (run_id, key, value) VALUES (?, ?, ?)");
    for (const auto& [k, v] : record.run.metadata.labels) {
      if (!label.Bind(receipt.id, k, v).Run()) return Fail("cannot insert label " + k);
    }
  }
  Statement cell(db_,
                 "INSERT INTO cells (run_id, position, target, scenario, connections, rate, repetition, state, "
                 "requests_per_second, p50_us, p90_us, p99_us, p999_us, errors_total, cpu_us_per_request, "
                 "memory_loaded_bytes, flags) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  for (const CellRow& c : x.cells) {
    cell.Bind(receipt.id, c.position, c.target, c.scenario, c.connections, c.rate, c.repetition, c.state,
              c.requests_per_second, c.p50_us, c.p90_us, c.p99_us, c.p999_us, c.errors_total, c.cpu_us_per_request,
              c.memory_loaded_bytes, c.flags);
    if (!cell.Run()) return Fail("cannot insert cell " + std::to_string(c.position));
    hook("cell " + std::to_string(c.position));
  }
  if (!tx.Commit()) return Fail("cannot commit the run");
  return receipt;
}

Result<std::vector<StoredRun>> SqliteResultStore::ListRuns(const RunFilter& f) {
  std::string sql =
      "SELECT id, name, uid, namespace, phase, start_ns, end_ns, platform, fingerprint, labels, cells_stored, "
      "cells_total FROM runs r WHERE 1 = 1";
  std::vector<std::string> texts;  // bound in order, then since
  if (!f.target.empty()) {
    sql += " AND EXISTS (SELECT 1 FROM run_targets t WHERE t.run_id = r.id AND t.name = ?)";
    texts.push_back(f.target);
  }
  if (!f.scenario.empty()) {
    sql += " AND EXISTS (SELECT 1 FROM cells c WHERE c.run_id = r.id AND c.scenario = ?)";
    texts.push_back(f.scenario);
  }
  for (const auto& [k, v] : f.labels) {
    sql += " AND EXISTS (SELECT 1 FROM run_labels l WHERE l.run_id = r.id AND l.key = ? AND l.value = ?)";
    texts.push_back(k);
    texts.push_back(v);
  }
  if (f.since_ns) sql += " AND r.start_ns >= ?";
  sql += " ORDER BY r.start_ns DESC NULLS LAST, r.id DESC";
  if (f.limit > 0) sql += " LIMIT " + std::to_string(f.limit);
  Statement q(db_, sql.c_str());
  q.Reset();
  for (const std::string& t : texts) q.Add(t);
  if (f.since_ns) q.Add(*f.since_ns);
  std::vector<StoredRun> runs;
  while (q.Step()) {
    StoredRun r;
    r.id = q.Int(0);
    r.name = q.Text(1);
    r.uid = q.Text(2);
    r.ns = q.Text(3);
    r.phase = q.Text(4);
    r.start_ns = q.OptionalInt(5);
    r.end_ns = q.OptionalInt(6);
    r.platform = q.Text(7);
    r.fingerprint = q.Text(8);
    const auto labels = nlohmann::json::parse(q.Text(9), nullptr, false);
    if (labels.is_object()) {
      for (const auto& [k, v] : labels.items()) {
        if (v.is_string()) r.labels[k] = v.get<std::string>();
      }
    }
    r.cells = q.Int(10);
    r.cells_total = q.Int(11);
    runs.push_back(std::move(r));
  }
  if (!q.ok()) return Fail("cannot query runs");
  Statement targets(db_, schema_version_ >= 3 ? "SELECT name, identity FROM run_targets WHERE run_id = ? ORDER BY rowid"
                                              : "SELECT name, '' FROM run_targets WHERE run_id = ? ORDER BY rowid");
  for (StoredRun& r : runs) {
    targets.Bind(r.id);
    while (targets.Step()) {
      r.targets.push_back(targets.Text(0));
      r.identities.push_back(targets.Text(1));
    }
    if (!targets.ok()) return Fail("cannot query run targets");
  }
  return runs;
}

Result<Series> SqliteResultStore::QuerySeries(const SeriesQuery& q) {
  constexpr const char* kSeries = "c.target = ? AND c.scenario = ? AND c.connections = ? AND c.rate = ?";
  const std::string describe = q.target + "/" + q.scenario + " at " + std::to_string(q.connections) + " connections" +
                               (q.rate != 0 ? ", " + SeriesRateText(q.rate) : "");
  Series series;
  if (q.fingerprint.empty()) {
    Statement latest(db_, (std::string("SELECT r.fingerprint FROM cells c JOIN runs r ON r.id = c.run_id WHERE ") +
                           kSeries + " ORDER BY r.start_ns DESC, r.id DESC LIMIT 1")
                              .c_str());
    if (latest.Bind(q.target, q.scenario, q.connections, q.rate).Step()) {
      series.fingerprint = latest.Text(0);
    } else if (!latest.ok()) {
      return Fail("cannot query the series");
    } else {
      return Status::NotFound("no stored run has " + describe);
    }
  } else {
    // A prefix, as `history` prints them: it must name one fingerprint.
    Statement match(db_,
                    (std::string("SELECT DISTINCT r.fingerprint FROM cells c JOIN runs r ON r.id = c.run_id WHERE ") +
                     kSeries + " AND substr(r.fingerprint, 1, ?) = ?")
                        .c_str());
    match.Bind(q.target, q.scenario, q.connections, q.rate, static_cast<int64_t>(q.fingerprint.size()), q.fingerprint);
    std::vector<std::string> found;
    while (match.Step()) found.push_back(match.Text(0));
    if (!match.ok()) return Fail("cannot query the series");
    if (found.empty()) return Status::NotFound("no stored run has " + describe + " under fingerprint " + q.fingerprint);
    if (found.size() > 1) {
      return Status::InvalidArgument("--fingerprint " + q.fingerprint + " matches " + std::to_string(found.size()) +
                                     " fingerprints: give more of it");
    }
    series.fingerprint = found[0];
  }

  Statement points(db_, (std::string("SELECT r.id, r.name, r.start_ns, COUNT(*), "
                                     "SUM(CASE WHEN c.state = 'Succeeded' THEN 1 ELSE 0 END), "
                                     "AVG(CASE WHEN c.state = 'Succeeded' THEN c.requests_per_second END), "
                                     "AVG(CASE WHEN c.state = 'Succeeded' THEN c.p99_us END), SUM(c.errors_total) "
                                     "FROM cells c JOIN runs r ON r.id = c.run_id WHERE ") +
                         kSeries + " AND r.fingerprint = ? GROUP BY r.id, r.name, r.start_ns ORDER BY r.start_ns, r.id")
                            .c_str());
  points.Bind(q.target, q.scenario, q.connections, q.rate, series.fingerprint);
  while (points.Step()) {
    SeriesPoint p;
    p.run_id = points.Int(0);
    p.run_name = points.Text(1);
    p.start_ns = points.OptionalInt(2);
    p.repetitions = points.Int(3);
    p.succeeded = points.Int(4);
    p.requests_per_second = points.IsNull(5) ? 0 : points.Double(5);
    p.p99_us = points.IsNull(6) ? 0 : points.Double(6);
    p.errors = static_cast<uint64_t>(points.Int(7));
    series.points.push_back(std::move(p));
  }
  if (!points.ok()) return Fail("cannot query the series");
  // Which build of the target each run ran: a second pass over the
  // target's rows that say (most runs of a long series say nothing).
  if (schema_version_ >= 3 && !series.points.empty()) {
    std::map<int64_t, std::string> builds;
    Statement identities(db_,
                         "SELECT t.run_id, t.identity FROM run_targets t JOIN runs r ON r.id = t.run_id "
                         "WHERE t.name = ? AND t.identity <> '' AND r.fingerprint = ?");
    identities.Bind(q.target, series.fingerprint);
    while (identities.Step()) builds[identities.Int(0)] = identities.Text(1);
    if (!identities.ok()) return Fail("cannot query the series' builds");
    for (SeriesPoint& p : series.points) {
      if (auto it = builds.find(p.run_id); it != builds.end()) p.identity = it->second;
    }
  }

  Statement others(db_, (std::string("SELECT r.fingerprint, COUNT(DISTINCT r.id) FROM cells c JOIN runs r ON r.id = "
                                     "c.run_id WHERE ") +
                         kSeries + " AND r.fingerprint <> ? GROUP BY r.fingerprint ORDER BY r.fingerprint")
                            .c_str());
  others.Bind(q.target, q.scenario, q.connections, q.rate, series.fingerprint);
  while (others.Step()) {
    series.other_fingerprints.push_back(others.Text(0));
    series.runs_elsewhere += others.Int(1);
  }
  if (!others.ok()) return Fail("cannot query the series");
  return series;
}

Result<std::vector<SeriesKey>> SqliteResultStore::ListSeries(const std::string& target, const std::string& scenario) {
  // Reads cells_by_series alone (its leading columns).
  Statement q(db_,
              "SELECT DISTINCT target, scenario, connections, rate FROM cells WHERE (?1 = '' OR target = ?1) AND "
              "(?2 = '' OR scenario = ?2) ORDER BY target, scenario, connections, rate");
  q.Bind(target, scenario);
  std::vector<SeriesKey> keys;
  while (q.Step()) keys.push_back(SeriesKey{q.Text(0), q.Text(1), q.Int(2), q.Int(3)});
  if (!q.ok()) return Fail("cannot list the series");
  return keys;
}

Result<std::string> SqliteResultStore::LoadResultsJson(int64_t id) {
  Statement q(db_, "SELECT encoding, bytes, results FROM run_records WHERE run_id = ?");
  if (!q.Bind(id).Step()) {
    if (!q.ok()) return Fail("cannot read run " + std::to_string(id));
    return Status::NotFound(Describe() + ": no run " + std::to_string(id));
  }
  if (q.Text(0) != "gzip")
    return Status::Unavailable(Describe() + ": run " + std::to_string(id) + ": unknown encoding '" + q.Text(0) + "'");
  auto text = controller::Gunzip(q.Blob(2), static_cast<size_t>(q.Int(1)));
  if (!text.ok())
    return Status::Unavailable(Describe() + ": run " + std::to_string(id) + ": " + text.status().message());
  return std::move(*text);
}

Result<std::vector<PrunedRun>> SqliteResultStore::Prune(const PruneRule& rule) {
  if (!rule.older_than_ns && !rule.keep_per_series) return Status::InvalidArgument("prune: no rule given");
  if (rule.keep_per_series && *rule.keep_per_series < 1) return Status::InvalidArgument("prune: keep at least 1 run");
  Transaction tx(db_);
  // Runs the age rule removes, and those among the newest N of no series.
  Statement q(db_,
              "WITH series_runs AS (SELECT DISTINCT c.run_id, c.target, c.scenario, c.connections, c.rate, "
              "r.fingerprint, r.start_ns FROM cells c JOIN runs r ON r.id = c.run_id), "
              "ranked AS (SELECT run_id, ROW_NUMBER() OVER (PARTITION BY target, scenario, connections, rate, "
              "fingerprint ORDER BY start_ns DESC, run_id DESC) AS newest FROM series_runs) "
              "SELECT id, name, start_ns FROM runs WHERE "
              "(?1 IS NOT NULL AND start_ns IS NOT NULL AND start_ns < ?1) OR "
              "(?2 IS NOT NULL AND id NOT IN (SELECT run_id FROM ranked WHERE newest <= ?2)) "
              "ORDER BY start_ns, id");
  q.Bind(rule.older_than_ns, rule.keep_per_series);
  std::vector<PrunedRun> gone;
  while (q.Step()) gone.push_back(PrunedRun{q.Int(0), q.Text(1), q.OptionalInt(2)});
  if (!q.ok()) return Fail("cannot select the runs to prune");
  if (rule.dry_run) return gone;
  Statement del(db_, "DELETE FROM runs WHERE id = ?");
  for (const PrunedRun& r : gone) {
    // The records, targets, cells and labels go with the run (ON DELETE CASCADE).
    if (!del.Bind(r.id).Run()) return Fail("cannot remove run " + std::to_string(r.id));
  }
  if (!tx.Commit()) return Fail("cannot commit the pruning");
  return gone;
}

}  // namespace fairbench::results
