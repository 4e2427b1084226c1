// ConfigMapRunStore against Kubernetes' own API server (the shared cluster,
// a namespace per test): round trips, records split
// over several ConfigMaps, torn and damaged records refused, owners and
// labels, the report ConfigMap, and a save interrupted before its manifest.
#include "controller/store/configmap_run_store.h"

#include <atomic>
#include <functional>

#include "common/base64.h"
#include "controller/report/html.h"
#include "controller/report/markdown.h"
#include "controller/kube/curl_transport.h"
#include "controller/store/test_records.h"
#include "tests/kube/kube_test_env.h"

namespace fairbench::controller {
namespace {

using kube::Json;
namespace tr = testrecords;

// Forwards to a real transport, failing the requests `fail` picks with a
// transport error (as a cut connection or a crashed controller would).
class FailingTransport final : public kube::HttpTransport {
 public:
  FailingTransport(std::unique_ptr<kube::HttpTransport> inner, std::function<bool(const kube::HttpRequest&)> fail)
      : inner_(std::move(inner)), fail_(std::move(fail)) {}
  Result<kube::HttpResponse> Do(const kube::HttpRequest& request) override {
    if (fail_(request)) return Status::Unavailable("injected: connection reset");
    return inner_->Do(request);
  }
  Result<kube::HttpResponse> Stream(const kube::HttpRequest& request,
                                    const std::function<bool(std::string_view)>& on_data,
                                    std::stop_token stop) override {
    return inner_->Stream(request, on_data, std::move(stop));
  }

 private:
  std::unique_ptr<kube::HttpTransport> inner_;
  std::function<bool(const kube::HttpRequest&)> fail_;
};

class ConfigMapRunStoreTest : public kube::testenv::KubeTest {
 protected:
  void SetUp() override {
    KubeTest::SetUp();
    client_ = tr::FastClient(url());
    tr::InstallGeneratedCrd(*cluster_, *client_, ns());
    owner_ = tr::CreateRun(*client_, "demo", ns());
    uid_ = owner_["metadata"].value("uid", "");
    ASSERT_FALSE(uid_.empty());
  }

  ConfigMapRunStoreOptions Options() const {
    ConfigMapRunStoreOptions o;
    o.ns = ns();
    o.run = "demo";
    o.run_uid = uid_;
    o.retry_backoff = {std::chrono::milliseconds(1), std::chrono::milliseconds(5), 2.0, 0.0};
    return o;
  }

  kube::ConfigMap GetCm(const std::string& name) {
    auto got = client_->Get(kube::resources::ConfigMaps(), ns(), name);
    EXPECT_TRUE(got.ok()) << name << ": " << got.error().ToString();
    auto cm = kube::ConfigMap::FromJson(got.ok() ? *got : Json::object());
    EXPECT_TRUE(cm.ok());
    return cm.ok() ? *cm : kube::ConfigMap{};
  }
  void PutCm(const kube::ConfigMap& cm) {
    auto updated = client_->Update(kube::resources::ConfigMaps(), cm.ToJson());
    ASSERT_TRUE(updated.ok()) << updated.error().ToString();
  }
  std::vector<std::string> ResultsParts() {
    kube::ListOptions lo;
    lo.label_selector = "fairbench.dev/run=demo,fairbench.dev/record=results";
    auto list = client_->List(kube::resources::ConfigMaps(), ns(), lo);
    EXPECT_TRUE(list.ok());
    std::vector<std::string> names;
    if (list.ok()) {
      for (const auto& item : list->items) names.push_back(item["metadata"].value("name", ""));
    }
    std::sort(names.begin(), names.end());
    return names;
  }
  std::string LoadError(ConfigMapRunStore& store) {
    auto loaded = store.Load();
    EXPECT_FALSE(loaded.ok()) << "a damaged record loaded";
    return loaded.ok() ? std::string() : loaded.status().message();
  }
  // A record large enough for four or more ConfigMaps: random histograms
  // compress poorly.
  static report::RunRecord Large() { return tr::Record("demo", 330, 7, 60000); }

