// `fairbench fetch` against Kubernetes' own API server (the shared cluster,
// a namespace per test, the administrator's kubeconfig with that namespace
// as its context's): the folder it writes equals
// the folder a local run writes for the same record, file for file and byte
// for byte; bad input gets one line and exit 2, an unreachable server 1.
#include "controller/cli/fetch_command.h"

#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>

#include "api/cells.h"
#include "controller/report/html.h"
#include "controller/report/markdown.h"
#include "controller/results/result_store.h"
#include "controller/store/configmap_run_store.h"
#include "controller/store/file_run_store.h"
#include "controller/store/test_records.h"
#include "tests/kube/kube_test_env.h"

namespace fairbench::controller {
namespace {

namespace fs = std::filesystem;
namespace tr = testrecords;

std::map<std::string, std::string> ReadTree(const fs::path& root) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    files[fs::relative(entry.path(), root).string()] = ss.str();
  }
  return files;
}

// What `fairbench run` leaves in its folder for `record` (logs aside): the
// orchestrator's SaveCell for each cell and Save, then the two reports.
void WriteLikeALocalRun(const report::RunRecord& record, const fs::path& dir) {
  FileRunStore store(dir);
  for (const api::Cell& cell : api::ExpandCells(record.run.spec)) {
    for (const report::CellRecord& c : record.cells) {
      if (cell.Matches(c.result)) {
        ASSERT_TRUE(store.SaveCell(cell, c).ok());
      }
    }
  }
  ASSERT_TRUE(store.Save(record).ok());
  std::ofstream(dir / "report.md") << report::RenderMarkdown(record);
  std::ofstream(dir / "report.html") << report::RenderHtml(record);
}

class FetchCommandTest : public kube::testenv::KubeTest {
 protected:
  void SetUp() override {
    KubeTest::SetUp();
    client_ = tr::FastClient(url());
    tr::InstallGeneratedCrd(*cluster_, *client_, ns());
    char tmpl[] = "/tmp/fairbench-fetch-XXXXXX";
    dir_ = mkdtemp(tmpl);
    // The cluster's administrator, talking TLS to the API server itself, in
    // the test's namespace (what `fairbench fetch` uses without --namespace).
    kubeconfig_ = (dir_ / "kubeconfig").string();
    tr::WriteAdminKubeconfig(*cluster_, ns(), kubeconfig_);
  }
  void TearDown() override {
    KubeTest::TearDown();
    fs::remove_all(dir_);
  }
  // A record whose cells are exactly the cells its spec expands to.
  report::RunRecord StoredRecord(const std::string& uid) {
    report::RunRecord r = tr::Record("demo", 4, 9, 3000);
    r.run.spec.targets.resize(1);
    r.run.spec.scenarios[0].connections = {100, 200, 300, 400};
    for (size_t i = 0; i < r.cells.size(); ++i) {
      r.cells[i].result.target = "drogon";
      r.cells[i].result.connections = 100 * static_cast<int64_t>(i + 1);
      r.run.status.results[i] = r.cells[i].result;
    }
    r.cells[2].wrk_text.clear();  // a cell without text gets no file
    ConfigMapRunStoreOptions o;
    o.ns = ns();
    o.run = "demo";
    o.run_uid = uid;
    ConfigMapRunStore store(*client_, o);
    EXPECT_TRUE(store.Save(r).ok());
    return r;
  }
  int Fetch(const std::string& run, std::string* err, const std::string& kubeconfig = "",
            const std::string& store = "") {
    FetchFlags f;
    f.run = run;
    f.output = (dir_ / "fetched").string();
    f.store = store;
    f.kubeconfig = kubeconfig.empty() ? kubeconfig_ : kubeconfig;
    f.timeout_seconds = 2;
    ::testing::internal::CaptureStderr();
    const int code = RunFetchCommand(f);
    *err = ::testing::internal::GetCapturedStderr();
    return code;
  }

  fs::path dir_;
  std::string kubeconfig_;
};

