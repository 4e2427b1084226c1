// The chart against Kubernetes' own kube-apiserver (scripts/kube), with the
// kubectl and helm built with it: every ci/ values file renders objects the
// server accepts (kubectl apply --dry-run=server: its own validation and
// admission), manifests/ is the chart's default render, an upgrade keeps the
// agents' token, and the notes of an install tell what to do next.
#include <thread>

#include "tests/chart/chart_test_env.h"
#include "testing/support/kube_cluster.h"

namespace fairbench::chart_test {
namespace {

class ChartKubectlTest : public ChartTestBase {
 protected:
  void SetUp() override { ChartTestBase::SetUp(); }
  // The cluster, for the tests that talk to one.
  void Cluster() {
    auto cluster = testing::KubeCluster::Up((root() / "cluster").string());
    ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
    cluster_.emplace(std::move(*cluster));
    kubeconfig_ = cluster_->admin_kubeconfig();
    // The release namespace (helm install --create-namespace makes it) and
    // the one a ci/ file puts the dashboard in.
    Apply("namespaces.yaml",
          "apiVersion: v1\nkind: Namespace\nmetadata: {name: fairbench}\n---\n"
          "apiVersion: v1\nkind: Namespace\nmetadata: {name: monitoring}\n");
  }
  void TearDown() override { cluster_.reset(); }
  // `text` written to root()/NAME and applied for real.
  void Apply(const std::string& name, const std::string& text) {
    std::ofstream(root() / name) << text;
    const auto r = Kubectl({"apply", "-f", (root() / name).string()});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  void InstallCrds() {
    for (const std::string& crd : {kRoot + "/manifests/crd/benchmarkruns.fairbench.dev.yaml",
                                   kRoot + "/tests/chart/testdata/servicemonitors.monitoring.coreos.com.yaml"}) {
      const auto r = Kubectl({"apply", "-f", crd});
      ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    }
    // kubectl 1.37's wait fails at once on a CRD with no conditions yet:
    // asked again until it waits.
    kube::CommandResult r;
    for (int i = 0; i < 10; ++i) {
      r = Kubectl({"wait", "--for=condition=Established", "crd/benchmarkruns.fairbench.dev",
                   "crd/servicemonitors.monitoring.coreos.com", "--timeout=20s"});
      if (r.exit_code == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  // kubectl apply --dry-run=server of a render, written to root()/NAME.
  kube::CommandResult DryRun(const std::string& name, const std::string& rendered) {
    std::ofstream(root() / name) << rendered;
    return Kubectl({"apply", "--dry-run=server", "-f", (root() / name).string()});
  }

  std::optional<testing::KubeCluster> cluster_;
};

// Catches: a rendered object a cluster refuses (a Deployment whose selector
// does not match its pods, an RBAC rule without verbs or a binding to a
// kind of role it cannot bind, a Service port without a name, a dashboard
// ConfigMap with a key a ConfigMap cannot hold, a misspelt ServiceMonitor
// field), for any ci/ values file.
TEST_F(ChartKubectlTest, EveryCiValuesFileRendersObjectsTheApiServerAccepts) {
  Cluster();
  if (HasFatalFailure()) return;
  InstallCrds();
  for (const fs::path& values : CiValuesFiles()) {
    const std::string rendered = RenderText({"--values", values.string()});
    const size_t objects = Documents(rendered).size();
    ASSERT_GT(objects, 8u) << values;
    const auto r = DryRun(values.filename().string(), rendered);
    EXPECT_EQ(r.exit_code, 0) << values.filename() << "\n" << r.out << r.err;
    size_t accepted = 0;
    for (size_t at = r.out.find("(server dry run)"); at != std::string::npos;
         at = r.out.find("(server dry run)", at + 1)) {
      ++accepted;
    }
    EXPECT_EQ(accepted, objects) << values.filename() << "\n" << r.out;
  }
  // The server validates what it is sent: a strategy that could never roll
  // out is refused, as a cluster refuses it.
  const auto refused =
      DryRun("stuck.yaml", RenderText({"--set", "controller.strategy.rollingUpdate.maxUnavailable=0"}));
  EXPECT_NE(refused.exit_code, 0) << refused.out;
  EXPECT_NE(refused.err.find("spec.strategy.rollingUpdate.maxUnavailable"), std::string::npos) << refused.err;
}

// The objects of a render by "Kind namespace/name", without the labels only
// Helm puts on them.
std::map<std::string, json> ByKey(const std::vector<json>& objects) {
  std::map<std::string, json> out;
  for (json o : objects) {
    for (const char* where : {"/metadata/labels", "/spec/template/metadata/labels"}) {
      const json::json_pointer p(where);
      if (!o.contains(p) || !o[p].is_object()) continue;
      json& labels = o[p];
      labels.erase("helm.sh/chart");
      auto managed_by = labels.find("app.kubernetes.io/managed-by");
      if (managed_by != labels.end() && *managed_by == "Helm") labels.erase(managed_by);
    }
    out[Key(o)] = o;
  }
  return out;
}

// Catches: manifests/ (kubectl apply -k) installing something else than the
// chart does — a rule, flag or object changed in one and not the other
// (scripts/render-manifests rewrites manifests/fairbench.yaml and the
// chart's CRD template). By design the two differ in four things only:
// Helm's own labels, the agents' token Secret (a token in the repository
// would be known to all: the controller creates the Secret on its first
// start), the Namespace object (helm install --create-namespace makes it)
// and the CRD's helm.sh/resource-policy (Helm's alone).
TEST_F(ChartKubectlTest, KustomizeInstallIsTheChartsDefaultRender) {
  const auto built = Kubectl({"kustomize", kRoot + "/manifests"});
  ASSERT_EQ(built.exit_code, 0) << built.err;
  std::map<std::string, json> kustomized = ByKey(Documents(built.out));
  std::map<std::string, json> chart = ByKey(Render());
  ASSERT_EQ(kustomized.erase("Namespace fairbench"), 1u);
  ASSERT_EQ(chart.erase("Secret fairbench/fairbench-agent-token"), 1u);
  json& crd = chart["CustomResourceDefinition benchmarkruns.fairbench.dev"];
  ASSERT_EQ(crd["metadata"]["annotations"].size(), 1u);
  crd["metadata"].erase("annotations");
  for (const auto& [key, object] : chart) {
    auto it = kustomized.find(key);
    if (it == kustomized.end()) {
      ADD_FAILURE() << key << " is in the chart's render, not in manifests/: run scripts/render-manifests";
      continue;
    }
    EXPECT_TRUE(it->second == object) << key << " differs (run scripts/render-manifests); from manifests/ to "
                                      << "the chart:\n"
                                      << json::diff(it->second, object).dump(1).substr(0, 2000);
  }
  for (const auto& [key, object] : kustomized) {
    EXPECT_TRUE(chart.count(key)) << key << " is in manifests/, not in the chart's render";
  }
}

// Catches: an upgrade that renders a new agents' token (agents already
// running could no longer authenticate, and the old token's runs fail):
// with the Secret in the cluster, the chart renders its token, not a new one.
TEST_F(ChartKubectlTest, AnUpgradeKeepsTheAgentsToken) {
  Cluster();
  if (HasFatalFailure()) return;
  const std::vector<json> first = Render();
  const json* secret = Find(first, "Secret");
  ASSERT_NE(secret, nullptr);
  const std::string token = Str((*secret)["data"], "token");
  // The Secret as `helm install` left it: the release's own (helm refuses
  // to take over an object another installed).
  json installed = *secret;
  installed["metadata"]["labels"]["app.kubernetes.io/managed-by"] = "Helm";
  installed["metadata"]["annotations"]["meta.helm.sh/release-name"] = kRelease;
  installed["metadata"]["annotations"]["meta.helm.sh/release-namespace"] = kNamespace;
  Apply("secret.json", installed.dump());
  // What `helm upgrade` renders: lookup sees the cluster (as with --dry-run=server).
  const std::vector<json> upgrade = Render({"--dry-run=server", "--show-only", "templates/secret.yaml"});
  ASSERT_EQ(upgrade.size(), 1u);
  EXPECT_EQ(Str(upgrade[0]["data"], "token"), token);
  // Without a cluster to look into, each render makes a new one.
  const std::vector<json> again = Render({"--show-only", "templates/secret.yaml"});
  const json* fresh = Find(again, "Secret");
  ASSERT_NE(fresh, nullptr);
  EXPECT_NE(Str((*fresh)["data"], "token"), token);
}

// Catches: an install that leaves the user without the next steps: how to
// label nodes, run the study, watch it and fetch its report.
TEST_F(ChartKubectlTest, InstallNotesSayHowToRunTheStudyAndFetchTheReport) {
  Cluster();
  if (HasFatalFailure()) return;
  const auto r = Helm({"install", kRelease, kChart, "--namespace", kNamespace, "--dry-run=server"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string notes = r.out.substr(r.out.find("NOTES:"));
  for (const std::string want : {"kubectl label node TARGET-NODE fairbench.dev/role=target", "fairbench.dev/role=load",
                                 "kubectl -n fairbench apply -f examples/study.yaml", "kubectl -n fairbench get br -w",
                                 "fairbench fetch cpp-frameworks --namespace fairbench --output", "scripts/images"}) {
    EXPECT_NE(notes.find(want), std::string::npos) << want << "\n" << notes;
  }
}

}  // namespace
}  // namespace fairbench::chart_test
