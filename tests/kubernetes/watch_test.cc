// Watches against Kubernetes' own kube-apiserver and etcd (scripts/kube):
// an informer cut off from the server while objects change and etcd
// compacts its history must meet kube-apiserver's 410 Gone when it comes
// back, list again, and end with exactly the server's state, each object
// that went while it was away reported as deleted.
//
// The API server's watch cache is off for ConfigMaps here
// (--watch-cache-sizes=configmaps#0): with it, a watch from a recent
// resourceVersion is served from the cache's window whatever etcd
// compacted, and only a client away for longer than that window sees 410.
// Without it, the watch goes to etcd, and the compaction is what answers.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "controller/kube/client.h"
#include "controller/kube/informer.h"
#include "controller/kube/kubeconfig.h"
#include "controller/kube/resource.h"
#include "testing/support/kube_cluster.h"
#include "testing/support/tcp_proxy.h"
#include "testing/support/temp_dir.h"

namespace fairbench::kube {
namespace {

using namespace std::chrono_literals;

template <typename F>
bool Eventually(F f, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (f()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return f();
}

std::map<std::string, std::string> Data(const std::vector<Json>& objects) {
  std::map<std::string, std::string> out;
  for (const Json& o : objects) out[o["metadata"]["name"].get<std::string>()] = o.value("data", Json::object()).dump();
  return out;
}

// Catches: a reflector that does not list again after kube-apiserver's 410
// (its cache would keep objects deleted meanwhile, or miss new ones), one
// that loses a deletion across the re-list (no on_delete for an object gone
// while it was away), or one that never comes back after a cut connection.
TEST(KubernetesWatchTest, AnInformerAwayPastACompactionGetsGoneAndListsAgainLosingNothing) {
  auto dir = testing::TempDir::Create("fairbench-kube-watch");
  ASSERT_TRUE(dir.ok());
  auto cluster = testing::KubeCluster::Up((dir->path() / "cluster").string(), {"--watch-cache-sizes=configmaps#0"});
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  auto rest = LoadKubeconfig({{cluster->admin_kubeconfig()}, "", nullptr});
  ASSERT_TRUE(rest.ok()) << rest.status().ToString();
  auto writer = Client::Create(*rest);
  ASSERT_TRUE(writer.ok());
  // The informer reaches the server through a proxy the test can cut.
  const std::string server = rest->server;
  const int api_port = std::stoi(server.substr(server.rfind(':') + 1));
  auto proxy = testing::TcpProxy::Start(api_port);
  ASSERT_TRUE(proxy.ok()) << proxy.status().ToString();
  RestConfig through = *rest;
  through.server = "https://127.0.0.1:" + std::to_string((*proxy)->port());
  through.timeout = 5s;
  ClientOptions fast;
  fast.max_attempts = 2;
  fast.retry_backoff = {10ms, 100ms, 2.0, 0.0};
  auto reader = Client::Create(through, fast);
  ASSERT_TRUE(reader.ok());

  const ResourceType cms = resources::ConfigMaps();
  const std::string ns = "default";
  auto cm = [&](const std::string& name, int v) {
    return Json{{"apiVersion", "v1"},
                {"kind", "ConfigMap"},
                {"metadata", {{"name", name}, {"namespace", ns}}},
                {"data", {{"v", std::to_string(v)}}}};
  };
  for (int i = 0; i < 20; ++i) ASSERT_TRUE((*writer)->Create(cms, ns, cm("cm-" + std::to_string(i), 0)).ok());

  std::mutex mu;
  std::set<std::string> added_seen, deleted_seen;
  ReflectorOptions ro;
  ro.backoff = {50ms, 500ms, 2.0, 0.2};
  ro.min_watch_timeout = 2s;
  ro.max_watch_timeout = 3s;
  Informer informer(**reader, cms, ns, ro);
  InformerHandlers h;
  h.on_add = [&](const Json& o) {
    std::lock_guard<std::mutex> lock(mu);
    added_seen.insert(o["metadata"]["name"].get<std::string>());
  };
  h.on_delete = [&](const Json& last) {
    std::lock_guard<std::mutex> lock(mu);
    deleted_seen.insert(last["metadata"]["name"].get<std::string>());
  };
  informer.AddHandlers(h);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(20s));

  std::mt19937 rng(11);
  std::set<std::string> deleted;
  int next = 20;
  auto churn = [&](int n) {
    for (int i = 0; i < n; ++i) {
      auto list = (*writer)->ListAll(cms, ns);
      ASSERT_TRUE(list.ok());
      std::vector<std::string> names;
      for (const Json& o : list->items) {
        const std::string name = o["metadata"]["name"];
        if (name.rfind("cm-", 0) == 0) names.push_back(name);
      }
      const int op = static_cast<int>(rng() % 3);
      if (op == 0 || names.empty()) {
        ASSERT_TRUE((*writer)->Create(cms, ns, cm("cm-" + std::to_string(next++), i)).ok());
      } else {
        const std::string& name = names[rng() % names.size()];
        if (op == 1) {
          auto got = (*writer)->Get(cms, ns, name);
          ASSERT_TRUE(got.ok());
          Json o = *got;
          o["data"]["v"] = std::to_string(1000 + i);
          ASSERT_TRUE((*writer)->Update(cms, o).ok());
        } else {
          ASSERT_TRUE((*writer)->Delete(cms, ns, name).ok());
          deleted.insert(name);
        }
      }
    }
  };
  // Connected: the informer follows.
  churn(30);
  // Cut off (every connection dropped, the port closed) while the
  // objects change and etcd compacts past what the informer saw.
  (*proxy)->SetRefusing(true);
  EXPECT_GE((*proxy)->CutAll(), 1);
  churn(60);
  auto revision = cluster->Compact();
  ASSERT_TRUE(revision.ok()) << revision.status().ToString();
  // Back: its watch from the old resourceVersion meets 410, it lists again.
  (*proxy)->SetRefusing(false);
  churn(20);

  auto truth = (*writer)->ListAll(cms, ns);
  ASSERT_TRUE(truth.ok());
  const auto want = Data(truth->items);
  EXPECT_TRUE(Eventually([&] { return Data(informer.List()) == want; }, 30s))
      << "cache " << informer.size() << " objects, server " << want.size();
  const auto stats = informer.stats();
  EXPECT_GE(stats.relists_after_gone, 1u) << "no 410 Gone met: lists " << stats.lists << ", watches " << stats.watches;
  {
    std::lock_guard<std::mutex> lock(mu);
    // Every object the informer had, and that is gone, was reported gone
    // (one made and deleted while it was away it never knew of).
    for (const std::string& name : deleted) {
      if (!want.count(name) && added_seen.count(name)) {
        EXPECT_TRUE(deleted_seen.count(name)) << name << " went without a delete notification";
      }
    }
  }
  RecordProperty("relists_after_gone", static_cast<int>(stats.relists_after_gone));
  RecordProperty("compacted_at", *revision);
  informer.Stop();
}

}  // namespace
}  // namespace fairbench::kube
