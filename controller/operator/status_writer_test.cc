// StatusWriter against Kubernetes' own API server (the shared cluster, a
// namespace per test; the writer's client goes through the test's fault
// proxy) with the generated CRD: status read back with the real kubectl, coalescing and rate limits counted at the
// transport, 500s and 409s retried with the newest status, the leader gate,
// and the Events.
#include "controller/operator/status_writer.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "api/codec.h"
#include "controller/kube/curl_transport.h"
#include "controller/kube/exec_credential.h"
#include "controller/store/test_records.h"
#include "tests/kube/kube_test_env.h"

namespace fairbench::controller {
namespace {

using kube::Json;
using namespace std::chrono_literals;
namespace tr = testrecords;
namespace fs = std::filesystem;

// The path of run `name`'s status in namespace `ns`.
std::string StatusPath(const std::string& ns, const std::string& name) {
  return "/apis/fairbench.dev/v1alpha1/namespaces/" + ns + "/benchmarkruns/" + name + "/status";
}

// Counts the status PATCHes (to `status_path`) that reach the server and can
// answer the next ones with 409 Conflict instead of sending them: a merge
// patch without a resourceVersion never meets a real Conflict, but a writer
// must still ride one out.
class CountingTransport final : public kube::HttpTransport {
 public:
  CountingTransport(std::unique_ptr<kube::HttpTransport> inner, std::string status_path)
      : inner_(std::move(inner)), status_path_(std::move(status_path)) {}
  Result<kube::HttpResponse> Do(const kube::HttpRequest& request) override {
    const bool status_patch = request.method == "PATCH" && request.path_and_query.rfind(status_path_, 0) == 0;
    if (status_patch) {
      for (const auto& [name, value] : request.headers) {
        if (name == "Content-Type" || name == "content-type") content_type_ = value;
      }
      if (conflicts_.load() > 0) {
        --conflicts_;
        ++conflicts_sent_;
        kube::HttpResponse r;
        r.status = 409;
        r.headers["content-type"] = "application/json";
        // kube-apiserver's 409 for a write against an older resourceVersion.
        r.body = Json{{"kind", "Status"},
                      {"apiVersion", "v1"},
                      {"metadata", Json::object()},
                      {"status", "Failure"},
                      {"reason", "Conflict"},
                      {"details", {{"name", "demo"}, {"group", "fairbench.dev"}, {"kind", "benchmarkruns"}}},
                      {"code", 409},
                      {"message",
                       "Operation cannot be fulfilled on benchmarkruns.fairbench.dev \"demo\": the object "
                       "has been modified; please apply your changes to the latest version and try again"}}
                     .dump();
        return r;
      }
      ++patches_;
    }
    return inner_->Do(request);
  }
  Result<kube::HttpResponse> Stream(const kube::HttpRequest& request,
                                    const std::function<bool(std::string_view)>& on_data,
                                    std::stop_token stop) override {
    return inner_->Stream(request, on_data, std::move(stop));
  }
  int patches() const { return patches_.load(); }
  void reset() { patches_ = 0; }
  void InjectConflicts(int n) { conflicts_ = n; }
  int conflicts_sent() const { return conflicts_sent_.load(); }
  std::string content_type() const { return content_type_; }

