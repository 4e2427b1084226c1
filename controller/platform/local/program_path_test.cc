#include "controller/platform/local/program_path.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace fairbench::controller {
namespace {

namespace fs = std::filesystem;

class ProgramPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("fairbench-program-path-" + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "self");
    fs::create_directories(root_ / "path1");
    fs::create_directories(root_ / "path2");
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string Make(const fs::path& dir, const std::string& name, bool executable = true) {
    const fs::path p = root_ / dir / name;
    std::ofstream(p) << "#!/bin/sh\n";
    chmod(p.c_str(), executable ? 0755 : 0644);
    return p.string();
  }
  std::string Dir(const std::string& d) const { return (root_ / d).string(); }
  fs::path root_;
};

// Catches: the fairbench binary's folder not searched (the quick start
// would fail outside the build folder), or searched after PATH.
TEST_F(ProgramPathTest, BareNameIsFoundNextToFairbenchBeforePath) {
  const std::string beside = Make("self", "server");
  Make("path1", "server");
  auto r = ResolveProgram("server", Dir("self"), Dir("path1"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, beside);
}

// Catches: PATH ignored, or its order not kept; a non-executable file taken.
TEST_F(ProgramPathTest, ThenPathInOrderSkippingFilesThatCannotRun) {
  Make("path1", "server", /*executable=*/false);
  const std::string second = Make("path2", "server");
  auto r = ResolveProgram("server", Dir("self"), Dir("path1") + ":" + Dir("path2"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, second);
}

// Catches: a path with a slash rewritten (it is relative to the target's
// working directory and must reach exec as written).
TEST_F(ProgramPathTest, NamesWithASlashAreKeptAsWritten) {
  Make("self", "server");
  EXPECT_EQ(*ResolveProgram("./server", Dir("self"), Dir("path1")), "./server");
  EXPECT_EQ(*ResolveProgram("build/bin/server", Dir("self"), ""), "build/bin/server");
}

// Catches: a missing program reported without saying where it was looked for.
TEST_F(ProgramPathTest, MissingProgramNamesWhereItLooked) {
  auto r = ResolveProgram("no-such-server", Dir("self"), Dir("path1"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kNotFound);
  EXPECT_NE(r.status().message().find("no-such-server"), std::string::npos);
  EXPECT_NE(r.status().message().find(Dir("self")), std::string::npos);
  EXPECT_NE(r.status().message().find(Dir("path1")), std::string::npos);
}

}  // namespace
}  // namespace fairbench::controller
