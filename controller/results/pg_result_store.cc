#include "controller/results/pg_result_store.h"

#include <libpq-fe.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
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
// i + 1. Released ones are never edited; a change is a new one, here and in
// sqlite_result_store.cc alike (the header says where the two differ).
constexpr const char* kMigrations[] = {
    // 1: runs, their records, their targets and their cells.
    R"sql(
CREATE TABLE runs (
  id BIGINT PRIMARY KEY,
  run_key TEXT NOT NULL UNIQUE,
  content_sha256 TEXT NOT NULL,
  name TEXT NOT NULL,
  uid TEXT NOT NULL,
  namespace TEXT NOT NULL,
  phase TEXT NOT NULL,
  start_ns BIGINT,
  end_ns BIGINT,
  platform TEXT NOT NULL,
  fingerprint TEXT COLLATE "C" NOT NULL,
  environment TEXT NOT NULL,
  labels TEXT NOT NULL,
  fairbench_version TEXT NOT NULL,
  cells_total BIGINT NOT NULL,
  cells_stored BIGINT NOT NULL,
  stored_ns BIGINT NOT NULL
);
CREATE INDEX runs_by_start ON runs (start_ns);
CREATE TABLE run_records (
  run_id BIGINT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
  encoding TEXT NOT NULL,
  bytes BIGINT NOT NULL,
  results BYTEA NOT NULL
);
CREATE TABLE run_targets (
  run_id BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
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
  target TEXT COLLATE "C" NOT NULL,
  scenario TEXT COLLATE "C" NOT NULL,
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
INSERT INTO run_labels (run_id, key, value)
  SELECT runs.id, l.key, l.value FROM runs, jsonb_each_text(runs.labels::jsonb) AS l;
)sql",
    // 3: which build of each target ran (its "identity:" note), filled
    // from the notes of the runs already stored.
    R"sql(
ALTER TABLE run_targets ADD COLUMN identity TEXT NOT NULL DEFAULT '';
UPDATE run_targets SET identity = COALESCE((
  SELECT substr(f.value, length('target ' || run_targets.name || ': identity: ') + 1)
  FROM jsonb_array_elements_text(run_targets.facts::jsonb) WITH ORDINALITY AS f(value, n)
  WHERE left(f.value, length('target ' || run_targets.name || ': identity: ')) =
        'target ' || run_targets.name || ': identity: '
    AND substr(f.value, length('target ' || run_targets.name || ': identity: ') + 1, 7) <> 'unknown'
  ORDER BY f.n DESC LIMIT 1), '');
)sql",
};
static_assert(std::size(kMigrations) == kPgSchemaVersion);

// The store's tables: a database without schema_version that has one of
// these belongs to something else.
constexpr const char* kTables = "'schema_version', 'runs', 'run_records', 'run_targets', 'cells', 'run_labels'";