 private:
  std::unique_ptr<kube::HttpTransport> inner_;
  const std::string status_path_;
  std::atomic<int> patches_{0};
  std::atomic<int> conflicts_{0};
  std::atomic<int> conflicts_sent_{0};
  std::string content_type_;
};

api::CurrentCell Current(int64_t connections, api::Stage stage) {
  return api::CurrentCell{"drogon", "hello", connections, 1, stage, std::nullopt};
}

// A record as the orchestrator persists it after `cells` cells of `total`.
report::RunRecord Progress(size_t cells, size_t total) {
  report::RunRecord r = tr::Record("demo", cells, 11, 200);
  r.run.status.progress = {static_cast<int64_t>(cells), static_cast<int64_t>(total)};
  return r;
}

report::RunRecord Finished(size_t total, bool ok) {
  report::RunRecord r = Progress(total, total);
  r.run.status.phase = ok ? api::RunPhase::kSucceeded : api::RunPhase::kFailed;
  r.run.status.completion_time = tr::TimeAt(1'790'000'999'000'000'000);
  r.run.status.conditions[0].status = api::ConditionStatus::kFalse;
  r.run.status.conditions[0].reason = "Finished";
  api::Condition done;
  done.type = ok ? "Complete" : "Failed";
  done.status = api::ConditionStatus::kTrue;
  done.reason = ok ? "AllCellsSucceeded" : "CellsFailed";
  done.message = ok ? "every cell succeeded" : "1 failed and 0 skipped of " + std::to_string(total) + " cells";
  done.last_transition_time = tr::TimeAt(1'790'000'999'000'000'000);
  done.observed_generation = 1;
  r.run.status.conditions.push_back(done);
  return r;
}

Json Plain(const nlohmann::ordered_json& j) { return Json::parse(j.dump()); }

class StatusWriterTest : public kube::testenv::KubeTest {
 protected:
  void SetUp() override {
    KubeTest::SetUp();
    client_ = tr::FastClient(url());
    tr::InstallGeneratedCrd(*cluster_, *client_, ns());
    Json run = tr::CreateRun(*client_, "demo", ns());
    uid_ = run["metadata"].value("uid", "");
    ASSERT_FALSE(uid_.empty());
    kube::RestConfig cfg;
    cfg.server = url();
    cfg.timeout = 5000ms;
    auto transport = std::make_unique<CountingTransport>(
        std::make_unique<tr::IdentityEncodingTransport>(
            std::make_unique<kube::CurlTransport>(cfg.server, cfg.tls, cfg.user_agent)),
        StatusPath(ns(), "demo"));
    transport_ = transport.get();
    writer_client_ = std::make_unique<kube::Client>(cfg, std::move(transport), kube::testenv::FastRetries());
    recorder_ = std::make_unique<kube::EventRecorder>(*writer_client_, SystemClock::Instance());
  }
  void TearDown() override {
    writer_.reset();
    recorder_.reset();
    writer_client_.reset();
    KubeTest::TearDown();
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  StatusWriterOptions Options() {
    StatusWriterOptions o;
    o.ns = ns();
    o.name = "demo";
    o.uid = uid_;
    o.retry_backoff = {20ms, 200ms, 2.0, 0.0};
    return o;
  }
  StatusWriter& Start(StatusWriterOptions o) {
    writer_ = std::make_unique<StatusWriter>(*writer_client_, recorder_.get(), std::move(o));
    return *writer_;
  }
  Json ServerStatus() {
    auto got = client_->Get(kube::resources::BenchmarkRuns(), ns(), "demo");
    EXPECT_TRUE(got.ok());
    return got.ok() ? got->value("status", Json()) : Json();
  }
  // `kubectl get benchmarkruns.fairbench.dev demo -o json` (the cluster's
  // kubectl, as its administrator, in the test's namespace). The group is
  // named: other CRDs in the shared cluster serve `benchmarkruns` too, and
  // kubectl may resolve a bare `benchmarkrun` to one of them.
  Json KubectlGet() {
    if (dir_.empty()) {
      char tmpl[] = "/tmp/fairbench-status-writer-XXXXXX";
      dir_ = mkdtemp(tmpl);
      tr::WriteAdminKubeconfig(*cluster_, ns(), dir_ + "/kubeconfig");
    }
    auto r = kube::RunCommand(cluster_->kubectl(),
                              {"--kubeconfig", dir_ + "/kubeconfig", "--cache-dir", dir_ + "/cache", "get",
                               "benchmarkruns.fairbench.dev", "demo", "-o", "json"},
                              {{"HOME", dir_}, {"KUBECONFIG", ""}}, 60s);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return Json();
    EXPECT_EQ(r->exit_code, 0) << r->out << r->err;
    return Json::parse(r->out, nullptr, false);
  }
  std::vector<kube::Event> Events() {
    auto list = client_->List(kube::resources::Events(), ns());
    EXPECT_TRUE(list.ok());
    std::vector<kube::Event> out;
    if (!list.ok()) return out;
    for (const auto& item : list->items) {
      auto ev = kube::Event::FromJson(item);
      if (ev.ok()) out.push_back(*ev);
    }
    return out;
  }

  std::string uid_;
  CountingTransport* transport_ = nullptr;
  std::unique_ptr<kube::Client> writer_client_;
  std::unique_ptr<kube::EventRecorder> recorder_;
  std::unique_ptr<StatusWriter> writer_;
  std::string dir_;
};

// Catches: status fields the CRD does not accept (pruned or refused), a
// patch on the object instead of /status, a wrong content type, `current`
// left behind after the run, and a stage change not written.
TEST_F(StatusWriterTest, StatusIsVisibleWithKubectl) {
  StatusWriter& w = Start(Options());
  const report::RunRecord start = Progress(0, 4);
  w.OnPersist(start);
  w.OnStage(start.run, Current(100, api::Stage::kWarmingUp));
  ASSERT_TRUE(w.Flush(5s).ok());
  EXPECT_EQ(transport_->content_type(), "application/merge-patch+json");
  Json mid = KubectlGet();
  EXPECT_EQ(mid["status"]["phase"], "Running");
  api::BenchmarkRunStatus warming;
  warming.current = Current(100, api::Stage::kWarmingUp);
  EXPECT_EQ(mid["status"]["current"], Plain(api::ToJson(warming))["current"]);
  EXPECT_EQ(mid["status"]["progress"], "0/4");

  const report::RunRecord two = Progress(2, 4);
  w.OnLive(Current(100, api::Stage::kMeasuring), 1000, 1);
  w.OnCellDone(two, two.cells[1]);
  w.OnPersist(two);
  w.OnStage(two.run, Current(200, api::Stage::kMeasuring));
  ASSERT_TRUE(w.Flush(5s).ok());
  api::BenchmarkRunStatus expected = two.run.status;
  expected.current = Current(200, api::Stage::kMeasuring);
  EXPECT_EQ(KubectlGet()["status"], Plain(api::ToJson(expected)));

  const report::RunRecord done = Finished(4, true);
  w.OnPersist(done);
  ASSERT_TRUE(w.Flush(5s).ok());
  Json final_status = KubectlGet()["status"];
  EXPECT_EQ(final_status, Plain(api::ToJson(done.run.status))) << final_status.dump(1);
  EXPECT_FALSE(final_status.contains("current"));
  EXPECT_EQ(final_status["completedCells"], 4);
  EXPECT_EQ(final_status["totalCells"], 4);
  EXPECT_EQ(final_status["results"].size(), 4u);
}

// Catches: one PATCH per OnLive (an API server flooded by every interval)
// and stage changes written without a limit — while the newest value still
// arrives.
TEST_F(StatusWriterTest, LiveUpdatesAreCoalescedToAboutOnePerSecond) {
  StatusWriter& w = Start(Options());
  const report::RunRecord start = Progress(0, 4);
  w.OnPersist(start);
  ASSERT_TRUE(w.Flush(5s).ok());
  transport_->reset();

  const auto begin = std::chrono::steady_clock::now();
  int64_t connections = 0;
  while (std::chrono::steady_clock::now() - begin < 2500ms) {
    w.OnLive(Current(++connections, api::Stage::kMeasuring), 1000, 1);
    std::this_thread::sleep_for(2ms);
  }
  const int live_patches = transport_->patches();
  EXPECT_GE(live_patches, 1);
  EXPECT_LE(live_patches, 4) << "OnLive spam for 2.5 s";
  ASSERT_TRUE(w.Flush(5s).ok());
  EXPECT_EQ(ServerStatus()["current"]["connections"], connections);

  // Stage changes: prompt, but at most one write per 200 ms.
  transport_->reset();
  const auto stages_begin = std::chrono::steady_clock::now();
  int i = 0;
  while (std::chrono::steady_clock::now() - stages_begin < 1000ms) {
    w.OnStage(start.run, Current(100, ++i % 2 ? api::Stage::kWarmingUp : api::Stage::kMeasuring));
    std::this_thread::sleep_for(2ms);
  }
  EXPECT_LE(transport_->patches(), 7) << "OnStage spam for 1 s";
  ASSERT_TRUE(w.Flush(5s).ok());
  EXPECT_EQ(ServerStatus()["current"]["stage"], i % 2 ? "WarmingUp" : "Measuring");
}

// Catches: a status lost after 5xx answers (written once, dropped on
// failure) or an older status written after a newer one.
TEST_F(StatusWriterTest, ServerErrorsAreRetriedWithTheNewestStatus) {
  StatusWriter& w = Start(Options());
  kubetest::FaultConfig f;
  f.server_error_rate = 1.0;
  f.methods = {"PATCH"};
  f.path_prefixes = {StatusPath(ns(), "demo")};
  faults().Configure(f);
  w.OnPersist(Progress(1, 4));
  ASSERT_TRUE(kube::testenv::Eventually([&] { return w.stats().failed_writes >= 2; }, 5000ms));
  const report::RunRecord newest = Progress(3, 4);
  w.OnPersist(newest);
  w.OnStage(newest.run, Current(300, api::Stage::kCoolingDown));
  // Still failing: the writer keeps trying, with the newest status.
  EXPECT_TRUE(kube::testenv::Eventually([&] { return faults().injected() > 2; }, 5000ms))
      << faults().counts().ToString();
  EXPECT_TRUE(ServerStatus().is_null()) << "nothing can have been written yet";
  faults().Clear();
  ASSERT_TRUE(w.Flush(10s).ok()) << w.stats().last_error;
  api::BenchmarkRunStatus expected = newest.run.status;
  expected.current = Current(300, api::Stage::kCoolingDown);
  EXPECT_EQ(ServerStatus(), Plain(api::ToJson(expected)));
}

// Catches: a status write that took effect but answered 504 taken as not
// written: the next patch, made against the status last known written,
// leaves out a field that write set and the newer status clears (here
// `current` at the end of the run), so the finished run keeps a current
// cell on the server. After a failed write the next one sends every field.
TEST_F(StatusWriterTest, AWriteWhoseAnswerWasLostIsNotTrustedToHaveFailed) {
  StatusWriter& w = Start(Options());
  const report::RunRecord start = Progress(1, 4);
  w.OnPersist(start);
  ASSERT_TRUE(w.Flush(5s).ok()) << w.stats().last_error;
  kubetest::FaultConfig f;
  f.timeout_rate = 1.0;
  f.methods = {"PATCH"};
  f.path_prefixes = {StatusPath(ns(), "demo")};
  faults().Configure(f);
  w.OnStage(start.run, Current(100, api::Stage::kMeasuring));
  ASSERT_TRUE(kube::testenv::Eventually([&] { return w.stats().failed_writes >= 1; }, 5000ms));
  faults().Clear();
  ASSERT_TRUE(ServerStatus().contains("current")) << "the lost write took effect";
  const report::RunRecord done = Finished(4, true);
  w.OnPersist(done);
  ASSERT_TRUE(w.Flush(10s).ok()) << w.stats().last_error;
  const Json final_status = ServerStatus();
  EXPECT_FALSE(final_status.contains("current")) << final_status.dump(1);
  EXPECT_EQ(final_status, Plain(api::ToJson(done.run.status)));
}

// Catches: 409 Conflict treated as final (the status would stay stale until
// the next change).
TEST_F(StatusWriterTest, ConflictsAreRetried) {
  StatusWriter& w = Start(Options());
  transport_->InjectConflicts(3);
  const report::RunRecord rec = Progress(2, 4);
  w.OnPersist(rec);
  ASSERT_TRUE(w.Flush(10s).ok()) << w.stats().last_error;
  EXPECT_EQ(transport_->conflicts_sent(), 3);
  EXPECT_GE(w.stats().failed_writes, 3u);
  EXPECT_EQ(ServerStatus(), Plain(api::ToJson(rec.run.status)));
}

// Catches: a follower (may_write false) writing status or Events — two
// controllers fighting over one run.
TEST_F(StatusWriterTest, NothingIsWrittenWhileMayWriteIsFalse) {
  std::atomic<bool> leader{false};
  StatusWriterOptions o = Options();
  o.may_write = [&] { return leader.load(); };
  StatusWriter& w = Start(o);
  const report::RunRecord rec = Progress(1, 2);
  w.OnPersist(rec);
  w.OnStage(rec.run, Current(100, api::Stage::kMeasuring));
  w.OnCellDone(rec, rec.cells[0]);
  w.OnLive(Current(100, api::Stage::kMeasuring), 5, 1);
  const Status flushed = w.Flush(400ms);
  EXPECT_FALSE(flushed.ok());
  EXPECT_NE(flushed.message().find("not the leader"), std::string::npos) << flushed.message();
  EXPECT_EQ(transport_->patches(), 0);
  EXPECT_TRUE(ServerStatus().is_null());
  EXPECT_TRUE(Events().empty());

  leader = true;
  ASSERT_TRUE(w.Flush(5s).ok()) << w.stats().last_error;
  api::BenchmarkRunStatus expected = rec.run.status;
  expected.current = Current(100, api::Stage::kMeasuring);
  EXPECT_EQ(ServerStatus(), Plain(api::ToJson(expected)));
  EXPECT_GE(w.stats().events_dropped, 1u);
}

// Catches: missing or mis-typed Events for what a user watches for (a cell
// finished, a target that died or never got ready, the run's end), one
// Warning per cell where one per target is meant, and an OOM kill told
// from the message's words instead of how the target ended.
TEST_F(StatusWriterTest, EventsForCellsTargetsAndTheRun) {
  StatusWriter& w = Start(Options());
  report::RunRecord rec = Progress(6, 6);
  rec.cells[0].result.requests_per_second = 123456.7;
  for (size_t i : {1, 2}) {
    rec.cells[i].result.target = "nginx";
    rec.cells[i].result.state = api::CellState::kFailed;
    rec.cells[i].result.reason = api::CellReason::kTargetExited;
    rec.cells[i].result.message = "target nginx exited with code 137 during this cell";
    rec.cells[i].target_exit = report::TargetExit{137, std::nullopt, true, "exited with code 137"};
  }
  rec.cells[3].result.state = api::CellState::kFailed;
  rec.cells[3].result.reason = api::CellReason::kNotReady;
  rec.cells[3].result.message = "not ready within 30s";
  rec.cells[4].result.state = api::CellState::kSkipped;
  rec.cells[4].result.reason = api::CellReason::kVerificationFailed;
  rec.cells[4].result.message = "GET / answered 500, expected 200";
  rec.cells[5].result.state = api::CellState::kFailed;
  rec.cells[5].result.reason = api::CellReason::kAgentFailed;
  rec.cells[5].result.message = "agent lost";
  for (size_t i = 0; i < rec.cells.size(); ++i) w.OnCellDone(rec, rec.cells[i]);
  w.OnPersist(Finished(6, false));
  w.OnPersist(Finished(6, false));
  ASSERT_TRUE(w.Flush(10s).ok()) << w.stats().last_error;

  std::map<std::string, std::vector<kube::Event>> by_reason;
  for (auto& ev : Events()) {
    EXPECT_EQ(ev.involved_object.name, "demo");
    EXPECT_EQ(ev.involved_object.kind, "BenchmarkRun");
    EXPECT_EQ(ev.involved_object.uid, uid_);
    by_reason[ev.reason].push_back(ev);
  }
  ASSERT_EQ(by_reason["CellFinished"].size(), 1u);
  EXPECT_EQ(by_reason["CellFinished"][0].type, "Normal");
  EXPECT_NE(by_reason["CellFinished"][0].message.find("123456.7 requests/s"), std::string::npos);
  ASSERT_EQ(by_reason["TargetOOMKilled"].size(), 1u) << "one per target, not one per cell";
  EXPECT_EQ(by_reason["TargetOOMKilled"][0].type, "Warning");
  ASSERT_EQ(by_reason["TargetNotReady"].size(), 1u);
  EXPECT_EQ(by_reason["TargetNotReady"][0].type, "Warning");
  ASSERT_EQ(by_reason["VerificationFailed"].size(), 1u);
  ASSERT_EQ(by_reason["CellFailed"].size(), 1u);
  EXPECT_NE(by_reason["CellFailed"][0].message.find("AgentFailed"), std::string::npos);
  ASSERT_EQ(by_reason["RunFailed"].size(), 1u) << "once, however often the final record is saved";
  EXPECT_EQ(by_reason["RunFailed"][0].type, "Warning");
  EXPECT_TRUE(by_reason["RunSucceeded"].empty());
}

// Catches: the stages a user waits through leaving no trace in the run's
// Events (the slot taken, the node the target landed on, the target ready),
// and the same Event repeated on every stage change; a lost and retaken
// slot is a new attempt with its own Events (folded by the recorder into
// one Event of count 2).
TEST_F(StatusWriterTest, StageEventsOncePerTargetAndAttempt) {
  StatusWriter& w = Start(Options());
  report::RunRecord rec = Progress(0, 2);
  for (int attempt = 0; attempt < 2; ++attempt) {
    w.OnStage(rec.run, Current(100, api::Stage::kWaitingForSlot));
    w.OnStage(rec.run, Current(100, api::Stage::kDeploying));
    w.OnTargetReady("demo", "drogon", TargetPlacement{"node-target", "127.0.10.1", 8080});
    w.OnStage(rec.run, Current(100, api::Stage::kVerifying));
    w.OnStage(rec.run, Current(100, api::Stage::kWarmingUp));
    w.OnTargetReady("demo", "drogon", TargetPlacement{"node-target", "127.0.10.1", 8080});  // no second Event
    w.OnStage(rec.run, Current(100, api::Stage::kMeasuring));
  }
  w.OnMessage("target drogon fails scenario hello: GET / answered 500");  // not a stage Event
  ASSERT_TRUE(w.Flush(10s).ok()) << w.stats().last_error;
  std::map<std::string, std::vector<kube::Event>> by_reason;
  for (auto& ev : Events()) by_reason[ev.reason].push_back(ev);
  // The recorder folds a repeated Event into one with a count.
  auto count = [&](const std::string& reason) {
    int32_t n = 0;
    for (const kube::Event& ev : by_reason[reason]) n += ev.count;
    return n;
  };
  ASSERT_EQ(by_reason["SlotTaken"].size(), 1u);
  EXPECT_EQ(count("SlotTaken"), 2);
  EXPECT_EQ(by_reason["SlotTaken"][0].type, "Normal");
  EXPECT_EQ(by_reason["SlotTaken"][0].message, "load slot taken for target drogon");
  ASSERT_EQ(by_reason["TargetScheduled"].size(), 1u);
  EXPECT_EQ(count("TargetScheduled"), 2);
  EXPECT_EQ(by_reason["TargetScheduled"][0].message, "target drogon scheduled on node node-target");
  ASSERT_EQ(by_reason["TargetReady"].size(), 1u);
  EXPECT_EQ(count("TargetReady"), 2);
  EXPECT_EQ(by_reason["TargetReady"][0].type, "Normal");
  EXPECT_EQ(by_reason["TargetReady"][0].message, "target drogon is ready on 127.0.10.1:8080");
  EXPECT_EQ(by_reason.size(), 3u);
}

// Catches: a placement the node picker refuses showing only on each failed
// cell: the run gets the condition Placed=False/PlacementFailed with the
// picker's message (kept by later writes of the record) and one Warning
// Event.
TEST_F(StatusWriterTest, PlacementFailureIsAConditionAndOneEvent) {
  StatusWriter& w = Start(Options());
  report::RunRecord rec = Progress(2, 2);
  const std::string why = "spec.placement.target.nodeName: node \"node-missing\" does not exist";
  for (auto& c : rec.cells) {
    c.result.state = api::CellState::kFailed;
    c.result.reason = api::CellReason::kDeployFailed;
    c.result.message = why;
  }
  for (const auto& c : rec.cells) w.OnCellDone(rec, c);
  w.OnPersist(Finished(2, false));
  ASSERT_TRUE(w.Flush(10s).ok()) << w.stats().last_error;
  const Json status = KubectlGet()["status"];
  Json placed;
  for (const Json& c : status["conditions"]) {
    if (c["type"] == "Placed") placed = c;
  }
  ASSERT_TRUE(placed.is_object()) << status.dump(1);
  EXPECT_EQ(placed["status"], "False");
  EXPECT_EQ(placed["reason"], "PlacementFailed");
  EXPECT_EQ(placed["message"], why);
  std::vector<kube::Event> placement;
  for (auto& ev : Events()) {
    if (ev.reason == "PlacementFailed") placement.push_back(ev);
  }
  ASSERT_EQ(placement.size(), 1u);
  EXPECT_EQ(placement[0].type, "Warning");
  EXPECT_NE(placement[0].message.find(why), std::string::npos);
}

// Catches: the run's nodes missing from status (kubectl cannot show where it
// ran) or dropped by the next write of the record, which does not carry
// them.
TEST_F(StatusWriterTest, NodesAreWrittenAndKept) {
  StatusWriter& w = Start(Options());
  w.SetNodes(api::RunNodes{"node-target", {}});
  w.OnPersist(Progress(0, 2));
  ASSERT_TRUE(w.Flush(10s).ok()) << w.stats().last_error;
  EXPECT_EQ(KubectlGet()["status"]["nodes"], (Json{{"target", "node-target"}}));
  w.SetNodes(api::RunNodes{"node-target", {"node-load-1", "node-load-2"}});
  w.OnPersist(Progress(1, 2));
  w.OnPersist(Finished(2, true));
  ASSERT_TRUE(w.Flush(10s).ok()) << w.stats().last_error;
  EXPECT_EQ(KubectlGet()["status"]["nodes"],
            (Json{{"target", "node-target"}, {"agents", {"node-load-1", "node-load-2"}}}));
}

// Catches: OnLive before any whole status writing current alone, which
// would null the phase and conditions the reconciler wrote.
TEST_F(StatusWriterTest, LiveAloneWritesNothing) {
  ASSERT_TRUE(client_
                  ->Patch(kube::resources::BenchmarkRuns(), ns(), "demo", kube::PatchType::kMerge,
                          R"({"status":{"phase":"Queued"}})", {}, "status")
                  .ok());
  StatusWriter& w = Start(Options());
  w.OnLive(Current(100, api::Stage::kMeasuring), 5, 1);
  ASSERT_TRUE(w.Flush(2s).ok());
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(transport_->patches(), 0);
  EXPECT_EQ(ServerStatus(), (Json{{"phase", "Queued"}}));
}

// Catches: a merge patch that leaves stale fields behind (a merge patch
// merges: a field no longer set must be sent as null, also inside current).
TEST(StatusPatch, NullsWhatIsNoLongerSetAndSendsOnlyChanges) {
  Json first = StatusWriter::StatusPatch(Json{{"phase", "Running"}, {"current", {{"target", "a"}}}}, Json());
  EXPECT_EQ(first["phase"], "Running");
  EXPECT_TRUE(first["results"].is_null() && first.contains("results"));
  EXPECT_TRUE(first["current"]["stage"].is_null() && first["current"].contains("stage"));

  const Json before = {{"phase", "Running"}, {"current", {{"target", "a"}, {"stage", "Measuring"}}}, {"totalCells", 4}};
  const Json after = {{"phase", "Succeeded"}, {"totalCells", 4}};
  Json patch = StatusWriter::StatusPatch(after, before);
  EXPECT_EQ(patch, (Json{{"phase", "Succeeded"}, {"current", nullptr}}));
  EXPECT_TRUE(StatusWriter::StatusPatch(after, after).empty());
}

}  // namespace
}  // namespace fairbench::controller
