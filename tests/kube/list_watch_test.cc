// KUBE-API.md §2: resource versions, list semantics, watch streams, and the
// informer's list/watch, against Kubernetes' own API server (the shared
// cluster; ConfigMaps are served from etcd there, so a compaction makes an
// old resourceVersion 410 Gone, while other resources go through the watch
// cache, which sends bookmarks).
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

uint64_t RvNumber(const std::string& rv) { return rv.empty() ? 0 : std::stoull(rv); }

std::string Names(const std::vector<Json>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ",") + i["metadata"]["name"].get<std::string>();
  return out;
}

// Collects watch events on a thread until stopped.
class Watcher {
 public:
  Watcher(Client& client, ResourceType r, std::string ns, WatchOptions options)
      : thread_([this, &client, r, ns, options](std::stop_token stop) {
          auto end = client.Watch(
              r, ns, options,
              [this](WatchEvent&& e) {
                std::lock_guard<std::mutex> lock(mu_);
                events_.push_back(std::move(e));
              },
              stop);
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
  // Events other than bookmarks.
  std::vector<WatchEvent> changes() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<WatchEvent> out;
    for (const auto& e : events_) {
      if (e.type != WatchEvent::Type::kBookmark) out.push_back(e);
    }
    return out;
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

// A watch that ended with the ERROR event of an expired resourceVersion.
bool ExpiredBy(const std::vector<WatchEvent>& events) {
  return !events.empty() && events.back().type == WatchEvent::Type::kError &&
         events.back().error.reason == Reason::kGone;
}

class ListWatch : public testenv::KubeTest {
 protected:
  // The cluster is shared: another test may compact etcd at any moment, and
  // a resourceVersion this test has just read may be too old before the
  // test's own compaction (or watch). Runs `scenario(attempt, again)` once
  // more when it sets `again` (with names of that attempt), three times at
  // most.
  template <typename F>
  void RetriedOnOutsideCompaction(F scenario) {
    for (int attempt = 1; attempt <= 3; ++attempt) {
      bool again = false;
      scenario(attempt, again);
      if (!again || ::testing::Test::HasFailure()) return;
    }
    ADD_FAILURE() << "another test compacted etcd during each of 3 attempts";
  }
  // The ConfigMaps of a test carry this label; kube-controller-manager puts
  // kube-root-ca.crt into every namespace, and the selector leaves it out.
  static Json Mine() { return {{"fairbench.dev/test", "list-watch"}}; }
  static constexpr const char* kMine = "fairbench.dev/test=list-watch";
  // The current resourceVersion: a LIST's (ConfigMaps come from etcd).
  std::string CurrentRv() {
    auto list = client_->List(resources::ConfigMaps(), ns());
    EXPECT_TRUE(list.ok()) << list.error().ToString();
    return list.ok() ? list->resource_version : "";
  }
};

// Catches: a client that parses or compares resourceVersions per resource
// (they come from one counter, etcd's revision, over every kind), or a list
// whose resourceVersion is taken from an item rather than the list.
TEST_F(ListWatch, OneGlobalCounterOrdersEveryWrite) {
  auto cms = resources::ConfigMaps();
  auto a = client_->Create(cms, ns(), ConfigMapJson("a", {{"k", "1"}}, Mine()));
  Lease lease;
  lease.metadata.name = "l";
  auto l = client_->Create(resources::Leases(), ns(), lease.ToJson());
  auto b = client_->Create(cms, ns(), ConfigMapJson("b", {{"k", "1"}}, Mine()));
  ASSERT_TRUE(a.ok() && l.ok() && b.ok());
  // Other tests write to the cluster too: the counter moves by one or more.
  EXPECT_LT(RvNumber(Rv(*a)), RvNumber(Rv(*l)));
  EXPECT_LT(RvNumber(Rv(*l)), RvNumber(Rv(*b)));
  auto list = client_->List(cms, ns());
  ASSERT_TRUE(list.ok());
  EXPECT_GE(RvNumber(list->resource_version), RvNumber(Rv(*b)));
}

// Catches: resourceVersion / resourceVersionMatch not sent on List, or a
// 410 on an expired RV reported as anything but Gone.
TEST_F(ListWatch, ListResourceVersionSemantics) {
  auto cms = resources::ConfigMaps();
  RetriedOnOutsideCompaction([&](int attempt, bool& again) {
    const std::string a_name = "a" + std::to_string(attempt), b_name = "b" + std::to_string(attempt);
    const Json labels = {{"attempt", std::to_string(attempt)}};
    const std::string selector = "attempt=" + std::to_string(attempt);
    auto a = client_->Create(cms, ns(), ConfigMapJson(a_name, {{"k", "1"}}, labels));
    ASSERT_TRUE(a.ok());
    Json changed = *a;
    changed["data"]["k"] = "2";
    auto updated = client_->Update(cms, changed);
    ASSERT_TRUE(updated.ok());
    ASSERT_TRUE(client_->Create(cms, ns(), ConfigMapJson(b_name, {{"k", "1"}}, labels)).ok());

    ListOptions exact;
    exact.label_selector = selector;
    exact.resource_version = Rv(*a);
    exact.resource_version_match = "Exact";
    auto then = client_->List(cms, ns(), exact);
    if (then.reason() == Reason::kGone) {
      again = true;
      return;
    }
    ASSERT_TRUE(then.ok()) << then.error().ToString();
    EXPECT_EQ(then->resource_version, Rv(*a));
    ASSERT_EQ(then->items.size(), 1u) << Names(then->items);
    EXPECT_EQ(then->items[0]["data"]["k"], "1");

    for (const char* rv : {"", "0"}) {
      ListOptions lo;
      lo.label_selector = selector;
      lo.resource_version = rv;
      auto now = client_->List(cms, ns(), lo);
      ASSERT_TRUE(now.ok());
      EXPECT_EQ(Names(now->items), a_name + "," + b_name) << "resourceVersion=" << rv;
    }
    ListOptions not_older;
    not_older.label_selector = selector;
    not_older.resource_version = Rv(*a);
    EXPECT_EQ(client_->List(cms, ns(), not_older)->items.size(), 2u);

    ListOptions bad_match;
    bad_match.resource_version = Rv(*a);
    bad_match.resource_version_match = "Sometime";
    EXPECT_EQ(client_->List(cms, ns(), bad_match).reason(), Reason::kInvalid);
    ListOptions match_with_continue;
    match_with_continue.resource_version_match = "Exact";
    match_with_continue.continue_token = "abc";
    EXPECT_EQ(client_->List(cms, ns(), match_with_continue).reason(), Reason::kInvalid);

    // Two writes came after a's revision; compaction at the current one drops it.
    ASSERT_TRUE(cluster_->Compact().ok());
    auto expired = client_->List(cms, ns(), exact);
    ASSERT_EQ(expired.reason(), Reason::kGone) << expired.error().ToString();
    EXPECT_EQ(expired.error().http_code, 410);
    EXPECT_EQ(expired.error().message, "The resourceVersion for the provided list is too old.");
  });
}

// Catches: a watch that does not send resourceVersion (it would start with
// synthetic ADDED events), or events decoded without kind/apiVersion.
TEST_F(ListWatch, WatchStartsWithSyntheticAddedOrOnlyLaterChanges) {
  auto cms = resources::ConfigMaps();
  RetriedOnOutsideCompaction([&](int attempt, bool& again) {
    const std::string n = std::to_string(attempt);
    const Json labels = {{"attempt", n}};
    auto a = client_->Create(cms, ns(), ConfigMapJson("a" + n, {{"k", "1"}}, labels));
    ASSERT_TRUE(a.ok());
    WatchOptions from_now;
    from_now.label_selector = "attempt=" + n;
    from_now.resource_version = "0";
    Watcher all(*client_, cms, ns(), from_now);
    WatchOptions from_a = from_now;
    from_a.resource_version = Rv(*a);
    Watcher later(*client_, cms, ns(), from_a);
    // The synthetic ADDED, then (asked for bookmarks) the real server's
    // bookmark marking the end of the initial events.
    ASSERT_TRUE(Eventually([&] { return all.count() == 2; })) << all.count() << " events";
    auto events = all.events();
    EXPECT_EQ(events[0].type, WatchEvent::Type::kAdded);
    // Objects in events always carry kind and apiVersion.
    EXPECT_EQ(events[0].object["kind"], "ConfigMap");
    EXPECT_EQ(events[0].object["apiVersion"], "v1");
    EXPECT_EQ(events[1].type, WatchEvent::Type::kBookmark);
    EXPECT_EQ(events[1].object["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
    ASSERT_TRUE(Eventually([&] { return proxy_->open_watches() == 2 || later.ended(); }));

    auto b = client_->Create(cms, ns(), ConfigMapJson("b" + n, {{"k", "1"}}, labels));
    ASSERT_TRUE(b.ok());
    auto deleted = client_->Delete(cms, ns(), "a" + n);
    ASSERT_TRUE(deleted.ok());
    ASSERT_TRUE(Eventually([&] { return (later.changes().size() == 2 && all.changes().size() == 3) || later.ended(); }))
        << later.changes().size() << " and " << all.changes().size() << " changes";
    if (later.ended() && ExpiredBy(later.events())) {
      again = true;
      return;
    }
    auto changes = later.changes();
    EXPECT_EQ(changes[0].type, WatchEvent::Type::kAdded);
    EXPECT_EQ(changes[0].object["metadata"]["name"], "b" + n);
    // DELETED carries the last state with the deletion's RV.
    EXPECT_EQ(changes[1].type, WatchEvent::Type::kDeleted);
    EXPECT_EQ(changes[1].object["data"]["k"], "1");
    EXPECT_GT(RvNumber(changes[1].ResourceVersion()), RvNumber(Rv(*b)));
  });
}

// Catches: a label selector dropped from the watch request (every change
// would arrive as MODIFIED).
TEST_F(ListWatch, SelectorTransitionsArriveAsAddedAndDeleted) {
  auto cms = resources::ConfigMaps();
  RetriedOnOutsideCompaction([&](int attempt, bool& again) {
    const std::string name = "x" + std::to_string(attempt);
    WatchOptions wo;
    wo.label_selector = "color=red";
    wo.resource_version = CurrentRv();
    Watcher w(*client_, cms, ns(), wo);
    auto o = client_->Create(cms, ns(), ConfigMapJson(name, {{"k", "1"}}, {{"color", "blue"}}));
    ASSERT_TRUE(o.ok());
    auto patch = [&](const char* color) {
      return client_->Patch(cms, ns(), name, PatchType::kMerge,
                            Json{{"metadata", {{"labels", {{"color", color}}}}}}.dump());
    };
    ASSERT_TRUE(patch("red").ok());
    auto blue = patch("blue");
    ASSERT_TRUE(blue.ok());
    ASSERT_TRUE(Eventually([&] { return w.count() == 2 || w.ended(); }));
    if (w.ended() && ExpiredBy(w.events())) {
      again = true;
      return;
    }
    auto ev = w.events();
    ASSERT_EQ(ev.size(), 2u);
    EXPECT_EQ(ev[0].type, WatchEvent::Type::kAdded);
    EXPECT_EQ(ev[1].type, WatchEvent::Type::kDeleted);
    // The real server sends the object as it last matched (still red), with
    // the resourceVersion of the change that made it leave the selector.
    EXPECT_EQ(ev[1].object["metadata"]["labels"]["color"], "red");
    EXPECT_EQ(ev[1].ResourceVersion(), Rv(*blue));
  });
}

// Catches: allowWatchBookmarks sent when not asked for (or not sent when
// asked for), or a bookmark decoded as an ordinary event.
TEST_F(ListWatch, BookmarksOnlyWhenAskedFor) {
  // Secrets go through the API server's watch cache, which sends a bookmark
  // 2 s before a watch's timeout once its resourceVersion has moved on.
  auto secrets = resources::Secrets();
  auto list = client_->List(secrets, ns());
  ASSERT_TRUE(list.ok());
  WatchOptions with;
  with.resource_version = list->resource_version;
  with.timeout_seconds = std::chrono::seconds(3);
  WatchOptions without = with;
  without.allow_bookmarks = false;
  Watcher a(*client_, secrets, ns(), with);
  Watcher b(*client_, secrets, ns(), without);
  ASSERT_TRUE(Eventually([&] { return proxy_->open_watches() == 2; }));
  Json secret = {{"apiVersion", "v1"}, {"kind", "Secret"}, {"metadata", {{"name", "x"}}}, {"stringData", {{"k", "1"}}}};
  ASSERT_TRUE(client_->Create(secrets, ns(), secret).ok());
  ASSERT_TRUE(Eventually([&] { return a.ended() && b.ended(); }, std::chrono::seconds(10)));
  ASSERT_TRUE(a.end().ok()) << a.end().error().ToString();
  ASSERT_TRUE(b.end().ok()) << b.end().error().ToString();
  ASSERT_GE(b.count(), 1u);
  EXPECT_EQ(b.events()[0].type, WatchEvent::Type::kAdded);
  for (const auto& e : b.events()) EXPECT_NE(e.type, WatchEvent::Type::kBookmark);
  auto ev = a.events();
  ASSERT_GE(ev.size(), 2u);
  EXPECT_EQ(ev[0].type, WatchEvent::Type::kAdded);
  auto bookmark =
      std::find_if(ev.begin(), ev.end(), [](const WatchEvent& e) { return e.type == WatchEvent::Type::kBookmark; });
  ASSERT_NE(bookmark, ev.end());
  EXPECT_EQ(bookmark->object["kind"], "Secret");
  EXPECT_GE(RvNumber(bookmark->ResourceVersion()), RvNumber(ev[0].ResourceVersion()));
}

// Catches: an ERROR event with 410 treated as a transport failure, or the
// stream's clean end after it reported as an error.
TEST_F(ListWatch, ExpiredStartSendsOneErrorEventThenCloses) {
  auto cms = resources::ConfigMaps();
  std::string old_rv = CurrentRv();
  // Two writes: a watch from old_rv starts at the revision after it, which
  // the compaction (at the current revision) must also have dropped.
  ASSERT_TRUE(client_->Create(cms, ns(), ConfigMapJson("x", {{"k", "1"}})).ok());
  ASSERT_TRUE(client_->Create(cms, ns(), ConfigMapJson("y", {{"k", "1"}})).ok());
  ASSERT_TRUE(cluster_->Compact().ok());
  WatchOptions wo;
  wo.resource_version = old_rv;
  std::vector<WatchEvent> events;
  auto end = client_->Watch(cms, ns(), wo, [&](WatchEvent&& e) { events.push_back(std::move(e)); });
  ASSERT_TRUE(end.ok()) << end.error().ToString();
  EXPECT_EQ(*end, WatchEnd::kClosed);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, WatchEvent::Type::kError);
  EXPECT_EQ(events[0].error.reason, Reason::kGone);
  EXPECT_EQ(events[0].error.http_code, 410);
  EXPECT_EQ(events[0].error.status_reason, "Expired");
  EXPECT_EQ(events[0].error.message, "The resourceVersion for the provided watch is too old.");
}

// Rewritten for the real server: the denial comes from RBAC (a
// ServiceAccount with no Role), not from the imitation's deny rules.
// Catches: a watch answered with an error status before streaming read as
// a stream (or as a transport error) instead of that status.
TEST_F(ListWatch, ErrorsBeforeStreamingAreOrdinaryResponses) {
  WatchOptions wo;
  wo.label_selector = "a in (";
  auto end = client_->Watch(resources::ConfigMaps(), ns(), wo, [](WatchEvent&&) {});
  EXPECT_EQ(end.reason(), Reason::kBadRequest) << end.error().ToString();

  ResourceType service_accounts{"", "v1", "ServiceAccount", "serviceaccounts", Scope::kNamespaced};
  ASSERT_TRUE(client_
                  ->Create(service_accounts, ns(),
                           {{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", "nobody"}}}})
                  .ok());
  auto token = client_->CreateSubresource(
      service_accounts, ns(), "nobody", "token",
      {{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "TokenRequest"}, {"spec", {{"expirationSeconds", 600}}}});
  ASSERT_TRUE(token.ok()) << token.error().ToString();
  RestConfig cfg;
  cfg.server = url();
  cfg.timeout = std::chrono::milliseconds(5000);
  cfg.credentials = std::make_shared<StaticToken>((*token)["status"]["token"].get<std::string>());
  auto nobody = Client::Create(cfg, testenv::FastRetries());
  ASSERT_TRUE(nobody.ok());
  auto denied = (*nobody)->Watch(resources::ConfigMaps(), ns(), {}, [](WatchEvent&&) {});
  ASSERT_EQ(denied.reason(), Reason::kForbidden) << denied.error().ToString();
  EXPECT_EQ(denied.error().message, "configmaps is forbidden: User \"system:serviceaccount:" + ns() +
                                        ":nobody\" cannot watch resource \"configmaps\" in API group \"\" in the "
                                        "namespace \"" +
                                        ns() + "\"");
}

// Catches: timeoutSeconds not sent (the watch would run on), or a stop
// request that waits for the server.
TEST_F(ListWatch, TimeoutSecondsIsACleanCloseAndStopIsPrompt) {
  WatchOptions wo;
  wo.timeout_seconds = std::chrono::seconds(1);
  auto start = std::chrono::steady_clock::now();
  auto end = client_->Watch(resources::ConfigMaps(), ns(), wo, [](WatchEvent&&) {});
  ASSERT_TRUE(end.ok()) << end.error().ToString();
  EXPECT_EQ(*end, WatchEnd::kClosed);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(900));

  Watcher w(*client_, resources::ConfigMaps(), ns(), {});
  ASSERT_TRUE(Eventually([&] { return proxy_->open_watches() == 1; }));
  auto stop_at = std::chrono::steady_clock::now();
  w.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - stop_at, std::chrono::milliseconds(500));
  EXPECT_EQ(*w.end(), WatchEnd::kStopped);
}

// Catches: a cut connection (no terminating chunk) reported as a clean
// close: the reflector would re-watch at once instead of backing off.
TEST_F(ListWatch, DroppedConnectionIsATransportError) {
  ASSERT_TRUE(client_->Create(resources::ConfigMaps(), ns(), ConfigMapJson("x", {{"k", "1"}})).ok());
  Watcher w(*client_, resources::ConfigMaps(), ns(), {});
  // Streaming: its synthetic ADDED has arrived.
  ASSERT_TRUE(Eventually([&] { return w.count() >= 1; }));
  proxy_->DropWatches();
  ASSERT_TRUE(Eventually([&] { return w.ended(); }));
  EXPECT_EQ(w.end().reason(), Reason::kTransport);
}

// Catches: a quiet watch (bookmarks, no events) that is cut now and then
// counted as failing on and on: its backoff would grow to the maximum and
// leave the cache that far behind the server.
TEST_F(ListWatch, AQuietWatchCutRepeatedlyReconnectsWithoutGrowingBackoff) {
  InstallCrd();
  auto runs = testenv::TestRuns();
  // The informer sees only runs labelled "watched": the unlabelled runs the
  // test writes move the watch cache on, which then sends the watch a
  // bookmark 2 s before its 3 s timeout, and nothing else.
  ReflectorOptions ro;
  ro.label_selector = "watched=yes";
  ro.min_watch_timeout = std::chrono::seconds(3);
  ro.max_watch_timeout = std::chrono::seconds(3);
  ro.backoff = {std::chrono::milliseconds(300), std::chrono::milliseconds(30000), 2.0, 0.0};
  Informer informer(*client_, runs, ns(), ro);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(std::chrono::seconds(5)));
  for (int cut = 1; cut <= 5; ++cut) {
    auto written = client_->Create(runs, ns(), BenchmarkRun("unwatched-" + std::to_string(cut), 4, ns()));
    ASSERT_TRUE(written.ok()) << written.error().ToString();
    // The bookmark has arrived when the informer's RV has reached the write.
    // The first may take longer: on a cluster just started, the watch cache
    // of a resource whose CRD was just established has been seen to send
    // none for its first half minute.
    ASSERT_TRUE(Eventually([&] { return RvNumber(informer.LastSyncResourceVersion()) >= RvNumber(Rv(*written)); },
                           std::chrono::seconds(cut == 1 ? 60 : 10)))
        << "cut " << cut << ": no bookmark";
    const uint64_t watches = informer.stats().watches;
    proxy_->DropWatches();
    const auto cut_at = std::chrono::steady_clock::now();
    // 300 ms each time; growing, the fourth wait would be 2.4 s, the fifth 4.8 s.
    ASSERT_TRUE(Eventually([&] { return informer.stats().watches > watches; }, std::chrono::milliseconds(1500)))
        << "cut " << cut << ": not watching again after "
        << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - cut_at).count()
        << " ms";
  }
  EXPECT_EQ(informer.stats().lists, 1u);
  EXPECT_EQ(informer.size(), 0u);
  informer.Stop();
}

// Catches: a reflector that re-lists after a clean close or a 5xx (it must
// re-watch from its last RV), or one that does not re-list after 410 (the
// deletion it missed would stay in its cache).
TEST_F(ListWatch, InformerRewatchesFromLastRvAndRelistsOnlyAfterGone) {
  // ConfigMaps: served from etcd, so that a compaction makes the informer's
  // last RV too old.
  auto cms = resources::ConfigMaps();
  ASSERT_TRUE(client_->Create(cms, ns(), ConfigMapJson("r1", {{"k", "v"}}, Mine())).ok());
  ReflectorOptions ro;
  ro.label_selector = kMine;
  ro.backoff = {std::chrono::milliseconds(5), std::chrono::milliseconds(50), 2.0, 0.0};
  // Watches close cleanly after a second.
  ro.min_watch_timeout = std::chrono::seconds(1);
  ro.max_watch_timeout = std::chrono::seconds(1);
  Informer informer(*client_, cms, ns(), ro);
  std::atomic<int> adds{0}, updates{0}, deletes{0};
  informer.AddHandlers(
      {[&](const Json&) { ++adds; }, [&](const Json&, const Json&) { ++updates; }, [&](const Json&) { ++deletes; }});
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(std::chrono::seconds(5)));
  EXPECT_EQ(informer.size(), 1u);
  // Other tests may compact etcd at any time, which makes a re-watch after
  // a clean close 410 too: lists are one plus the re-lists after 410.
  auto relisted_only_after_gone = [&] {
    auto s = informer.stats();
    return s.lists == 1 + s.relists_after_gone;
  };

  // Clean closes: re-watch from the last RV, no new list.
  ASSERT_TRUE(Eventually([&] { return informer.stats().watches >= 3; }));
  ASSERT_TRUE(client_->Create(cms, ns(), ConfigMapJson("r2", {{"k", "v"}}, Mine())).ok());
  ASSERT_TRUE(Eventually([&] { return informer.size() == 2; }));
  EXPECT_TRUE(relisted_only_after_gone());

  // The watch is cut and cannot come back for a while (watch requests fail);
  // meanwhile r1 is deleted and r3 created, and etcd is compacted. The next
  // watch from the last RV gets 410 → re-list; r1 leaves the cache with a
  // delete.
  ASSERT_TRUE(Eventually([&] { return proxy_->open_watches() == 1; }));
  const uint64_t gone_before = informer.stats().relists_after_gone;
  const uint64_t failures_before = informer.stats().failures;
  kubetest::FaultConfig no_watch;
  no_watch.server_error_rate = 1.0;
  no_watch.methods = {"GET"};
  faults().Configure(no_watch);
  proxy_->DropWatches();
  ASSERT_TRUE(Eventually([&] { return informer.stats().failures >= failures_before + 2; }));
  ASSERT_TRUE(client_->Delete(cms, ns(), "r1").ok());
  ASSERT_TRUE(client_->Create(cms, ns(), ConfigMapJson("r3", {{"k", "v"}}, Mine())).ok());
  ASSERT_TRUE(cluster_->Compact().ok());
  faults().Clear();
  ASSERT_TRUE(Eventually([&] { return informer.size() == 2 && informer.Get(ns() + "/r3").has_value(); }))
      << "cache " << informer.size() << " objects, stats: lists " << informer.stats().lists << ", watches "
      << informer.stats().watches << ", failures " << informer.stats().failures;
  EXPECT_FALSE(informer.Get(ns() + "/r1").has_value());
  EXPECT_GT(informer.stats().relists_after_gone, gone_before);
  EXPECT_TRUE(relisted_only_after_gone())
      << "lists " << informer.stats().lists << ", after 410 " << informer.stats().relists_after_gone;
  EXPECT_EQ(deletes.load(), 1);
  EXPECT_EQ(adds.load(), 3);

  // A restarted informer starts with a fresh list.
  const uint64_t lists = informer.stats().lists;
  informer.Stop();
  informer.Start();
  ASSERT_TRUE(Eventually([&] { return informer.stats().lists > lists; }));
  EXPECT_EQ(informer.size(), 2u);
}

}  // namespace
}  // namespace fairbench::kube
