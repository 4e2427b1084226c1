#include "testing/support/temp_dir.h"

#include <cstdio>
#include <cstdlib>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>
#include <utility>
#include <vector>

namespace fairbench::testing {

Result<TempDir> TempDir::Create(const std::string& prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = (base != nullptr && *base != '\0') ? base : "/tmp";
  pattern += "/" + prefix + ".XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) {
    return Status::IoError("mkdtemp " + pattern + ": " + std::strerror(errno));
  }
  return TempDir(std::filesystem::path(buf.data()));
}

TempDir::TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, {})) {}

TempDir& TempDir::operator=(TempDir&& other) noexcept {
  if (this != &other) {
    Remove();
    path_ = std::exchange(other.path_, {});
  }
  return *this;
}

TempDir::~TempDir() { Remove(); }

std::string TempDir::File(const std::string& name) const { return (path_ / name).string(); }

void TempDir::Remove() {
  if (path_.empty()) return;
  // FAIRBENCH_KEEP_TEMP=1: kept, for a look at a failed test's logs.
  if (const char* keep = std::getenv("FAIRBENCH_KEEP_TEMP"); keep != nullptr && std::string(keep) == "1") {
    std::fprintf(stderr, "kept %s (FAIRBENCH_KEEP_TEMP)\n", path_.c_str());
    path_.clear();
    return;
  }
  std::error_code ec;  // best effort: a destructor has nobody to report to
  std::filesystem::remove_all(path_, ec);
  path_.clear();
}

}  // namespace fairbench::testing
