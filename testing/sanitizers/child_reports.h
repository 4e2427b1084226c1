// Sanitizer reports of the processes a test starts fail that test.
//
// Many tests start fairbench's own binaries (controller, agent, test API
// server, kubelet, targets), sanitized like the test itself. A report in
// such a child goes to its stderr, which the test usually sends to a log
// file or /dev/null, and the child's exit status is often not what the
// test checks (it is killed at the end). So, in sanitizer builds, every
// test binary links child_reports.cc: before main() it points log_path in
// ASAN_OPTIONS, UBSAN_OPTIONS, LSAN_OPTIONS or TSAN_OPTIONS, which the
// children inherit, at a directory of its own (the test's own runtime
// has already read its options and keeps reporting to stderr), and after
// the last test a failure quotes every report found there. The directory is
// made under $FAIRBENCH_SANITIZER_REPORTS (the sanitizer presets set it;
// scripts/sanitize counts what is left there) or $TMPDIR; it is removed
// when empty.
#pragma once

#include <string>
#include <vector>

namespace fairbench::testing {

// The directory children's reports go to; empty outside sanitizer builds
// (or when it could not be made).
const std::string& ChildReportsDir();

// Reads and removes the reports children have written so far: for a test
// that provokes one on purpose.
std::vector<std::string> TakeChildReports();

}  // namespace fairbench::testing
