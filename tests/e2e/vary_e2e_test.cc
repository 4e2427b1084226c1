// Answers that cannot be cached, on real `fairbench run`s (loopback, about
// a second of load per target): the misbehaving server's echo modes as
// local targets of one scenario GET /echo/{n} expecting "{n}" —
//   echo               answers each request its own N: the cell succeeds
//                      with its sampled answers verified, as many as the
//                      server's own count of requests ÷ verifyEvery;
//   echo-cached        answers every request with the first N it saw: the
//                      cell fails (AnswersNotVerified), never a result;
//   echo-wrong-length  one body byte more than its Content-Length:
//                      ContentLengthMismatch, with both numbers;
//   echo-no-date       no Date header: DateMissing;
//   echo-frozen-date   the same Date for ever: DateFrozen (a run of its
//                      own, long enough to see the clock stand still).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "testing/support/bin_dir.h"
#include "testing/support/subprocess.h"
#include "testing/support/temp_dir.h"
#include "tests/e2e/fairbench_run.h"

namespace fairbench {
namespace {

using namespace std::chrono_literals;
using e2e::ReadFile;
using nlohmann::json;

constexpr int kVerifyEvery = 10;
constexpr int kConnections = 2;

std::string Target(const std::string& name, const std::string& mode, const std::filesystem::path& stats) {
  return "  - name: " + name + "\n    local:\n      command: [" +
         testing::BinaryPath("fairbench-test-misbehaving-server") + ", --port, \"{port}\", --mode, " + mode +
         ", --stats-file, " + stats.string() + "]\n";
}

// Runs `targets` with the scenario and `duration` of load; the record of
// the run, or an empty object after a failure reported here.
json RunFairbench(const std::filesystem::path& d, const std::string& targets, const std::string& duration,
                  std::string* report) {
  const std::string run =
      "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: vary}\nspec:\n"
      "  targets:\n" +
      targets +
      "  scenarios:\n  - name: echo\n    request: {path: \"/echo/{n}\"}\n    expect: {status: 200, body: \"{n}\"}\n"
      "    vary: {seed: 42, verifyEvery: " +
      std::to_string(kVerifyEvery) +
      "}\n"
      "  load: {threads: 1, connections: [" +
      std::to_string(kConnections) + "], warmup: 0s, duration: " + duration + ", timeout: 1s}\n  cooldown: 0s\n";
  if (!e2e::RunFairbench(d, run).has_value()) return json::object();
  const std::filesystem::path results = d / "out" / "results.json";
  EXPECT_TRUE(std::filesystem::exists(results)) << ReadFile(d / "stderr.txt");
  if (!std::filesystem::exists(results)) return json::object();
  *report = ReadFile(d / "out" / "report.md");
  return json::parse(ReadFile(results));
}

const json* Cell(const json& record, const std::string& target) {
  for (const json& c : record["cells"]) {
    if (c["result"]["target"] == target) return &c;
  }
  return nullptr;
}

bool HasFlag(const json& cell, const std::string& flag) {
  if (!cell.contains("flags")) return false;
  for (const json& f : cell["flags"]) {
    if (f == flag) return true;
  }
  return false;
}

// Catches: varied requests or sampled answers not reaching a real run
// (the job, the agent, the record), a server that caches ranked as a
// result, the check before the load missing a Content-Length that
// disagrees with its body or a missing Date, the flags or the failure not
// in results.json and the report.
TEST(VaryE2eTest, HonestCachingAndBadHeaders) {
  auto dir = testing::TempDir::Create("fairbench-vary-e2e");
  ASSERT_TRUE(dir.ok());
  const std::filesystem::path d = dir->path();
  std::string report;
  const json record =
      RunFairbench(d,
                   Target("honest", "echo", d / "honest.json") + Target("cached", "echo-cached", d / "cached.json") +
                       Target("length", "echo-wrong-length", d / "length.json") +
                       Target("nodate", "echo-no-date", d / "nodate.json"),
                   "1s", &report);
  ASSERT_EQ(record["cells"].size(), 4u) << record.dump().substr(0, 2000);

  const json* honest = Cell(record, "honest");
  ASSERT_NE(honest, nullptr);
  const json& h = (*honest)["result"];
  ASSERT_EQ(h["state"], "Succeeded") << h.dump();
  ASSERT_TRUE(h.contains("answers")) << h.dump();
  EXPECT_EQ(h["answers"]["failed"], 0) << h.dump();
  EXPECT_FALSE(HasFlag(*honest, "DateMissing"));
  EXPECT_FALSE(HasFlag(*honest, "ContentLengthMismatch"));
  // The server counted every request it read: readiness probes, the two
  // checks before the load, the measured ones and at most one per
  // connection answered while draining. Each connection samples one
  // request in kVerifyEvery of its own, so the verified answers are the
  // server's count ÷ kVerifyEvery, less at most one per connection for
  // rounding, one per connection for draining and the few probes.
  const json stats = json::parse(ReadFile(d / "honest.json"));
  const double server = stats["requests_read"].get<double>();
  const double verified = h["answers"]["verified"].get<double>();
  std::cout << "honest: " << verified << " answers verified; the server read " << server << " requests" << std::endl;
  ASSERT_GT(server, 20.0 * kVerifyEvery);
  EXPECT_LE(verified, server / kVerifyEvery + 1);
  EXPECT_GE(verified, server / kVerifyEvery - 2 * kConnections - 2);

  const json* cached = Cell(record, "cached");
  ASSERT_NE(cached, nullptr);
  const json& c = (*cached)["result"];
  EXPECT_EQ(c["state"], "Failed") << c.dump();
  EXPECT_EQ(c["reason"], "AnswersNotVerified") << c.dump();
  EXPECT_GT(c["answers"]["failed"].get<int64_t>(), 0) << c.dump();
  EXPECT_EQ(c["answers"]["failed"], c["answers"]["verified"]) << c.dump();
  EXPECT_NE(report.find("AnswersNotVerified"), std::string::npos);

  const json* length = Cell(record, "length");
  ASSERT_NE(length, nullptr);
  EXPECT_TRUE(HasFlag(*length, "ContentLengthMismatch")) << length->dump().substr(0, 2000);
  const json& l = (*length)["result"]["answers"];
  // The server wrote the number it was asked for and one "\n" more.
  EXPECT_EQ(l["bodyBytes"].get<int64_t>(), l["contentLength"].get<int64_t>() + 1) << l.dump();
  EXPECT_NE(report.find("ContentLengthMismatch"), std::string::npos);
  EXPECT_NE(report.find("an answer said Content-Length " + std::to_string(l["contentLength"].get<int64_t>()) +
                        " and its body had " + std::to_string(l["bodyBytes"].get<int64_t>()) + " bytes"),
            std::string::npos)
      << report;

  const json* nodate = Cell(record, "nodate");
  ASSERT_NE(nodate, nullptr);
  EXPECT_TRUE(HasFlag(*nodate, "DateMissing")) << nodate->dump().substr(0, 2000);
  EXPECT_TRUE((*nodate)["result"]["answers"]["dateMissing"].get<bool>());
  EXPECT_EQ((*nodate)["result"]["answers"]["withoutDate"], (*nodate)["result"]["answers"]["verified"]);
  EXPECT_NE(report.find("DateMissing"), std::string::npos);
}

// Catches: a Date that stands still not flagged (sampled answers more than
// 2 s apart with the same value).
TEST(VaryE2eTest, FrozenDate) {
  auto dir = testing::TempDir::Create("fairbench-vary-e2e");
  ASSERT_TRUE(dir.ok());
  const std::filesystem::path d = dir->path();
  std::string report;
  const json record = RunFairbench(d, Target("frozen", "echo-frozen-date", d / "frozen.json"), "2600ms", &report);
  ASSERT_EQ(record["cells"].size(), 1u) << record.dump().substr(0, 2000);
  const json& cell = record["cells"][0];
  EXPECT_EQ(cell["result"]["state"], "Succeeded") << cell["result"].dump();
  EXPECT_TRUE(HasFlag(cell, "DateFrozen")) << cell.dump().substr(0, 2000);
  EXPECT_FALSE(HasFlag(cell, "DateMissing"));
  EXPECT_NE(report.find("DateFrozen"), std::string::npos);
}

}  // namespace
}  // namespace fairbench
