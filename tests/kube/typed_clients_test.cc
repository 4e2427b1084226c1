// fairbench's typed clients (controller/kube/typed_client.h: ConfigMaps,
// Pods, Leases, Events, Services) beside kubectl, the reference client:
// the same object created by each with a server-side dry run
// (`kubectl create ... --dry-run=server -o json`, and the typed client's
// WriteOptions::dry_run), so that the real kube-apiserver decodes, defaults
// and validates both; what it answers must be the same object, its
// managedFields (which fields each client sent) included. And helm 3's
// install, list, upgrade and uninstall of charts/fairbench, as a user on a
// cluster runs them, in a namespace that enforces the restricted Pod
// Security Standard.
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <tuple>

#include "controller/kube/typed_client.h"
#include "tests/kube/kubectl_env.h"

namespace fairbench::kube {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const ResourceType kSecrets{"", "v1", "Secret", "secrets"};
const ResourceType kServiceAccounts{"", "v1", "ServiceAccount", "serviceaccounts"};

// An object as the server answered a dry-run create, without what differs
// from one create to the next: uid, creation time, the field manager's name
// and time (kubectl-create or kubectl-run against the client's own), a
// Service's allocated IPs.
json Comparable(json o) {
  json& md = o["metadata"];
  md.erase("uid");
  md.erase("creationTimestamp");
  md.erase("resourceVersion");
  if (md.contains("managedFields")) {
    for (json& m : md["managedFields"]) {
      m.erase("manager");
      m.erase("time");
    }
  }
  if (o.value("kind", "") == "Service") {
    o["spec"].erase("clusterIP");
    o["spec"].erase("clusterIPs");
  }
  return o;
}

class TypedClients : public Kubectl {
 protected:
  // kubectl's dry-run create of `args` (a generator, or -f FILE).
  json KubectlDryRun(std::vector<std::string> args) {
    args.insert(args.begin(), "create");
    args.insert(args.end(), {"--dry-run=server", "-o", "json", "--show-managed-fields"});
    const json j = json::parse(Ok(args), nullptr, false);
    EXPECT_TRUE(j.is_object());
    return j.is_object() ? j : json::object();
  }
  std::string File(const std::string& name, const json& object) {
    const std::string path = dir_ + "/" + name;
    EXPECT_TRUE(WriteTextFile(path, object.dump(2)));
    return path;
  }
  WriteOptions DryRun() const {
    WriteOptions o;
    o.dry_run = true;
    return o;
  }
};

// Catches: ConfigMap::ToJson writing data or binaryData other than Go does
// (binaryData not left as the base64 text it is on the wire, an empty value
// dropped), or FromJson losing either when it reads kubectl's object.
TEST_F(TypedClients, ConfigMapFromTheGeneratorAndTheTypedClientAreOneObject) {
  const std::string binary = dir_ + "/binary";
  ASSERT_TRUE(WriteTextFile(binary, std::string("\x00\xff\x01 not UTF-8", 13)));
  const json by_kubectl =
      KubectlDryRun({"configmap", "c1", "--from-literal=a=b", "--from-literal=empty=", "--from-file=bin=" + binary});
  EXPECT_EQ(by_kubectl["binaryData"]["bin"], "AP8BIG5vdCBVVEYtOA==") << by_kubectl.dump(2);

  ConfigMap cm;
  cm.metadata.name = "c1";
  cm.metadata.namespace_ = ns();
  cm.data = {{"a", "b"}, {"empty", ""}};
  cm.binary_data = {{"bin", "AP8BIG5vdCBVVEYtOA=="}};
  auto typed = ConfigMapClient(*client_);
  auto answered = client_->Create(resources::ConfigMaps(), ns(), cm.ToJson(), DryRun());
  ASSERT_TRUE(answered.ok()) << answered.error().ToString();
  EXPECT_EQ(Comparable(*answered), Comparable(by_kubectl));
  auto decoded = typed.Create(cm, DryRun());
  ASSERT_TRUE(decoded.ok()) << decoded.error().ToString();
  EXPECT_EQ(decoded->data, cm.data);
  EXPECT_EQ(decoded->binary_data, cm.binary_data);

  // What kubectl made for real, the typed client reads back as it wrote it.
  Ok({"create", "configmap", "c1", "--from-literal=a=b", "--from-literal=empty=", "--from-file=bin=" + binary});
  auto read = typed.Get(ns(), "c1");
  ASSERT_TRUE(read.ok()) << read.error().ToString();
  EXPECT_EQ(read->data, cm.data);
  EXPECT_EQ(read->binary_data, cm.binary_data);
  EXPECT_EQ(read->metadata.namespace_, ns());
  EXPECT_FALSE(read->metadata.uid.empty());
}

// Catches: ObjectMeta written other than Go writes it (labels,
// annotations, finalizers, generateName dropped; an owner reference's
// controller or blockOwnerDeletion lost), or a Pod's spec changed on its way
// through Pod::FromJson and ToJson (the platform creates its pods so).
TEST_F(TypedClients, PodWithEveryMetadataFieldIsSentAsKubectlSendsIt) {
  const json pod = json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {
      "name": "bench-drogon", "namespace": ")" +
                               ns() + R"(",
      "labels": {"app.kubernetes.io/managed-by": "fairbench", "fairbench.dev/run": "bench"},
      "annotations": {"fairbench.dev/notes": "target drogon: Guaranteed QoS"},
      "finalizers": ["fairbench.dev/records"],
      "ownerReferences": [{"apiVersion": "fairbench.dev/v1alpha1", "kind": "BenchmarkRun", "name": "bench",
                           "uid": "0b6f7d2e-1111-4222-8333-944455556666", "controller": true,
                           "blockOwnerDeletion": true}]
    },
    "spec": {
      "nodeName": "node-target-1",
      "terminationGracePeriodSeconds": 5,
      "automountServiceAccountToken": false,
      "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
      "containers": [{
        "name": "target", "image": "example.org/fairbench/drogon:1.9.8",
        "args": ["--port", "8080"],
        "env": [{"name": "THREADS", "value": "4"},
                {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        "ports": [{"name": "http", "containerPort": 8080}],
        "resources": {"requests": {"cpu": "4", "memory": "1Gi"}, "limits": {"cpu": "4", "memory": "1Gi"}},
        "readinessProbe": {"httpGet": {"path": "/health", "port": 8080}, "periodSeconds": 1},
        "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}
      }]
    }
  })");
  const json by_kubectl = KubectlDryRun({"-f", File("pod.json", pod)});
  auto parsed = Pod::FromJson(pod);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  auto typed = PodClient(*client_).Create(*parsed, DryRun());
  ASSERT_TRUE(typed.ok()) << typed.error().ToString();
  auto kubectls = Pod::FromJson(by_kubectl);
  ASSERT_TRUE(kubectls.ok()) << kubectls.status().ToString();
  EXPECT_EQ(Comparable(typed->ToJson()), Comparable(kubectls->ToJson()));
  // The whole answer, status and managedFields included.
  auto raw = client_->Create(resources::Pods(), ns(), parsed->ToJson(), DryRun());
  ASSERT_TRUE(raw.ok()) << raw.error().ToString();
  EXPECT_EQ(Comparable(*raw), Comparable(by_kubectl));
  EXPECT_EQ(typed->metadata.owner_references.size(), 1u);
  EXPECT_TRUE(typed->metadata.owner_references[0].controller);
  EXPECT_TRUE(typed->metadata.owner_references[0].block_owner_deletion);
  EXPECT_EQ(typed->status.phase, "Pending");
  EXPECT_EQ(typed->status.qos_class, "Guaranteed");
}

// Catches: a Lease's MicroTimes written with less than microseconds (the
// leader's renewTime would compare older than what others read), or
// holderIdentity, leaseDurationSeconds or leaseTransitions written under
// another name or type (the leader election of client-go reads them).
TEST_F(TypedClients, LeaseIsSentAsKubectlSendsIt) {
  const json lease = json::parse(R"({
    "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
    "metadata": {"name": "fairbench-controller", "namespace": ")" +
                                 ns() + R"(",
                 "labels": {"app.kubernetes.io/name": "fairbench"}},
    "spec": {"holderIdentity": "fairbench-controller-7d9f_4b1c", "leaseDurationSeconds": 15,
             "acquireTime": "2025-03-01T10:00:00.123456Z", "renewTime": "2025-03-01T10:00:02.654321Z",
             "leaseTransitions": 3}
  })");
  const json by_kubectl = KubectlDryRun({"-f", File("lease.json", lease)});
  EXPECT_EQ(by_kubectl["spec"]["renewTime"], "2025-03-01T10:00:02.654321Z") << by_kubectl.dump(2);
  auto parsed = Lease::FromJson(lease);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  auto raw = client_->Create(resources::Leases(), ns(), parsed->ToJson(), DryRun());
  ASSERT_TRUE(raw.ok()) << raw.error().ToString();
  EXPECT_EQ(Comparable(*raw), Comparable(by_kubectl));
  auto typed = LeaseClient(*client_).Create(*parsed, DryRun());
  ASSERT_TRUE(typed.ok()) << typed.error().ToString();
  EXPECT_EQ(typed->spec.renew_time, parsed->spec.renew_time);
  EXPECT_EQ(typed->spec.lease_transitions, 3);
}

