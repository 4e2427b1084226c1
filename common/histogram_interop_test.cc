// fairbench's histograms are HdrHistogram's: an independent implementation
// (hdr-histogram-js, installed by scripts/setup --with-tools) reads what we
// encode, and we read what it encodes, with the same counts and the same
// percentiles.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "common/base64.h"
#include "common/histogram.h"
#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"

namespace fairbench {
namespace {

const std::string kModules = FAIRBENCH_SOURCE_DIR "/.tools/node_modules";

// Runs a node script; returns its stdout.
std::string Node(const std::string& script, const std::filesystem::path& dir) {
  EXPECT_TRUE(std::filesystem::exists(kModules + "/hdr-histogram-js"))
      << "hdr-histogram-js is missing: run scripts/setup --with-tools";
  const auto script_path = dir / "script.js";
  std::ofstream(script_path) << script;
  testing::SubprocessOptions o;
  o.argv = {"node", script_path.string()};
  o.env["NODE_PATH"] = kModules;
  o.stdout_to = testing::Redirect::File((dir / "out.txt").string());
  o.stderr_to = testing::Redirect::File((dir / "err.txt").string());
  auto p = testing::Subprocess::Start(o);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  if (!p.ok()) return "";
  auto status = p->Wait(std::chrono::seconds(30));
  std::ifstream out(dir / "out.txt"), err(dir / "err.txt");
  std::stringstream o_ss, e_ss;
  o_ss << out.rdbuf();
  e_ss << err.rdbuf();
  EXPECT_TRUE(status.ok() && status->success()) << e_ss.str();
  return o_ss.str();
}

Histogram Sample() {
  Histogram h;
  std::mt19937_64 rng(11);
  std::lognormal_distribution<double> body(std::log(500.0), 1.2);
  for (int i = 0; i < 200000; ++i) h.Record(static_cast<int64_t>(body(rng)) + 1);
  h.Record(3'000'000'000);  // 50 minutes: the top of the range
  return h;
}

TEST(HistogramInteropTest, HdrHistogramJsReadsOurEncoding) {
  auto dir = testing::TempDir::Create("fairbench-hdr");
  ASSERT_TRUE(dir.ok());
  const Histogram h = Sample();
  std::ofstream(dir->path() / "h.txt") << Base64Encode(h.EncodeCompressed());
  const std::string out = Node(R"(
const hdr = require("hdr-histogram-js");
const text = require("fs").readFileSync(__dirname + "/h.txt", "utf8").trim();
const h = hdr.decodeFromCompressedBase64(text, 64, false);
const ps = [50, 75, 90, 99, 99.9, 99.99];
console.log([h.totalCount].concat(ps.map(p => h.getValueAtPercentile(p))).join(" "));
)",
                               dir->path());
  std::istringstream in(out);
  uint64_t total = 0;
  ASSERT_TRUE(in >> total) << out;
  EXPECT_EQ(total, h.count());
  for (double p : {50.0, 75.0, 90.0, 99.0, 99.9, 99.99}) {
    uint64_t theirs = 0;
    ASSERT_TRUE(in >> theirs);
    EXPECT_EQ(theirs, h.ValueAtPercentile(p)) << "p" << p;
  }
}

TEST(HistogramInteropTest, WeReadHdrHistogramJsEncoding) {
  auto dir = testing::TempDir::Create("fairbench-hdr");
  ASSERT_TRUE(dir.ok());
  const std::string out = Node(R"(
const hdr = require("hdr-histogram-js");
const h = hdr.build({lowestDiscernibleValue: 1, highestTrackableValue: 3600000000, numberOfSignificantValueDigits: 3,
                     bitBucketSize: 64, useWebAssembly: false});
for (let i = 1; i <= 100000; i++) h.recordValue((i * 7919) % 2000000 + 1);
h.recordValueWithCount(42, 1000);
console.log(hdr.encodeIntoCompressedBase64(h));
)",
                               dir->path());
  std::string text = out;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  auto bytes = Base64Decode(text);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto theirs = Histogram::DecodeCompressed(*bytes);
  ASSERT_TRUE(theirs.ok()) << theirs.status().ToString() << " " << text.substr(0, 40);
  Histogram ours;
  for (int64_t i = 1; i <= 100000; ++i) ours.Record((i * 7919) % 2000000 + 1);
  for (int i = 0; i < 1000; ++i) ours.Record(42);
  ASSERT_EQ(theirs->count(), ours.count());
  for (int i = 0; i < Histogram::kCountsLen; ++i)
    ASSERT_EQ(theirs->CountAtIndex(i), ours.CountAtIndex(i)) << "index " << i;
}

}  // namespace
}  // namespace fairbench