// Every writer of one database takes this lock first (pg_advisory_xact_lock:
// released when its transaction ends, however it ends).
constexpr const char* kWriterLock = "SELECT pg_advisory_xact_lock(7020389415296332141)";

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// libpq's messages end in a newline and may run over several lines: one
// line, for a Status.
std::string OneLine(std::string s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (c == '\n' || c == '\t' || c == '\r') {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

// Parameters in text form (the record in binary), bound as $1, $2, … in
// the order added.
class Params {
 public:
  template <typename... Args>
  explicit Params(const Args&... args) {
    (Add(args), ...);
  }
  void Add(int64_t v) { values_.push_back(std::to_string(v)), formats_.push_back(0); }
  void Add(int32_t v) { Add(static_cast<int64_t>(v)); }
  void Add(uint64_t v) { Add(static_cast<int64_t>(v)); }  // as SQLite stores it
  void Add(double v) {
    // NULL for a NaN, as SQLite binds it (and the NOT NULL columns refuse
    // it alike); shortest text that reads back to the same double.
    if (!std::isfinite(v)) {
      values_.push_back(std::nullopt), formats_.push_back(0);
      return;
    }
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    values_.push_back(std::string(buf, end)), formats_.push_back(0);
  }
  void Add(const std::string& v) { values_.push_back(v), formats_.push_back(0); }
  void Add(const char* v) { Add(std::string(v)); }
  template <typename T>
  void Add(const std::optional<T>& v) {
    if (v) {
      Add(*v);
    } else {
      values_.push_back(std::nullopt), formats_.push_back(0);
    }
  }
  struct Bytes {
    std::string_view bytes;
  };
  void Add(const Bytes& v) { values_.push_back(std::string(v.bytes)), formats_.push_back(1); }

  int size() const { return static_cast<int>(values_.size()); }
  std::vector<const char*> Values() const {
    std::vector<const char*> p;
    for (const auto& v : values_) p.push_back(v ? v->c_str() : nullptr);
    return p;
  }
  std::vector<int> Lengths() const {
    std::vector<int> l;
    for (const auto& v : values_) l.push_back(v ? static_cast<int>(v->size()) : 0);
    return l;
  }
  const int* Formats() const { return formats_.data(); }

 private:
  std::vector<std::optional<std::string>> values_;
  std::vector<int> formats_;
};

// One statement's result; owns the PGresult.
class Rows {
 public:
  Rows(pg_conn* conn, const std::string& sql, const Params& params = Params()) {
    const auto values = params.Values();
    const auto lengths = params.Lengths();
    // Without parameters, PQexec: a migration is several statements.
    res_ = params.size() == 0 ? PQexec(conn, sql.c_str())
                              : PQexecParams(conn, sql.c_str(), params.size(), nullptr, values.data(), lengths.data(),
                                             params.Formats(), 0);
    const ExecStatusType s = PQresultStatus(res_);
    ok_ = s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
    if (!ok_) error_ = OneLine(res_ != nullptr ? PQresultErrorMessage(res_) : PQerrorMessage(conn));
    if (!ok_ && error_.empty()) error_ = OneLine(PQerrorMessage(conn));
  }
  ~Rows() { PQclear(res_); }
  Rows(const Rows&) = delete;
  Rows& operator=(const Rows&) = delete;

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  int size() const { return ok_ ? PQntuples(res_) : 0; }
  bool IsNull(int row, int col) const { return PQgetisnull(res_, row, col) == 1; }
  std::string Text(int row, int col) const {
    return std::string(PQgetvalue(res_, row, col), static_cast<size_t>(PQgetlength(res_, row, col)));
  }
  int64_t Int(int row, int col) const {
    // SUM over BIGINT comes as NUMERIC: digits all the same.
    return IsNull(row, col) ? 0 : std::strtoll(PQgetvalue(res_, row, col), nullptr, 10);
  }
  std::optional<int64_t> OptionalInt(int row, int col) const {
    return IsNull(row, col) ? std::nullopt : std::optional(Int(row, col));
  }
  double Double(int row, int col) const {
    return IsNull(row, col) ? 0 : std::strtod(PQgetvalue(res_, row, col), nullptr);
  }
  std::string Bytea(int row, int col) const {
    size_t n = 0;
    unsigned char* p = PQunescapeBytea(reinterpret_cast<const unsigned char*>(PQgetvalue(res_, row, col)), &n);
    if (p == nullptr) return std::string();
    std::string out(reinterpret_cast<const char*>(p), n);
    PQfreemem(p);
    return out;
  }

 private:
  PGresult* res_ = nullptr;
  bool ok_ = false;
  std::string error_;
};

// Rolls back unless committed: every early return of a transaction undoes it.
class Transaction {
 public:
  explicit Transaction(pg_conn* conn) : conn_(conn) {
    Rows begin(conn, "BEGIN");
    begun_ = begin.ok();
    if (!begun_) error_ = begin.error();
  }
  ~Transaction() {
    if (begun_ && !done_) Rows rollback(conn_, "ROLLBACK");
  }
  bool begun() const { return begun_; }
  const std::string& error() const { return error_; }
  bool Commit() {
    Rows commit(conn_, "COMMIT");
    done_ = commit.ok();
    if (!done_) error_ = commit.error();
    return done_;
  }

 private:
  pg_conn* conn_;
  bool begun_ = false;
  bool done_ = false;
  std::string error_;
};

std::string JsonArray(const std::vector<std::string>& items) { return nlohmann::json(items).dump(); }

// "{1,2,3}": a BIGINT[] parameter.
std::string IdArray(const std::vector<int64_t>& ids) {
  std::string out = "{";
  for (size_t i = 0; i < ids.size(); ++i) out += (i > 0 ? "," : "") + std::to_string(ids[i]);
  return out + "}";
}

std::string PercentEncode(const std::string& s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

void IgnoreNotice(void*, const char*) {}

// The URL with its password, if it has one, as ****: libpq quotes a URL it
// cannot read in its message.
std::string Redacted(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const size_t begin = scheme + 3;
  const size_t end = std::min(url.find_first_of("/?", begin), url.size());
  const size_t at = url.rfind('@', end - 1);
  if (at == std::string::npos || at < begin) return url;
  const size_t colon = url.find(':', begin);
  if (colon == std::string::npos || colon > at) return url;
  return url.substr(0, colon + 1) + "****" + url.substr(at);
}

void ReplaceAll(std::string& text, const std::string& what, const std::string& with) {
  if (what.empty()) return;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + with.size())) {
    text.replace(at, what.size(), with);
  }
}

}  // namespace

