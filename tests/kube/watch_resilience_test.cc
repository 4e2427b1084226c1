// Watch resilience: while the server drops watches, compacts its history
// and answers 5xx/429 at random during a run of creates, updates and
// deletes, an informer ends with exactly the server's state.
#include <map>
#include <random>

#include "controller/kube/informer.h"
#include "tests/kube/kube_test_env.h"

namespace fairbench::kube {
namespace {

using testenv::BenchmarkRun;
using testenv::Eventually;

class WatchResilience : public testenv::KubeTest {};

std::map<std::string, Json> ByKey(const std::vector<Json>& objects) {
  std::map<std::string, Json> out;
  for (const auto& o : objects) out[ObjectKey(o)] = o;
  return out;
}

TEST_F(WatchResilience, InformerCacheEndsEqualToTheServerState) {
  apiserver::TestApiServerOptions o;
  o.api.history_limit = 40;  // small: reconnecting watches run into 410
  o.api.bookmark_interval = std::chrono::milliseconds(100);
  Start(o);
  InstallCrd();
  auto runs = resources::BenchmarkRuns();

  ReflectorOptions ro;
  ro.backoff = {std::chrono::milliseconds(5), std::chrono::milliseconds(100), 2.0, 0.2};
  ro.min_watch_timeout = std::chrono::seconds(1);  // many clean closes too
  ro.max_watch_timeout = std::chrono::seconds(2);
  ro.max_retry_after = std::chrono::seconds(0);    // honour 429 with the backoff only: keep the test short
  ro.page_size = 7;                                // paginated re-lists
  ClientOptions reader_options = testenv::FastRetries();
  reader_options.max_retry_after = std::chrono::seconds(0);
  auto reader = testenv::ClientFor(server_->url(), reader_options);
  Informer informer(*reader, runs, "default", ro);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(std::chrono::seconds(5)));

  apiserver::FaultConfig faults;
  faults.server_error_rate = 0.05;
  faults.throttle_rate = 0.05;
  faults.retry_after_seconds = 1;
  faults.watch_drop_rate = 0.03;
  faults.seed = 42;
  api().faults().Configure(faults);

  // The writer does not honour Retry-After in full either.
  ClientOptions writer_options = testenv::FastRetries();
  writer_options.max_retry_after = std::chrono::seconds(0);
  auto writer = testenv::ClientFor(server_->url(), writer_options);
  // Twice the informer is cut off (every GET fails) while more changes than
  // the history keeps are made: its next watch must get 410 and re-list.
  apiserver::FaultConfig cut_off;
  cut_off.server_error_rate = 1.0;
  cut_off.methods = {"GET"};
  uint64_t injected = 0;

  std::mt19937 rng(7);
  std::vector<std::string> names;
  int failed_writes = 0;
  for (int i = 0; i < 400; ++i) {
    int op = static_cast<int>(rng() % 10);
    ApiResult<Json> r = ApiError{};
    if (names.empty() || op < 3) {
      std::string name = "run-" + std::to_string(i);
      r = writer->Create(runs, "default", BenchmarkRun(name, 1 + static_cast<int>(rng() % 8)));
      names.push_back(name);
    } else if (op < 6) {
      const std::string& name = names[rng() % names.size()];
      r = writer->Patch(runs, "default", name, PatchType::kMerge,
                         Json{{"spec", {{"load", {{"threads", 1 + rng() % 64}}}}}}.dump());
    } else if (op < 8) {
      const std::string& name = names[rng() % names.size()];
      r = writer->Patch(runs, "default", name, PatchType::kMerge,
                         Json{{"status", {{"phase", "Running"}, {"progress", std::to_string(i)}}}}.dump(), {},
                         "status");
    } else {
      size_t at = rng() % names.size();
      r = writer->Delete(runs, "default", names[at]);
      if (r.ok() || r.reason() == Reason::kNotFound) names.erase(names.begin() + static_cast<long>(at));
    }
    if (!r.ok()) ++failed_writes;
    if (i % 50 == 25) api().DropWatches(true);
    if (i % 120 == 60) api().CompactHistory();
    if (i == 100 || i == 250) {
      injected += api().faults().injected();
      api().faults().Configure(cut_off);
      api().DropWatches(true);
    }
    if (i == 160 || i == 310) {
      injected += api().faults().injected();
      api().faults().Configure(faults);
    }
  }
  injected += api().faults().injected();
  api().faults().Clear();

  auto truth = client_->ListAll(runs, "default");
  ASSERT_TRUE(truth.ok()) << truth.error().ToString();
  auto want = ByKey(truth->items);
  bool equal = Eventually([&] { return ByKey(informer.List()) == want; }, std::chrono::seconds(15));
  auto stats = informer.stats();
  EXPECT_TRUE(equal) << "cache " << informer.size() << " objects, server " << want.size();
  // The run exercised what it claims to.
  EXPECT_GT(injected, 0u);
  EXPECT_GE(stats.watches, 5u);
  EXPECT_GE(stats.relists_after_gone, 2u);
  EXPECT_GT(stats.failures, 0u);
  RecordProperty("watches", static_cast<int>(stats.watches));
  RecordProperty("lists", static_cast<int>(stats.lists));
  RecordProperty("relists_after_gone", static_cast<int>(stats.relists_after_gone));
  RecordProperty("failed_writes", failed_writes);
  informer.Stop();
}

}  // namespace
}  // namespace fairbench::kube
