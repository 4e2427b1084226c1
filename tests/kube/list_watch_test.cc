// KUBE-API.md §2: resource versions, list semantics, watch streams.
#include <atomic>
#include <mutex>
#include <thread>

#include "controller/kube/informer.h"
#include "tests/kube/kube_test_env.h"

namespace fairbench::kube {
namespace {

using testenv::BenchmarkRun;
using testenv::ConfigMapJson;
using testenv::Eventually;
using testenv::Rv;

// Collects watch events on a thread until stopped.
class Watcher {
 public:
  Watcher(Client& client, ResourceType r, std::string ns, WatchOptions options)
      : thread_([this, &client, r, ns, options](std::stop_token stop) {
          auto end = client.Watch(r, ns, options, [this](WatchEvent&& e) {
            std::lock_guard<std::mutex> lock(mu_);
            events_.push_back(std::move(e));
          }, stop);
          std::lock_guard<std::mutex> lock(mu_);
          end_ = std::make_unique<ApiResult<WatchEnd>>(std::move(end));
        }) {}
  ~Watcher() { thread_.request_stop(); }
  std::vector<WatchEvent> events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_.size();
  }
  bool ended() {
    std::lock_guard<std::mutex> lock(mu_);
    return end_ != nullptr;
  }
  ApiResult<WatchEnd> end() {
    std::lock_guard<std::mutex> lock(mu_);
    return *end_;
  }
  void Stop() {
    thread_.request_stop();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::vector<WatchEvent> events_;
  std::unique_ptr<ApiResult<WatchEnd>> end_;
  std::jthread thread_;
};

class ListWatch : public testenv::KubeTest {};

TEST_F(ListWatch, OneGlobalCounterOrdersEveryWrite) {
  auto cms = resources::ConfigMaps();
  auto a = client_->Create(cms, "default", ConfigMapJson("a", {{"k", "1"}}));
  Lease lease;
  lease.metadata.name = "l";
  ASSERT_TRUE(client_->Create(resources::Leases(), "default", lease.ToJson()).ok());
  auto b = client_->Create(cms, "default", ConfigMapJson("b", {{"k", "1"}}));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(std::stoull(Rv(*b)), std::stoull(Rv(*a)) + 2);
  auto list = client_->List(cms, "default");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->resource_version, Rv(*b));
}

TEST_F(ListWatch, ListResourceVersionSemantics) {
  auto cms = resources::ConfigMaps();
  auto a = client_->Create(cms, "default", ConfigMapJson("a", {{"k", "1"}}));
  ASSERT_TRUE(a.ok());
  Json changed = *a;
  changed["data"]["k"] = "2";
  auto updated = client_->Update(cms, changed);
  ASSERT_TRUE(updated.ok());
  ASSERT_TRUE(client_->Create(cms, "default", ConfigMapJson("b", {{"k", "1"}})).ok());

  ListOptions exact;
  exact.resource_version = Rv(*a);
  exact.resource_version_match = "Exact";
  auto then = client_->List(cms, "default", exact);
  ASSERT_TRUE(then.ok()) << then.error().ToString();
  EXPECT_EQ(then->resource_version, Rv(*a));
  ASSERT_EQ(then->items.size(), 1u);
  EXPECT_EQ(then->items[0]["data"]["k"], "1");

  for (const char* rv : {"", "0"}) {
    ListOptions lo;
    lo.resource_version = rv;
    auto now = client_->List(cms, "default", lo);
    ASSERT_TRUE(now.ok());
    EXPECT_EQ(now->items.size(), 2u);
  }
  ListOptions not_older;
  not_older.resource_version = Rv(*a);
  EXPECT_EQ(client_->List(cms, "default", not_older)->items.size(), 2u);

  ListOptions bad_match;
  bad_match.resource_version = Rv(*a);
  bad_match.resource_version_match = "Sometime";
  EXPECT_EQ(client_->List(cms, "default", bad_match).reason(), Reason::kInvalid);
  ListOptions match_with_continue;
  match_with_continue.resource_version_match = "Exact";
  match_with_continue.continue_token = "abc";
  EXPECT_EQ(client_->List(cms, "default", match_with_continue).reason(), Reason::kInvalid);

  api().CompactHistory();
  auto expired = client_->List(cms, "default", exact);
  ASSERT_EQ(expired.reason(), Reason::kGone);
  EXPECT_NE(expired.error().message.find("too old resource version"), std::string::npos);
}

TEST_F(ListWatch, WatchStartsWithSyntheticAddedOrOnlyLaterChanges) {
  auto cms = resources::ConfigMaps();
  auto a = client_->Create(cms, "default", ConfigMapJson("a", {{"k", "1"}}));
  ASSERT_TRUE(a.ok());
  WatchOptions from_now;
  from_now.resource_version = "0";
  Watcher all(*client_, cms, "default", from_now);
  WatchOptions from_a;
  from_a.resource_version = Rv(*a);
  Watcher later(*client_, cms, "default", from_a);
  ASSERT_TRUE(Eventually([&] { return all.count() == 1; }));
  auto events = all.events();
  EXPECT_EQ(events[0].type, WatchEvent::Type::kAdded);
  // Objects in events always carry kind and apiVersion.
  EXPECT_EQ(events[0].object["kind"], "ConfigMap");
  EXPECT_EQ(events[0].object["apiVersion"], "v1");

  auto b = client_->Create(cms, "default", ConfigMapJson("b", {{"k", "1"}}));
  ASSERT_TRUE(b.ok());
  auto deleted = client_->Delete(cms, "default", "a");
  ASSERT_TRUE(deleted.ok());
  ASSERT_TRUE(Eventually([&] { return later.count() == 2 && all.count() == 3; }));
  auto changes = later.events();
  EXPECT_EQ(changes[0].type, WatchEvent::Type::kAdded);
  EXPECT_EQ(changes[0].object["metadata"]["name"], "b");
  // DELETED carries the last state with the deletion's RV.
  EXPECT_EQ(changes[1].type, WatchEvent::Type::kDeleted);
  EXPECT_EQ(changes[1].object["data"]["k"], "1");
  EXPECT_GT(std::stoull(changes[1].ResourceVersion()), std::stoull(Rv(*b)));
}

TEST_F(ListWatch, SelectorTransitionsArriveAsAddedAndDeleted) {
  auto cms = resources::ConfigMaps();
  WatchOptions wo;
  wo.label_selector = "color=red";
  wo.resource_version = std::to_string(api().current_resource_version());
  Watcher w(*client_, cms, "default", wo);
  auto o = client_->Create(cms, "default", ConfigMapJson("x", {{"k", "1"}}, {{"color", "blue"}}));
  ASSERT_TRUE(o.ok());
  auto patch = [&](const char* color) {
    return client_->Patch(cms, "default", "x", PatchType::kMerge,
                          Json{{"metadata", {{"labels", {{"color", color}}}}}}.dump());
  };
  ASSERT_TRUE(patch("red").ok());
  ASSERT_TRUE(patch("blue").ok());
  ASSERT_TRUE(Eventually([&] { return w.count() == 2; }));
  auto ev = w.events();
  EXPECT_EQ(ev[0].type, WatchEvent::Type::kAdded);
  EXPECT_EQ(ev[1].type, WatchEvent::Type::kDeleted);
  EXPECT_EQ(ev[1].object["metadata"]["labels"]["color"], "blue");
}

TEST_F(ListWatch, BookmarksOnlyWhenAskedFor) {
  apiserver::TestApiServerOptions o;
  o.api.bookmark_interval = std::chrono::milliseconds(50);
  Start(o);
  auto cms = resources::ConfigMaps();
  WatchOptions with;
  with.resource_version = std::to_string(api().current_resource_version());
  WatchOptions without = with;
  without.allow_bookmarks = false;
  Watcher a(*client_, cms, "default", with);
  Watcher b(*client_, cms, "default", without);
  ASSERT_TRUE(client_->Create(cms, "default", ConfigMapJson("x", {{"k", "1"}})).ok());
  ASSERT_TRUE(Eventually([&] { return a.count() >= 3 && b.count() >= 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  for (const auto& e : b.events()) EXPECT_NE(e.type, WatchEvent::Type::kBookmark);
  auto ev = a.events();
  auto bookmark = std::find_if(ev.begin(), ev.end(), [](const WatchEvent& e) { return e.type == WatchEvent::Type::kBookmark; });
  ASSERT_NE(bookmark, ev.end());
  EXPECT_EQ(bookmark->object["kind"], "ConfigMap");
  EXPECT_FALSE(bookmark->ResourceVersion().empty());
}

TEST_F(ListWatch, ExpiredStartSendsOneErrorEventThenCloses) {
  auto cms = resources::ConfigMaps();
  std::string old_rv = std::to_string(api().current_resource_version());
  ASSERT_TRUE(client_->Create(cms, "default", ConfigMapJson("x", {{"k", "1"}})).ok());
  api().CompactHistory();
  WatchOptions wo;
  wo.resource_version = old_rv;
  std::vector<WatchEvent> events;
  auto end = client_->Watch(cms, "default", wo, [&](WatchEvent&& e) { events.push_back(std::move(e)); });
  ASSERT_TRUE(end.ok()) << end.error().ToString();
  EXPECT_EQ(*end, WatchEnd::kClosed);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, WatchEvent::Type::kError);
  EXPECT_EQ(events[0].error.reason, Reason::kGone);
  EXPECT_EQ(events[0].error.http_code, 410);
  EXPECT_EQ(events[0].error.status_reason, "Expired");
}

TEST_F(ListWatch, ErrorsBeforeStreamingAreOrdinaryResponses) {
  WatchOptions wo;
  wo.label_selector = "a in (";
  auto end = client_->Watch(resources::ConfigMaps(), "default", wo, [](WatchEvent&&) {});
  EXPECT_EQ(end.reason(), Reason::kBadRequest);
  api().SetDenyRules({{"", "watch", "configmaps"}});
  auto denied = client_->Watch(resources::ConfigMaps(), "default", {}, [](WatchEvent&&) {});
  EXPECT_EQ(denied.reason(), Reason::kForbidden);
}

TEST_F(ListWatch, TimeoutSecondsIsACleanCloseAndStopIsPrompt) {
  WatchOptions wo;
  wo.timeout_seconds = std::chrono::seconds(1);
  auto start = std::chrono::steady_clock::now();
  auto end = client_->Watch(resources::ConfigMaps(), "default", wo, [](WatchEvent&&) {});
  ASSERT_TRUE(end.ok()) << end.error().ToString();
  EXPECT_EQ(*end, WatchEnd::kClosed);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(900));

  Watcher w(*client_, resources::ConfigMaps(), "default", {});
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto stop_at = std::chrono::steady_clock::now();
  w.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - stop_at, std::chrono::milliseconds(500));
  EXPECT_EQ(*w.end(), WatchEnd::kStopped);
}

TEST_F(ListWatch, DroppedConnectionIsATransportError) {
  Watcher w(*client_, resources::ConfigMaps(), "default", {});
  ASSERT_TRUE(Eventually([&] { return api().open_watches() == 1; }));
  api().DropWatches(true);
  ASSERT_TRUE(Eventually([&] { return w.ended(); }));
  EXPECT_EQ(w.end().reason(), Reason::kTransport);
}

// Catches: a quiet watch (bookmarks, no events) that is cut now and then
// counted as failing on and on: its backoff would grow to the maximum and
// leave the cache that far behind the server.
TEST_F(ListWatch, AQuietWatchCutRepeatedlyReconnectsWithoutGrowingBackoff) {
  apiserver::TestApiServerOptions o;
  o.api.bookmark_interval = std::chrono::milliseconds(50);
  Start(o);
  InstallCrd();
  ReflectorOptions ro;
  ro.backoff = {std::chrono::milliseconds(300), std::chrono::milliseconds(30000), 2.0, 0.0};
  Informer informer(*client_, resources::BenchmarkRuns(), "default", ro);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(std::chrono::seconds(5)));
  for (int cut = 1; cut <= 5; ++cut) {
    ASSERT_TRUE(Eventually([&] { return api().open_watches() == 1; }, std::chrono::seconds(5))) << "cut " << cut;
    std::this_thread::sleep_for(std::chrono::milliseconds(150));  // a few bookmarks arrive
    api().DropWatches(true);
    const auto cut_at = std::chrono::steady_clock::now();
    // 300 ms each time; growing, the fifth wait would be 4.8 s.
    ASSERT_TRUE(Eventually([&] { return api().open_watches() == 1; }, std::chrono::milliseconds(1500)))
        << "cut " << cut << ": not watching again after "
        << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - cut_at).count()
        << " ms";
  }
  EXPECT_EQ(informer.stats().lists, 1u);
  informer.Stop();
}