std::string PgUrlWithoutPassword(const std::string& url) {
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(url.c_str(), &err);
  if (opts == nullptr) {
    PQfreemem(err);
    return "postgresql://(a URL libpq cannot read)";
  }
  std::string user, host, port, dbname;
  for (PQconninfoOption* o = opts; o->keyword != nullptr; ++o) {
    if (o->val == nullptr) continue;
    const std::string k = o->keyword;
    if (k == "user") user = o->val;
    if (k == "host" && host.empty()) host = o->val;
    if (k == "hostaddr" && host.empty()) host = o->val;
    if (k == "port") port = o->val;
    if (k == "dbname") dbname = o->val;
  }
  PQconninfoFree(opts);
  std::string out = "postgresql://";
  if (!user.empty()) out += PercentEncode(user) + "@";
  // A unix socket's directory, or several hosts, as libpq's URI spells them.
  for (char c : host) out += c == '/' ? std::string("%2F") : std::string(1, c);
  if (!port.empty()) out += ":" + port;
  if (!dbname.empty()) out += "/" + PercentEncode(dbname);
  return out;
}

Status PgResultStore::Fail(const std::string& what, const std::string& why) const {
  std::string message = Describe() + ": " + what + ": " + why;
  // A short password could be any word of the message: blanked only when
  // it cannot be mistaken for one.
  if (password_.size() >= 6) ReplaceAll(message, password_, "****");
  return Status::Unavailable(message);
}

Result<std::unique_ptr<PgResultStore>> PgResultStore::Open(const std::string& url, PgStoreOptions options) {
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(url.c_str(), &err);
  if (opts == nullptr) {
    std::string why = err != nullptr ? OneLine(err) : "out of memory";
    PQfreemem(err);
    ReplaceAll(why, url, Redacted(url));
    return Status::InvalidArgument("--store: not a PostgreSQL URL libpq reads: " + why);
  }
  std::string password;
  for (PQconninfoOption* o = opts; o->keyword != nullptr; ++o) {
    if (o->val != nullptr && std::string(o->keyword) == "password") password = o->val;
  }
  PQconninfoFree(opts);

  // Entries before the URL are the defaults it may override.
  const std::string timeout = std::to_string(options.connect_timeout.count());
  const char* keywords[] = {"connect_timeout", "application_name", "dbname", nullptr};
  const char* values[] = {timeout.c_str(), "fairbench", url.c_str(), nullptr};
  pg_conn* conn = PQconnectdbParams(keywords, values, 1);
  std::unique_ptr<PgResultStore> store(
      new PgResultStore(PgUrlWithoutPassword(url), std::move(password), conn, std::move(options)));
  if (conn == nullptr) return Status::Unavailable(store->Describe() + ": cannot connect: out of memory");
  if (PQstatus(conn) != CONNECTION_OK) return store->Fail("cannot connect", OneLine(PQerrorMessage(conn)));
  PQsetNoticeProcessor(conn, IgnoreNotice, nullptr);
  if (Status s = store->Migrate(); !s.ok()) return s;
  return store;
}

PgResultStore::~PgResultStore() { PQfinish(conn_); }

