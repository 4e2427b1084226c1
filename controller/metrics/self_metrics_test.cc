#include "controller/metrics/self_metrics.h"

#include <gtest/gtest.h>

#include <chrono>

#include "controller/metrics/exposition.h"

namespace fairbench::metrics {
namespace {

using namespace std::chrono_literals;

double Value(const std::string& text, const std::string& name) {
  const size_t at = ("\n" + text).find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::stod(text.substr(at + name.size() + 1));
}

TEST(SelfMetricsTest, ProcessMetricsDescribeThisProcess) {
  MetricRegistry r;
  RegisterSelfMetrics(r, "1.2.3", nullptr);
  const std::string text = RenderText(r.Collect());
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_GT(Value(text, "process_resident_memory_bytes"), 1 << 20);
  EXPECT_GE(Value(text, "process_open_fds"), 3);  // at least stdin, stdout, stderr
  EXPECT_GT(Value(text, "process_max_fds"), 0);
  EXPECT_GE(Value(text, "process_cpu_seconds_total"), 0);
  EXPECT_NEAR(Value(text, "process_start_time_seconds"), now, 600);
  EXPECT_LE(Value(text, "process_start_time_seconds"), now + 1);
  EXPECT_EQ(Value(text, "fairbench_build_info{version=\"1.2.3\"}"), 1);
  EXPECT_EQ(text.find("fairbench_remote_write"), std::string::npos) << "no remote write, no series";
}

TEST(SelfMetricsTest, RemoteWriteDropsAreExported) {
  RemoteWriterOptions o;
  o.url = "http://127.0.0.1:1/api/v1/write";  // nothing listens
  o.max_queued_samples = 10;
  auto w = RemoteWriter::Start(o);
  ASSERT_TRUE(w.ok());
  MetricRegistry r;
  RegisterSelfMetrics(r, "x", w->get());
  std::vector<RemoteSample> batch(25, RemoteSample{{{"__name__", "x"}}, 1, 1});
  EXPECT_FALSE((*w)->Enqueue(batch));
  (*w)->Stop(0ms);
  const std::string text = RenderText(r.Collect());
  EXPECT_EQ(Value(text, "fairbench_remote_write_samples_dropped_total"), 25);
  EXPECT_EQ(Value(text, "fairbench_remote_write_samples_sent_total"), 0);
  EXPECT_EQ(Value(text, "fairbench_remote_write_queued_samples"), 0);
}

}  // namespace
}  // namespace fairbench::metrics
