// ResultStore: where finished runs last — every run's whole record
// (results.json) and an index to query them by: runs by target, scenario,
// label and time, and the series of one target, scenario and load under one
// environment fingerprint over time (run_index.h says what is indexed).
//
// Two backends answer alike: SQLite (sqlite_result_store.h), the default,
// and PostgreSQL (pg_result_store.h). OpenResultStore picks the backend
// from the location: postgres:// and postgresql:// URLs are PostgreSQL
// (with create false the database must hold a store already), anything
// else is the path of an SQLite file.
//
// Storing is one transaction: a writer killed midway leaves the store as
// it was. The same run stored again keeps one copy (RunIndex::key): the
// record is replaced when the new one holds at least as many cells and
// differs, kept otherwise (an in-progress record fetched early, then the
// finished one, leaves the finished one; importing the early one again
// afterwards changes nothing).
//
// Errors: kUnavailable for a store that cannot be opened, read or written
// (no such directory, permissions, a file that is not a database, a newer
// schema, a database server that does not answer or refuses the login);
// kInvalidArgument for a bad query. A store object is used by one
// thread at a time; several processes may share the file.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "controller/report/run_record.h"
#include "common/status.h"

namespace fairbench::results {

enum class StoreOutcome {
  kStored,     // a run new to the store
  kUnchanged,  // the same record was there already
  kReplaced,   // the same run, now with at least as many cells: the new record replaced the old
  kKept,       // the same run, but the store's record has more cells: it was kept
};
const char* OutcomeName(StoreOutcome outcome);  // "stored", "unchanged", "replaced", "kept"

struct StoreReceipt {
  int64_t id = 0;  // the run's id in the store
  StoreOutcome outcome = StoreOutcome::kStored;
  int64_t cells = 0;          // cells of the record now in the store
  int64_t offered_cells = 0;  // cells of the record given
};
// For people: "stored as run 12", "already stored as run 12", "replaced
// run 12 (now 8 cells)", "kept run 12: it holds 8 cells, this record 5".
std::string ReceiptText(const StoreReceipt& receipt);

struct RunFilter {
  std::string target;                                       // empty: any
  std::string scenario;                                     // empty: any
  std::vector<std::pair<std::string, std::string>> labels;  // all must match
  std::optional<int64_t> since_ns;                          // runs started at or after this
  int64_t limit = 50;                                       // the latest this many; 0: all
};

struct StoredRun {
  int64_t id = 0;
  std::string name, uid, ns;
  std::string phase;
  std::optional<int64_t> start_ns, end_ns;
  std::string platform;
  std::string fingerprint;
  std::map<std::string, std::string> labels;
  int64_t cells = 0, cells_total = 0;
  std::vector<std::string> targets;     // in spec order
  std::vector<std::string> identities;  // per target, as targets: TargetRow::identity ("" not recorded)
};

struct SeriesQuery {
  std::string target, scenario;
  int64_t connections = 0;
  int64_t rate = 0;         // 0: closed loop
  std::string fingerprint;  // a prefix of one; empty: the fingerprint of the latest run with this series
};

// One run's point of a series: its repetitions of the cell, summarised.
struct SeriesPoint {
  int64_t run_id = 0;
  std::string run_name;
  std::optional<int64_t> start_ns;
  int64_t repetitions = 0;         // cells of this target/scenario/load in the run
  int64_t succeeded = 0;           // of them, succeeded; the figures below are over these
  double requests_per_second = 0;  // mean
  double p99_us = 0;               // mean
  uint64_t errors = 0;             // summed over every repetition
  std::string identity;            // the target's build in that run (TargetRow::identity); "" not recorded
};

// One series' identity: what `history check` walks.
struct SeriesKey {
  std::string target, scenario;
  int64_t connections = 0;
  int64_t rate = 0;
};

struct Series {
  std::string fingerprint;                      // the full one the points share
  std::vector<SeriesPoint> points;              // oldest first
  int64_t runs_elsewhere = 0;                   // runs with this series under other fingerprints, left out
  std::vector<std::string> other_fingerprints;  // those fingerprints
};

// Retention (`history prune`): a run goes when it started before
// `older_than_ns`, or when it is not among the newest `keep_per_series`
// runs of any series it is part of (a series as history makes it: target,
// scenario, connections and rate under one fingerprint; a run without
// cells is in no series). Either rule, or both (a run goes when either
// says so).
struct PruneRule {
  std::optional<int64_t> older_than_ns;
  std::optional<int64_t> keep_per_series;
  bool dry_run = false;  // say what would go, remove nothing
};

struct PrunedRun {
  int64_t id = 0;
  std::string name;
  std::optional<int64_t> start_ns;
};

class ResultStore {
 public:
  virtual ~ResultStore() = default;

  virtual Result<StoreReceipt> Store(const report::RunRecord& record) = 0;
  virtual Result<std::vector<StoredRun>> ListRuns(const RunFilter& filter) = 0;
  virtual Result<Series> QuerySeries(const SeriesQuery& query) = 0;
  // Every series in the store, under any fingerprint, ordered by target,
  // scenario, connections and rate; `target` and `scenario` (empty: any)
  // narrow them.
  virtual Result<std::vector<SeriesKey>> ListSeries(const std::string& target, const std::string& scenario) = 0;
  // The record's results.json as stored (report::ToJsonText); NotFound
  // for an unknown id.
  virtual Result<std::string> LoadResultsJson(int64_t id) = 0;
  // Removes the runs `rule` selects, their records and index rows with
  // them, in one transaction; the runs removed (or that would be), oldest
  // first.
  virtual Result<std::vector<PrunedRun>> Prune(const PruneRule& rule) = 0;
  // "SQLite store /path/results.db", "PostgreSQL store
  // postgresql://user@host:5432/db" (never a password): for messages.
  virtual std::string Describe() const = 0;
};

struct OpenOptions {
  // false: the store must exist already (history reads; it never makes an
  // empty store where a path was mistyped).
  bool create = true;
};

Result<std::unique_ptr<ResultStore>> OpenResultStore(const std::string& location, const OpenOptions& options = {});

}  // namespace fairbench::results
