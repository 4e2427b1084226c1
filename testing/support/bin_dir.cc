#include "testing/support/bin_dir.h"

#include <cstdlib>

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

}  // namespace fairbench::testing