// Catches: a fetched folder that differs from a local run's — results.json
// re-encoded differently, cell files under other names or missing, a
// report rendered from something other than the record.
TEST_F(FetchCommandTest, WritesTheFolderALocalRunWrites) {
  kube::Json run = tr::CreateRun(*client_, "demo", ns());
  const report::RunRecord record = StoredRecord(run["metadata"].value("uid", ""));
  WriteLikeALocalRun(record, dir_ / "local");
  std::string err;
  ASSERT_EQ(Fetch("demo", &err), 0) << err;
  EXPECT_NE(err.find("written to"), std::string::npos) << err;
  const auto local = ReadTree(dir_ / "local");
  const auto fetched = ReadTree(dir_ / "fetched");
  ASSERT_EQ(local.size(), 3u + 3u) << "results.json, report.md, report.html and three cell files";
  ASSERT_EQ(fetched.size(), local.size());
  for (const auto& [name, bytes] : local) {
    ASSERT_TRUE(fetched.count(name)) << name << " missing from the fetched folder";
    EXPECT_TRUE(fetched.at(name) == bytes) << name << " differs";
  }
  EXPECT_TRUE(fetched.count("cells/drogon_hello_c100_r1.txt"));
}

// Catches: a missing run reported as success or as a crash, without a
// line naming it.
TEST_F(FetchCommandTest, NoSuchRunIsBadInput) {
  std::string err;
  EXPECT_EQ(Fetch("nope", &err), 2);
  EXPECT_NE(err.find("no BenchmarkRun nope in namespace " + ns()), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

// Catches: a run without a record yet written out as an empty folder.
TEST_F(FetchCommandTest, RunWithoutRecordIsBadInput) {
  tr::CreateRun(*client_, "demo", ns());
  std::string err;
  EXPECT_EQ(Fetch("demo", &err), 2);
  EXPECT_NE(err.find("no stored record yet"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(dir_ / "fetched" / "results.json"));
}

// Catches: a damaged record written out in part.
TEST_F(FetchCommandTest, DamagedRecordIsBadInput) {
  kube::Json run = tr::CreateRun(*client_, "demo", ns());
  StoredRecord(run["metadata"].value("uid", ""));
  auto cm = client_->Get(kube::resources::ConfigMaps(), ns(), "demo-results-0");
  ASSERT_TRUE(cm.ok());
  (*cm)["metadata"]["annotations"]["fairbench.dev/results-sha256"] = std::string(64, 'f');
  ASSERT_TRUE(client_->Update(kube::resources::ConfigMaps(), *cm).ok());
  std::string err;
  EXPECT_EQ(Fetch("demo", &err), 2);
  EXPECT_NE(err.find("damaged"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(dir_ / "fetched" / "results.json"));
}

// Catches: an unreachable API server confused with bad input, or a hang.
TEST_F(FetchCommandTest, UnreachableServerExitsOne) {
  const std::string kc = (dir_ / "unreachable").string();
  std::ofstream(kc)
      << "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:1\n"
         "contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n"
         "- name: u\n  user: {}\n";
  std::string err;
  EXPECT_EQ(Fetch("demo", &err, kc), 1);
  EXPECT_NE(err.find("cannot reach the API server at http://127.0.0.1:1"), std::string::npos) << err;
  EXPECT_EQ(Fetch("demo", &err, (dir_ / "no-such-kubeconfig").string()), 2) << err;
}

// Catches: `fetch --store` not storing the record, storing another text
// than the folder's results.json, storing it twice when fetched twice, or
// a store that fails taking the folder with it or passing silently.
TEST_F(FetchCommandTest, StoresTheRecordAndWritesTheFolderWhenTheStoreFails) {
  kube::Json run = tr::CreateRun(*client_, "demo", ns());
  const report::RunRecord record = StoredRecord(run["metadata"].value("uid", ""));
  const std::string db = (dir_ / "results.db").string();
  std::string err;
  ASSERT_EQ(Fetch("demo", &err, "", db), 0) << err;
  EXPECT_NE(err.find("run demo: stored as run 1 in " + db), std::string::npos) << err;
  ASSERT_EQ(Fetch("demo", &err, "", db), 0) << err;
  EXPECT_NE(err.find("run demo: already stored as run 1"), std::string::npos) << err;
  auto store = results::OpenResultStore(db);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto text = (*store)->LoadResultsJson(1);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_TRUE(*text == ReadTree(dir_ / "fetched").at("results.json"));
  auto runs = (*store)->ListRuns({});
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].uid, record.run.metadata.uid);
  EXPECT_EQ((*runs)[0].ns, record.run.metadata.namespace_);
  EXPECT_EQ((*runs)[0].cells, static_cast<int64_t>(record.cells.size()));

  fs::remove_all(dir_ / "fetched");
  EXPECT_EQ(Fetch("demo", &err, "", (dir_ / "no" / "dir" / "results.db").string()), 1);
  EXPECT_NE(err.find("the run was not stored"), std::string::npos) << err;
  EXPECT_TRUE(fs::exists(dir_ / "fetched" / "results.json"));
}

}  // namespace
}  // namespace fairbench::controller