Status PgResultStore::Migrate() {
  std::vector<std::string> ours;
  bool has_version_table = false;
  {
    Rows tables(conn_, std::string("SELECT table_name FROM information_schema.tables WHERE table_schema = "
                                   "current_schema() AND table_name IN (") +
                           kTables + ") ORDER BY table_name");
    if (!tables.ok()) return Fail("cannot read it", tables.error());
    for (int i = 0; i < tables.size(); ++i) {
      ours.push_back(tables.Text(i, 0));
      if (ours.back() == "schema_version") has_version_table = true;
    }
  }
  if (!has_version_table && !ours.empty()) {
    return Status::Unavailable(Describe() + ": not a fairbench result store (it has a table '" + ours[0] +
                               "' but no schema_version)");
  }
  if (!has_version_table && !options_.create) {
    return Status::Unavailable(Describe() +
                               ": holds no fairbench result store (no schema_version table; `fairbench import "
                               "--store` makes one)");
  }
  auto read_version = [&]() -> Result<std::optional<int>> {
    Rows v(conn_, "SELECT version FROM schema_version");
    if (!v.ok()) return Fail("cannot read its schema version", v.error());
    if (v.size() == 0) return std::optional<int>();
    return std::optional<int>(static_cast<int>(v.Int(0, 0)));
  };
  auto newer = [&](int version) {
    return Status::Unavailable(Describe() + ": its schema is version " + std::to_string(version) +
                               ", newer than this fairbench's (" + std::to_string(kPgSchemaVersion) +
                               "): use a fairbench at least as new as the one that wrote it");
  };
  if (has_version_table) {
    auto v = read_version();
    if (!v.ok()) return v.status();
    if (!*v) return Fail("cannot read its schema version", "schema_version is empty");
    schema_version_ = **v;
  }
  if (schema_version_ > kPgSchemaVersion) return newer(schema_version_);
  const int target = std::min(options_.schema_version, kPgSchemaVersion);
  if (has_version_table && schema_version_ >= target) return Status::Ok();

  Transaction tx(conn_);
  if (!tx.begun()) return Fail("cannot start migrating it", tx.error());
  // Another process may have migrated it since the read above: the lock
  // orders the two, and the version is read again under it.
  if (Rows lock(conn_, kWriterLock); !lock.ok()) return Fail("cannot lock it", lock.error());
  if (Rows create(conn_, "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"); !create.ok()) {
    return Fail("cannot create schema_version", create.error());
  }
  auto now = read_version();
  if (!now.ok()) return now.status();
  if (!*now) {
    if (Rows insert(conn_, "INSERT INTO schema_version (version) VALUES (0)"); !insert.ok()) {
      return Fail("cannot create schema_version", insert.error());
    }
    *now = 0;
  }
  const int at = **now;
  if (at > kPgSchemaVersion) return newer(at);
  for (int v = at; v < target; ++v) {
    if (Rows m(conn_, kMigrations[v]); !m.ok()) {
      return Fail("migration to schema version " + std::to_string(v + 1) + " failed", m.error());
    }
  }
  if (at < target) {
    if (Rows set(conn_, "UPDATE schema_version SET version = $1", Params(static_cast<int64_t>(target))); !set.ok()) {
      return Fail("cannot record the schema version", set.error());
    }
  }
  if (!tx.Commit()) return Fail("cannot commit the migration", tx.error());
  schema_version_ = std::max(at, target);
  return Status::Ok();
}

