// KUBE-API.md §6: leader election and the load slot, on coordination.k8s.io
// Lease objects of the real kube-apiserver (each test's in its own
// namespace), with the fault proxy's failures where a test needs them.
#include <atomic>
#include <cstdlib>
#include <thread>

#include "controller/kube/curl_transport.h"
#include "controller/kube/leader_election.h"
#include "controller/kube/load_slot.h"
#include "controller/kube/typed_client.h"
#include "tests/kube/kube_test_env.h"

namespace fairbench::kube {
namespace {

using namespace std::chrono_literals;
using testenv::Eventually;

LeaderElectionConfig Election(const std::string& identity, const std::string& ns = "default") {
  LeaderElectionConfig c;
  c.ns = ns;
  c.name = "fairbench-controller";
  c.identity = identity;
  return c;  // client-go defaults: 15 s / 10 s / 2 s
}

std::unique_ptr<LeaderElector> Elector(Client& client, Clock& clock, LeaderElectionConfig c) {
  auto e = LeaderElector::Create(client, clock, std::move(c));
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return std::move(*e);
}

// Catches: defaults that differ from client-go's, or timings accepted that
// could let a lease expire before its holder gives up.
TEST(LeaderElectionConfig, ClientGoDefaultsAndRules) {
  EXPECT_TRUE(Election("a").Validate().ok());
  auto c = Election("a");
  EXPECT_EQ(c.lease_duration, 15s);
  EXPECT_EQ(c.renew_deadline, 10s);
  EXPECT_EQ(c.retry_period, 2s);
  c.renew_deadline = 15s;
  EXPECT_FALSE(c.Validate().ok());  // duration > deadline
  c = Election("a");
  c.retry_period = 9s;
  EXPECT_FALSE(c.Validate().ok());  // deadline > 1.2 × retry
  c = Election("");
  EXPECT_FALSE(c.Validate().ok());
}

class LeaderElection : public testenv::KubeTest {
 protected:
  LeaderElectionConfig Election(const std::string& identity) const { return kube::Election(identity, ns()); }
  FakeClock clock_;
};

// Catches: two candidates both leading, or a Lease written without the
// holder, duration and renewTime other tools (kubectl, client-go) read.
TEST_F(LeaderElection, TwoCandidatesExactlyOneLeads) {
  auto a = Elector(*client_, clock_, Election("a"));
  auto b = Elector(*client_, clock_, Election("b"));
  std::string announced;
  for (int i = 0; i < 20; ++i) {
    a->Step();
    b->Step();
    EXPECT_NE(a->IsLeader(), b->IsLeader()) << "round " << i;
    clock_.Advance(2s);
  }
  EXPECT_TRUE(a->IsLeader());
  EXPECT_EQ(b->leader(), "a");
  auto lease = LeaseClient(*client_).Get(ns(), "fairbench-controller");
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ(lease->spec.holder_identity, "a");
  EXPECT_EQ(*lease->spec.lease_duration_seconds, 15);
  EXPECT_TRUE(lease->spec.renew_time.has_value());
}

// Catches: a takeover before the lease duration has passed since the last
// change the candidate saw, or a takeover not counted in leaseTransitions.
TEST_F(LeaderElection, StoppedLeaderIsReplacedOnlyAfterTheLeaseDuration) {
  auto a = Elector(*client_, clock_, Election("a"));
  auto b = Elector(*client_, clock_, Election("b"));
  a->Step();
  b->Step();
  clock_.Advance(2s);
  a->Step();  // last renewal: b sees the change at t = 2 s
  b->Step();
  ASSERT_TRUE(a->IsLeader());
  // a stops (crashed: no release). b waits 15 s from the last change it saw.
  for (int t = 4; t <= 16; t += 2) {
    clock_.Advance(2s);
    b->Step();
    EXPECT_FALSE(b->IsLeader()) << "took over at t = " << t << " s";
  }
  clock_.Advance(2s);
  b->Step();
  EXPECT_TRUE(b->IsLeader());
  auto lease = LeaseClient(*client_).Get(ns(), "fairbench-controller");
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ(lease->spec.holder_identity, "b");
  EXPECT_EQ(lease->spec.lease_transitions, 1);
  EXPECT_EQ(lease->spec.acquire_time, lease->spec.renew_time);
}

// Catches: a leader that keeps leading past its renew deadline while the
// API server fails it, or one that starts leading again afterwards.
TEST_F(LeaderElection, LeaderThatCannotRenewStepsDown) {
  bool started = false, stopped = false;
  auto config = Election("a");
  config.on_started_leading = [&] { started = true; };
  config.on_stopped_leading = [&] { stopped = true; };
  auto a = Elector(*client_, clock_, config);
  a->Step();
  ASSERT_TRUE(started);
  kubetest::FaultConfig down;
  down.server_error_rate = 1.0;
  down.path_prefixes = {"/apis/coordination.k8s.io/"};
  faults().Configure(down);
  for (int t = 2; t < 10; t += 2) {
    clock_.Advance(2s);
    EXPECT_EQ(a->Step(), LeaderElector::State::kLeading) << "t = " << t;
  }
  clock_.Advance(2s);
  EXPECT_EQ(a->Step(), LeaderElector::State::kStopped);
  EXPECT_TRUE(stopped);
  faults().Clear();
  clock_.Advance(2s);
  EXPECT_EQ(a->Step(), LeaderElector::State::kStopped);  // stopping is final
}

// Catches: a leader that loses the lease to errors that pass: a renewal
// that took effect but answered 504 leaves its copy of the lease one
// version behind, and a leader that only renewed from that copy would meet
// 409 on every renewal after it and step down 10 s later (the other
// candidate taking over). Reading the lease again after a failed renewal
// keeps the one leader.
TEST_F(LeaderElection, OneLeaderThroughServerErrorsAndLostRenewals) {
  auto a = Elector(*client_, clock_, Election("a"));
  auto b = Elector(*client_, clock_, Election("b"));
  a->Step();
  ASSERT_TRUE(a->IsLeader());
  kubetest::FaultConfig f;
  f.server_error_rate = 0.2;
  f.server_error_codes = {500, 503};
  f.timeout_rate = 0.3;
  f.path_prefixes = {"/apis/coordination.k8s.io/"};
  f.seed = 9;
  faults().Configure(f);
  for (int round = 0; round < 30; ++round) {
    clock_.Advance(2s);
    a->Step();
    b->Step();
    EXPECT_TRUE(a->IsLeader()) << "round " << round;
    EXPECT_FALSE(b->IsLeader()) << "round " << round;
  }
  const kubetest::FaultCounts counts = faults().counts();
  faults().Clear();
  EXPECT_GT(counts.timeouts, 3u) << counts.ToString();
  EXPECT_GT(counts.server_errors, 3u) << counts.ToString();
}

// Catches: a stopped leader that does not release its lease (the next
// candidate would wait a whole lease duration).
TEST_F(LeaderElection, ReleaseOnStopHandsOverAtOnce) {
  auto a = Elector(*client_, clock_, Election("a"));
  std::jthread run([&](std::stop_token stop) { a->Run(stop); });
  ASSERT_TRUE(Eventually([&] { return a->IsLeader() && clock_.sleepers() == 1; }));
  run.request_stop();
  run.join();
  EXPECT_EQ(a->state(), LeaderElector::State::kStopped);
  auto b = Elector(*client_, clock_, Election("b"));
  EXPECT_EQ(b->Step(), LeaderElector::State::kLeading);
}

// Catches: two leaders at once under real threads and the real server's
// timing, a leader stopped by its caller that does not hand over, or one
// that gives the Lease up before it stops saying it leads.
TEST_F(LeaderElection, RealThreadsOneLeaderThenTakeover) {
  auto fast = [&](const std::string& id) {
    auto c = Election(id);
    c.lease_duration = 1s;
    c.renew_deadline = 700ms;
    c.retry_period = 100ms;
    return c;
  };
  auto ca = testenv::ClientFor(url());
  auto cb = testenv::ClientFor(url());
  auto a = Elector(*ca, SystemClock::Instance(), fast("a"));
  auto b = Elector(*cb, SystemClock::Instance(), fast("b"));
  std::jthread ra([&](std::stop_token s) { a->Run(s); });
  std::jthread rb([&](std::stop_token s) { b->Run(s); });
  ASSERT_TRUE(Eventually([&] { return a->IsLeader() || b->IsLeader(); }));
  auto until = std::chrono::steady_clock::now() + 600ms;
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_FALSE(a->IsLeader() && b->IsLeader());
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_TRUE(Eventually([&] { return a->IsLeader() != b->IsLeader(); }));
  LeaderElector* leader = a->IsLeader() ? a.get() : b.get();
  LeaderElector* other = leader == a.get() ? b.get() : a.get();
  (leader == a.get() ? ra : rb).request_stop();
  // From the stop on, never both: the stopped leader says so before it gives
  // the Lease up, which the other may take at once.
  ASSERT_TRUE(Eventually(
      [&] {
        EXPECT_FALSE(leader->IsLeader() && other->IsLeader()) << "two leaders while the first handed over";
        return other->IsLeader();
      },
      3000ms));
  EXPECT_EQ(leader->state(), LeaderElector::State::kStopped);
}

// A transport that can be cut, to partition one holder from the server.
class Partitionable final : public HttpTransport {
 public:
  explicit Partitionable(const std::string& url) : inner_(url, {}, "fairbench-test") {}
  Result<HttpResponse> Do(const HttpRequest& r) override {
    if (cut) return Status::Unavailable("partitioned");
    return inner_.Do(r);
  }
  Result<HttpResponse> Stream(const HttpRequest& r, const std::function<bool(std::string_view)>& f,
                              std::stop_token s) override {
    if (cut) return Status::Unavailable("partitioned");
    return inner_.Stream(r, f, s);
  }
  std::atomic<bool> cut{false};

