#include "testing/support/temp_dir.h"

#include <gtest/gtest.h>

#include <fstream>

namespace fairbench::testing {
namespace {

TEST(TempDirTest, CreatesAndRemovesWithContents) {
  std::filesystem::path where;
  {
    auto dir = TempDir::Create("fairbench-tempdir-test");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    where = dir->path();
    EXPECT_TRUE(std::filesystem::is_directory(where));
    std::filesystem::create_directories(where / "a" / "b");
    std::ofstream(dir->File("a/b/file")) << "x";
    TempDir moved = std::move(*dir);
    EXPECT_EQ(moved.path(), where);
  }
  EXPECT_FALSE(std::filesystem::exists(where));
}

TEST(TempDirTest, TwoDirectoriesDiffer) {
  auto a = TempDir::Create();
  auto b = TempDir::Create();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->path(), b->path());
}

}  // namespace
}  // namespace fairbench::testing