Result<StoreReceipt> PgResultStore::Store(const report::RunRecord& record) {
  const std::string text = report::ToJsonText(record);
  const RunIndex x = IndexRun(record, text);
  auto hook = [&](std::string_view step) {
    if (options_.between_inserts) options_.between_inserts(step);
  };

  Transaction tx(conn_);
  if (!tx.begun()) return Fail("cannot start a transaction", tx.error());
  if (Rows lock(conn_, kWriterLock); !lock.ok()) return Fail("cannot lock it", lock.error());
  StoreReceipt receipt;
  receipt.offered_cells = static_cast<int64_t>(x.cells.size());
  receipt.cells = receipt.offered_cells;
  std::optional<int64_t> existing;
  {
    Rows find(conn_, "SELECT id, content_sha256, cells_stored FROM runs WHERE run_key = $1", Params(x.key));
    if (!find.ok()) return Fail("cannot look the run up", find.error());
    if (find.size() > 0) {
      existing = find.Int(0, 0);
      receipt.id = *existing;
      if (find.Text(0, 1) == x.content_sha256) {
        receipt.outcome = StoreOutcome::kUnchanged;
        return receipt;  // the transaction rolls back: nothing was written
      }
      if (find.Int(0, 2) > receipt.offered_cells) {
        receipt.outcome = StoreOutcome::kKept;
        receipt.cells = find.Int(0, 2);
        return receipt;
      }
    }
  }

  auto gz = controller::Gzip(text);
  if (!gz.ok()) return Status::Internal("gzip: " + gz.status().message());
  const std::string run_columns =
      "run_key, content_sha256, name, uid, namespace, phase, start_ns, end_ns, platform, fingerprint, environment, "
      "labels, fairbench_version, cells_total, cells_stored, stored_ns";
  Params run(x.key, x.content_sha256, x.name, x.uid, x.ns, x.phase, x.start_ns, x.end_ns, x.platform, x.fingerprint,
             x.environment_json, x.labels_json, x.fairbench_version, x.cells_total, receipt.offered_cells, NowNs());
  if (existing) {
    receipt.outcome = StoreOutcome::kReplaced;
    std::vector<const char*> deletes = {"DELETE FROM cells WHERE run_id = $1",
                                        "DELETE FROM run_targets WHERE run_id = $1"};
    if (schema_version_ >= 2) deletes.push_back("DELETE FROM run_labels WHERE run_id = $1");
    for (const char* sql : deletes) {
      if (Rows del(conn_, sql, Params(*existing)); !del.ok()) {
        return Fail("cannot replace run " + std::to_string(*existing), del.error());
      }
    }
    run.Add(*existing);
    Rows update(conn_,
                "UPDATE runs SET (" + run_columns +
                    ") = ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) WHERE id = $17",
                run);
    if (!update.ok()) return Fail("cannot replace run " + std::to_string(*existing), update.error());
    Rows record_update(conn_, "UPDATE run_records SET (encoding, bytes, results) = ($1, $2, $3) WHERE run_id = $4",
                       Params("gzip", static_cast<int64_t>(text.size()), Params::Bytes{*gz}, *existing));
    if (!record_update.ok()) return Fail("cannot replace run " + std::to_string(*existing), record_update.error());
  } else {
    // SQLite's rowid rule: the largest id plus one (the lock keeps it free).
    Rows next(conn_, "SELECT COALESCE(MAX(id), 0) + 1 FROM runs");
    if (!next.ok() || next.size() != 1) return Fail("cannot insert the run", next.error());
    receipt.id = next.Int(0, 0);
    run.Add(receipt.id);
    Rows insert(conn_,
                "INSERT INTO runs (" + run_columns +
                    ", id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)",
                run);
    if (!insert.ok()) return Fail("cannot insert the run", insert.error());
    Rows record_insert(conn_, "INSERT INTO run_records (run_id, encoding, bytes, results) VALUES ($1, $2, $3, $4)",
                       Params(receipt.id, "gzip", static_cast<int64_t>(text.size()), Params::Bytes{*gz}));
    if (!record_insert.ok()) return Fail("cannot insert the run's record", record_insert.error());
  }
  hook("run");

  for (size_t i = 0; i < x.targets.size(); ++i) {
    const TargetRow& t = x.targets[i];
    Params row(receipt.id, static_cast<int64_t>(i), t.name, t.image, t.command, JsonArray(t.facts));
    if (schema_version_ >= 3) row.Add(t.identity);
    Rows target(conn_,
                schema_version_ >= 3 ? "INSERT INTO run_targets (run_id, position, name, image, command, facts, "
                                       "identity) VALUES ($1, $2, $3, $4, $5, $6, $7)"
                                     : "INSERT INTO run_targets (run_id, position, name, image, command, facts) "
                                       "VALUES ($1, $2, $3, $4, $5, $6)",
                row);
    if (!target.ok()) return Fail("cannot insert target " + t.name, target.error());
    hook("target " + t.name);
  }
  if (schema_version_ >= 2) {
    for (const auto& [k, v] : record.run.metadata.labels) {
      Rows label(conn_, "INSERT INTO run_labels (run_id, key, value) VALUES ($1, $2, $3)", Params(receipt.id, k, v));
      if (!label.ok()) return Fail("cannot insert label " + k, label.error());
    }
  }
  for (const CellRow& c : x.cells) {
    Rows cell(conn_,
              "INSERT INTO cells (run_id, position, target, scenario, connections, rate, repetition, state, "
              "requests_per_second, p50_us, p90_us, p99_us, p999_us, errors_total, cpu_us_per_request, "
              "memory_loaded_bytes, flags) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, "
              "$16, $17)",
              Params(receipt.id, c.position, c.target, c.scenario, c.connections, c.rate, c.repetition, c.state,
                     c.requests_per_second, c.p50_us, c.p90_us, c.p99_us, c.p999_us, c.errors_total,
                     c.cpu_us_per_request, c.memory_loaded_bytes, c.flags));
    if (!cell.ok()) return Fail("cannot insert cell " + std::to_string(c.position), cell.error());
    hook("cell " + std::to_string(c.position));
  }
  if (!tx.Commit()) return Fail("cannot commit the run", tx.error());
  return receipt;
}

