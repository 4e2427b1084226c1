#include "controller/store/file_run_store.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace fairbench::controller {

Status WriteFileAtomically(const std::filesystem::path& path, const std::string& text) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) return Status::IoError("cannot write '" + tmp.string() + "'");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Status::IoError("cannot write '" + path.string() + "': " + ec.message());
  return Status::Ok();
}

bool FileRunStore::HasRecord() const {
  std::error_code ec;
  return std::filesystem::exists(results_path(), ec);
}

Result<std::optional<report::RunRecord>> FileRunStore::Load() {
  if (!HasRecord()) return std::optional<report::RunRecord>();
  std::ifstream in(results_path());
  if (!in) return Status::IoError("cannot read '" + results_path().string() + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  auto record = report::RunRecordFromJsonText(ss.str(), results_path().string());
  if (!record.ok()) return record.status();
  return std::optional<report::RunRecord>(std::move(*record));
}

Status FileRunStore::Save(const report::RunRecord& record) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return Status::IoError("cannot create '" + dir_.string() + "': " + ec.message());
  return WriteFileAtomically(results_path(), report::ToJson(record).dump(1) + "\n");
}

Status FileRunStore::SaveCell(const api::Cell& cell, const report::CellRecord& record) {
  if (record.wrk_text.empty()) return Status::Ok();
  const std::filesystem::path cells = dir_ / "cells";
  std::error_code ec;
  std::filesystem::create_directories(cells, ec);
  if (ec) return Status::IoError("cannot create '" + cells.string() + "': " + ec.message());
  std::string name = cell.Key();
  std::replace(name.begin(), name.end(), '/', '_');
  return WriteFileAtomically(cells / (name + ".txt"), record.wrk_text);
}

}  // namespace fairbench::controller