// Catches: an Event's involvedObject, source, count, timestamps or
// reporting fields written other than Go writes them (what kubectl
// describe and get events read).
TEST_F(TypedClients, EventIsSentAsKubectlSendsIt) {
  const json event = json::parse(R"({
    "apiVersion": "v1", "kind": "Event",
    "metadata": {"name": "bench.17f0c2a1b2c3d4e5", "namespace": ")" +
                                 ns() + R"("},
    "involvedObject": {"apiVersion": "fairbench.dev/v1alpha1", "kind": "BenchmarkRun", "name": "bench",
                       "namespace": ")" +
                                 ns() + R"(", "uid": "0b6f7d2e-1111-4222-8333-944455556666",
                       "resourceVersion": "42"},
    "reason": "TargetDeployed", "message": "drogon is ready", "type": "Normal",
    "source": {"component": "fairbench-controller", "host": "node-1"},
    "firstTimestamp": "2025-03-01T10:00:00Z", "lastTimestamp": "2025-03-01T10:05:00Z", "count": 4,
    "reportingComponent": "fairbench-controller", "reportingInstance": "fairbench-controller-7d9f"
  })");
  const json by_kubectl = KubectlDryRun({"-f", File("event.json", event)});
  auto parsed = Event::FromJson(event);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  auto raw = client_->Create(resources::Events(), ns(), parsed->ToJson(), DryRun());
  ASSERT_TRUE(raw.ok()) << raw.error().ToString();
  EXPECT_EQ(Comparable(*raw), Comparable(by_kubectl));
  auto typed = EventClient(*client_).Create(*parsed, DryRun());
  ASSERT_TRUE(typed.ok()) << typed.error().ToString();
  EXPECT_EQ(typed->count, 4);
  EXPECT_EQ(typed->involved_object.kind, "BenchmarkRun");
}

