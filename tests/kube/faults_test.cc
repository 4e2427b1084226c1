// The fault proxy's faults (testing/kubetest/faults.h) in front of the real
// kube-apiserver, as a client meets them over HTTP: each kind looks like
// what a real kube-apiserver sends, is counted by kind, and is limited to
// the requests it is aimed at.
#include "tests/kube/kube_test_env.h"

namespace fairbench::kube {
namespace {

using kubetest::FaultConfig;
using testenv::ConfigMapJson;
using testenv::Eventually;

class Faults : public testenv::KubeTest {};

// Catches: a flag text read wrongly (a rate, a duration, a list), or bad
// text accepted instead of an error naming the key.
TEST(FaultConfigText, ParsesEveryKeyAndNamesTheBadOne) {
  auto c = FaultConfig::Parse(
      "error=0.1, throttle=0.05,retry-after=2,latency=50ms,latency-rate=0.5,watch-drop=0.2,expire=0.3,timeout=0.01,"
      "codes=500+503,methods=GET+PUT,paths=/apis/fairbench.dev+/api/v1/pods,user=alice,watches=false,seed=42");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_DOUBLE_EQ(c->server_error_rate, 0.1);
  EXPECT_DOUBLE_EQ(c->throttle_rate, 0.05);
  EXPECT_EQ(c->retry_after_seconds, 2);
  EXPECT_EQ(c->latency, std::chrono::milliseconds(50));
  EXPECT_DOUBLE_EQ(c->latency_rate, 0.5);
  EXPECT_DOUBLE_EQ(c->watch_drop_rate, 0.2);
  EXPECT_DOUBLE_EQ(c->expire_rate, 0.3);
  EXPECT_DOUBLE_EQ(c->timeout_rate, 0.01);
  EXPECT_EQ(c->server_error_codes, (std::vector<int>{500, 503}));
  EXPECT_EQ(c->methods, (std::set<std::string>{"GET", "PUT"}));
  EXPECT_EQ(c->path_prefixes, (std::vector<std::string>{"/apis/fairbench.dev", "/api/v1/pods"}));
  EXPECT_EQ(c->users, (std::set<std::string>{"alice"}));
  EXPECT_FALSE(c->include_watches);
  EXPECT_EQ(c->seed, 42u);
  for (const auto& [text, named] :
       std::vector<std::pair<std::string, std::string>>{{"error=1.5", "error=1.5"},
                                                        {"throttle=x", "throttle=x"},
                                                        {"latency=fast", "latency=fast"},
                                                        {"codes=502", "codes=502"},
                                                        {"methods=GOT", "methods=GOT"},
                                                        {"seed=-1", "seed=-1"},
                                                        {"drop=0.1", "unknown key 'drop'"},
                                                        {"error", "'error' is not KEY=VALUE"}}) {
    auto bad = FaultConfig::Parse(text);
    ASSERT_FALSE(bad.ok()) << text;
    EXPECT_NE(bad.status().message().find(named), std::string::npos) << bad.status().message();
  }
}

// Catches: a 429 without Retry-After (the header is what clients honour),
// faults that hit users they are not aimed at, counts by kind that are off.
TEST_F(Faults, ThrottleCarriesRetryAfterAndOnlyTheNamedUserIsHit) {
  FaultConfig f;
  f.throttle_rate = 1.0;
  f.retry_after_seconds = 3;
  f.users = {"system:anonymous-nobody"};
  faults().Configure(f);
  // The test client is the cluster's administrator, not the user aimed at: no faults.
  EXPECT_EQ(client_->Get(resources::ConfigMaps(), ns(), "x").reason(), Reason::kNotFound);
  EXPECT_EQ(faults().injected(), 0u);
  f.users.clear();
  faults().Configure(f);
  ClientOptions once = testenv::FastRetries();
  once.max_attempts = 1;
  auto c = testenv::ClientFor(url(), once);
  auto r = c->Get(resources::ConfigMaps(), ns(), "x");
  ASSERT_EQ(r.reason(), Reason::kTooManyRequests);
  ASSERT_TRUE(r.error().retry_after.has_value());
  EXPECT_EQ(*r.error().retry_after, std::chrono::seconds(3));
  EXPECT_EQ(faults().counts().throttles, 1u);
  EXPECT_EQ(faults().counts().total(), 1u);
}

// Catches: an expired RV answered with a plain 410 instead of the stream a
// real apiserver sends (200, one ERROR event with Status 410 Expired, then
// a clean end), or a compaction counted that changed nothing.
TEST_F(Faults, ExpireCompactsSoThatAWatchFromAnOlderRvGetsAnErrorEvent) {
  auto first = client_->Create(resources::ConfigMaps(), ns(), ConfigMapJson("a", {{"k", "1"}}));
  ASSERT_TRUE(first.ok());
  const std::string old_rv = testenv::Rv(*first);
  // Two writes after it: etcd keeps the revision it compacts at, so the
  // watch's first revision (b's) must fall before the compaction (c's or later).
  ASSERT_TRUE(client_->Create(resources::ConfigMaps(), ns(), ConfigMapJson("b", {{"k", "2"}})).ok());
  ASSERT_TRUE(client_->Create(resources::ConfigMaps(), ns(), ConfigMapJson("c", {{"k", "3"}})).ok());
  FaultConfig f;
  f.expire_rate = 1.0;
  faults().Configure(f);
  // A watch from no RV resumes nothing: no compaction is due.
  WatchOptions fresh;
  fresh.timeout_seconds = std::chrono::seconds(1);
  std::vector<WatchEvent> seen;
  auto end = client_->Watch(resources::ConfigMaps(), ns(), fresh, [&](WatchEvent&& e) { seen.push_back(e); });
  ASSERT_TRUE(end.ok()) << end.error().ToString();
  EXPECT_EQ(faults().counts().expirations, 0u);
  seen.clear();

  WatchOptions from_old;
  from_old.resource_version = old_rv;
  from_old.timeout_seconds = std::chrono::seconds(5);
  end = client_->Watch(resources::ConfigMaps(), ns(), from_old, [&](WatchEvent&& e) { seen.push_back(e); });
  ASSERT_TRUE(end.ok()) << end.error().ToString();  // a 200 stream, ended cleanly
  EXPECT_EQ(*end, WatchEnd::kClosed);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].type, WatchEvent::Type::kError) << seen[0].object.dump() << " from " << old_rv;
  EXPECT_EQ(seen[0].error.reason, Reason::kGone);
  EXPECT_EQ(seen[0].object["kind"], "Status");
  EXPECT_EQ(seen[0].object["code"], 410);
  EXPECT_EQ(seen[0].object["reason"], "Expired");
  // kube-apiserver's words when etcd has compacted past a watch's RV.
  EXPECT_EQ(seen[0].object.value("message", ""), "The resourceVersion for the provided watch is too old.")
      << seen[0].object.dump();
  EXPECT_EQ(faults().counts().expirations, 1u);
}

