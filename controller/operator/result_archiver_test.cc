// The result archiver against Kubernetes' own API server (the shared
// cluster, a namespace per test) with the generated CRD, and a real SQLite
// store: a finished run's record read from its ConfigMaps, stored, and its
// id written to status.stored; a store that cannot be written said in the
// status and an Event, and retried until it can; a run without a record
// passed over; the reconciler's offer.
#include "controller/operator/result_archiver.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "api/loader.h"
#include "api/time_text.h"
#include "controller/store/configmap_run_store.h"
#include "controller/store/test_records.h"
#include "testing/support/temp_dir.h"
#include "tests/kube/kube_test_env.h"

namespace fairbench::controller {
namespace {

using kube::Json;
using namespace std::chrono_literals;
namespace tr = testrecords;

class ResultArchiverTest : public kube::testenv::KubeTest {
 protected:
  void SetUp() override {
    KubeTest::SetUp();
    client_ = tr::FastClient(url());
    tr::InstallGeneratedCrd(*cluster_, *client_, ns());
    recorder_ = std::make_unique<kube::EventRecorder>(*client_, SystemClock::Instance());
    run_status_ = std::make_unique<RunStatusClient>(*client_, recorder_.get());
    auto dir = fairbench::testing::TempDir::Create("fairbench-archiver");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
  }
  void TearDown() override {
    run_status_.reset();
    recorder_.reset();
    KubeTest::TearDown();
  }

  // A BenchmarkRun `name` in phase `phase`, with a record of `cells` cells
  // in its ConfigMaps (none when 0); the record saved is returned in
  // `saved`.
  api::BenchmarkRun FinishedRun(const std::string& name, const std::string& phase, size_t cells,
                                report::RunRecord* saved = nullptr) {
    auto run = api::FromKubernetesObject(tr::CreateRun(*client_, name, ns()));
    EXPECT_TRUE(run.ok()) << run.status().ToString();
    if (cells > 0) {
      report::RunRecord record = tr::Record(name, cells, /*seed=*/7, /*histogram_samples=*/500, ns());
      record.run.metadata.uid = run->metadata.uid;
      for (api::RunPhase p : {api::RunPhase::kRunning, api::RunPhase::kSucceeded, api::RunPhase::kFailed}) {
        if (api::ToString(p) == phase) record.run.status.phase = p;
      }
      ConfigMapRunStore store(*client_, ConfigMapRunStoreOptions::ForRun(*run));
      const Status s = store.Save(record);
      EXPECT_TRUE(s.ok()) << s.ToString();
      if (saved != nullptr) *saved = record;
    }
    auto patched = run_status_->Patch(RunStatusClient::IdentityOf(*run), {{"phase", phase}});
    EXPECT_TRUE(patched.ok()) << patched.error().ToString();
    auto back = api::FromKubernetesObject(*patched);
    EXPECT_TRUE(back.ok());
    return back.ok() ? *back : *run;
  }

  Json Stored(const std::string& name) {
    auto got = client_->Get(kube::resources::BenchmarkRuns(), ns(), name);
    EXPECT_TRUE(got.ok());
    return got.ok() ? (*got)["status"].value("stored", Json()) : Json();
  }

  std::vector<std::pair<std::string, std::string>> Events() {
    std::vector<std::pair<std::string, std::string>> out;
    auto listed = client_->List(kube::resources::Events(), ns());
    if (!listed.ok()) return out;
    for (const Json& e : listed->items) out.emplace_back(e.value("reason", ""), e.value("message", ""));
    return out;
  }

  std::unique_ptr<kube::EventRecorder> recorder_;
  std::unique_ptr<RunStatusClient> run_status_;
  std::optional<fairbench::testing::TempDir> dir_;
};

// Catches: a finished run not stored, stored from anything but its
// ConfigMaps' record (the store's copy must be that record, byte for byte
// as `fairbench run` writes it), the status not naming the store's id (the
// id is checked against the store's own list), the store's password-free
// description missing, and no ResultStored Event.
TEST_F(ResultArchiverTest, AFinishedRunIsStoredAndItsStatusNamesItsId) {
  report::RunRecord saved;
  const api::BenchmarkRun run = FinishedRun("done", "Succeeded", 3, &saved);
  ASSERT_TRUE(ResultArchiver::Wants(run));
  const std::string db = dir_->File("results.db");
  ResultArchiver archiver(*client_, *run_status_, recorder_.get(), ResultArchiverOptions{db});
  archiver.Offer(run);
  ASSERT_TRUE(archiver.WaitIdle(30s));
  EXPECT_EQ(archiver.stats().stored, 1u) << archiver.stats().last_error;

  const Json stored = Stored("done");
  ASSERT_TRUE(stored.is_object()) << stored;
  auto store = results::OpenResultStore(db, {.create = false});
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto runs = (*store)->ListRuns({});
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].name, "done");
  EXPECT_EQ((*runs)[0].uid, run.metadata.uid);
  EXPECT_EQ(stored.value("id", int64_t{0}), (*runs)[0].id);
  EXPECT_EQ(stored.value("store", ""), "SQLite store " + db);
  EXPECT_FALSE(stored.contains("error"));
  EXPECT_TRUE(api::ParseTime(stored.value("time", "")).ok()) << stored;
  auto text = (*store)->LoadResultsJson((*runs)[0].id);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, report::ToJsonText(saved));
  EXPECT_TRUE(kube::testenv::Eventually([&] {
    for (const auto& [reason, message] : Events()) {
      if (reason == "ResultStored" &&
          message == "stored as run " + std::to_string((*runs)[0].id) + " in SQLite store " + db) {
        return true;
      }
    }
    return false;
  }));

  // The status names an id now: the run is not wanted again.
  auto back = client_->Get(kube::resources::BenchmarkRuns(), ns(), "done");
  ASSERT_TRUE(back.ok());
  auto again = api::FromKubernetesObject(*back);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(ResultArchiver::Wants(*again));
}

