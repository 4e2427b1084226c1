#include "controller/store/file_run_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace fairbench::controller {

Status WriteFileAtomically(const std::filesystem::path& path,
                           const std::function<void(const std::function<void(std::string_view)>&)>& produce) {
  // The old file stays until the new one is whole and on disk: a full disk,
  // a folder that became read-only or a crash leaves the old content (and no
  // temporary file). The error names the file and the system's reason.
  const std::string tmp = path.string() + ".tmp";
  auto fail = [&](const std::string& what, int err, bool unlink_tmp) {
    if (unlink_tmp) ::unlink(tmp.c_str());
    return Status::IoError("cannot " + what + " '" + path.string() + "': " + std::strerror(err));
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail("write", errno, false);
  // The text comes in pieces, written through a buffer of fixed size: the
  // file's whole text is never in memory.
  constexpr size_t kBuffer = 64 * 1024;
  std::string buffer;
  buffer.reserve(kBuffer);
  int error = 0;
  auto flush = [&] {
    for (size_t done = 0; error == 0 && done < buffer.size();) {
      const ssize_t n = ::write(fd, buffer.data() + done, buffer.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error = n < 0 ? errno : EIO;
        break;
      }
      done += static_cast<size_t>(n);
    }
    buffer.clear();
  };
  produce([&](std::string_view piece) {
    while (error == 0 && !piece.empty()) {
      const size_t take = std::min(piece.size(), kBuffer - buffer.size());
      buffer.append(piece.substr(0, take));
      piece.remove_prefix(take);
      if (buffer.size() == kBuffer) flush();
    }
  });
  if (error == 0) flush();
  if (error != 0) {
    ::close(fd);
    return fail("write", error, true);
  }
  // On disk before the rename, so that the name never points at a file
  // whose blocks were not written (ext4 and xfs may reorder them).
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    return fail("write", err, true);
  }
  if (::close(fd) != 0) return fail("write", errno, true);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail("replace", errno, true);
  // The rename itself on disk: the folder's entry.
  const std::string dir = path.has_parent_path() ? path.parent_path().string() : std::string(".");
  if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);  // best effort: some file systems refuse fsync on a folder
    ::close(dfd);
  }
  return Status::Ok();
}

Status WriteFileAtomically(const std::filesystem::path& path, const std::string& text) {
  return WriteFileAtomically(path, [&text](const std::function<void(std::string_view)>& sink) { sink(text); });
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
  return WriteFileAtomically(results_path(), [&record](const std::function<void(std::string_view)>& sink) {
    report::WriteJsonText(record, sink);
  });
}

Status FileRunStore::SaveCell(const api::Cell& cell, const report::CellRecord& record) {
  if (record.wrk_text.empty()) return Status::Ok();
  const std::filesystem::path cells = dir_ / "cells";
  std::error_code ec;
  std::filesystem::create_directories(cells, ec);
  if (ec) return Status::IoError("cannot create '" + cells.string() + "': " + ec.message());
  std::string name = cell.Key();
  std::replace(name.begin(), name.end(), '/', '_');
  // After wrk's lines, what the script's done() printed, as wrk prints it
  // (one block per agent: each ran its own done()).
  std::string text = record.wrk_text;
  for (const report::ScriptOutput& o : record.script_output) {
    text += "--- done() of agent " + o.agent + "\n" + o.text;
    if (!o.text.empty() && o.text.back() != '\n') text += "\n";
  }
  return WriteFileAtomically(cells / (name + ".txt"), text);
}

}  // namespace fairbench::controller
