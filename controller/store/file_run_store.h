// FileRunStore: a run's record as local files, the store of `fairbench run`:
//
//   DIR/results.json     the whole record (report/run_record.h), replaced
//                        atomically after every change
//   DIR/cells/KEY.txt    each finished cell in wrk's layout
//
// Load reads results.json back (nothing there: nullopt).
#pragma once

#include <filesystem>
#include <string>

#include "controller/orchestrator/run_store.h"

namespace fairbench::controller {

class FileRunStore final : public RunStore {
 public:
  explicit FileRunStore(std::filesystem::path dir) : dir_(std::move(dir)) {}

  // True when DIR/results.json exists (a run to continue, or to keep).
  bool HasRecord() const;
  std::filesystem::path results_path() const { return dir_ / "results.json"; }

  Result<std::optional<report::RunRecord>> Load() override;
  Status Save(const report::RunRecord& record) override;
  Status SaveCell(const api::Cell& cell, const report::CellRecord& record) override;

 private:
  std::filesystem::path dir_;
};

// Writes `text` to a temporary file beside `path`, then renames it over
// `path`: readers see the old content or the new, never a mix.
[[nodiscard]] Status WriteFileAtomically(const std::filesystem::path& path, const std::string& text);

}  // namespace fairbench::controller
