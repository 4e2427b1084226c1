// A Worker against a fake LoadCoordinator: what it delivers at each
// boundary, when it reports being connected, when it starts and how it
// stops — without an Engine around it. Loopback sockets only; each case
// takes a fraction of a second.
#include "agent/worker.h"
#include "common/mutex.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <mutex>
#include <thread>
#include <vector>

namespace fairbench::agent {
namespace {

using namespace std::chrono_literals;

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

struct Delivery {
  size_t boundary;
  uint32_t worker;
  IntervalStats stats;
  uint32_t open;
  int64_t end_ns;
  bool final;
};

class FakeCoordinator : public LoadCoordinator {
 public:
  FakeCoordinator(std::vector<Boundary> boundaries, int64_t connect_deadline_ns) {
    state_.boundaries = std::move(boundaries);
    state_.connect_deadline_ns = connect_deadline_ns;
  }

  const LoadState& state() const override { return state_; }
  void Deliver(size_t boundary_index, uint32_t worker, IntervalStats&& stats, uint32_t open_connections, int64_t end_ns,
               bool final) override {
    MutexLock lock(mu_);
    deliveries_.push_back({boundary_index, worker, std::move(stats), open_connections, end_ns, final});
    cv_.notify_all();
  }
  void ReportConnected(int64_t now_ns) override {
    {
      MutexLock lock(mu_);
      ++connected_reports_;
      cv_.notify_all();
    }
    SetLoadStart(now_ns);  // as the engine with one worker
  }
  void SetLoadStart(int64_t now_ns) override {
    int64_t expected = 0;
    state_.load_start_ns.compare_exchange_strong(expected, now_ns);
  }

  void StopLoad() override { RequestStop(); }

  void RequestStop() { state_.stop.store(true); }
  bool WaitForConnectedReport() {
    MutexLock lock(mu_);
    return cv_.wait_for(lock, 5s, [this]() REQUIRES(mu_) { return connected_reports_ > 0; });
  }
  int connected_reports() {
    MutexLock lock(mu_);
    return connected_reports_;
  }
  std::vector<Delivery> deliveries() {
    MutexLock lock(mu_);
    return deliveries_;
  }
  int64_t load_start_ns() const { return state_.load_start_ns.load(); }

 private:
  LoadState state_;
  Mutex mu_;
  CondVar cv_;
  int connected_reports_ GUARDED_BY(mu_) = 0;
  std::vector<Delivery> deliveries_ GUARDED_BY(mu_);
};

// A loopback socket bound to a free port: listening (the kernel completes
// handshakes; nobody ever answers) or not (connects are refused).
class LoopbackPort {
 public:
  explicit LoopbackPort(bool listening) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
    if (listening) {
      EXPECT_EQ(::listen(fd_, 16), 0) << std::strerror(errno);
    }
    address_.length = sizeof(sockaddr_in);
    EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&address_.storage), &address_.length), 0);
  }
  ~LoopbackPort() { ::close(fd_); }
  LoopbackPort(const LoopbackPort&) = delete;
  LoopbackPort& operator=(const LoopbackPort&) = delete;
  const SocketAddress& address() const { return address_; }

 private:
  int fd_ = -1;
  SocketAddress address_;
};

EngineOptions OneConnectionTo(const SocketAddress& address) {
  EngineOptions o;
  o.addresses = {address};
  RequestSpec get;
  o.requests = {BuildRequest(get, "127.0.0.1", true)};
  o.threads = 1;
  o.connections = 1;
  o.timeout = 100ms;  // also the drain
  return o;
}

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kFarAway = 3600 * 1000 * kMs;

