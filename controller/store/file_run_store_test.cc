#include "controller/store/file_run_store.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace fairbench::controller {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class FileRunStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fairbench-store-" + std::to_string(getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

report::RunRecord Record() {
  report::RunRecord r;
  r.run.metadata.name = "demo";
  api::Target t;
  t.name = "nginx";
  t.local = api::LocalProcess{};
  t.local->command = {"nginx"};
  r.run.spec.targets.push_back(t);
  report::CellRecord c;
  c.result.target = "nginx";
  c.result.scenario = "hello";
  c.result.connections = 100;
  c.result.requests = 12345;
  c.result.state = api::CellState::kSucceeded;
  r.cells.push_back(c);
  r.environment.notes = {"target nginx ran /usr/sbin/nginx"};
  return r;
}

// Catches: Load returning "nothing" as an error, or an empty record.
TEST_F(FileRunStoreTest, NothingStoredIsNulloptNotAnError) {
  FileRunStore store(dir_);
  EXPECT_FALSE(store.HasRecord());
  auto loaded = store.Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_FALSE(loaded->has_value());
}

// Catches: a field dropped between Save and Load (a resume would lose a
// finished cell's numbers), or a leftover temporary file.
TEST_F(FileRunStoreTest, SavedRecordLoadsBack) {
  FileRunStore store(dir_);
  ASSERT_TRUE(store.Save(Record()).ok());
  EXPECT_TRUE(store.HasRecord());
  EXPECT_FALSE(fs::exists(dir_ / "results.json.tmp"));
  auto loaded = store.Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_TRUE(loaded->has_value());
  const report::RunRecord& r = **loaded;
  EXPECT_EQ(r.run.metadata.name, "demo");
  ASSERT_EQ(r.cells.size(), 1u);
  EXPECT_EQ(r.cells[0].result.requests, 12345u);
  EXPECT_EQ(r.environment.notes, Record().environment.notes);
}

// results.json is written a cell at a time through a 64 KiB buffer: a run
// of 150 cells (about 200 KiB of text, with 2 KiB pieces that straddle the
// buffer's edge), one cell, and no cell give exactly the tree's text.
// Catches: a piece dropped or doubled at the buffer's edge, and the last
// partial buffer never flushed.
TEST_F(FileRunStoreTest, ResultsJsonWrittenInPiecesIsTheWholeText) {
  FileRunStore store(dir_);
  report::RunRecord r = Record();
  report::CellRecord c = r.cells[0];
  c.wrk_text = std::string(1500, 'w');
  r.cells.clear();
  for (int i = 0; i < 150; ++i) {
    c.result.requests = static_cast<uint64_t>(i) * 1000 + 7;
    r.cells.push_back(c);
  }
  for (size_t n : {size_t{150}, size_t{1}, size_t{0}}) {
    r.cells.resize(n);
    ASSERT_TRUE(store.Save(r).ok());
    const std::string text = ReadFile(dir_ / "results.json");
    if (n == 150) {
      EXPECT_GT(text.size(), 3 * 64 * 1024u);
    }
    EXPECT_EQ(text, report::ToJson(r).dump(1) + "\n") << n << " cells";
  }
}

// Catches: a broken results.json treated as "nothing stored" (a resume
// would start over and overwrite finished cells).
TEST_F(FileRunStoreTest, BrokenRecordIsAnErrorNamingTheFile) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "results.json") << "{\"run\": ";
  FileRunStore store(dir_);
  auto loaded = store.Load();
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("results.json"), std::string::npos);
}

// Catches: the cell file's name not derived from the cell's key, or a
// cell without text writing an empty file.
TEST_F(FileRunStoreTest, CellTextGoesToItsOwnFile) {
  FileRunStore store(dir_);
  api::Cell cell;
  cell.target = "nginx";
  cell.scenario = "hello";
  cell.connections = 100;
  cell.repetition = 1;
  report::CellRecord rec;
  rec.wrk_text = "Running 30s test @ http://127.0.0.1/\n";
  ASSERT_TRUE(store.SaveCell(cell, rec).ok());
  EXPECT_EQ(ReadFile(dir_ / "cells" / "nginx_hello_c100_r1.txt"), rec.wrk_text);
  api::Cell other = cell;
  other.scenario = "json";
  ASSERT_TRUE(store.SaveCell(other, report::CellRecord{}).ok());
  EXPECT_FALSE(fs::exists(dir_ / "cells" / "nginx_json_c100_r1.txt"));
}

// A write that fails leaves the stored record as it was, removes its
// temporary file and says which file and why. (The real causes — a full
// disk, a folder made read-only mid-run — are in tests/e2e/local_failure_test.)
// Catches: an error without the file's name or the system's reason, a
// record replaced by a partial one, a temporary file left behind.
TEST_F(FileRunStoreTest, AFailedSaveKeepsTheRecordAndSaysWhy) {
  FileRunStore store(dir_);
  ASSERT_TRUE(store.Save(Record()).ok());
  const std::string before = ReadFile(dir_ / "results.json");
  // The temporary file cannot be created: something else holds its name.
  fs::create_directories(dir_ / "results.json.tmp");
  report::RunRecord changed = Record();
  changed.cells.clear();
  Status s = store.Save(changed);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Status::Code::kIoError);
  EXPECT_EQ(s.message(), "cannot write '" + (dir_ / "results.json").string() + "': Is a directory");
  EXPECT_EQ(ReadFile(dir_ / "results.json"), before);
  fs::remove(dir_ / "results.json.tmp");
  // The rename fails (a folder holds the final name): the written
  // temporary file is removed.
  fs::create_directories(dir_ / "cells" / "nginx_hello_c100_r1.txt" / "x");
  api::Cell cell;
  cell.target = "nginx";
  cell.scenario = "hello";
  cell.connections = 100;
  cell.repetition = 1;
  report::CellRecord rec;
  rec.wrk_text = "Running 30s test\n";
  s = store.SaveCell(cell, rec);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("cannot replace '" + (dir_ / "cells" / "nginx_hello_c100_r1.txt").string() + "': ", 0),
            0u)
      << s.message();
  EXPECT_FALSE(fs::exists(dir_ / "cells" / "nginx_hello_c100_r1.txt.tmp"));
  auto loaded = store.Load();
  ASSERT_TRUE(loaded.ok() && loaded->has_value());
  EXPECT_EQ((*loaded)->cells.size(), 1u);
}

}  // namespace
}  // namespace fairbench::controller
