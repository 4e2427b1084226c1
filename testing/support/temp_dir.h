// TempDir: a fresh directory for one test, removed with everything in it
// when the object goes away.
//
// Created under $TMPDIR (or /tmp) with a recognisable prefix so that a
// directory left behind by a crashed test can be traced to fairbench.
// FAIRBENCH_KEEP_TEMP=1 keeps every such directory (its path printed on
// standard error), for a look at a failed test's files.
// Move-only; not thread-safe (a test owns its directory).
#pragma once

#include <filesystem>
#include <string>

#include "common/status.h"

namespace fairbench::testing {

class TempDir {
 public:
  // Creates the directory; the prefix helps when reading /tmp by hand.
  static Result<TempDir> Create(const std::string& prefix = "fairbench");

  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&& other) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();

  const std::filesystem::path& path() const { return path_; }
  // path() / name, as a string: what most callers pass on to C APIs.
  std::string File(const std::string& name) const;

 private:
  explicit TempDir(std::filesystem::path path) : path_(std::move(path)) {}
  void Remove();

  std::filesystem::path path_;
};

}  // namespace fairbench::testing
