// PgResultStore: the ResultStore in a PostgreSQL database (libpq), for a
// store that several machines share: `--store postgresql://user@host/db`.
//
// It answers every query as SqliteResultStore does — the same rows (from
// RunIndex), the same orders, the same ids, the same receipts — so that
// `history` reads the same from either (result_store_conformance_test
// proves it on a real server). The schema is SQLite's, table for table
// (sqlite_result_store.h), with PostgreSQL's types (BYTEA for the record)
// and three differences that keep the answers the same:
//
//   - run_targets has a `position` column: the targets' spec order, which
//     SQLite keeps in its rowids;
//   - the columns that queries sort by (target, scenario, fingerprint) are
//     COLLATE "C": byte order, as SQLite's, whatever the database's locale;
//   - runs.id is a plain BIGINT that Store sets to the largest id plus one,
//     SQLite's rule for its rowids (a sequence would skip ids on rollback).
//
// Writers (Store, Prune, migrations) take one transaction-level advisory
// lock per database first, as SQLite's BEGIN IMMEDIATE does: two processes
// storing the same run at once keep one copy (the second finds the first's
// run), and the largest id plus one is free. A writer that dies midway
// leaves nothing: the server rolls its transaction back when the
// connection drops. Readers take no lock.
//
// Opening connects (connect_timeout 5 s unless the URL gives one) and
// migrates: a database without schema_version gets the schema (with
// create), unless it holds tables named like the store's (refused as not
// a fairbench store); a newer schema is refused naming both versions.
// Errors name the store as Describe() gives it — the URL without its
// password — and libpq's reason. One thread at a time per object; the
// connection is not shared across fork().
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "controller/results/result_store.h"

struct pg_conn;

namespace fairbench::results {

inline constexpr int kPgSchemaVersion = 3;

struct PgStoreOptions {
  // false: the database must hold a store already (history reads; it does
  // not make an empty store where a URL was mistyped).
  bool create = true;
  // Migrate no further than this (tests make older stores with it).
  int schema_version = kPgSchemaVersion;
  // Used when the URL has no connect_timeout of its own.
  std::chrono::seconds connect_timeout{5};
  // Tests: called inside Store's transaction after each insert ("run",
  // "target beast", "cell 3"), so that a test can kill the writer midway.
  std::function<void(std::string_view step)> between_inserts;
};

class PgResultStore final : public ResultStore {
 public:
  // `url`: postgres:// or postgresql:// (libpq's URI form; its query
  // parameters, sslmode=… among them, are libpq's).
  static Result<std::unique_ptr<PgResultStore>> Open(const std::string& url, PgStoreOptions options = {});
  ~PgResultStore() override;
  PgResultStore(const PgResultStore&) = delete;
  PgResultStore& operator=(const PgResultStore&) = delete;

  Result<StoreReceipt> Store(const report::RunRecord& record) override;
  Result<std::vector<StoredRun>> ListRuns(const RunFilter& filter) override;
  Result<Series> QuerySeries(const SeriesQuery& query) override;
  Result<std::vector<SeriesKey>> ListSeries(const std::string& target, const std::string& scenario) override;
  Result<std::string> LoadResultsJson(int64_t id) override;
  Result<std::vector<PrunedRun>> Prune(const PruneRule& rule) override;
  // "PostgreSQL store postgresql://user@host:port/db": never the password.
  std::string Describe() const override { return "PostgreSQL store " + safe_url_; }

  int schema_version() const { return schema_version_; }

 private:
  PgResultStore(std::string safe_url, std::string password, pg_conn* conn, PgStoreOptions options)
      : safe_url_(std::move(safe_url)), password_(std::move(password)), conn_(conn), options_(std::move(options)) {}
  Status Migrate();
  // Unavailable: "STORE: what: the server's message" (the password, should
  // it appear, blanked).
  Status Fail(const std::string& what, const std::string& why) const;

  const std::string safe_url_;
  const std::string password_;  // only to keep it out of messages
  pg_conn* const conn_;         // owned
  const PgStoreOptions options_;
  int schema_version_ = 0;
};

// "postgresql://user@host:port/db" from a libpq URL or connection string:
// what messages name the store by.
std::string PgUrlWithoutPassword(const std::string& url);

}  // namespace fairbench::results
