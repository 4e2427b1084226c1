// FileRunStore: a run's record as local files, the store of `fairbench run`:
//
//   DIR/results.json     the whole record (report/run_record.h), replaced
//                        atomically after every change
//   DIR/cells/KEY.txt    each finished cell in wrk's layout
//
// Load reads results.json back (nothing there: nullopt).
#pragma once

#include <filesystem>
#include <functional>
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

// Writes `text` to a temporary file beside `path` (PATH.tmp), flushes it to
// disk (fsync), then renames it over `path`: readers — and a machine that
// lost power — see the old content or the new, never a mix. On failure the
// old file is untouched, the temporary file removed, and the error is
// "cannot write 'PATH': <the system's reason>" (No space left on device,
// Read-only file system…).
[[nodiscard]] Status WriteFileAtomically(const std::filesystem::path& path, const std::string& text);
// The same with the text handed over in pieces by `produce` (which calls
// its argument once per piece), written through a fixed 64 KiB buffer.
[[nodiscard]] Status WriteFileAtomically(
    const std::filesystem::path& path,
    const std::function<void(const std::function<void(std::string_view)>&)>& produce);

}  // namespace fairbench::controller
