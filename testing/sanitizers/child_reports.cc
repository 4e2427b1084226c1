#include "testing/sanitizers/child_reports.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <vector>

namespace fairbench::testing {
namespace {

namespace fs = std::filesystem;

std::vector<const char*> OptionVariables() {
#if defined(__SANITIZE_THREAD__)
  return {"TSAN_OPTIONS"};
#elif defined(__SANITIZE_ADDRESS__)
  // UBSan and LSan run inside ASan's runtime; each reads its own variable.
  return {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"};
#else
  return {};
#endif
}

std::string& Dir() {
  static std::string dir;
  return dir;
}

// Runs before main(), while the process has one thread (setenv is safe).
struct Setup {
  Setup() {
    if (OptionVariables().empty()) return;
    const char* base_env = getenv("FAIRBENCH_SANITIZER_REPORTS");
    const char* tmp = getenv("TMPDIR");
    fs::path base =
        base_env != nullptr && *base_env != '\0' ? base_env : (tmp != nullptr && *tmp != '\0' ? tmp : "/tmp");
    std::error_code ec;
    fs::create_directories(base, ec);
    std::string name = program_invocation_short_name;
    std::string templ = (base / (name + "-XXXXXX")).string();
    if (mkdtemp(templ.data()) == nullptr) return;  // then children report to their stderr
    Dir() = templ;
    for (const char* var : OptionVariables()) {
      const char* old = getenv(var);
      std::string value = old != nullptr ? old : "";
      if (!value.empty()) value += ':';
      value += "log_path=" + templ + "/report";  // the runtime appends .<pid>
      setenv(var, value.c_str(), 1);
    }
  }
  // An empty directory goes (a --gtest_list_tests run, a clean test); one
  // with reports stays for scripts/sanitize.
  ~Setup() {
    if (Dir().empty()) return;
    std::error_code ec;
    if (fs::is_empty(Dir(), ec)) fs::remove(Dir(), ec);
  }
};
Setup setup;

std::vector<fs::path> ReportFiles() {
  std::vector<fs::path> files;
  if (Dir().empty()) return files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(Dir(), ec)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string Read(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// After the last test of the binary (ctest runs one test per process): a
// report by any child fails the run, quoted in full.
class ChildReportsCheck : public ::testing::Environment {
 public:
  void TearDown() override {
    for (const fs::path& file : ReportFiles()) {
      ADD_FAILURE() << "a process this test started wrote a sanitizer report (" << file.string() << "):\n"
                    << Read(file);
    }
  }
};
[[maybe_unused]] ::testing::Environment* const check =
    OptionVariables().empty() ? nullptr : ::testing::AddGlobalTestEnvironment(new ChildReportsCheck);

}  // namespace

const std::string& ChildReportsDir() { return Dir(); }

std::vector<std::string> TakeChildReports() {
  std::vector<std::string> reports;
  for (const fs::path& file : ReportFiles()) {
    reports.push_back(Read(file));
    std::error_code ec;
    fs::remove(file, ec);
  }
  return reports;
}

}  // namespace fairbench::testing