// Catches: an archiver that gives up on a store it cannot write (the run
// would never be stored), one that does not say why in status.stored.error
// and a Warning Event, an error left in the status once stored, and a
// second offer of a queued run stored twice.
TEST_F(ResultArchiverTest, AStoreThatCannotBeWrittenIsRetriedUntilItCan) {
  const api::BenchmarkRun run = FinishedRun("later", "Failed", 2);
  const std::string folder = dir_->File("not-yet");
  const std::string db = folder + "/results.db";
  ResultArchiverOptions o{db};
  o.retry_backoff = BackoffPolicy{100ms, 200ms, 2.0, 0.0};
  ResultArchiver archiver(*client_, *run_status_, recorder_.get(), o);
  archiver.Offer(run);
  archiver.Offer(run);
  ASSERT_TRUE(kube::testenv::Eventually([&] { return Stored("later").is_object(); }));
  Json stored = Stored("later");
  EXPECT_FALSE(stored.contains("id")) << stored;
  EXPECT_NE(stored.value("error", "").find(db), std::string::npos) << stored;
  EXPECT_TRUE(kube::testenv::Eventually([&] {
    for (const auto& [reason, message] : Events()) {
      if (reason == "ResultStoreFailed" && message.find("not stored in the result store (retrying): ") == 0)
        return true;
    }
    return false;
  }));
  EXPECT_TRUE(kube::testenv::Eventually([&] { return archiver.stats().failures >= 1; }));

  std::filesystem::create_directories(folder);
  ASSERT_TRUE(archiver.WaitIdle(30s));
  stored = Stored("later");
  EXPECT_GT(stored.value("id", int64_t{0}), 0) << stored;
  EXPECT_FALSE(stored.contains("error")) << stored;
  auto store = results::OpenResultStore(db, {.create = false});
  ASSERT_TRUE(store.ok());
  auto runs = (*store)->ListRuns({});
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].phase, "Failed");
  EXPECT_EQ(archiver.stats().stored, 1u);
}

// Catches: a run that never got a record (Failed before its first cell)
// retried for ever, or an empty record stored for it; a run still running
// taken as finished.
TEST_F(ResultArchiverTest, ARunWithoutARecordIsPassedOver) {
  const api::BenchmarkRun run = FinishedRun("refused", "Failed", 0);
  const api::BenchmarkRun running = FinishedRun("running", "Running", 1);
  EXPECT_FALSE(ResultArchiver::Wants(running));
  const std::string db = dir_->File("results.db");
  ResultArchiver archiver(*client_, *run_status_, recorder_.get(), ResultArchiverOptions{db});
  archiver.Offer(running);
  archiver.Offer(run);
  ASSERT_TRUE(archiver.WaitIdle(30s));
  EXPECT_EQ(archiver.stats().skipped, 1u);
  EXPECT_EQ(archiver.stats().stored, 0u);
  EXPECT_EQ(archiver.stats().failures, 0u);
  EXPECT_TRUE(Stored("refused").is_null());
  EXPECT_TRUE(Stored("running").is_null());
}

// Catches: a store URL's password in a status, an Event or a log line,
// in the user part or as a ?password= parameter.
TEST(RedactStoreLocationTest, APasswordNeverShows) {
  EXPECT_EQ(RedactStoreLocation("postgresql://fb:s3cret@db.example:5432/results"),
            "postgresql://fb@db.example:5432/results");
  EXPECT_EQ(RedactStoreLocation("postgres://fb@db/results?password=s3cret"), "postgresql://fb@db/results");
  EXPECT_EQ(RedactStoreLocation("/var/lib/fairbench/results.db"), "/var/lib/fairbench/results.db");
}

}  // namespace
}  // namespace fairbench::controller