// Catches: a compaction fault that leaves a paged list alone: a continue
// token from before the compaction must answer 410 Expired (kube-apiserver
// cannot give a consistent page any more), counted once; a list without a
// continue token is not made to fail.
TEST_F(Faults, ExpireFailsAListContinuedFromBeforeTheCompaction) {
  for (const char* name : {"p1", "p2", "p3"}) {
    ASSERT_TRUE(client_->Create(resources::ConfigMaps(), ns(), ConfigMapJson(name, {{"k", "v"}})).ok());
  }
  ListOptions page;
  page.limit = 1;
  auto first = client_->List(resources::ConfigMaps(), ns(), page);
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  ASSERT_FALSE(first->continue_token.empty());
  // A write after the page: compaction then drops the page's version.
  ASSERT_TRUE(client_->Create(resources::ConfigMaps(), ns(), ConfigMapJson("p4", {{"k", "v"}})).ok());
  FaultConfig f;
  f.expire_rate = 1.0;
  faults().Configure(f);
  ASSERT_TRUE(client_->List(resources::ConfigMaps(), ns(), page).ok());  // not resuming: untouched
  EXPECT_EQ(faults().counts().expirations, 0u);
  page.continue_token = first->continue_token;
  auto next = client_->List(resources::ConfigMaps(), ns(), page);
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.error().http_code, 410);
  EXPECT_EQ(next.reason(), Reason::kGone) << next.error().ToString();
  EXPECT_EQ(faults().counts().expirations, 1u);
}

// Catches: a timeout fault that drops the write (it must take effect, as
// the apiserver's own timeout lets it) or answers anything but 504 Timeout.
TEST_F(Faults, TimeoutHandlesTheWriteThenAnswers504) {
  FaultConfig f;
  f.timeout_rate = 1.0;
  f.methods = {"POST"};
  faults().Configure(f);
  auto r = client_->Create(resources::ConfigMaps(), ns(), ConfigMapJson("t", {{"k", "v"}}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().http_code, 504);
  EXPECT_EQ(r.reason(), Reason::kServerTimeout);
  EXPECT_EQ(faults().counts().timeouts, 1u);
  faults().Clear();
  EXPECT_TRUE(client_->Get(resources::ConfigMaps(), ns(), "t").ok()) << "the write did not take effect";
}

// Catches: a dropped watch that ends cleanly (the client would re-watch
// without knowing it missed a cut) or is not counted.
TEST_F(Faults, WatchDropCutsTheStreamAfterAnEvent) {
  FaultConfig f;
  f.watch_drop_rate = 1.0;
  faults().Configure(f);
  ASSERT_TRUE(client_->Create(resources::ConfigMaps(), ns(), ConfigMapJson("w", {{"k", "v"}})).ok());
  WatchOptions wo;
  wo.timeout_seconds = std::chrono::seconds(5);
  int events = 0;
  auto end = client_->Watch(resources::ConfigMaps(), ns(), wo, [&](WatchEvent&&) { ++events; });
  EXPECT_EQ(events, 1);
  ASSERT_FALSE(end.ok());
  EXPECT_EQ(end.reason(), Reason::kTransport) << end.error().ToString();
  EXPECT_EQ(faults().counts().watch_drops, 1u);
}

}  // namespace
}  // namespace fairbench::kube