Result<std::vector<StoredRun>> PgResultStore::ListRuns(const RunFilter& f) {
  std::string sql =
      "SELECT id, name, uid, namespace, phase, start_ns, end_ns, platform, fingerprint, labels, cells_stored, "
      "cells_total FROM runs r WHERE 1 = 1";
  Params params;
  auto next = [&params]() { return "$" + std::to_string(params.size() + 1); };
  if (!f.target.empty()) {
    sql += " AND EXISTS (SELECT 1 FROM run_targets t WHERE t.run_id = r.id AND t.name = " + next() + ")";
    params.Add(f.target);
  }
  if (!f.scenario.empty()) {
    sql += " AND EXISTS (SELECT 1 FROM cells c WHERE c.run_id = r.id AND c.scenario = " + next() + ")";
    params.Add(f.scenario);
  }
  for (const auto& [k, v] : f.labels) {
    sql += " AND EXISTS (SELECT 1 FROM run_labels l WHERE l.run_id = r.id AND l.key = " + next();
    params.Add(k);
    sql += " AND l.value = " + next() + ")";
    params.Add(v);
  }
  if (f.since_ns) {
    sql += " AND r.start_ns >= " + next();
    params.Add(*f.since_ns);
  }
  sql += " ORDER BY r.start_ns DESC NULLS LAST, r.id DESC";
  if (f.limit > 0) sql += " LIMIT " + std::to_string(f.limit);
  Rows q(conn_, sql, params);
  if (!q.ok()) return Fail("cannot query runs", q.error());
  std::vector<StoredRun> runs;
  std::vector<int64_t> ids;
  for (int i = 0; i < q.size(); ++i) {
    StoredRun r;
    r.id = q.Int(i, 0);
    r.name = q.Text(i, 1);
    r.uid = q.Text(i, 2);
    r.ns = q.Text(i, 3);
    r.phase = q.Text(i, 4);
    r.start_ns = q.OptionalInt(i, 5);
    r.end_ns = q.OptionalInt(i, 6);
    r.platform = q.Text(i, 7);
    r.fingerprint = q.Text(i, 8);
    const auto labels = nlohmann::json::parse(q.Text(i, 9), nullptr, false);
    if (labels.is_object()) {
      for (const auto& [k, v] : labels.items()) {
        if (v.is_string()) r.labels[k] = v.get<std::string>();
      }
    }
    r.cells = q.Int(i, 10);
    r.cells_total = q.Int(i, 11);
    ids.push_back(r.id);
    runs.push_back(std::move(r));
  }
  if (runs.empty()) return runs;
  // Every listed run's targets in one round trip.
  Rows targets(conn_,
               std::string("SELECT run_id, name, ") + (schema_version_ >= 3 ? "identity" : "''") +
                   " FROM run_targets WHERE run_id = ANY($1::BIGINT[]) ORDER BY run_id, position",
               Params(IdArray(ids)));
  if (!targets.ok()) return Fail("cannot query run targets", targets.error());
  std::map<int64_t, StoredRun*> by_id;
  for (StoredRun& r : runs) by_id[r.id] = &r;
  for (int i = 0; i < targets.size(); ++i) {
    StoredRun* r = by_id[targets.Int(i, 0)];
    r->targets.push_back(targets.Text(i, 1));
    r->identities.push_back(targets.Text(i, 2));
  }
  return runs;
}