// Catches: a Service's metadata or spec changed on its way through the
// typed client (Service::FromJson/ToJson), e.g. the named targetPort that
// kubectl's generator writes as a string turned into something else.
TEST_F(TypedClients, ServiceFromTheGeneratorAndTheTypedClientAreOneObject) {
  const json by_kubectl = KubectlDryRun({"service", "clusterip", "svc1", "--tcp=80:8080", "--tcp=443:https"});
  EXPECT_EQ(by_kubectl["spec"]["ports"][1]["targetPort"], "https") << by_kubectl.dump(2);
  EXPECT_FALSE(by_kubectl["spec"].value("clusterIP", "").empty()) << by_kubectl.dump(2);
  Service svc;
  svc.metadata.name = "svc1";
  svc.metadata.namespace_ = ns();
  svc.metadata.labels = {{"app", "svc1"}};
  svc.spec = json::parse(R"({"type": "ClusterIP", "selector": {"app": "svc1"}, "ports": [
      {"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080},
      {"name": "443-https", "protocol": "TCP", "port": 443, "targetPort": "https"}]})");
  auto raw = client_->Create(resources::Services(), ns(), svc.ToJson(), DryRun());
  ASSERT_TRUE(raw.ok()) << raw.error().ToString();
  EXPECT_EQ(Comparable(*raw), Comparable(by_kubectl));
  auto typed = ServiceClient(*client_).Create(svc, DryRun());
  ASSERT_TRUE(typed.ok()) << typed.error().ToString();
  EXPECT_FALSE(typed->ClusterIP().empty());
  // A dry run allocates no address: the Service is nowhere.
  EXPECT_EQ(client_->Get(resources::Services(), ns(), "svc1").reason(), Reason::kNotFound);
}

