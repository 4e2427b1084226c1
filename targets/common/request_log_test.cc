#include "targets/common/request_log.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "targets/nginx/access_log_tail.h"
#include "testing/support/temp_dir.h"

namespace fairbench::targets {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(RequestCounterTest, SumsAcrossThreads) {
  RequestCounter counter;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&counter] {
      for (int i = 0; i < 10000; ++i) counter.Increment();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(counter.Total(), 80000u);
}

TEST(RequestLogTest, SamplerWritesAlignedIntervalsAndAMatchingTotal) {
  auto dir = testing::TempDir::Create();
  ASSERT_TRUE(dir.ok());
  auto log = RequestLog::Open(dir->File("r.log"));
  ASSERT_TRUE(log.ok());
  RequestCounter counter;
  {
    RequestLogSampler sampler(&counter, log->get());
    sampler.Start();
    for (int i = 0; i < 5; ++i) {
      for (int j = 0; j < 7; ++j) counter.Increment();
      std::this_thread::sleep_for(std::chrono::milliseconds(60));
    }
    sampler.Stop();
  }
  std::istringstream in(Slurp(dir->File("r.log")));
  std::string a;
  uint64_t b = 0, sum = 0, total = 0;
  int lines = 0;
  while (in >> a >> b) {
    if (a == "total") {
      total = b;
    } else {
      EXPECT_EQ(std::stoll(a) % 100, 0);
      sum += b;
      ++lines;
    }
  }
  EXPECT_EQ(total, 35u);
  EXPECT_EQ(sum, 35u);
  EXPECT_GE(lines, 2);
}

TEST(RequestLogTest, IdleRunWritesOnlyTheTotalAndRunsAppend) {
  auto dir = testing::TempDir::Create();
  ASSERT_TRUE(dir.ok());
  for (int run = 0; run < 2; ++run) {
    auto log = RequestLog::Open(dir->File("r.log"));
    ASSERT_TRUE(log.ok());
    RequestCounter counter;
    RequestLogSampler sampler(&counter, log->get());
    sampler.Start();
    sampler.Stop();
  }
  EXPECT_EQ(Slurp(dir->File("r.log")), "total 0\ntotal 0\n");
}

TEST(RequestLogTest, SampledLogIsNothingWithoutAPathAndSamplesTheCounterWithOne) {
  RequestCounter counter;
  auto none = SampledRequestLog::Start("", &counter);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr);

  auto dir = testing::TempDir::Create();
  ASSERT_TRUE(dir.ok());
  EXPECT_FALSE(SampledRequestLog::Start(dir->File("no/such/dir/r.log"), &counter).ok());
  auto log = SampledRequestLog::Start(dir->File("r.log"), &counter);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ASSERT_NE(*log, nullptr);
  for (int i = 0; i < 3; ++i) counter.Increment();
  (*log)->Stop();
  (*log)->Stop();  // idempotent
  log->reset();
  const std::string text = Slurp(dir->File("r.log"));
  EXPECT_NE(text.find(" 3\ntotal 3\n"), std::string::npos) << text;
}

TEST(AccessLogTailTest, BucketsNginxLinesIntoIntervals) {
  auto dir = testing::TempDir::Create();
  ASSERT_TRUE(dir.ok());
  auto log = RequestLog::Open(dir->File("r.log"));
  ASSERT_TRUE(log.ok());
  AccessLogTail tail(dir->File("access.log"), log->get(), /*grace_ms=*/300);
  ASSERT_TRUE(tail.Poll(1000).ok());  // no access log yet: fine
  {
    std::ofstream out(dir->File("access.log"));
    out << "1700000000.001\n1700000000.099\n1700000000.100\n1700000001.250\n1700000001.2";  // last line incomplete
  }
  ASSERT_TRUE(tail.Poll(1700000000500).ok());
  EXPECT_EQ(Slurp(dir->File("r.log")), "1700000000000 2\n1700000000100 1\n");
  {
    std::ofstream out(dir->File("access.log"), std::ios::app);
    out << "99\n";
  }
  ASSERT_TRUE(tail.Finish().ok());
  EXPECT_EQ(Slurp(dir->File("r.log")), "1700000000000 2\n1700000000100 1\n1700000001200 2\ntotal 5\n");
  EXPECT_EQ(tail.total(), 5u);
}

}  // namespace
}  // namespace fairbench::targets