Result<Series> PgResultStore::QuerySeries(const SeriesQuery& q) {
  constexpr const char* kSeries = "c.target = $1 AND c.scenario = $2 AND c.connections = $3 AND c.rate = $4";
  const std::string describe = q.target + "/" + q.scenario + " at " + std::to_string(q.connections) + " connections" +
                               (q.rate != 0 ? ", " + SeriesRateText(q.rate) : "");
  Series series;
  // NULLS FIRST/LAST where SQLite's order (NULL below every number) is not
  // PostgreSQL's (NULL above).
  if (q.fingerprint.empty()) {
    Rows latest(conn_,
                std::string("SELECT r.fingerprint FROM cells c JOIN runs r ON r.id = c.run_id WHERE ") + kSeries +
                    " ORDER BY r.start_ns DESC NULLS LAST, r.id DESC LIMIT 1",
                Params(q.target, q.scenario, q.connections, q.rate));
    if (!latest.ok()) return Fail("cannot query the series", latest.error());
    if (latest.size() == 0) return Status::NotFound("no stored run has " + describe);
    series.fingerprint = latest.Text(0, 0);
  } else {
    // A prefix, as `history` prints them: it must name one fingerprint.
    Rows match(
        conn_,
        std::string("SELECT DISTINCT r.fingerprint FROM cells c JOIN runs r ON r.id = c.run_id WHERE ") + kSeries +
            " AND left(r.fingerprint, $5::INTEGER) = $6",
        Params(q.target, q.scenario, q.connections, q.rate, static_cast<int64_t>(q.fingerprint.size()), q.fingerprint));
    if (!match.ok()) return Fail("cannot query the series", match.error());
    if (match.size() == 0) {
      return Status::NotFound("no stored run has " + describe + " under fingerprint " + q.fingerprint);
    }
    if (match.size() > 1) {
      return Status::InvalidArgument("--fingerprint " + q.fingerprint + " matches " + std::to_string(match.size()) +
                                     " fingerprints: give more of it");
    }
    series.fingerprint = match.Text(0, 0);
  }

  const Params params(q.target, q.scenario, q.connections, q.rate, series.fingerprint);
  // The target's build in each run: one value per run (the target is the
  // series'), MAX only to name it in a GROUP BY.
  const std::string identity =
      schema_version_ >= 3
          ? "COALESCE((SELECT t.identity FROM run_targets t WHERE t.run_id = r.id AND t.name = c.target), '')"
          : "''";
  Rows points(conn_,
              "SELECT r.id, r.name, r.start_ns, COUNT(*), "
              "SUM(CASE WHEN c.state = 'Succeeded' THEN 1 ELSE 0 END), "
              "AVG(CASE WHEN c.state = 'Succeeded' THEN c.requests_per_second END), "
              "AVG(CASE WHEN c.state = 'Succeeded' THEN c.p99_us END), SUM(c.errors_total), MAX(" +
                  identity + ") FROM cells c JOIN runs r ON r.id = c.run_id WHERE " + kSeries +
                  " AND r.fingerprint = $5 GROUP BY r.id, r.name, r.start_ns ORDER BY r.start_ns NULLS FIRST, r.id",
              params);
  if (!points.ok()) return Fail("cannot query the series", points.error());
  for (int i = 0; i < points.size(); ++i) {
    SeriesPoint p;
    p.run_id = points.Int(i, 0);
    p.run_name = points.Text(i, 1);
    p.start_ns = points.OptionalInt(i, 2);
    p.repetitions = points.Int(i, 3);
    p.succeeded = points.Int(i, 4);
    p.requests_per_second = points.Double(i, 5);
    p.p99_us = points.Double(i, 6);
    p.errors = static_cast<uint64_t>(points.Int(i, 7));
    p.identity = points.Text(i, 8);
    series.points.push_back(std::move(p));
  }

  Rows others(conn_,
              std::string("SELECT r.fingerprint, COUNT(DISTINCT r.id) FROM cells c JOIN runs r ON r.id = c.run_id "
                          "WHERE ") +
                  kSeries + " AND r.fingerprint <> $5 GROUP BY r.fingerprint ORDER BY r.fingerprint",
              params);
  if (!others.ok()) return Fail("cannot query the series", others.error());
  for (int i = 0; i < others.size(); ++i) {
    series.other_fingerprints.push_back(others.Text(i, 0));
    series.runs_elsewhere += others.Int(i, 1);
  }
  return series;
}

