// BinaryPath: where tests find fairbench's own programs.
//
// CMake puts every program in <build>/bin and compiles that directory into
// the support library; the environment variable FAIRBENCH_BIN_DIR overrides
// it (for running tests against an installed tree). Thread-safe.
#pragma once

#include <string>

namespace fairbench::testing {

std::string BinDir();
// BinDir() + "/" + name; the file need not exist (the caller's Start fails).
std::string BinaryPath(const std::string& name);
// A tool the tests run (kubectl, helm): the first executable `name` on PATH,
// else in the checkout's .tools/bin (scripts/setup --with-tools puts them
// there); "" when neither has it.
std::string FindTool(const std::string& name);

}  // namespace fairbench::testing
