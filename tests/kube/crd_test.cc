// KUBE-API.md §5: CustomResourceDefinitions, as the real kube-apiserver
// (its apiextensions-apiserver) validates, establishes, serves, defaults,
// prunes and deletes them. Tests that create, change or delete a CRD use
// one of their own — a group named after the test's namespace, and names
// (ScratchRun) that nothing else in the shared cluster resolves, so that no
// other test's kubectl meets it; the others use the tests' shared
// BenchmarkRun CRD (InstallCrd) in the test's namespace.
#include <set>

#include "tests/kube/kube_test_env.h"

namespace fairbench::kube {
namespace {

using testenv::BenchmarkRun;
using testenv::Eventually;

bool HasCondition(const Json& crd, const std::string& type, const std::string& status) {
  for (const auto& c : crd["status"].value("conditions", Json::array())) {
    if (c.value("type", "") == type && c.value("status", "") == status) return true;
  }
  return false;
}

class Crd : public testenv::KubeTest {
 protected:
  void TearDown() override {
    // CRDs are cluster-scoped: the namespace's deletion does not take them.
    if (client_) {
      for (const auto& name : own_crds_) (void)client_->Delete(resources::CustomResourceDefinitions(), "", name);
    }
    KubeTest::TearDown();
  }

  // This test's own API group.
  std::string Group() const { return ns() + ".kubetest.fairbench.dev"; }
  ResourceType Scratch(Scope scope = Scope::kNamespaced) const {
    return {Group(), "v1alpha1", "ScratchRun", "scratchruns", scope};
  }
  // The tests' CRD (testdata/benchmarkrun-crd.yaml) moved to this test's
  // group, as kind ScratchRun, without the short name and category other
  // tests' kubectl resolves.
  Json OwnCrd(const std::string& scope = "Namespaced") const {
    Json crd = testenv::LoadYaml("benchmarkrun-crd.yaml");
    crd["metadata"]["name"] = "scratchruns." + Group();
    crd["spec"]["group"] = Group();
    crd["spec"]["scope"] = scope;
    crd["spec"]["names"] = {
        {"plural", "scratchruns"}, {"singular", "scratchrun"}, {"kind", "ScratchRun"}, {"listKind", "ScratchRunList"}};
    return crd;
  }
  Json Run(const std::string& name) const {
    Json r = BenchmarkRun(name, 4, ns());
    r["apiVersion"] = Group() + "/v1alpha1";
    r["kind"] = "ScratchRun";
    return r;
  }
  // Creates `crd` (deleted again at the end of the test).
  ApiResult<Json> CreateCrd(const Json& crd) {
    auto created = client_->Create(resources::CustomResourceDefinitions(), "", crd);
    if (created.ok()) own_crds_.insert(crd["metadata"]["name"].get<std::string>());
    return created;
  }
  // Waits until the CRD named `name` has the condition.
  bool WaitForCondition(const std::string& name, const std::string& type, const std::string& status) {
    return Eventually(
        [&] {
          auto got = client_->Get(resources::CustomResourceDefinitions(), "", name);
          return got.ok() && HasCondition(*got, type, status);
        },
        std::chrono::seconds(30));
  }
  // Creates `crd` and waits until it is established.
  void InstallOwn(const Json& crd) {
    auto created = CreateCrd(crd);
    ASSERT_TRUE(created.ok()) << created.error().ToString();
    ASSERT_TRUE(WaitForCondition(crd["metadata"]["name"].get<std::string>(), "Established", "True"));
  }

