// RunStore: where one run's record lives — the local files of `fairbench
// run` (store/file_run_store.h: results.json and cells/*.txt in a folder),
// or Kubernetes objects owned by the run.
//
// The orchestrator saves the whole record after every change, so a finished
// cell is never lost, and resumes from what Load returns. Calls come from
// the orchestrator's thread.
#pragma once

#include <optional>

#include "api/cells.h"
#include "controller/report/run_record.h"
#include "common/status.h"

namespace fairbench::controller {

class RunStore {
 public:
  virtual ~RunStore() = default;
  // The stored record of this run, or nullopt when nothing is stored yet.
  // An unreadable record is an error, never "nothing".
  virtual Result<std::optional<report::RunRecord>> Load() = 0;
  // Replaces the stored record, atomically: a crash leaves the old one or
  // the new one.
  [[nodiscard]] virtual Status Save(const report::RunRecord& record) = 0;
  // One finished cell, before the record that includes it is saved (local
  // files: the cell's text in wrk's layout).
  [[nodiscard]] virtual Status SaveCell(const api::Cell& cell, const report::CellRecord& record) = 0;
};

}  // namespace fairbench::controller
