// KUBE-API.md §5: CustomResourceDefinitions.
#include "tests/kube/kube_test_env.h"

namespace fairbench::kube {
namespace {

using testenv::BenchmarkRun;
using testenv::Eventually;

class Crd : public testenv::KubeTest {};

TEST_F(Crd, NameAndStructuralSchemaAreChecked) {
  auto crds = resources::CustomResourceDefinitions();
  Json crd = testenv::LoadYaml("benchmarkrun-crd.yaml");
  Json misnamed = crd;
  misnamed["metadata"]["name"] = "runs.fairbench.dev";
  auto bad_name = client_->Create(crds, "", misnamed);
  ASSERT_EQ(bad_name.reason(), Reason::kInvalid);
  EXPECT_EQ(bad_name.error().causes[0].field, "metadata.name");

  Json untyped = crd;
  untyped["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"].erase("type");
  auto not_structural = client_->Create(crds, "", untyped);
  ASSERT_EQ(not_structural.reason(), Reason::kInvalid);
  EXPECT_EQ(not_structural.error().causes[0].field,
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].type");

  Json two_storage = crd;
  two_storage["spec"]["versions"].push_back(crd["spec"]["versions"][0]);
  two_storage["spec"]["versions"][1]["name"] = "v1beta1";
  EXPECT_EQ(client_->Create(crds, "", two_storage).reason(), Reason::kInvalid);

  auto created = client_->Create(crds, "", crd);
  ASSERT_TRUE(created.ok());
  bool established = false;
  for (const auto& c : (*created)["status"]["conditions"]) {
    if (c["type"] == "Established" && c["status"] == "True") established = true;
  }
  EXPECT_TRUE(established);
}

TEST_F(Crd, ScopeComesFromTheCrdThroughDiscovery) {
  InstallCrd("Cluster");
  auto runs = client_->Discover("fairbench.dev/v1alpha1", "BenchmarkRun");
  ASSERT_TRUE(runs.ok()) << runs.error().ToString();
  EXPECT_EQ(runs->scope, Scope::kCluster);
  EXPECT_EQ(runs->plural, "benchmarkruns");
  Json r = BenchmarkRun("cluster-wide");
  r["metadata"].erase("namespace");
  auto created = client_->Create(*runs, "", r);
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  EXPECT_FALSE((*created)["metadata"].contains("namespace"));
  EXPECT_TRUE(client_->Get(*runs, "", "cluster-wide").ok());
}

TEST_F(Crd, PruningDefaultsAndFieldValidation) {
  InstallCrd();
  auto runs = resources::BenchmarkRuns();
  Json r = BenchmarkRun("r1");
  r["spec"]["unknown"] = "dropped";
  r["spec"]["targets"][0]["extra"] = 1;
  r["spec"]["load"].erase("threads");
  auto created = client_->Create(runs, "default", r);
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  EXPECT_FALSE((*created)["spec"].contains("unknown"));  // pruned silently
  EXPECT_FALSE((*created)["spec"]["targets"][0].contains("extra"));
  EXPECT_EQ((*created)["spec"]["load"]["threads"], 4);  // defaults
  EXPECT_EQ((*created)["spec"]["load"]["duration"], "30s");
  EXPECT_EQ((*created)["spec"]["repetitions"], 1);

  WriteOptions strict;
  strict.field_validation = "Strict";
  r["metadata"]["name"] = "r2";
  auto rejected = client_->Create(runs, "default", r, strict);
  ASSERT_EQ(rejected.reason(), Reason::kBadRequest);
  EXPECT_NE(rejected.error().message.find("unknown field \"spec.unknown\""), std::string::npos);
}

TEST_F(Crd, DefaultsApplyOnReadAfterTheSchemaGainsOne) {
  InstallCrd();
  auto runs = resources::BenchmarkRuns();
  ASSERT_TRUE(client_->Create(runs, "default", BenchmarkRun("r1")).ok());
  auto crd = client_->Get(resources::CustomResourceDefinitions(), "", "benchmarkruns.fairbench.dev");
  ASSERT_TRUE(crd.ok());
  (*crd)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["cooldown"] =
      {{"type", "string"}, {"default", "10s"}};
  ASSERT_TRUE(client_->Update(resources::CustomResourceDefinitions(), *crd).ok());
  auto read = client_->Get(runs, "default", "r1");
  ASSERT_TRUE(read.ok());
  EXPECT_EQ((*read)["spec"]["cooldown"], "10s");
}

TEST_F(Crd, ValidationKeywordsAnswer422WithCauses) {
  InstallCrd();
  auto runs = resources::BenchmarkRuns();
  Json bad = BenchmarkRun("bad");
  bad["spec"]["targets"] = {{{"name", "Not_Valid"}, {"port", 0}}, {{"port", "http"}}};
  bad["spec"]["load"]["mode"] = "burst";
  bad["spec"]["repetitions"] = 0;
  auto r = client_->Create(runs, "default", bad);
  ASSERT_EQ(r.reason(), Reason::kInvalid);
  std::map<std::string, std::string> by_field;
  for (const auto& c : r.error().causes) by_field[c.field] = c.reason;
  EXPECT_EQ(by_field["spec.targets[0].name"], "FieldValueInvalid");      // pattern
  EXPECT_EQ(by_field["spec.targets[0].port"], "FieldValueInvalid");      // minimum
  EXPECT_EQ(by_field["spec.targets[1].name"], "FieldValueRequired");     // required
  EXPECT_EQ(by_field["spec.targets[1].port"], "FieldValueTypeInvalid");  // type
  EXPECT_EQ(by_field["spec.load.mode"], "FieldValueNotSupported");       // enum
  EXPECT_EQ(by_field["spec.repetitions"], "FieldValueInvalid");
  Json empty = BenchmarkRun("empty");
  empty["spec"]["targets"] = Json::array();
  auto items = client_->Create(runs, "default", empty);
  ASSERT_EQ(items.reason(), Reason::kInvalid);
  EXPECT_EQ(items.error().causes[0].field, "spec.targets");  // minItems
}

TEST_F(Crd, ANewCrdIsServedOnlyOnceEstablished) {
  apiserver::TestApiServerOptions o;
  o.api.crd_establish_delay = std::chrono::milliseconds(300);
  Start(o);
  InstallCrd();
  auto runs = resources::BenchmarkRuns();
  EXPECT_EQ(client_->List(runs, "default").reason(), Reason::kNotFound);
  ASSERT_TRUE(Eventually([&] {
    auto crd = client_->Get(resources::CustomResourceDefinitions(), "", "benchmarkruns.fairbench.dev");
    for (const auto& c : (*crd)["status"]["conditions"]) {
      if (c["type"] == "Established" && c["status"] == "True") return true;
    }
    return false;
  }));
  EXPECT_TRUE(client_->List(runs, "default").ok());
}

TEST_F(Crd, DeletingTheCrdRemovesItsObjects) {
  InstallCrd();
  auto runs = resources::BenchmarkRuns();
  ASSERT_TRUE(client_->Create(runs, "default", BenchmarkRun("r1")).ok());
  ASSERT_TRUE(client_->Delete(resources::CustomResourceDefinitions(), "", "benchmarkruns.fairbench.dev").ok());
  EXPECT_EQ(client_->List(runs, "default").reason(), Reason::kNotFound);
  InstallCrd();
  EXPECT_TRUE(client_->List(runs, "default")->items.empty());
}

}  // namespace
}  // namespace fairbench::kube