Result<std::vector<SeriesKey>> PgResultStore::ListSeries(const std::string& target, const std::string& scenario) {
  Rows q(conn_,
         "SELECT DISTINCT target, scenario, connections, rate FROM cells WHERE ($1 = '' OR target = $1) AND "
         "($2 = '' OR scenario = $2) ORDER BY target, scenario, connections, rate",
         Params(target, scenario));
  if (!q.ok()) return Fail("cannot list the series", q.error());
  std::vector<SeriesKey> keys;
  for (int i = 0; i < q.size(); ++i) keys.push_back(SeriesKey{q.Text(i, 0), q.Text(i, 1), q.Int(i, 2), q.Int(i, 3)});
  return keys;
}

Result<std::string> PgResultStore::LoadResultsJson(int64_t id) {
  Rows q(conn_, "SELECT encoding, bytes, results FROM run_records WHERE run_id = $1", Params(id));
  if (!q.ok()) return Fail("cannot read run " + std::to_string(id), q.error());
  if (q.size() == 0) return Status::NotFound(Describe() + ": no run " + std::to_string(id));
  if (q.Text(0, 0) != "gzip") {
    return Status::Unavailable(Describe() + ": run " + std::to_string(id) + ": unknown encoding '" + q.Text(0, 0) +
                               "'");
  }
  auto text = controller::Gunzip(q.Bytea(0, 2), static_cast<size_t>(q.Int(0, 1)));
  if (!text.ok()) {
    return Status::Unavailable(Describe() + ": run " + std::to_string(id) + ": " + text.status().message());
  }
  return std::move(*text);
}

Result<std::vector<PrunedRun>> PgResultStore::Prune(const PruneRule& rule) {
  if (!rule.older_than_ns && !rule.keep_per_series) return Status::InvalidArgument("prune: no rule given");
  if (rule.keep_per_series && *rule.keep_per_series < 1) return Status::InvalidArgument("prune: keep at least 1 run");
  Transaction tx(conn_);
  if (!tx.begun()) return Fail("cannot start a transaction", tx.error());
  if (Rows lock(conn_, kWriterLock); !lock.ok()) return Fail("cannot lock it", lock.error());
  // Runs the age rule removes, and those among the newest N of no series.
  Rows q(conn_,
         "WITH series_runs AS (SELECT DISTINCT c.run_id, c.target, c.scenario, c.connections, c.rate, "
         "r.fingerprint, r.start_ns FROM cells c JOIN runs r ON r.id = c.run_id), "
         "ranked AS (SELECT run_id, ROW_NUMBER() OVER (PARTITION BY target, scenario, connections, rate, "
         "fingerprint ORDER BY start_ns DESC NULLS LAST, run_id DESC) AS newest FROM series_runs) "
         "SELECT id, name, start_ns FROM runs WHERE "
         "($1::BIGINT IS NOT NULL AND start_ns IS NOT NULL AND start_ns < $1::BIGINT) OR "
         "($2::BIGINT IS NOT NULL AND id NOT IN (SELECT run_id FROM ranked WHERE newest <= $2::BIGINT)) "
         "ORDER BY start_ns NULLS FIRST, id",
         Params(rule.older_than_ns, rule.keep_per_series));
  if (!q.ok()) return Fail("cannot select the runs to prune", q.error());
  std::vector<PrunedRun> gone;
  std::vector<int64_t> ids;
  for (int i = 0; i < q.size(); ++i) {
    gone.push_back(PrunedRun{q.Int(i, 0), q.Text(i, 1), q.OptionalInt(i, 2)});
    ids.push_back(gone.back().id);
  }
  if (rule.dry_run || gone.empty()) return gone;
  // The records, targets, cells and labels go with the run (ON DELETE CASCADE).
  if (Rows del(conn_, "DELETE FROM runs WHERE id = ANY($1::BIGINT[])", Params(IdArray(ids))); !del.ok()) {
    return Fail("cannot remove the pruned runs", del.error());
  }
  if (!tx.Commit()) return Fail("cannot commit the pruning", tx.error());
  return gone;
}

}  // namespace fairbench::results
