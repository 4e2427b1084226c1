// The clients that speak Kubernetes protobuf (client-go's typed clients),
// for real, against the test API server: kubectl's `create` commands, and
// helm 3's install, list, upgrade and uninstall of charts/fairbench (its
// release storage writes Secrets in protobuf and deletes them with a
// protobuf DeleteOptions) under RBAC, as a user on a cluster runs them.
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include "tests/kube/kubectl_env.h"
#include "testing/apiserver/kube_protobuf.h"

namespace fairbench::kube {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const ResourceType kSecrets{"", "v1", "Secret", "secrets"};

// The bytes of the first request body in kubectl's -v=9 log, which prints
// a binary body as a hex dump:
//   I1204 ... "Request Body" body=<
//   	00000000  6b 38 73 00 0a 0f 0a 02  76 31 12 09 43 6f 6e 66  |k8s.....v1..Conf|
//    >
std::string RequestBody(const std::string& log) {
  std::istringstream lines(log);
  std::string line, body;
  bool in = false;
  while (std::getline(lines, line)) {
    if (!in) {
      in = line.find("\"Request Body\" body=<") != std::string::npos;
      continue;
    }
    std::istringstream words(line);
    std::string offset, word;
    if (!(words >> offset) || offset.size() != 8) break;
    while (words >> word && word.size() == 2 && word[0] != '|') {
      body.push_back(static_cast<char>(std::stoi(word, nullptr, 16)));
    }
  }
  return body;
}

class KubectlCreate : public Kubectl {
 protected:
  // Runs `kubectl create ...` twice: with --dry-run=client -o json (kubectl
  // prints the object it would send, as Go's JSON encoder writes it), then
  // for real with -v=9. The protobuf body kubectl sent, as the server
  // decodes it, must be that same JSON; returns kubectl's output.
  std::string CreateAsKubectlWouldSendIt(std::vector<std::string> args) {
    args.insert(args.begin(), "create");
    std::vector<std::string> dry = args;
    dry.insert(dry.end(), {"--dry-run=client", "-o", "json"});
    const json expected = json::parse(Ok(dry), nullptr, false);
    EXPECT_TRUE(expected.is_object());
    args.push_back("-v=9");
    auto created = Run(args);
    EXPECT_EQ(created.exit_code, 0) << created.err;
    const std::string body = RequestBody(created.err);
    EXPECT_EQ(body.substr(0, 4), std::string("k8s\0", 4)) << created.err.substr(0, 4000);
    const std::string api_version = expected.value("apiVersion", "");
    const size_t slash = api_version.find('/');
    apiserver::ExpectedKind kind;
    kind.group = slash == std::string::npos ? "" : api_version.substr(0, slash);
    kind.version = slash == std::string::npos ? api_version : api_version.substr(slash + 1);
    kind.kind = expected.value("kind", "");
    auto decoded = apiserver::DecodeProtobufObject(body, kind);
    EXPECT_TRUE(decoded.ok()) << (decoded.ok() ? "" : decoded.reply().body.dump());
    if (decoded.ok()) {
      EXPECT_EQ(decoded.value(), expected);
    }
    return created.out;
  }
};

// Catches: any field of these kinds read from the wrong number or written
// other than Go writes it (a map entry, a pointer, an omitempty, base64 of
// binaryData, a repeated message), and the decoder not wired into create
// (kubectl then fails with 415, as before this decoder).
TEST_F(KubectlCreate, EachTypedCreateSendsWhatItsDryRunPrints) {
  EXPECT_EQ(CreateAsKubectlWouldSendIt({"namespace", "x"}), "namespace/x created\n");
  EXPECT_EQ(Ok({"get", "namespace", "x", "-o", "jsonpath={.status.phase}"}), "Active");
  const std::string binary = dir_ + "/binary";
  {
    std::ofstream f(binary);
    f << std::string("\x00\xff\x01 not UTF-8", 13);
  }
  EXPECT_EQ(CreateAsKubectlWouldSendIt({"configmap", "c1", "--from-literal=a=b", "--from-literal=empty=",
                                        "--from-file=bin=" + binary}),
            "configmap/c1 created\n");
  EXPECT_EQ(Ok({"get", "configmap", "c1", "-o", "jsonpath={.binaryData.bin}"}), "AP8BIG5vdCBVVEYtOA==");
  EXPECT_EQ(CreateAsKubectlWouldSendIt({"secret", "generic", "s1", "--from-literal=user=admin",
                                        "--from-literal=password=s3cr=t", "--type=Opaque"}),
            "secret/s1 created\n");
  EXPECT_EQ(Ok({"get", "secret", "s1", "-o", "jsonpath={.data.password}"}), "czNjcj10");
  EXPECT_EQ(CreateAsKubectlWouldSendIt({"secret", "docker-registry", "pull", "--docker-server=registry.test",
                                        "--docker-username=u", "--docker-password=p"}),
            "secret/pull created\n");
  EXPECT_EQ(CreateAsKubectlWouldSendIt({"serviceaccount", "sa1"}), "serviceaccount/sa1 created\n");
  EXPECT_EQ(CreateAsKubectlWouldSendIt({"role", "r1", "--verb=get,list", "--resource=pods,pods/log",
                                        "--resource-name=p1"}),
            "role.rbac.authorization.k8s.io/r1 created\n");
  EXPECT_EQ(CreateAsKubectlWouldSendIt({"rolebinding", "rb1", "--role=r1", "--user=bob", "--group=devs",
                                        "--serviceaccount=default:sa1"}),
            "rolebinding.rbac.authorization.k8s.io/rb1 created\n");
  EXPECT_EQ(CreateAsKubectlWouldSendIt({"clusterrole", "cr1", "--verb=get", "--non-resource-url=/healthz"}),
            "clusterrole.rbac.authorization.k8s.io/cr1 created\n");
  EXPECT_EQ(CreateAsKubectlWouldSendIt({"clusterrole", "aggregated", "--aggregation-rule=fairbench.dev/agg=true"}),
            "clusterrole.rbac.authorization.k8s.io/aggregated created\n");
  EXPECT_EQ(CreateAsKubectlWouldSendIt({"clusterrolebinding", "crb1", "--clusterrole=cr1", "--user=bob"}),
            "clusterrolebinding.rbac.authorization.k8s.io/crb1 created\n");
  EXPECT_EQ(CreateAsKubectlWouldSendIt({"service", "clusterip", "svc1", "--tcp=80:8080", "--tcp=443:https"}),
            "service/svc1 created\n");
  EXPECT_EQ(CreateAsKubectlWouldSendIt({"service", "externalname", "ext", "--external-name=example.test"}),
            "service/ext created\n");
  EXPECT_EQ(Ok({"get", "service", "svc1", "-o", "jsonpath={.spec.ports[1].targetPort}"}), "https");

  // The created objects are read back, as kubectl shows them.
  const std::string rbac = Ok({"get", "roles,rolebindings,clusterroles,clusterrolebindings", "-A", "-o", "name"});
  for (const char* name : {"role.rbac.authorization.k8s.io/r1", "rolebinding.rbac.authorization.k8s.io/rb1",
                           "clusterrole.rbac.authorization.k8s.io/cr1", "clusterrole.rbac.authorization.k8s.io/aggregated",
                           "clusterrolebinding.rbac.authorization.k8s.io/crb1"}) {
    EXPECT_NE(rbac.find(name), std::string::npos) << rbac;
  }
}

// Catches: TokenRequest's protobuf body refused, or its expirationSeconds
// (a pointer Go writes as null when unset) misread, so that the duration
// asked for is not the one issued.
TEST_F(KubectlCreate, TokenForAServiceAccount) {
  Ok({"create", "serviceaccount", "robot"});
  auto token = Run({"create", "token", "robot", "--duration=20m", "--audience=fairbench", "-v=9"});
  ASSERT_EQ(token.exit_code, 0) << token.err;
  EXPECT_FALSE(token.out.empty());
  auto decoded = apiserver::DecodeProtobufObject(RequestBody(token.err),
                                                 {"authentication.k8s.io", "v1", "TokenRequest", false});
  ASSERT_TRUE(decoded.ok()) << decoded.reply().body.dump();
  EXPECT_EQ(decoded.value()["spec"],
            json::parse(R"({"audiences": ["fairbench"], "expirationSeconds": 1200, "boundObjectRef": null})"));
}

// helm runs as the administrator of a server that authorizes with RBAC.
class Helm : public Kubectl {
 protected:
  apiserver::TestApiServerOptions ServerOptions() const override {
    apiserver::TestApiServerOptions o = Kubectl::ServerOptions();
    o.api.authorization = apiserver::AuthorizationMode::kRbac;
    return o;
  }
  void SetUp() override {
    Kubectl::SetUp();
    helm_ = fairbench::testing::FindTool("helm");
    ASSERT_FALSE(helm_.empty()) << "helm not found on PATH nor in " << FAIRBENCH_SOURCE_DIR
                                << "/.tools/bin: run scripts/setup --with-tools";
  }
  CommandResult Helm3(std::vector<std::string> args) {
    args.insert(args.end(), {"--kubeconfig", kubeconfig_, "--namespace", "fairbench"});
    return RunTool(helm_, std::move(args));
  }
  std::vector<std::string> Chart(const char* verb, const std::string& tag) const {
    // The values the README's test-cluster steps use.
    return {verb, "fairbench", std::string(FAIRBENCH_SOURCE_DIR) + "/charts/fairbench", "--set",
            "image.registry=fairbench.test", "--set", "image.tag=" + tag, "--set",
            "controller.listenAddress=$(POD_IP)"};
  }
  // kind/namespace/name of each object `helm template` renders.
  std::vector<std::tuple<std::string, std::string, std::string>> Rendered(const std::string& tag) {
    auto args = Chart("template", tag);
    auto r = Helm3(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::tuple<std::string, std::string, std::string>> objects;
    size_t start = 0;
    while (start < r.out.size()) {
      size_t end = r.out.find("\n---", start);
      if (end == std::string::npos) end = r.out.size();
      auto doc = apiserver::YamlToJson(r.out.substr(start, end - start));
      if (doc.ok() && doc->is_object() && doc->contains("kind")) {
        const json& md = (*doc)["metadata"];
        objects.emplace_back((*doc)["kind"].get<std::string>(), md.value("namespace", ""),
                             md["name"].get<std::string>());
      }
      start = end + 4;
    }
    return objects;
  }
  Result<Json> GetRendered(const std::string& kind, const std::string& ns, const std::string& name) {
    static const std::map<std::string, ResourceType> kTypes = {
        {"ServiceAccount", {"", "v1", "ServiceAccount", "serviceaccounts"}},
        {"Secret", {"", "v1", "Secret", "secrets"}},
        {"ConfigMap", resources::ConfigMaps()},
        {"Service", resources::Services()},
        {"Deployment", {"apps", "v1", "Deployment", "deployments"}},
        {"Role", {"rbac.authorization.k8s.io", "v1", "Role", "roles"}},
        {"RoleBinding", {"rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings"}},
        {"ClusterRole", {"rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", Scope::kCluster}},
        {"ClusterRoleBinding",
         {"rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", Scope::kCluster}}};
    auto it = kTypes.find(kind);
    if (it == kTypes.end()) return Status::NotFound("no resource for kind " + kind);
    auto got = client_->Get(it->second, ns.empty() ? "fairbench" : ns, name);
    if (!got.ok()) return Status::NotFound(got.error().ToString());
    return *got;
  }

  std::string helm_;
};

// Catches: the release Secret's protobuf create, update (upgrade marks v1
// superseded, uninstall marks releases uninstalling) or delete (a protobuf
// DeleteOptions) refused or garbled — helm list and get values read the
// release back from those Secrets — and any object of the chart not created
// or not removed.
TEST_F(Helm, InstallListUpgradeUninstallTheChart) {
  Ok({"create", "namespace", "fairbench"});
  Ok({"label", "namespace", "fairbench", "pod-security.kubernetes.io/enforce=restricted"});
  auto installed = Helm3(Chart("install", "test"));
  ASSERT_EQ(installed.exit_code, 0) << installed.out << installed.err;
  EXPECT_NE(installed.out.find("STATUS: deployed"), std::string::npos) << installed.out;

  auto release = client_->Get(kSecrets, "fairbench", "sh.helm.release.v1.fairbench.v1");
  ASSERT_TRUE(release.ok()) << release.error().ToString();
  EXPECT_EQ((*release)["type"], "helm.sh/release.v1");
  const json& labels = (*release)["metadata"]["labels"];
  EXPECT_EQ(labels.value("name", ""), "fairbench");
  EXPECT_EQ(labels.value("owner", ""), "helm");
  EXPECT_EQ(labels.value("status", ""), "deployed");
  EXPECT_EQ(labels.value("version", ""), "1");
  const auto objects = Rendered("test");
  ASSERT_GE(objects.size(), 8u);
  for (const auto& [kind, ns, name] : objects) {
    auto got = GetRendered(kind, ns, name);
    EXPECT_TRUE(got.ok()) << kind << " " << ns << "/" << name << ": " << got.status().message();
  }

  auto listed = Helm3({"list", "-o", "json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const json list = json::parse(listed.out, nullptr, false);
  ASSERT_TRUE(list.is_array() && list.size() == 1) << listed.out;
  EXPECT_EQ(list[0]["name"], "fairbench");
  EXPECT_EQ(list[0]["status"], "deployed");
  EXPECT_EQ(list[0]["chart"], "fairbench-0.1.0");
  auto values = Helm3({"get", "values", "fairbench", "-o", "json"});
  EXPECT_EQ(json::parse(values.out, nullptr, false)["image"],
            json::parse(R"({"registry": "fairbench.test", "tag": "test"})"))
      << values.out << values.err;

  auto upgraded = Helm3(Chart("upgrade", "test2"));
  ASSERT_EQ(upgraded.exit_code, 0) << upgraded.out << upgraded.err;
  auto history = Helm3({"history", "fairbench", "-o", "json"});
  const json revisions = json::parse(history.out, nullptr, false);
  ASSERT_TRUE(revisions.is_array() && revisions.size() == 2) << history.out << history.err;
  EXPECT_EQ(revisions[0]["status"], "superseded");
  EXPECT_EQ(revisions[1]["status"], "deployed");
  auto deployment = client_->Get(ResourceType{"apps", "v1", "Deployment", "deployments"}, "fairbench", "fairbench-controller");
  ASSERT_TRUE(deployment.ok());
  EXPECT_EQ((*deployment)["spec"]["template"]["spec"]["containers"][0]["image"],
            "fairbench.test/fairbench-controller:test2");

  auto uninstalled = Helm3({"uninstall", "fairbench"});
  ASSERT_EQ(uninstalled.exit_code, 0) << uninstalled.out << uninstalled.err;
  EXPECT_NE(uninstalled.out.find("release \"fairbench\" uninstalled"), std::string::npos) << uninstalled.out;
  for (const auto& [kind, ns, name] : objects) {
    // The chart keeps the agents' token Secret (helm.sh/resource-policy: keep).
    const bool kept = kind == "Secret" && name == "fairbench-agent-token";
    EXPECT_EQ(GetRendered(kind, ns, name).ok(), kept) << kind << " " << ns << "/" << name;
  }
  ListOptions helm_owned;
  helm_owned.label_selector = "owner=helm";
  auto releases = client_->List(kSecrets, "fairbench", helm_owned);
  ASSERT_TRUE(releases.ok());
  EXPECT_TRUE(releases->items.empty()) << releases->items.size();
  auto after = Helm3({"list", "-o", "json"});
  EXPECT_EQ(json::parse(after.out, nullptr, false), json::array()) << after.out << after.err;
}

}  // namespace
}  // namespace fairbench::kube
