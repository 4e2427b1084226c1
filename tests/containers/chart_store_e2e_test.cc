// The chart with a result store, as a user sets it up: a real PostgreSQL
// (testing/support/postgres_server.h) whose URL, with its password, is in a
// Secret the chart's resultStore.existingSecret names; the controllers are
// the chart's containers. A finished run goes into the database and its
// status names its id there.
#include "controller/results/result_store.h"
#include "testing/support/postgres_server.h"
#include "tests/containers/chart_cluster.h"

namespace fairbench::containers {
namespace {

class ChartStoreE2eTest : public ChartCluster {
 protected:
  void SetUp() override {
    auto pg = testing::PostgresServer::Start();
    ASSERT_TRUE(pg.ok()) << pg.status().ToString();
    pg_ = std::move(*pg);
    auto db = pg_->CreateDatabase("results", testing::PostgresServer::kPasswordUser);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    url_ = pg_->PasswordUrl("results");
    more_values_ = {"--set", "resultStore.existingSecret=fairbench-result-store"};
    ChartCluster::SetUp();
  }
  void BeforeInstall() override {
    Ok({"create", "secret", "generic", "fairbench-result-store", "-n", kNamespace, "--from-literal=url=" + url_});
  }
  std::unique_ptr<testing::PostgresServer> pg_;
  std::string url_;
};

// Catches: the chart not passing the Secret's URL to the controllers (the
// env var, its key), a controller image without libpq or SQLite (the
// store could not be opened in the container), a finished run not stored
// or its id not in status.stored, the record in the database differing
// from what `fairbench fetch` reads from the cluster, and the password in
// the status, an Event or the controllers' log.
TEST_F(ChartStoreE2eTest, AFinishedRunGoesToThePostgreSqlTheChartWasGiven) {
  ASSERT_NE(url_.find(testing::PostgresServer::kPassword), std::string::npos);
  Apply("stored", RunText("stored", Target("httplib", "cpp-httplib-debian")));
  ASSERT_TRUE(Finishes("stored")) << Phase("stored") << "\n" << Logs();
  json run;
  ASSERT_TRUE(Eventually(
      [&] {
        run = Get("br/stored");
        return run.is_object() && run["status"].contains("stored") && run["status"]["stored"].contains("id");
      },
      60s))
      << (run.is_object() ? run["status"].dump(1) : "") << Logs();
  EXPECT_EQ(run["status"]["phase"], "Succeeded") << run["status"].dump(1);
  const json& stored = run["status"]["stored"];
  EXPECT_EQ(stored["store"],
            "PostgreSQL store postgresql://fairbench@127.0.0.1:" + std::to_string(pg_->port()) + "/results")
      << stored;
  const int64_t id = stored["id"].get<int64_t>();

  auto store = results::OpenResultStore(url_, {.create = false});
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto runs = (*store)->ListRuns({});
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].id, id);
  EXPECT_EQ((*runs)[0].uid, run["metadata"]["uid"]);
  EXPECT_EQ((*runs)[0].phase, "Succeeded");
  // The kubelet's imageID of the target's container: which image ran.
  ASSERT_EQ((*runs)[0].identities.size(), 1u);
  EXPECT_EQ((*runs)[0].identities[0].rfind("image ", 0), 0u) << (*runs)[0].identities[0];

  const fs::path fetched = root_ / "fetched";
  auto fetch = kube::RunCommand(
      testing::BinaryPath("fairbench"),
      {"fetch", "stored", "--namespace", kNamespace, "--kubeconfig", kubeconfig_, "--output", fetched.string()}, {},
      60s);
  ASSERT_TRUE(fetch.ok());
  ASSERT_EQ(fetch->exit_code, 0) << fetch->err;
  auto record = (*store)->LoadResultsJson(id);
  ASSERT_TRUE(record.ok()) << record.status().ToString();
  EXPECT_EQ(*record, ReadFile(fetched / "results.json"));

  // psql, the independent client, sees the same run.
  auto rows = pg_->Psql("results", "SELECT id, name, uid FROM runs");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ(*rows, std::to_string(id) + "|stored|" + run["metadata"]["uid"].get<std::string>() + "\n");

  const std::string said =
      Run({"get", "events", "-n", kNamespace, "-o", "json"}).out + run.dump() +
      Run({"logs", "-n", kNamespace, "-l", "app.kubernetes.io/component=controller", "--tail=-1", "--prefix"}).out;
  EXPECT_EQ(said.find(testing::PostgresServer::kPassword), std::string::npos) << "the store's password was shown";
  EXPECT_NE(said.find("ResultStored"), std::string::npos);
}

}  // namespace
}  // namespace fairbench::containers
