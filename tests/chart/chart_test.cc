// charts/fairbench on its own (no API server): helm lint, the CRD and the
// versions it shares with the project, every value documented, and the
// controller's Deployment, Service, token Secret and dashboard as rendered.
#include <regex>
#include <set>

#include "common/base64.h"
#include "tests/chart/chart_test_env.h"

namespace fairbench::chart_test {
namespace {

class ChartTest : public ChartTestBase {
 protected:
  // The controller container of a render.
  static json Controller(const std::vector<json>& objects) {
    const json* d = Find(objects, "Deployment");
    EXPECT_NE(d, nullptr);
    if (d == nullptr) return json::object();
    for (const json& c : (*d)["spec"]["template"]["spec"]["containers"]) {
      if (Str(c, "name") == "controller") return c;
    }
    ADD_FAILURE() << "no container named controller";
    return json::object();
  }
  // --name=value arguments of the controller, by name.
  static std::map<std::string, std::string> Flags(const json& container) {
    std::map<std::string, std::string> out;
    for (const json& a : container.value("args", json::array())) {
      const std::string arg = a.get<std::string>();
      const size_t eq = arg.find('=');
      out[arg.substr(0, eq)] = eq == std::string::npos ? "" : arg.substr(eq + 1);
    }
    return out;
  }
};

// Catches: a chart helm refuses, or one that renders with a ci/ values file
// only because a value went unchecked by values.schema.json.
TEST_F(ChartTest, HelmLintPassesWithEveryCiValuesFile) {
  ASSERT_FALSE(CiValuesFiles().empty());
  for (const fs::path& values : CiValuesFiles()) {
    const auto r = Helm({"lint", "--strict", kChart, "--values", values.string()});
    EXPECT_EQ(r.exit_code, 0) << values << "\n" << r.out << r.err;
  }
  // The schema refuses what the controller would refuse later.
  const auto bad = Helm({"lint", kChart, "--set", "controller.logLevel=loud"});
  EXPECT_NE(bad.exit_code, 0) << bad.out;
  EXPECT_NE((bad.out + bad.err).find("logLevel"), std::string::npos) << bad.out << bad.err;
}

// The CRD is a template of the chart (Helm upgrades templates, never a
// chart's crds/), rendered as manifests/crd/ holds it — the file the API
// model generates (manifests_test) — plus the resource policy that keeps it
// at uninstall. Catches: the chart's CRD drifting from manifests/crd/ (run
// scripts/render-manifests), crds.keep or crds.enabled ignored, a CRD left
// in crds/ as well (Helm would install it there once and never upgrade it).
TEST_F(ChartTest, TheCrdIsTheOneInManifestsAndKeptAtUninstall) {
  auto manifests = kubetest::YamlToJson(ReadFile(kRoot + "/manifests/crd/benchmarkruns.fairbench.dev.yaml"));
  ASSERT_TRUE(manifests.ok()) << manifests.status().ToString();
  const std::vector<json> kept = Render({"--show-only", "templates/crds.yaml"});
  ASSERT_EQ(kept.size(), 1u);
  json crd = kept[0];
  EXPECT_EQ(crd["metadata"]["annotations"], json({{"helm.sh/resource-policy", "keep"}}));
  crd["metadata"].erase("annotations");
  EXPECT_TRUE(crd == *manifests) << "charts/fairbench/templates/crds.yaml drifted from manifests/crd: run "
                                    "scripts/render-manifests\n"
                                 << json::diff(*manifests, crd).dump(1).substr(0, 2000);

  const std::vector<json> unkept = Render({"--show-only", "templates/crds.yaml", "--set", "crds.keep=false"});
  ASSERT_EQ(unkept.size(), 1u);
  EXPECT_TRUE(unkept[0] == *manifests) << json::diff(*manifests, unkept[0]).dump(1).substr(0, 2000);

  EXPECT_EQ(Find(Render({"--set", "crds.enabled=false"}), "CustomResourceDefinition"), nullptr);
  EXPECT_NE(Find(Render(), "CustomResourceDefinition"), nullptr) << "the default install has no CRD";
  EXPECT_FALSE(fs::exists(kChart + "/crds")) << "a CRD in crds/ is installed once and never upgraded";
}

// Catches: a release of the project whose chart still installs the images
// of the one before.
TEST_F(ChartTest, ChartVersionsFollowTheProject) {
  auto chart = kubetest::YamlToJson(ReadFile(kChart + "/Chart.yaml"));
  ASSERT_TRUE(chart.ok());
  EXPECT_EQ(Str(*chart, "appVersion"), FAIRBENCH_VERSION) << "Chart.yaml appVersion ≠ CMakeLists.txt's project VERSION";
  EXPECT_EQ(Str(*chart, "version").substr(0, std::string(FAIRBENCH_VERSION).size()), FAIRBENCH_VERSION);
}

// One key of values.yaml: its dotted path, and whether a "# --" comment
// documents it (or one of its parents, whose value it is part of).
struct ValueKey {
  std::string path;
  bool own_doc = false;
  bool covered = false;
  bool leaf = true;
};

std::vector<ValueKey> ValuesKeys(const std::string& text) {
  static const std::regex key_line(R"(^( *)([A-Za-z_][A-Za-z0-9_]*):(.*)$)");
  std::vector<ValueKey> keys;
  struct Open {
    size_t indent;
    size_t index;
  };
  std::vector<Open> stack;
  bool doc = false;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t first = line.find_first_not_of(' ');
    if (first == std::string::npos) {
      doc = false;
      continue;
    }
    if (line[first] == '#') {
      if (line.compare(first, 4, "# --") == 0) doc = true;
      continue;
    }
    std::smatch m;
    if (!std::regex_match(line, m, key_line)) {
      doc = false;
      continue;
    }
    const size_t indent = m[1].length();
    while (!stack.empty() && stack.back().indent >= indent) stack.pop_back();
    ValueKey k;
    k.path = stack.empty() ? m[2].str() : keys[stack.back().index].path + "." + m[2].str();
    k.own_doc = doc;
    k.covered = doc || (!stack.empty() && keys[stack.back().index].covered);
    if (!stack.empty()) keys[stack.back().index].leaf = false;
    stack.push_back({indent, keys.size()});
    keys.push_back(k);
    doc = false;
  }
  return keys;
}

// Catches: a value a user cannot learn about: without a "# --" comment in
// values.yaml, missing from the table in the chart's README, or unknown to
// values.schema.json (whose additionalProperties: false would then refuse
// the value itself).
TEST_F(ChartTest, EveryValueIsDocumented) {
  const std::vector<ValueKey> keys = ValuesKeys(ReadFile(kChart + "/values.yaml"));
  ASSERT_GT(keys.size(), 30u);
  const std::string readme = ReadFile(kChart + "/README.md");
  auto schema = json::parse(ReadFile(kChart + "/values.schema.json"), nullptr, false);
  ASSERT_FALSE(schema.is_discarded());
  int documented = 0;
  for (const ValueKey& k : keys) {
    if (k.leaf) {
      EXPECT_TRUE(k.covered) << "values.yaml: " << k.path << " has no \"# --\" comment (nor has its parent)";
    }
    if (!k.own_doc) continue;
    ++documented;
    EXPECT_NE(readme.find("| `" + k.path + "` |"), std::string::npos)
        << "charts/fairbench/README.md: no row for " << k.path;
    const json* node = &schema;
    std::stringstream parts(k.path);
    std::string part;
    while (std::getline(parts, part, '.')) {
      if (!node->contains("properties") || !(*node)["properties"].contains(part)) {
        node = nullptr;
        break;
      }
      node = &(*node)["properties"][part];
    }
    EXPECT_NE(node, nullptr) << "values.schema.json: no property " << k.path;
    if (node != nullptr) {
      EXPECT_TRUE(node->contains("description")) << "values.schema.json: " << k.path;
    }
  }
  EXPECT_GT(documented, 30);
}

// Catches: a controller the chart runs as root, writable, with
// capabilities or without a seccomp profile; probes on the wrong path or
// port; a Service that does not reach the controllers' gRPC port, or a
// --agent-address that does not name it.
TEST_F(ChartTest, TheDeploymentRunsHardenedLeaderElectedControllers) {
  const std::vector<json> objects = Render();
  const json* deployment = Find(objects, "Deployment");
  ASSERT_NE(deployment, nullptr);
  const json& spec = (*deployment)["spec"];
  EXPECT_EQ(spec["replicas"], 2);
  EXPECT_EQ(spec["strategy"]["rollingUpdate"]["maxSurge"], 0);
  EXPECT_EQ(spec["strategy"]["rollingUpdate"]["maxUnavailable"], "100%");
  const json& pod = spec["template"]["spec"];
  EXPECT_EQ(pod["securityContext"]["runAsNonRoot"], true);
  ASSERT_TRUE(pod["securityContext"]["runAsUser"].is_number_integer());
  EXPECT_GT(pod["securityContext"]["runAsUser"].get<int64_t>(), 0);
  EXPECT_EQ(pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
  const json c = Controller(objects);
  EXPECT_EQ(c["securityContext"]["allowPrivilegeEscalation"], false);
  EXPECT_EQ(c["securityContext"]["readOnlyRootFilesystem"], true);
  EXPECT_EQ(c["securityContext"]["capabilities"]["drop"], json::array({"ALL"}));
  EXPECT_TRUE(c["resources"]["requests"].contains("cpu"));
  EXPECT_TRUE(c["resources"]["requests"].contains("memory"));
  EXPECT_TRUE(c["resources"]["limits"].contains("memory"));

  std::map<std::string, int> ports;
  for (const json& p : c["ports"]) ports[p["name"]] = p["containerPort"];
  const auto flags = Flags(c);
  EXPECT_EQ(flags.at("--metrics-address"), "0.0.0.0:" + std::to_string(ports.at("metrics")));
  EXPECT_EQ(flags.at("--agent-listen"), "0.0.0.0:" + std::to_string(ports.at("grpc")));
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["path"], "/healthz");
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["port"], "metrics");
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["path"], "/readyz");
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["port"], "metrics");
  // Runs watched (and pods placed) in the release namespace.
  EXPECT_EQ(flags.at("--namespace"), "$(POD_NAMESPACE)");
  EXPECT_EQ(flags.at("--pod-namespace"), "$(POD_NAMESPACE)");

  // The Service selects the controllers and leads to their gRPC port; the
  // agents are told its name.
  const json* service = Find(objects, "Service");
  ASSERT_NE(service, nullptr);
  for (const auto& [k, v] : (*service)["spec"]["selector"].items()) {
    EXPECT_EQ(spec["template"]["metadata"]["labels"].value(k, ""), v) << k;
  }
  int grpc_port = 0;
  for (const json& p : (*service)["spec"]["ports"]) {
    if (p["targetPort"] == "grpc") grpc_port = p["port"];
  }
  ASSERT_NE(grpc_port, 0) << service->dump(1);
  EXPECT_EQ(flags.at("--agent-address"),
            Str((*service)["metadata"], "name") + "." + kNamespace + ".svc:" + std::to_string(grpc_port));
  const json* sa = Find(objects, "ServiceAccount");
  ASSERT_NE(sa, nullptr);
  EXPECT_EQ(pod["serviceAccountName"], (*sa)["metadata"]["name"]);
  // Off the target nodes: a controller beside a target under load takes CPU from it.
  EXPECT_NE(pod["affinity"].dump().find("\"NotIn\""), std::string::npos) << pod["affinity"].dump();

  // Watching every namespace, the controller is not told one.
  const json all = Controller(Render({"--set", "controller.watchAllNamespaces=true"}));
  EXPECT_EQ(Flags(all).count("--namespace"), 0u);
}