TEST(WorkerTest, DeliversEachIntervalAtItsBoundaryInOrderAndTheLastAsFinal) {
  LoopbackPort server(/*listening=*/true);
  const EngineOptions options = OneConnectionTo(server.address());
  FakeCoordinator coordinator(
      {{30 * kMs, Phase::kWarmup, false}, {60 * kMs, Phase::kMeasure, false}, {90 * kMs, Phase::kMeasure, true}},
      MonotonicNs() + kFarAway);
  Worker worker(coordinator, options, /*index=*/3, /*first_connection=*/0, /*connections=*/1);
  ASSERT_TRUE(worker.Init().ok());
  std::thread t([&worker] { worker.Run(); });
  t.join();

  // Connected (a listening socket completes the handshake) → reported once,
  // and the load started then rather than at the connect deadline.
  EXPECT_EQ(coordinator.connected_reports(), 1);
  EXPECT_NE(coordinator.load_start_ns(), 0);
  const std::vector<Delivery> d = coordinator.deliveries();
  ASSERT_EQ(d.size(), 3u);
  uint64_t written = 0, connects = 0;
  for (size_t i = 0; i < d.size(); ++i) {
    EXPECT_EQ(d[i].boundary, i);
    EXPECT_EQ(d[i].worker, 3u);
    EXPECT_EQ(d[i].open, 1u);
    EXPECT_EQ(d[i].end_ns, coordinator.state().boundaries[i].at_ns);
    EXPECT_EQ(d[i].final, i == 2);
    EXPECT_EQ(d[i].stats.counters.requests, 0u);
    written += d[i].stats.counters.bytes_written;
    connects += d[i].stats.counters.connects;
  }
  EXPECT_EQ(connects, 1u);
  EXPECT_EQ(written, options.requests[0].bytes.size());  // one request, never answered
  EXPECT_EQ(worker.abandoned(), 1u);                     // given up after the drain
  EXPECT_EQ(worker.peak_open(), 1u);
}

TEST(WorkerTest, StopDeliversTheIntervalInProgressAsFinal) {
  LoopbackPort server(/*listening=*/true);
  const EngineOptions options = OneConnectionTo(server.address());
  FakeCoordinator coordinator({{10'000 * kMs, Phase::kMeasure, true}}, MonotonicNs() + kFarAway);
  Worker worker(coordinator, options, 0, 0, 1);
  ASSERT_TRUE(worker.Init().ok());
  const auto began = std::chrono::steady_clock::now();
  std::thread t([&worker] { worker.Run(); });
  ASSERT_TRUE(coordinator.WaitForConnectedReport());
  std::this_thread::sleep_for(20ms);
  coordinator.RequestStop();
  worker.Wake();
  t.join();
  EXPECT_LT(std::chrono::steady_clock::now() - began, 5s);  // not at the 10 s boundary

  const std::vector<Delivery> d = coordinator.deliveries();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].boundary, 0u);
  EXPECT_TRUE(d[0].final);
  EXPECT_GT(d[0].end_ns, 0);
  EXPECT_LT(d[0].end_ns, 10'000 * kMs);
  EXPECT_EQ(d[0].stats.counters.bytes_written, options.requests[0].bytes.size());
}

TEST(WorkerTest, StartsAtTheConnectDeadlineWhenItCannotConnect) {
  LoopbackPort closed(/*listening=*/false);  // bound, not listening: refused
  const EngineOptions options = OneConnectionTo(closed.address());
  const int64_t deadline = MonotonicNs() + 50 * kMs;
  FakeCoordinator coordinator({{50 * kMs, Phase::kMeasure, true}}, deadline);
  Worker worker(coordinator, options, 0, 0, 1);
  ASSERT_TRUE(worker.Init().ok());
  std::thread t([&worker] { worker.Run(); });
  t.join();

  EXPECT_EQ(coordinator.connected_reports(), 0);
  EXPECT_GE(coordinator.load_start_ns(), deadline);  // set by the worker itself, at the deadline
  const std::vector<Delivery> d = coordinator.deliveries();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_TRUE(d[0].final);
  EXPECT_EQ(d[0].open, 0u);
  EXPECT_GT(d[0].stats.counters.errors.connect, 0u);  // retried (with backoff) during the interval
}

}  // namespace
}  // namespace fairbench::agent