  Json owner_;
  std::string uid_;
};

// Catches: Load reporting "nothing stored" as an error (a new run could
// never start) or inventing an empty record.
TEST_F(ConfigMapRunStoreTest, NothingStoredIsNullopt) {
  ConfigMapRunStore store(*client_, Options());
  auto loaded = store.Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_FALSE(loaded->has_value());
}

// Catches: any field lost or altered between Save and Load — histograms,
// timeline, optionals, times to the nanosecond, flags, environment.
TEST_F(ConfigMapRunStoreTest, RecordRoundTripsFieldForField) {
  ConfigMapRunStore store(*client_, Options());
  const report::RunRecord record = tr::Record("demo", 12, 3);
  ASSERT_TRUE(store.Save(record).ok());
  auto loaded = store.Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_TRUE(loaded->has_value());
  tr::ExpectSameRecord(record, **loaded);
  EXPECT_EQ(ResultsParts(), std::vector<std::string>{"demo-results-0"});

  // A second save replaces the first.
  report::RunRecord more = tr::Record("demo", 13, 4);
  ASSERT_TRUE(store.Save(more).ok());
  loaded = store.Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  tr::ExpectSameRecord(more, **loaded);
  EXPECT_EQ(GetCm("demo-results-0").metadata.annotations.at("fairbench.dev/results-generation"), "2");
}

// Catches: ConfigMaps without the owner reference (left behind when the run
// is deleted) or without the labels the reconciler's clean-up selects on.
TEST_F(ConfigMapRunStoreTest, ConfigMapsAreOwnedAndLabelled) {
  ConfigMapRunStore store(*client_, Options());
  const report::RunRecord record = tr::Record("demo", 3);
  ASSERT_TRUE(store.Save(record).ok());
  ASSERT_TRUE(store.SaveReport(record).ok());
  for (const std::string name : {"demo-results-0", "demo-report"}) {
    SCOPED_TRACE(name);
    kube::ConfigMap cm = GetCm(name);
    EXPECT_EQ(cm.metadata.labels["app.kubernetes.io/managed-by"], "fairbench");
    EXPECT_EQ(cm.metadata.labels["fairbench.dev/run"], "demo");
    ASSERT_EQ(cm.metadata.owner_references.size(), 1u);
    const kube::OwnerReference& o = cm.metadata.owner_references[0];
    EXPECT_EQ(o.api_version, "fairbench.dev/v1alpha1");
    EXPECT_EQ(o.kind, "BenchmarkRun");
    EXPECT_EQ(o.name, "demo");
    EXPECT_EQ(o.uid, uid_);
    EXPECT_TRUE(o.controller);
    EXPECT_TRUE(o.block_owner_deletion);
  }
}

// Catches: a record past 1 MiB written into one ConfigMap (the real API
// server refuses it), parts read back in the wrong order, and parts of a
// larger earlier record left behind after a smaller one is saved.
TEST_F(ConfigMapRunStoreTest, LargeRecordIsSplitAndReadBack) {
  ConfigMapRunStore store(*client_, Options());
  const report::RunRecord record = Large();
  auto gz = Gzip(report::ToJson(record).dump(1) + "\n");
  ASSERT_TRUE(gz.ok());
  ASSERT_GT(gz->size(), size_t{3} << 20) << "the test record must compress to more than 3 MiB";
  ASSERT_TRUE(store.Save(record).ok());
  const std::vector<std::string> parts = ResultsParts();
  ASSERT_GE(parts.size(), 4u);
  for (const auto& name : parts) {
    kube::ConfigMap cm = GetCm(name);
    auto bytes = Base64Decode(cm.binary_data.at("results.json.gz"));
    ASSERT_TRUE(bytes.ok());
    EXPECT_LE(bytes->size(), size_t{900} * 1024) << name;
  }
  auto loaded = store.Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_TRUE(loaded->has_value());
  tr::ExpectSameRecord(record, **loaded);

  // Saved again (large): the new parts take names the old manifest did not use.
  ASSERT_TRUE(store.Save(record).ok());
  EXPECT_EQ(ResultsParts().size(), parts.size());
  // Then small: one ConfigMap remains.
  const report::RunRecord small = tr::Record("demo", 2);
  ASSERT_TRUE(store.Save(small).ok());
  EXPECT_EQ(ResultsParts(), std::vector<std::string>{"demo-results-0"});
  loaded = store.Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  tr::ExpectSameRecord(small, **loaded);
}

// Catches: a save that overwrites the current record's parts before its
// manifest is replaced — a crash there would lose every finished cell.
TEST_F(ConfigMapRunStoreTest, SaveInterruptedBeforeTheManifestLeavesThePreviousRecord) {
  ConfigMapRunStoreOptions o = Options();
  o.part_bytes = 64 * 1024;
  ConfigMapRunStore store(*client_, o);
  const report::RunRecord before = tr::Record("demo", 40, 1, 20000);
  ASSERT_TRUE(store.Save(before).ok());
  ASSERT_GE(ResultsParts().size(), 3u);

  // A client whose writes of the first ConfigMap (the manifest) fail.
  kube::RestConfig cfg;
  cfg.server = url();
  cfg.timeout = std::chrono::milliseconds(5000);
  auto transport = std::make_unique<FailingTransport>(
      std::make_unique<kube::CurlTransport>(cfg.server, cfg.tls, cfg.user_agent), [](const kube::HttpRequest& r) {
        return r.method != "GET" && r.path_and_query.find("/configmaps/demo-results-0") != std::string::npos;
      });
  kube::Client crashing(cfg, std::make_unique<tr::IdentityEncodingTransport>(std::move(transport)),
                        kube::testenv::FastRetries());
  ConfigMapRunStore interrupted(crashing, o);
  const report::RunRecord after = tr::Record("demo", 41, 2, 20000);
  EXPECT_FALSE(interrupted.Save(after).ok());

  auto loaded = store.Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_TRUE(loaded->has_value());
  tr::ExpectSameRecord(before, **loaded);
  // The next successful save clears the interrupted save's parts.
  ASSERT_TRUE(store.Save(after).ok());
  loaded = store.Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  tr::ExpectSameRecord(after, **loaded);
  const std::string listed = GetCm("demo-results-0").metadata.annotations.at("fairbench.dev/results-parts");
  EXPECT_EQ(ResultsParts().size(), static_cast<size_t>(std::count(listed.begin(), listed.end(), ',') + 1));
}

// Catches: a save failed by one 5xx on a create (the client does not resend
// a POST that may have happened), or by a write that took effect but whose
// answer was lost (the resent PUT meets 409 Conflict, the resent POST
// AlreadyExists): the run would fail with its cells measured.
TEST_F(ConfigMapRunStoreTest, WritesThatFailOrLoseTheirAnswerAreRetried) {
  ConfigMapRunStoreOptions o = Options();
  o.part_bytes = 32 * 1024;
  ConfigMapRunStore store(*client_, o);
  kubetest::FaultConfig f;
  f.server_error_rate = 0.2;
  f.server_error_codes = {500};
  f.timeout_rate = 0.25;
  f.methods = {"POST", "PUT"};
  f.path_prefixes = {"/api/v1/namespaces/" + ns() + "/configmaps"};
  f.seed = 5;
  faults().Configure(f);
  for (int i = 0; i < 4; ++i) {
    const report::RunRecord record = tr::Record("demo", 50 + i, 1 + i, 20000);
    Status saved = store.Save(record);
    ASSERT_TRUE(saved.ok()) << "save " << i << ": " << saved.ToString();
    auto loaded = store.Load();
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    ASSERT_TRUE(loaded->has_value());
    tr::ExpectSameRecord(record, **loaded);
  }
  const kubetest::FaultCounts counts = faults().counts();
  EXPECT_GT(counts.server_errors, 2u);
  EXPECT_GT(counts.timeouts, 2u);
  faults().Clear();
}

class DamagedRecordTest : public ConfigMapRunStoreTest {
 protected:
  void SetUp() override {
    ConfigMapRunStoreTest::SetUp();
    ConfigMapRunStoreOptions o = Options();
    o.part_bytes = 32 * 1024;
    store_ = std::make_unique<ConfigMapRunStore>(*client_, o);
    ASSERT_TRUE(store_->Save(tr::Record("demo", 20, 5, 20000)).ok());
    const std::string listed = GetCm("demo-results-0").metadata.annotations.at("fairbench.dev/results-parts");
    ASSERT_GE(std::count(listed.begin(), listed.end(), ','), 2) << "want three parts or more: " << listed;
    second_ = listed.substr(listed.find(',') + 1);
    second_ = second_.substr(0, second_.find(','));
  }
  std::unique_ptr<ConfigMapRunStore> store_;
  std::string second_;  // the second part's name
};

// Catches: a missing part read as a shorter record (cells silently lost).
TEST_F(DamagedRecordTest, MissingPartIsRefused) {
  ASSERT_TRUE(client_->Delete(kube::resources::ConfigMaps(), ns(), second_).ok());
  const std::string error = LoadError(*store_);
  EXPECT_NE(error.find("damaged"), std::string::npos) << error;
  EXPECT_NE(error.find(second_), std::string::npos) << error;
  EXPECT_NE(error.find("missing"), std::string::npos) << error;
}

// Catches: corrupt bytes inside a part going unnoticed (gzip or SHA-256 not
// checked).
TEST_F(DamagedRecordTest, CorruptPartIsRefused) {
  kube::ConfigMap cm = GetCm(second_);
  auto bytes = Base64Decode(cm.binary_data.at("results.json.gz"));
  ASSERT_TRUE(bytes.ok());
  for (size_t i = 100; i < 200; ++i) (*bytes)[i] = static_cast<char>((*bytes)[i] ^ 0x5a);
  cm.binary_data["results.json.gz"] = Base64Encode(*bytes);
  PutCm(cm);
  const std::string error = LoadError(*store_);
  EXPECT_NE(error.find("damaged"), std::string::npos) << error;
  EXPECT_TRUE(error.find("corrupt") != std::string::npos || error.find("SHA-256") != std::string::npos) << error;
}

// Catches: a part left from another save (a torn write) mixed into the
// record because its bytes happen to decode.
TEST_F(DamagedRecordTest, PartOfAnotherSaveIsRefused) {
  kube::ConfigMap cm = GetCm(second_);
  cm.metadata.annotations["fairbench.dev/results-generation"] = "99";
  PutCm(cm);
  const std::string error = LoadError(*store_);
  EXPECT_NE(error.find("torn write"), std::string::npos) << error;
  EXPECT_NE(error.find(second_), std::string::npos) << error;
}

// Catches: the manifest's checksum or size not compared with the text read.
TEST_F(DamagedRecordTest, ManifestMismatchIsRefused) {
  kube::ConfigMap cm = GetCm("demo-results-0");
  cm.metadata.annotations["fairbench.dev/results-sha256"] = std::string(64, '0');
  PutCm(cm);
  std::string error = LoadError(*store_);
  EXPECT_NE(error.find("SHA-256"), std::string::npos) << error;

  cm = GetCm("demo-results-0");
  const size_t size = std::stoul(cm.metadata.annotations["fairbench.dev/results-bytes"]);
  cm.metadata.annotations["fairbench.dev/results-bytes"] = std::to_string(size - 1);
  PutCm(cm);
  error = LoadError(*store_);
  EXPECT_NE(error.find("more than"), std::string::npos) << error;

  cm = GetCm("demo-results-0");
  cm.metadata.annotations.erase("fairbench.dev/results-parts");
  PutCm(cm);
  error = LoadError(*store_);
  EXPECT_NE(error.find("no complete manifest"), std::string::npos) << error;

  cm = GetCm("demo-results-0");
  cm.metadata.annotations["fairbench.dev/results-parts"] = "demo-results-0";
  cm.metadata.annotations["fairbench.dev/results-format"] = "2";
  PutCm(cm);
  error = LoadError(*store_);
  EXPECT_NE(error.find("format 2"), std::string::npos) << error;
}

// Catches: a report ConfigMap whose texts differ from what the local run
// writes (RenderMarkdown / RenderHtml of the same record).
TEST_F(ConfigMapRunStoreTest, ReportConfigMapHoldsTheRenderedReport) {
  ConfigMapRunStore store(*client_, Options());
  const report::RunRecord record = tr::Record("demo", 6);
  auto none = store.LoadReport();
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  ASSERT_TRUE(store.SaveReport(record).ok());
  kube::ConfigMap cm = GetCm("demo-report");
  EXPECT_EQ(cm.data.at("report.md"), report::RenderMarkdown(record));
  EXPECT_EQ(cm.data.at("report.html"), report::RenderHtml(record));
  EXPECT_EQ(cm.metadata.labels["fairbench.dev/record"], "report");
  // Written again (replaced, not refused as existing).
  ASSERT_TRUE(store.SaveReport(tr::Record("demo", 7)).ok());
  auto loaded = store.LoadReport();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_TRUE(loaded->has_value());
  EXPECT_EQ((*loaded)->markdown, report::RenderMarkdown(tr::Record("demo", 7)));
  EXPECT_EQ((*loaded)->html, report::RenderHtml(tr::Record("demo", 7)));
}

// Catches: an unreachable API server reported as "nothing stored" (a
// resume would start over).
TEST(ConfigMapRunStoreOffline, UnreachableServerIsAnError) {
  auto client =
      kube::testenv::ClientFor("http://127.0.0.1:1", kube::testenv::FastRetries(), std::chrono::milliseconds(500));
  ConfigMapRunStoreOptions o;
  o.run = "demo";
  ConfigMapRunStore store(*client, o);
  auto loaded = store.Load();
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), Status::Code::kUnavailable) << loaded.status().ToString();
}

}  // namespace
}  // namespace fairbench::controller
