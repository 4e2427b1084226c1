// SqliteResultStore: the ResultStore in one SQLite file (Debian's
// libsqlite3), the default store.
//
// Schema (versioned; kSqliteSchemaVersion is what this build writes):
//
//   schema_version (version)                       one row
//   runs        (id, run_key UNIQUE, content_sha256, name, uid, namespace,
//                phase, start_ns, end_ns, platform, fingerprint,
//                environment, labels, fairbench_version, cells_total,
//                cells_stored, stored_ns)
//   run_records (run_id, encoding, bytes, results)
//                results: the record's results.json, gzip; bytes: its size
//   run_targets (run_id, name, image, command, facts)      facts: JSON array
//   cells       (run_id, position, target, scenario, connections, rate,
//                repetition, state, requests_per_second, p50_us, p90_us,
//                p99_us, p999_us, errors_total, cpu_us_per_request,
//                memory_loaded_bytes, flags)
//   run_labels  (run_id, key, value)                       since version 2
//   run_targets.identity: which build ran (TargetRow)      since version 3
//
// Times are nanoseconds since the epoch (UTC); latencies microseconds.
// Opening a store migrates it: the migrations from its version up to this
// build's run in order in one transaction, so that a store is at one
// version or the next, never between. A store newer than this build is
// refused, naming both versions; an SQLite file without schema_version
// that holds tables of its own is refused as not a fairbench store.
//
// The file is in WAL mode with synchronous=FULL: a store that returned is
// on disk; readers do not block the writer. Several processes may share
// the file (a writer waits up to busy_timeout for another's transaction).
// One thread at a time per object.
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "controller/results/result_store.h"

namespace fairbench::results {

inline constexpr int kSqliteSchemaVersion = 3;

struct SqliteStoreOptions {
  bool create = true;  // false: the file must exist
  // Migrate no further than this (tests make older stores with it).
  int schema_version = kSqliteSchemaVersion;
  std::chrono::milliseconds busy_timeout{10000};
  // Tests: called inside Store's transaction after each insert ("run",
  // "target beast", "cell 3"), so that a test can kill the writer midway.
  std::function<void(std::string_view step)> between_inserts;
};

class SqliteResultStore final : public ResultStore {
 public:
  static Result<std::unique_ptr<SqliteResultStore>> Open(const std::string& path, SqliteStoreOptions options = {});
  ~SqliteResultStore() override;
  SqliteResultStore(const SqliteResultStore&) = delete;
  SqliteResultStore& operator=(const SqliteResultStore&) = delete;

  Result<StoreReceipt> Store(const report::RunRecord& record) override;
  Result<std::vector<StoredRun>> ListRuns(const RunFilter& filter) override;
  Result<Series> QuerySeries(const SeriesQuery& query) override;
  Result<std::vector<SeriesKey>> ListSeries(const std::string& target, const std::string& scenario) override;
  Result<std::string> LoadResultsJson(int64_t id) override;
  Result<std::vector<PrunedRun>> Prune(const PruneRule& rule) override;
  std::string Describe() const override { return "SQLite store " + path_; }

  int schema_version() const { return schema_version_; }

 private:
  SqliteResultStore(std::string path, sqlite3* db, SqliteStoreOptions options)
      : path_(std::move(path)), db_(db), options_(std::move(options)) {}
  Status Migrate();
  Status Fail(const std::string& what) const;  // Unavailable: "STORE: what: sqlite's message"

  const std::string path_;
  sqlite3* const db_;  // owned
  const SqliteStoreOptions options_;
  int schema_version_ = 0;
};

}  // namespace fairbench::results
