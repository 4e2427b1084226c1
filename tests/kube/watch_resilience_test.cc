// Watch resilience: while the fault proxy cuts watches and answers 5xx/429
// at random, and etcd is compacted, during a run of creates, updates and
// deletes against Kubernetes' own API server, an informer ends with
// exactly the server's state.
#include <map>
#include <random>

#include "controller/kube/informer.h"
#include "tests/kube/kube_test_env.h"

namespace fairbench::kube {
namespace {

using testenv::ConfigMapJson;
using testenv::Eventually;

class WatchResilience : public testenv::KubeTest {};

std::map<std::string, Json> ByKey(const std::vector<Json>& objects) {
  std::map<std::string, Json> out;
  for (const auto& o : objects) out[ObjectKey(o)] = o;
  return out;
}

// Catches: a reflector that loses an event across a cut watch, a 410 or a
// re-list (its cache would differ from the server's state), or one that
// never re-lists after 410.
TEST_F(WatchResilience, InformerCacheEndsEqualToTheServerState) {
  // ConfigMaps: the shared cluster serves them from etcd, not from the watch
  // cache, so that after a compaction a watch from an older RV gets 410.
  auto cms = resources::ConfigMaps();

  ReflectorOptions ro;
  ro.backoff = {std::chrono::milliseconds(5), std::chrono::milliseconds(100), 2.0, 0.2};
  ro.min_watch_timeout = std::chrono::seconds(1);  // many clean closes too
  ro.max_watch_timeout = std::chrono::seconds(2);
  ro.max_retry_after = std::chrono::seconds(0);  // honour 429 with the backoff only: keep the test short
  ro.page_size = 7;                              // paginated re-lists
  ClientOptions reader_options = testenv::FastRetries();
  reader_options.max_retry_after = std::chrono::seconds(0);
  auto reader = testenv::ClientFor(url(), reader_options);
  Informer informer(*reader, cms, ns(), ro);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(std::chrono::seconds(5)));

  kubetest::FaultConfig faults_on;
  faults_on.server_error_rate = 0.05;
  faults_on.throttle_rate = 0.05;
  faults_on.retry_after_seconds = 1;
  faults_on.watch_drop_rate = 0.03;
  faults_on.seed = 42;
  faults().Configure(faults_on);

  // The writer does not honour Retry-After in full either.
  ClientOptions writer_options = testenv::FastRetries();
  writer_options.max_retry_after = std::chrono::seconds(0);
  auto writer = testenv::ClientFor(url(), writer_options);
  // Twice the informer is cut off (every GET fails) while changes are made
  // and etcd is compacted: its next watch must get 410 and re-list.
  kubetest::FaultConfig cut_off;
  cut_off.server_error_rate = 1.0;
  cut_off.methods = {"GET"};
  uint64_t injected = 0;

  std::mt19937 rng(7);
  std::vector<std::string> names;
  int failed_writes = 0;
  for (int i = 0; i < 240; ++i) {  // ~50 ms a write through the proxy: 12 s
    int op = static_cast<int>(rng() % 10);
    ApiResult<Json> r = ApiError{};
    if (names.empty() || op < 3) {
      std::string name = "cm-" + std::to_string(i);
      r = writer->Create(cms, ns(), ConfigMapJson(name, {{"threads", std::to_string(1 + rng() % 8)}}));
      names.push_back(name);
    } else if (op < 6) {
      const std::string& name = names[rng() % names.size()];
      r = writer->Patch(cms, ns(), name, PatchType::kMerge,
                        Json{{"data", {{"threads", std::to_string(1 + rng() % 64)}}}}.dump());
    } else if (op < 8) {
      const std::string& name = names[rng() % names.size()];
      r = writer->Patch(cms, ns(), name, PatchType::kMerge,
                        Json{{"metadata", {{"labels", {{"progress", std::to_string(i)}}}}}}.dump());
    } else {
      size_t at = rng() % names.size();
      r = writer->Delete(cms, ns(), names[at]);
      if (r.ok() || r.reason() == Reason::kNotFound) names.erase(names.begin() + static_cast<long>(at));
    }
    if (!r.ok()) ++failed_writes;
    if (i % 30 == 15) proxy_->DropWatches();
    if (i % 80 == 40) {
      ASSERT_TRUE(cluster_->Compact().ok());
    }
    if (i == 60 || i == 150) {
      injected += faults().injected();
      faults().Configure(cut_off);
      proxy_->DropWatches();
    }
    if (i == 100 || i == 190) {
      // Many writes since the cut: compacted away, the informer's RV is too old.
      ASSERT_TRUE(cluster_->Compact().ok());
      injected += faults().injected();
      faults().Configure(faults_on);
    }
  }
  injected += faults().injected();
  faults().Clear();

  auto truth = client_->ListAll(cms, ns());
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