  std::set<std::string> own_crds_;
};

// Catches: a CRD error whose causes are lost or misread from the real
// server's 422 body (field, reason), or a test that takes a created CRD
// for a served one: the create answer has no conditions yet; the
// establishing controller sets NamesAccepted and Established after it.
TEST_F(Crd, NameAndStructuralSchemaAreChecked) {
  auto crds = resources::CustomResourceDefinitions();
  const Json crd = OwnCrd();
  Json misnamed = crd;
  misnamed["metadata"]["name"] = "runs." + Group();
  auto bad_name = CreateCrd(misnamed);
  ASSERT_EQ(bad_name.reason(), Reason::kInvalid);
  ASSERT_EQ(bad_name.error().causes.size(), 1u);
  EXPECT_EQ(bad_name.error().causes[0].field, "metadata.name");
  EXPECT_EQ(bad_name.error().causes[0].reason, "FieldValueInvalid");
  EXPECT_EQ(bad_name.error().message, "CustomResourceDefinition.apiextensions.k8s.io \"runs." + Group() +
                                          "\" is invalid: metadata.name: Invalid value: \"runs." + Group() +
                                          "\": must be spec.names.plural+\".\"+spec.group");

  Json untyped = crd;
  untyped["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"].erase("type");
  auto not_structural = CreateCrd(untyped);
  ASSERT_EQ(not_structural.reason(), Reason::kInvalid);
  ASSERT_EQ(not_structural.error().causes.size(), 1u);
  // With one version kube-apiserver names the schema as the old top-level
  // spec.validation, not spec.versions[0].schema.
  EXPECT_EQ(not_structural.error().causes[0].field, "spec.validation.openAPIV3Schema.properties[spec].type");
  EXPECT_EQ(not_structural.error().causes[0].reason, "FieldValueRequired");
  EXPECT_EQ(not_structural.error().causes[0].message, "Required value: must not be empty for specified object fields");

  Json two_storage = crd;
  two_storage["spec"]["versions"].push_back(crd["spec"]["versions"][0]);
  two_storage["spec"]["versions"][1]["name"] = "v1beta1";
  auto two = CreateCrd(two_storage);
  ASSERT_EQ(two.reason(), Reason::kInvalid);
  bool one_storage_version = false;
  for (const auto& c : two.error().causes) {
    if (c.field == "spec.versions" &&
        c.message.find("must have exactly one version marked as storage version") != std::string::npos) {
      one_storage_version = true;
    }
  }
  EXPECT_TRUE(one_storage_version) << two.error().ToString();

  auto created = CreateCrd(crd);
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  EXPECT_FALSE(HasCondition(*created, "Established", "True")) << created->dump();
  ASSERT_TRUE(WaitForCondition(crd["metadata"]["name"].get<std::string>(), "Established", "True"));
  auto got = client_->Get(crds, "", crd["metadata"]["name"].get<std::string>());
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(HasCondition(*got, "NamesAccepted", "True"));
  EXPECT_EQ((*got)["status"]["acceptedNames"]["kind"], "ScratchRun");
  // Served now (the client rides out the 429 "storage is (re)initializing"
  // a just-established resource may answer first).
  auto list = client_->List(Scratch(), ns());
  EXPECT_TRUE(list.ok()) << list.error().ToString();
}

// Catches: Client::Discover reading the scope wrongly (the "namespaced"
// flag of the group's resource list), or a cluster-scoped custom resource
// addressed with a namespace in its path.
TEST_F(Crd, ScopeComesFromTheCrdThroughDiscovery) {
  InstallOwn(OwnCrd("Cluster"));
  if (HasFatalFailure()) return;
  ApiResult<ResourceType> runs = ApiError{};
  // The new group joins discovery shortly after it is established.
  ASSERT_TRUE(Eventually(
      [&] {
        runs = client_->Discover(Group() + "/v1alpha1", "ScratchRun");
        return runs.ok();
      },
      std::chrono::seconds(10)))
      << runs.error().ToString();
  EXPECT_EQ(runs->scope, Scope::kCluster);
  EXPECT_EQ(runs->plural, "scratchruns");
  Json r = Run("cluster-wide");
  r["metadata"].erase("namespace");
  auto created = client_->Create(*runs, "", r);
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  EXPECT_FALSE((*created)["metadata"].contains("namespace"));
  EXPECT_TRUE(client_->Get(*runs, "", "cluster-wide").ok());
  auto missing = client_->Discover(Group() + "/v1alpha1", "BenchmarkRun");
  EXPECT_EQ(missing.reason(), Reason::kNotFound);
}

// Catches: a client that sends fieldValidation wrongly (the real server
// then prunes silently instead of refusing), or reads of the defaults the
// structural schema adds.
TEST_F(Crd, PruningDefaultsAndFieldValidation) {
  InstallCrd();
  auto runs = testenv::TestRuns();
  Json r = BenchmarkRun("r1", 4, ns());
  r["spec"]["unknown"] = "dropped";
  r["spec"]["targets"][0]["extra"] = 1;
  r["spec"]["load"].erase("threads");
  auto created = client_->Create(runs, ns(), r);
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  EXPECT_FALSE((*created)["spec"].contains("unknown"));  // pruned silently
  EXPECT_FALSE((*created)["spec"]["targets"][0].contains("extra"));
  EXPECT_EQ((*created)["spec"]["load"]["threads"], 4);  // defaults
  EXPECT_EQ((*created)["spec"]["load"]["duration"], "30s");
  EXPECT_EQ((*created)["spec"]["load"]["mode"], "closed");
  EXPECT_EQ((*created)["spec"]["repetitions"], 1);

  WriteOptions strict;
  strict.field_validation = "Strict";
  r["metadata"]["name"] = "r2";
  auto rejected = client_->Create(runs, ns(), r, strict);
  ASSERT_EQ(rejected.reason(), Reason::kBadRequest);
  EXPECT_EQ(rejected.error().message,
            "BenchmarkRun in version \"v1alpha1\" cannot be handled as a BenchmarkRun: strict decoding error: "
            "unknown field \"spec.targets[0].extra\", unknown field \"spec.unknown\"");
  EXPECT_EQ(client_->Get(runs, ns(), "r2").reason(), Reason::kNotFound);
}

// Catches: a CRD update the client cannot make (a PUT without the read
// resourceVersion), or a default added to the schema that objects stored
// before it do not show when read.
TEST_F(Crd, DefaultsApplyOnReadAfterTheSchemaGainsOne) {
  InstallOwn(OwnCrd());
  if (HasFatalFailure()) return;
  ASSERT_TRUE(client_->Create(Scratch(), ns(), Run("r1")).ok());
  auto crd = client_->Get(resources::CustomResourceDefinitions(), "", "scratchruns." + Group());
  ASSERT_TRUE(crd.ok());
  (*crd)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["cooldown"] = {
      {"type", "string"}, {"default", "10s"}};
  auto updated = client_->Update(resources::CustomResourceDefinitions(), *crd);
  ASSERT_TRUE(updated.ok()) << updated.error().ToString();
  EXPECT_EQ((*updated)["metadata"]["generation"], 2);
  // The server serves the new schema once its CRD handler has seen the
  // update: the stored object (written without cooldown) is defaulted as read.
  Json read;
  EXPECT_TRUE(Eventually(
      [&] {
        auto got = client_->Get(Scratch(), ns(), "r1");
        if (!got.ok()) return false;
        read = *got;
        return read["spec"].contains("cooldown");
      },
      std::chrono::seconds(10)))
      << read.dump();
  EXPECT_EQ(read["spec"]["cooldown"], "10s");
}

// Catches: causes of a 422 dropped or misread (each schema keyword has its
// field path and reason), as the operator reports them on a bad run.
TEST_F(Crd, ValidationKeywordsAnswer422WithCauses) {
  InstallCrd();
  auto runs = testenv::TestRuns();
  Json bad = BenchmarkRun("bad", 4, ns());
  bad["spec"]["targets"] = {{{"name", "Not_Valid"}, {"port", 0}}, {{"port", "http"}}};
  bad["spec"]["load"]["mode"] = "burst";
  bad["spec"]["repetitions"] = 0;
  auto r = client_->Create(runs, ns(), bad);
  ASSERT_EQ(r.reason(), Reason::kInvalid);
  EXPECT_EQ(r.error().causes.size(), 6u) << r.error().ToString();
  std::map<std::string, std::string> by_field;
  for (const auto& c : r.error().causes) by_field[c.field] = c.reason;
  EXPECT_EQ(by_field["spec.targets[0].name"], "FieldValueInvalid");      // pattern
  EXPECT_EQ(by_field["spec.targets[0].port"], "FieldValueInvalid");      // minimum
  EXPECT_EQ(by_field["spec.targets[1].name"], "FieldValueRequired");     // required
  EXPECT_EQ(by_field["spec.targets[1].port"], "FieldValueTypeInvalid");  // type
  EXPECT_EQ(by_field["spec.load.mode"], "FieldValueNotSupported");       // enum
  EXPECT_EQ(by_field["spec.repetitions"], "FieldValueInvalid");
  EXPECT_NE(r.error().message.find("spec.load.mode: Unsupported value: \"burst\": supported values: \"closed\", "
                                   "\"open\""),
            std::string::npos)
      << r.error().message;
  Json empty = BenchmarkRun("empty", 4, ns());
  empty["spec"]["targets"] = Json::array();
  auto items = client_->Create(runs, ns(), empty);
  ASSERT_EQ(items.reason(), Reason::kInvalid);
  ASSERT_EQ(items.error().causes.size(), 1u);
  EXPECT_EQ(items.error().causes[0].field, "spec.targets");  // minItems
  EXPECT_EQ(items.error().causes[0].message, "Invalid value: 0: spec.targets in body should have at least 1 items");
}

// Catches: a client that does not take the real server's answer for a
// resource it does not serve (a plain-text "404 page not found", not a
// Status) for NotFound, so that a caller cannot wait for establishment.
// A CRD whose kind another CRD of the group already has is not accepted,
// hence not established and not served, until that other CRD goes.
TEST_F(Crd, ANewCrdIsServedOnlyOnceEstablished) {
  InstallOwn(OwnCrd());
  if (HasFatalFailure()) return;
  Json other = OwnCrd();
  other["metadata"]["name"] = "otherruns." + Group();
  other["spec"]["names"] = {
      {"plural", "otherruns"}, {"singular", "otherrun"}, {"kind", "ScratchRun"}, {"listKind", "OtherRunList"}};
  auto created = CreateCrd(other);
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  ASSERT_TRUE(WaitForCondition("otherruns." + Group(), "NamesAccepted", "False"));
  auto crd = client_->Get(resources::CustomResourceDefinitions(), "", "otherruns." + Group());
  ASSERT_TRUE(crd.ok());
  EXPECT_FALSE(HasCondition(*crd, "Established", "True"));
  for (const auto& c : (*crd)["status"]["conditions"]) {
    if (c["type"] == "NamesAccepted") {
      EXPECT_EQ(c["reason"], "KindConflict");
      EXPECT_EQ(c["message"], "\"ScratchRun\" is already in use");
    }
  }
  const ResourceType other_runs{Group(), "v1alpha1", "ScratchRun", "otherruns", Scope::kNamespaced};
  auto unserved = client_->List(other_runs, ns());
  ASSERT_EQ(unserved.reason(), Reason::kNotFound) << (unserved.ok() ? "served" : unserved.error().ToString());
  EXPECT_EQ(unserved.error().http_code, 404);

  // The first CRD goes: the second one's names are accepted, it is established and served.
  ASSERT_TRUE(client_->Delete(resources::CustomResourceDefinitions(), "", "scratchruns." + Group()).ok());
  ASSERT_TRUE(WaitForCondition("otherruns." + Group(), "Established", "True"));
  auto served = client_->List(other_runs, ns());
  EXPECT_TRUE(served.ok()) << served.error().ToString();
}

// Catches: a CRD deletion that leaves its objects to come back with a new
// CRD of the same name (kube-apiserver's customresourcecleanup finalizer
// deletes them first), or a client that cannot tell "no such resource" once
// the CRD is gone.
TEST_F(Crd, DeletingTheCrdRemovesItsObjects) {
  const Json crd = OwnCrd();
  const std::string name = crd["metadata"]["name"].get<std::string>();
  InstallOwn(crd);
  if (HasFatalFailure()) return;
  ASSERT_TRUE(client_->Create(Scratch(), ns(), Run("r1")).ok());
  auto deleting = client_->Delete(resources::CustomResourceDefinitions(), "", name);
  ASSERT_TRUE(deleting.ok()) << deleting.error().ToString();
  if ((*deleting).value("kind", "") == "CustomResourceDefinition") {
    // Held by its finalizer until its objects are gone.
    EXPECT_TRUE((*deleting)["metadata"].contains("deletionTimestamp"));
    EXPECT_EQ((*deleting)["metadata"]["finalizers"], Json::array({"customresourcecleanup.apiextensions.k8s.io"}));
  }
  ASSERT_TRUE(Eventually(
      [&] { return client_->Get(resources::CustomResourceDefinitions(), "", name).reason() == Reason::kNotFound; },
      std::chrono::seconds(30)));
  EXPECT_TRUE(Eventually([&] { return client_->List(Scratch(), ns()).reason() == Reason::kNotFound; },
                         std::chrono::seconds(10)));
  InstallOwn(crd);
  if (HasFatalFailure()) return;
  auto list = client_->List(Scratch(), ns());
  ASSERT_TRUE(list.ok()) << list.error().ToString();
  EXPECT_TRUE(list->items.empty());
}

}  // namespace
}  // namespace fairbench::kube
