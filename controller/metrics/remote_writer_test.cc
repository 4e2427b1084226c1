// RemoteWriter against a receiver on loopback (cpp-httplib), which checks
// what a remote write 1.0 receiver checks and answers as told.
#include "controller/metrics/remote_writer.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <mutex>
#include <thread>

namespace fairbench::metrics {
namespace {

using namespace std::chrono_literals;

class Receiver {
 public:
  Receiver() {
    server_.Post("/api/v1/write", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      headers_ok = headers_ok && req.get_header_value("Content-Encoding") == "snappy" &&
                   req.get_header_value("Content-Type") == "application/x-protobuf" &&
                   req.get_header_value("X-Prometheus-Remote-Write-Version") == "0.1.0" &&
                   req.get_header_value("User-Agent").rfind("fairbench", 0) == 0;
      auto raw = SnappyUncompress(req.body);
      if (!raw.ok()) {
        res.status = 400;
        return;
      }
      auto samples = DecodeWriteRequest(*raw);
      if (!samples.ok()) {
        res.status = 400;
        return;
      }
      ++posts;
      if (!answers.empty()) {
        res.status = answers.front();
        answers.erase(answers.begin());
        if (res.status >= 300) return;
      } else {
        res.status = 204;
      }
      received.insert(received.end(), samples->begin(), samples->end());
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(1ms);
  }
  ~Receiver() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/api/v1/write"; }
  // Under the lock: the server's workers are already running.
  void Answer(std::vector<int> statuses) {
    std::lock_guard<std::mutex> lock(mu_);
    answers = std::move(statuses);
  }
  size_t Received() {
    std::lock_guard<std::mutex> lock(mu_);
    return received.size();
  }

  std::mutex mu_;
  std::vector<int> answers;  // statuses to answer, in order; then 204
  std::vector<RemoteSample> received;
  int posts = 0;
  bool headers_ok = true;

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

std::vector<RemoteSample> Batch(int n, int64_t ts) {
  std::vector<RemoteSample> out;
  for (int i = 0; i < n; ++i) out.push_back({{{"__name__", "fairbench_x"}, {"i", std::to_string(i)}}, 1.0 * i, ts});
  return out;
}

RemoteWriterOptions Options(const std::string& url) {
  RemoteWriterOptions o;
  o.url = url;
  o.min_backoff = 20ms;
  o.max_backoff = 100ms;
  o.request_timeout = 2s;
  return o;
}

TEST(RemoteWriterTest, DeliversEveryBatchWithTheProtocolHeaders) {
  Receiver rx;
  auto w = RemoteWriter::Start(Options(rx.url()));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  for (int i = 0; i < 10; ++i) EXPECT_TRUE((*w)->Enqueue(Batch(50, 1000 * i)));
  (*w)->Stop(5s);
  const auto st = (*w)->stats();
  EXPECT_EQ(st.samples_sent, 500u);
  EXPECT_EQ(st.samples_dropped, 0u);
  EXPECT_EQ(st.samples_queued, 0u);
  std::lock_guard<std::mutex> lock(rx.mu_);
  EXPECT_TRUE(rx.headers_ok);
  EXPECT_EQ(rx.received.size(), 500u);
}

TEST(RemoteWriterTest, RetriesServerErrorsWithBackoff) {
  Receiver rx;
  rx.Answer({503, 500, 429});
  auto w = RemoteWriter::Start(Options(rx.url()));
  ASSERT_TRUE(w.ok());
  const auto start = std::chrono::steady_clock::now();
  (*w)->Enqueue(Batch(5, 1000));
  (*w)->Stop(5s);
  const auto took = std::chrono::steady_clock::now() - start;
  const auto st = (*w)->stats();
  EXPECT_EQ(st.samples_sent, 5u);
  EXPECT_EQ(st.failed_requests, 3u);
  EXPECT_NE(st.last_error.find("HTTP 429"), std::string::npos) << st.last_error;
  EXPECT_GE(took, 20ms + 40ms + 80ms) << "backoff doubles";
  EXPECT_EQ(rx.Received(), 5u);
}

TEST(RemoteWriterTest, RefusedDataIsDroppedNotRetried) {
  Receiver rx;
  // Every request the batches can take is refused; a retry would be
  // accepted (the receiver's default) and show as samples sent.
  rx.Answer({400, 400});
  auto w = RemoteWriter::Start(Options(rx.url()));
  ASSERT_TRUE(w.ok());
  (*w)->Enqueue(Batch(7, 1000));
  (*w)->Enqueue(Batch(3, 2000));
  (*w)->Stop(5s);
  const auto st = (*w)->stats();
  // The writer may have sent the first batch before the second was queued:
  // one request or two, each refused once and never sent again.
  EXPECT_EQ(st.samples_dropped, 10u);
  EXPECT_EQ(st.samples_sent, 0u);
  int posts = 0;
  {
    std::lock_guard<std::mutex> lock(rx.mu_);
    posts = rx.posts;
  }
  EXPECT_GE(posts, 1);
  EXPECT_LE(posts, 2);
  EXPECT_EQ(st.failed_requests, static_cast<uint64_t>(posts));
  EXPECT_EQ(rx.Received(), 0u);
}

TEST(RemoteWriterTest, AFullQueueDropsAndCountsWithoutBlocking) {
  // Nothing listens on the port: every attempt fails, the queue fills up.
  RemoteWriterOptions o = Options("http://127.0.0.1:1/api/v1/write");
  o.max_queued_samples = 100;
  auto w = RemoteWriter::Start(o);
  ASSERT_TRUE(w.ok());
  const auto start = std::chrono::steady_clock::now();
  int accepted = 0;
  for (int i = 0; i < 50; ++i) accepted += (*w)->Enqueue(Batch(10, i)) ? 1 : 0;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 50ms) << "Enqueue never waits";
  EXPECT_LE(accepted, 11);
  (*w)->Stop(300ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s) << "Stop is bounded by its flush time";
  const auto st = (*w)->stats();
  EXPECT_EQ(st.samples_sent, 0u);
  EXPECT_EQ(st.samples_dropped, 500u);
  EXPECT_EQ(st.samples_queued, 0u);
  EXPECT_GE(st.failed_requests, 1u);
  EXPECT_FALSE((*w)->Enqueue(Batch(1, 0))) << "stopped";
}

TEST(RemoteWriterTest, RejectsUrlsThatAreNotHttp) {
  EXPECT_FALSE(RemoteWriter::Start(Options("ftp://x/")).ok());
  EXPECT_FALSE(RemoteWriter::Start(Options("127.0.0.1:9090")).ok());
}

}  // namespace
}  // namespace fairbench::metrics
