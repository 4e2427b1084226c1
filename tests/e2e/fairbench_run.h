// What the end-to-end tests of tests/e2e share: a run file given to the
// real `fairbench run` in a folder of the test's, and its files read back.
// Header-only; each test binary includes it once.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "testing/support/bin_dir.h"
#include "testing/support/subprocess.h"

namespace fairbench::e2e {

inline std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Writes `yaml` to DIR/run.yaml and runs `fairbench run` on it (output
// DIR/out, its own lock file, stdout and stderr in DIR/stdout.txt and
// DIR/stderr.txt). The exit code; nullopt after a failure to start or
// finish within `timeout`, reported here.
inline std::optional<int> RunFairbench(const std::filesystem::path& dir, const std::string& yaml,
                                       std::chrono::seconds timeout = std::chrono::seconds(90)) {
  std::ofstream(dir / "run.yaml") << yaml;
  testing::SubprocessOptions o;
  o.argv = {testing::BinaryPath("fairbench"), "run",         (dir / "run.yaml").string(), "--output",
            (dir / "out").string(),           "--lock-file", (dir / "lock").string()};
  o.stdout_to = testing::Redirect::File((dir / "stdout.txt").string());
  o.stderr_to = testing::Redirect::File((dir / "stderr.txt").string());
  auto p = testing::Subprocess::Start(o);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  if (!p.ok()) return std::nullopt;
  auto status = p->Wait(timeout);
  EXPECT_TRUE(status.ok()) << "fairbench run did not finish within " << timeout.count() << " s";
  if (!status.ok()) return std::nullopt;
  return status->exit_code;
}

}  // namespace fairbench::e2e
