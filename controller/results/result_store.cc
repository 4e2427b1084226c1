#include "controller/results/result_store.h"

#include "controller/results/pg_result_store.h"
#include "controller/results/sqlite_result_store.h"

namespace fairbench::results {

const char* OutcomeName(StoreOutcome outcome) {
  switch (outcome) {
    case StoreOutcome::kStored: return "stored";
    case StoreOutcome::kUnchanged: return "unchanged";
    case StoreOutcome::kReplaced: return "replaced";
    case StoreOutcome::kKept: return "kept";
  }
  return "?";
}

std::string ReceiptText(const StoreReceipt& r) {
  const std::string id = std::to_string(r.id);
  switch (r.outcome) {
    case StoreOutcome::kStored: return "stored as run " + id;
    case StoreOutcome::kUnchanged: return "already stored as run " + id;
    case StoreOutcome::kReplaced: return "replaced run " + id + " (now " + std::to_string(r.cells) + " cells)";
    case StoreOutcome::kKept:
      return "kept run " + id + ": it holds " + std::to_string(r.cells) + " cells, this record " +
             std::to_string(r.offered_cells);
  }
  return "?";
}

Result<std::unique_ptr<ResultStore>> OpenResultStore(const std::string& location, const OpenOptions& options) {
  if (location.starts_with("postgres://") || location.starts_with("postgresql://")) {
    PgStoreOptions po;
    po.create = options.create;
    auto store = PgResultStore::Open(location, po);
    if (!store.ok()) return store.status();
    return std::unique_ptr<ResultStore>(std::move(*store));
  }
  SqliteStoreOptions so;
  so.create = options.create;
  auto store = SqliteResultStore::Open(location, so);
  if (!store.ok()) return store.status();
  return std::unique_ptr<ResultStore>(std::move(*store));
}

}  // namespace fairbench::results