// Catches: a flag the controller does not have (it refuses to start: a
// crash loop), or a flag given twice (refused as well).
TEST_F(ChartTest, EveryFlagTheChartPassesIsOneTheControllerHas) {
  const auto help = kube::RunCommand(testing::BinaryPath("fairbench-controller"), {"--help"}, {}, 10s);
  ASSERT_TRUE(help.ok());
  ASSERT_EQ(help->exit_code, 0) << help->err;
  for (const fs::path& values : CiValuesFiles()) {
    const json c = Controller(RenderWith(values));
    std::set<std::string> seen;
    for (const json& a : c["args"]) {
      const std::string arg = a.get<std::string>();
      const std::string flag = arg.substr(0, arg.find('='));
      EXPECT_TRUE(seen.insert(flag).second) << values.filename() << ": " << flag << " twice";
      EXPECT_NE(help->out.find(flag + " "), std::string::npos)
          << values.filename() << ": fairbench-controller has no flag " << flag;
    }
  }
}

// Catches: a token Secret helm would delete on uninstall (the agents of a
// reinstall could not authenticate with a token they no longer have) or
// with a token too short to guess; a chart that creates a Secret the user
// said they own; a dashboard ConfigMap Grafana's sidecar ignores or that
// is not the project's dashboard.
TEST_F(ChartTest, TheTokenSecretIsKeptAndTheDashboardShipped) {
  const std::vector<json> objects = Render();
  const json* secret = Find(objects, "Secret");
  ASSERT_NE(secret, nullptr);
  EXPECT_EQ((*secret)["metadata"]["annotations"]["helm.sh/resource-policy"], "keep");
  auto token = Base64Decode(Str((*secret)["data"], "token"));
  ASSERT_TRUE(token.ok());
  EXPECT_GE(token->size(), 32u);
  EXPECT_EQ(Flags(Controller(objects)).at("--agent-token-secret"), Str((*secret)["metadata"], "name"));

  const std::vector<json> own = Render({"--set", "agentToken.existingSecret=mine"});
  EXPECT_EQ(Find(own, "Secret"), nullptr);
  EXPECT_EQ(Flags(Controller(own)).at("--agent-token-secret"), "mine");

  const json* dashboard = Find(objects, "ConfigMap");
  ASSERT_NE(dashboard, nullptr);
  EXPECT_EQ((*dashboard)["metadata"]["labels"]["grafana_dashboard"], "1");
  std::string file = ReadFile(kChart + "/dashboards/fairbench.json");
  while (!file.empty() && file.back() == '\n') file.pop_back();
  EXPECT_EQ(Str((*dashboard)["data"], "fairbench.json"), file);
  const std::vector<json> without_dashboard = Render({"--set", "grafanaDashboard.enabled=false"});
  EXPECT_EQ(Find(without_dashboard, "ConfigMap"), nullptr);
  // The ServiceMonitor scrapes the Service's metrics port.
  const std::vector<json> monitored = Render({"--set", "serviceMonitor.enabled=true"});
  const json* monitor = Find(monitored, "ServiceMonitor");
  ASSERT_NE(monitor, nullptr);
  EXPECT_EQ((*monitor)["spec"]["endpoints"][0]["port"], "metrics");
  EXPECT_EQ((*monitor)["spec"]["selector"]["matchLabels"], (*Find(monitored, "Service"))["spec"]["selector"]);
}

}  // namespace
}  // namespace fairbench::chart_test