TEST_F(ListWatch, InformerRewatchesFromLastRvAndRelistsOnlyAfterGone) {
  InstallCrd();
  auto runs = resources::BenchmarkRuns();
  ASSERT_TRUE(client_->Create(runs, "default", BenchmarkRun("r1")).ok());
  ReflectorOptions ro;
  ro.backoff = {std::chrono::milliseconds(5), std::chrono::milliseconds(50), 2.0, 0.0};
  Informer informer(*client_, runs, "default", ro);
  std::atomic<int> adds{0}, updates{0}, deletes{0};
  informer.AddHandlers({[&](const Json&) { ++adds; }, [&](const Json&, const Json&) { ++updates; },
                        [&](const Json&) { ++deletes; }});
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(std::chrono::seconds(5)));
  EXPECT_EQ(informer.size(), 1u);
  ASSERT_TRUE(Eventually([&] { return api().open_watches() == 1; }));

  // A clean close: re-watch from the last RV, no new list.
  api().DropWatches(false);
  ASSERT_TRUE(client_->Create(runs, "default", BenchmarkRun("r2")).ok());
  ASSERT_TRUE(Eventually([&] { return informer.size() == 2; }));
  EXPECT_EQ(informer.stats().lists, 1u);

  // The watch is cut and cannot come back for a while (watch requests fail);
  // meanwhile r1 is deleted and the history is compacted. The next watch
  // from the last RV gets 410 → re-list; r1 leaves the cache with a delete.
  ASSERT_TRUE(Eventually([&] { return api().open_watches() == 1; }));
  apiserver::FaultConfig no_watch;
  no_watch.server_error_rate = 1.0;
  no_watch.methods = {"GET"};
  api().faults().Configure(no_watch);
  api().DropWatches(true);
  ASSERT_TRUE(Eventually([&] { return informer.stats().failures >= 2; }));
  ASSERT_TRUE(client_->Delete(runs, "default", "r1").ok());
  ASSERT_TRUE(client_->Create(runs, "default", BenchmarkRun("r3")).ok());
  api().CompactHistory();
  api().faults().Clear();
  ASSERT_TRUE(Eventually([&] { return informer.size() == 2 && informer.Get("default/r3").has_value(); }))
      << "cache " << informer.size() << " objects, stats: lists " << informer.stats().lists << ", watches "
      << informer.stats().watches << ", failures " << informer.stats().failures;
  EXPECT_FALSE(informer.Get("default/r1").has_value());
  EXPECT_EQ(informer.stats().relists_after_gone, 1u);
  EXPECT_EQ(informer.stats().lists, 2u);
  EXPECT_EQ(deletes.load(), 1);
  EXPECT_EQ(adds.load(), 3);

  // A restarted informer starts with a fresh list.
  informer.Stop();
  informer.Start();
  ASSERT_TRUE(Eventually([&] { return informer.stats().lists == 3u; }));
  EXPECT_EQ(informer.size(), 2u);
}

}  // namespace
}  // namespace fairbench::kube