// helm runs as the cluster's administrator, the release in the test's
// namespace. The chart's CRD is left out (crds.enabled=false): it is
// cluster-scoped, the same name in every release, and Helm refuses to take
// over an object another release (or kubectl) made.
class Helm : public Kubectl {
 protected:
  void SetUp() override {
    Kubectl::SetUp();
    if (HasFatalFailure()) return;
    helm_ = cluster_->bin_dir() + "/helm";
    ASSERT_TRUE(std::filesystem::exists(helm_)) << helm_;
  }
  void TearDown() override {
    // The chart's cluster-scoped objects outlive the namespace: gone even
    // if the test stopped before its uninstall.
    for (const std::string& object : cluster_scoped_) {
      (void)fairbench::testing::AdminKubectl(*cluster_, {"delete", object, "--ignore-not-found", "--wait=false"});
    }
    Kubectl::TearDown();
  }
  CommandResult Helm3(std::vector<std::string> args) {
    args.insert(args.end(), {"--kubeconfig", kubeconfig_, "--namespace", ns()});
    return RunTool(helm_, std::move(args));
  }
  std::vector<std::string> Chart(const char* verb, const std::string& tag) const {
    // The values docs/local-cluster.md's test-cluster steps use.
    return {verb,
            "fairbench",
            std::string(FAIRBENCH_SOURCE_DIR) + "/charts/fairbench",
            "--set",
            "image.registry=fairbench.test",
            "--set",
            "image.tag=" + tag,
            "--set",
            "controller.listenAddress=$(POD_IP)",
            "--set",
            "crds.enabled=false"};
  }
  // kind/namespace/name of each object `helm template` renders.
  std::vector<std::tuple<std::string, std::string, std::string>> Rendered(const std::string& tag) {
    auto r = Helm3(Chart("template", tag));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::tuple<std::string, std::string, std::string>> objects;
    size_t start = 0;
    while (start < r.out.size()) {
      size_t end = r.out.find("\n---", start);
      if (end == std::string::npos) end = r.out.size();
      auto doc = kubetest::YamlToJson(r.out.substr(start, end - start));
      if (doc.ok() && doc->is_object() && doc->contains("kind")) {
        const json& md = (*doc)["metadata"];
        const std::string kind = (*doc)["kind"].get<std::string>();
        objects.emplace_back(kind, md.value("namespace", ""), md["name"].get<std::string>());
        if (kind == "ClusterRole" || kind == "ClusterRoleBinding") {
          cluster_scoped_.push_back((kind == "ClusterRole" ? "clusterrole.rbac.authorization.k8s.io/"
                                                           : "clusterrolebinding.rbac.authorization.k8s.io/") +
                                    md["name"].get<std::string>());
        }
      }
      start = end + 4;
    }
    return objects;
  }
  Result<Json> GetRendered(const std::string& kind, const std::string& ns, const std::string& name) {
    static const std::map<std::string, ResourceType> kTypes = {
        {"ServiceAccount", kServiceAccounts},
        {"Secret", kSecrets},
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
    auto got =
        client_->Get(it->second, it->second.scope == Scope::kCluster ? "" : (ns.empty() ? this->ns() : ns), name);
    if (!got.ok()) return Status::NotFound(got.error().ToString());
    return *got;
  }

  std::string helm_;
  std::vector<std::string> cluster_scoped_;  // kind/name, for TearDown
};

// Catches: a chart object the real server refuses on install or on upgrade
// (validation, an immutable field such as a Deployment's selector changed
// by the upgrade, RBAC that cannot be bound, a pod template the restricted
// namespace refuses outright), the release Secrets helm list and get values
// read back, any object of the chart not created or not removed by the
// uninstall, cluster-scoped names that are not per release namespace, and
// the agents' token Secret losing helm.sh/resource-policy: keep.
TEST_F(Helm, InstallListUpgradeUninstallTheChart) {
  Ok({"label", "namespace", ns(), "pod-security.kubernetes.io/enforce=restricted"});
  const auto objects = Rendered("test");
  ASSERT_GE(objects.size(), 8u);
  auto installed = Helm3(Chart("install", "test"));
  ASSERT_EQ(installed.exit_code, 0) << installed.out << installed.err;
  EXPECT_NE(installed.out.find("STATUS: deployed"), std::string::npos) << installed.out;
  // The restricted namespace accepts the Deployment without a warning about
  // its pods (the API server warns when a workload's pod template would be
  // refused).
  EXPECT_EQ(installed.err.find("would violate PodSecurity"), std::string::npos) << installed.err;

  auto release = client_->Get(kSecrets, ns(), "sh.helm.release.v1.fairbench.v1");
  ASSERT_TRUE(release.ok()) << release.error().ToString();
  EXPECT_EQ((*release)["type"], "helm.sh/release.v1");
  const json& labels = (*release)["metadata"]["labels"];
  EXPECT_EQ(labels.value("name", ""), "fairbench");
  EXPECT_EQ(labels.value("owner", ""), "helm");
  EXPECT_EQ(labels.value("status", ""), "deployed");
  EXPECT_EQ(labels.value("version", ""), "1");
  for (const auto& [kind, object_ns, name] : objects) {
    EXPECT_NE(kind, "CustomResourceDefinition");
    if (kind == "ClusterRole" || kind == "ClusterRoleBinding") {
      EXPECT_NE(name.find(ns()), std::string::npos) << kind << " " << name;
    }
    auto got = GetRendered(kind, object_ns, name);
    EXPECT_TRUE(got.ok()) << kind << " " << object_ns << "/" << name << ": " << got.status().message();
  }

  auto listed = Helm3({"list", "-o", "json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const json list = json::parse(listed.out, nullptr, false);
  ASSERT_TRUE(list.is_array() && list.size() == 1) << listed.out;
  EXPECT_EQ(list[0]["name"], "fairbench");
  EXPECT_EQ(list[0]["namespace"], ns());
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
  auto deployment = client_->Get(ResourceType{"apps", "v1", "Deployment", "deployments"}, ns(), "fairbench-controller");
  ASSERT_TRUE(deployment.ok()) << deployment.error().ToString();
  EXPECT_EQ((*deployment)["spec"]["template"]["spec"]["containers"][0]["image"],
            "fairbench.test/fairbench-controller:test2");

  auto uninstalled = Helm3({"uninstall", "fairbench"});
  ASSERT_EQ(uninstalled.exit_code, 0) << uninstalled.out << uninstalled.err;
  EXPECT_NE(uninstalled.out.find("release \"fairbench\" uninstalled"), std::string::npos) << uninstalled.out;
  for (const auto& [kind, object_ns, name] : objects) {
    // The chart keeps the agents' token Secret (helm.sh/resource-policy: keep).
    const bool kept = kind == "Secret" && name == "fairbench-agent-token";
    if (kept) {
      EXPECT_TRUE(GetRendered(kind, object_ns, name).ok()) << kind << " " << object_ns << "/" << name;
      continue;
    }
    // Helm deletes in the background: a Deployment with a foreground
    // finalizer, say, may take a moment to go.
    // Named captures: clang 14 cannot capture structured bindings.
    EXPECT_TRUE(
        testenv::Eventually([&, &k = kind, &o = object_ns, &n = name] { return !GetRendered(k, o, n).ok(); }, 20s))
        << kind << " " << object_ns << "/" << name;
  }
  ListOptions helm_owned;
  helm_owned.label_selector = "owner=helm";
  auto releases = client_->List(kSecrets, ns(), helm_owned);
  ASSERT_TRUE(releases.ok());
  EXPECT_TRUE(releases->items.empty()) << releases->items.size();
  auto after = Helm3({"list", "-o", "json"});
  EXPECT_EQ(json::parse(after.out, nullptr, false), json::array()) << after.out << after.err;
}

}  // namespace
}  // namespace fairbench::kube