 private:
  CurlTransport inner_;
};

LoadSlotConfig Slot(const std::string& identity, const std::string& ns) {
  LoadSlotConfig c;
  c.ns = ns;
  c.identity = identity;
  return c;
}

class LoadSlotTest : public testenv::KubeTest {
 protected:
  LoadSlotConfig Slot(const std::string& identity) const { return kube::Slot(identity, ns()); }
  FakeClock clock_;
};

// Catches: the load slot held twice at once, or taken from a crashed
// holder before its lease has expired.
TEST_F(LoadSlotTest, TwoHoldersNeverHoldAtOnceAcrossACrash) {
  LoadSlot a(*client_, clock_, Slot("install-1/run-a/drogon"));
  LoadSlot b(*client_, clock_, Slot("install-2/run-b/crow"));
  ASSERT_TRUE(a.TryAcquire());
  EXPECT_FALSE(b.TryAcquire());
  EXPECT_EQ(b.holder(), "install-1/run-a/drogon");
  for (int i = 0; i < 10; ++i) {
    clock_.Advance(2s);
    EXPECT_TRUE(a.RenewStep());
    EXPECT_FALSE(b.TryAcquire());
    ASSERT_FALSE(a.Held() && b.Held());
  }
  // a crashes: it neither renews nor releases. b polls every second.
  int waited = 0;
  while (!b.TryAcquire()) {
    clock_.Advance(1s);
    ++waited;
    ASSERT_FALSE(a.Held() && b.Held());
    ASSERT_LT(waited, 30);
  }
  EXPECT_GE(waited, 15);  // only after the lease duration
  EXPECT_TRUE(b.Held());
  a.Abandon();
}

// Catches: a holder cut off from the API server that goes on believing it
// holds the slot after another could have taken it.
TEST_F(LoadSlotTest, PartitionedHolderStopsCountingBeforeAnyoneTakesOver) {
  auto partitionable = std::make_unique<Partitionable>(url());
  Partitionable* link = partitionable.get();
  RestConfig cfg;
  cfg.server = url();
  Client a_client(cfg, std::move(partitionable), testenv::FastRetries());
  LoadSlot a(a_client, clock_, Slot("a"));
  LoadSlot b(*client_, clock_, Slot("b"));
  bool lost = false;
  a.set_on_lost([&] { lost = true; });
  ASSERT_TRUE(a.TryAcquire());
  EXPECT_FALSE(b.TryAcquire());
  link->cut = true;
  int t = 0;
  bool a_gave_up_at_or_before_b = false;
  while (!b.Held()) {
    clock_.Advance(1s);
    ++t;
    a.RenewStep();
    b.TryAcquire();
    ASSERT_FALSE(a.Held() && b.Held()) << "t = " << t;
    if (!a.Held() && !b.Held()) a_gave_up_at_or_before_b = true;
    ASSERT_LT(t, 30);
  }
  EXPECT_TRUE(a_gave_up_at_or_before_b);
  EXPECT_TRUE(lost);
  EXPECT_EQ(a.state(), LoadSlot::State::kLost);
  EXPECT_GE(t, 15);
}

// Catches: Acquire() returning while another holds the slot, a release the
// waiter does not see, or an Acquire() that ignores its stop token.
TEST_F(LoadSlotTest, ReleaseHandsOverAtOnceAndAcquireWaits) {
  LoadSlot a(*client_, SystemClock::Instance(), [&] {
    auto c = Slot("a");
    c.retry_period = 50ms;
    return c;
  }());
  ASSERT_TRUE(a.Acquire().ok());
  EXPECT_TRUE(a.Held());
  LoadSlot b(*client_, SystemClock::Instance(), [&] {
    auto c = Slot("b");
    c.retry_period = 50ms;
    return c;
  }());
  std::atomic<bool> b_done{false};
  std::jthread waiter([&] {
    EXPECT_TRUE(b.Acquire().ok());
    b_done = true;
  });
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(b_done.load());
  EXPECT_EQ(b.state(), LoadSlot::State::kWaiting);
  a.Release();
  ASSERT_TRUE(Eventually([&] { return b_done.load(); }, 2000ms));
  EXPECT_TRUE(b.Held());
  EXPECT_FALSE(a.Held());
  std::stop_source cancel;
  LoadSlot c(*client_, SystemClock::Instance(), Slot("c"));
  std::jthread canceller([&] {
    std::this_thread::sleep_for(100ms);
    cancel.request_stop();
  });
  EXPECT_EQ(c.Acquire(cancel.get_token()).code(), Status::Code::kCancelled);
}

// The holder in another process, killed with SIGKILL while holding the
// slot: the survivor takes over only once the lease has expired.
LoadSlotConfig FastSlot(const std::string& identity, const std::string& ns) {
  auto c = Slot(identity, ns);
  c.lease_duration = 2s;
  c.renew_deadline = 1400ms;
  c.retry_period = 200ms;
  return c;
}

// The child side of the crash test: this test binary started again with
// FAIRBENCH_SLOT_CHILD_URL (the test's fault proxy) and FAIRBENCH_SLOT_CHILD_NS
// set holds the slot until it is killed. It runs before main so that no
// test of its own appears in the test list.
[[maybe_unused]] const bool kSlotChild = [] {
  const char* url = std::getenv("FAIRBENCH_SLOT_CHILD_URL");
  const char* ns = std::getenv("FAIRBENCH_SLOT_CHILD_NS");
  if (!url || !ns) return false;
  RestConfig cfg;
  cfg.server = url;
  auto client = Client::Create(cfg, testenv::FastRetries());
  if (!client.ok()) _exit(2);
  LoadSlot slot(**client, SystemClock::Instance(), FastSlot("child", ns));
  if (!slot.Acquire().ok()) _exit(3);
  std::printf("held\n");
  std::fflush(stdout);
  // Renewing in the background until killed; never outlive the test.
  std::this_thread::sleep_for(60s);
  _exit(0);
}();

// Catches: a survivor that takes the slot while a holder in another
// process still renews it, or that waits far past the lease after a SIGKILL.
TEST_F(LoadSlotTest, CrashedHolderProcessIsReplacedOnlyAfterExpiry) {
  auto child = testenv::ChildProcess::Spawn("/proc/self/exe", {},
                                            {"FAIRBENCH_SLOT_CHILD_URL=" + url(), "FAIRBENCH_SLOT_CHILD_NS=" + ns()});
  ASSERT_TRUE(child);
  ASSERT_TRUE(child->WaitFor("held\n", 10s)) << child->output();

  LoadSlot survivor(*client_, SystemClock::Instance(), FastSlot("survivor", ns()));
  std::atomic<bool> acquired{false};
  std::chrono::steady_clock::time_point acquired_at;
  std::jthread waiter([&] {
    ASSERT_TRUE(survivor.Acquire().ok());
    acquired_at = std::chrono::steady_clock::now();
    acquired = true;
  });
  // While the holder lives (and renews), the slot stays taken, longer than
  // a lease duration.
  std::this_thread::sleep_for(2500ms);
  EXPECT_FALSE(acquired.load());
  auto killed_at = std::chrono::steady_clock::now();
  child->Kill();
  ASSERT_TRUE(Eventually([&] { return acquired.load(); }, 5000ms));
  auto after = std::chrono::duration_cast<std::chrono::milliseconds>(acquired_at - killed_at);
  // Last renewal ≤ 200 ms before the kill, seen ≤ 200 ms later, + 2 s lease.
  EXPECT_GE(after, 1500ms);
  EXPECT_LE(after, 4500ms);
  EXPECT_EQ(survivor.holder(), "survivor");
}

}  // namespace
}  // namespace fairbench::kube
