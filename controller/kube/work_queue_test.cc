#include "controller/kube/work_queue.h"

#include <gtest/gtest.h>

#include <thread>

namespace fairbench::kube {
namespace {

using std::chrono::milliseconds;

TEST(WorkQueue, DeduplicatesQueuedKeys) {
  WorkQueue q;
  q.Add("a");
  q.Add("b");
  q.Add("a");
  EXPECT_EQ(q.Len(), 2u);
  EXPECT_EQ(*q.Get(), "a");
  EXPECT_EQ(*q.Get(), "b");
}

TEST(WorkQueue, KeyAddedWhileProcessingIsRequeuedOnDone) {
  WorkQueue q;
  q.Add("a");
  auto k = q.Get();
  q.Add("a");  // changed while being processed: not handed to a second worker
  EXPECT_EQ(q.Len(), 0u);
  q.Done(*k);
  EXPECT_EQ(q.Len(), 1u);
  EXPECT_EQ(*q.Get(), "a");
}

TEST(WorkQueue, AddAfterAndRateLimitedBackoff) {
  WorkQueue q({milliseconds(10), milliseconds(40), 100});
  auto start = std::chrono::steady_clock::now();
  q.AddAfter("late", milliseconds(50));
  q.AddAfter("soon", milliseconds(10));
  EXPECT_EQ(*q.Get(), "soon");
  EXPECT_EQ(*q.Get(), "late");
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(50));

  q.AddRateLimited("x");  // 10 ms
  q.Done("x");
  EXPECT_EQ(*q.Get(), "x");
  q.Done("x");
  q.AddRateLimited("x");  // 20 ms
  q.AddRateLimited("x");  // 40 ms (capped)
  EXPECT_EQ(q.NumRequeues("x"), 3);
  q.Forget("x");
  EXPECT_EQ(q.NumRequeues("x"), 0);
}

TEST(WorkQueue, ShutDownWakesWorkers) {
  WorkQueue q;
  std::thread worker([&] { EXPECT_FALSE(q.Get().has_value()); });
  std::this_thread::sleep_for(milliseconds(10));
  q.ShutDown();
  worker.join();
  EXPECT_FALSE(q.Add("a"));
}

TEST(WorkQueue, BoundedCapacity) {
  WorkQueue q({milliseconds(5), milliseconds(100), 2});
  EXPECT_TRUE(q.Add("a"));
  EXPECT_TRUE(q.Add("b"));
  EXPECT_TRUE(q.Add("a"));  // already pending: fine
  EXPECT_FALSE(q.Add("c"));
  EXPECT_EQ(q.dropped(), 1u);
}

TEST(WorkQueue, ConcurrentWorkersNeverShareAKey) {
  WorkQueue q;
  std::atomic<int> in_flight{0}, max_in_flight{0}, processed{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      while (auto k = q.Get()) {
        int n = ++in_flight;
        int m = max_in_flight.load();
        while (n > m && !max_in_flight.compare_exchange_weak(m, n)) {
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        --in_flight;
        ++processed;
        q.Done(*k);
      }
    });
  }
  for (int i = 0; i < 200; ++i) q.Add("same");
  std::this_thread::sleep_for(milliseconds(50));
  q.ShutDown();
  for (auto& t : workers) t.join();
  EXPECT_EQ(max_in_flight.load(), 1);
  EXPECT_GE(processed.load(), 1);
}

}  // namespace
}  // namespace fairbench::kube
