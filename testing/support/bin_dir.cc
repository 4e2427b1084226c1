#include "testing/support/bin_dir.h"

#include <unistd.h>

#include <cstdlib>
#include <sstream>

#ifndef FAIRBENCH_SOURCE_DIR
#error "FAIRBENCH_SOURCE_DIR must be defined by the build"
#endif
#ifndef FAIRBENCH_BIN_DIR
#error "FAIRBENCH_BIN_DIR must be defined by the build"
#endif

namespace fairbench::testing {

std::string BinDir() {
  const char* env = std::getenv("FAIRBENCH_BIN_DIR");
  if (env != nullptr && *env != '\0') return env;
  return FAIRBENCH_BIN_DIR;
}

std::string BinaryPath(const std::string& name) { return BinDir() + "/" + name; }

std::string FindTool(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = dir + "/" + name;
    if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  const std::string local = std::string(FAIRBENCH_SOURCE_DIR) + "/.tools/bin/" + name;
  return access(local.c_str(), X_OK) == 0 ? local : "";
}

}  // namespace fairbench::testing
