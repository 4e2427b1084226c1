// Secret, ConfigMap, downward-API and projected volumes on a real test
// kubelet: what the pod's own program reads at the mount paths (its log),
// the token checked by kube-apiserver itself (a TokenReview), and a pod
// waiting for a Secret that does not exist yet, as the API shows it.
#include "tests/containers/docker_env.h"
#include "tests/kubelet/kubelet_test_env.h"

namespace fairbench::kubelet::testenv {
namespace {

class VolumeTest : public KubeletTest {
 protected:
  void SetUp() override {
    KubeletTest::SetUp();
    if (HasFatalFailure()) return;
    // A TokenRequest needs the namespace's ServiceAccount, which its
    // controller makes a moment after the namespace.
    ASSERT_TRUE(Eventually(
        [&] {
          return client_
              ->Get({"", "v1", "ServiceAccount", "serviceaccounts", kube::Scope::kNamespaced}, ns(), "default")
              .ok();
        },
        20s))
        << "no ServiceAccount default in " << ns();
  }
  void Objects() {
    Apply(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\ndata: {user: YWRtaW4=, pass: czNjcjN0}\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {greeting: hello}\n");
  }
  // A pod whose volumes are every kind, and whose program prints what it
  // reads there (`image`, `command` and `node` as given).
  std::string VolumesPod(const std::string& image, const std::string& command_key) {
    return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: volumes\n  labels: {app: vol, tier: x}\n"
           "  annotations: {note: 'say \"hi\"'}\nspec:\n  nodeName: " +
           node_ +
           "\n  terminationGracePeriodSeconds: 1\n  volumes:\n"
           "  - {name: s, secret: {secretName: creds, defaultMode: 256, items: [{key: user, path: u/name}]}}\n"
           "  - {name: c, configMap: {name: settings}}\n"
           "  - name: p\n    projected:\n      sources:\n"
           "      - secret: {name: creds, items: [{key: pass, path: pass}]}\n"
           "      - configMap: {name: settings}\n"
           "      - serviceAccountToken: {audience: fairbench-test, expirationSeconds: 3600, path: token}\n"
           "      - downwardAPI:\n          items:\n"
           "          - {path: name, fieldRef: {fieldPath: metadata.name}}\n"
           "          - {path: ns, fieldRef: {fieldPath: metadata.namespace}}\n"
           "          - {path: labels, fieldRef: {fieldPath: metadata.labels}}\n"
           "          - {path: note, fieldRef: {fieldPath: \"metadata.annotations['note']\"}}\n"
           "  containers:\n  - name: main\n    image: " +
           image + "\n    " + command_key +
           ": ['cat /etc/s/u/name; echo; stat -c %a /etc/s/u/name; cat /etc/c/greeting; echo; "
           "cat /etc/p/pass; echo; cat /etc/p/greeting; echo; cat /etc/p/name; echo; cat /etc/p/ns; echo; "
           "cat /etc/p/labels; echo; cat /etc/p/note; echo; cat /etc/p/token; echo; exec sleep 600']\n"
           "    volumeMounts:\n    - {name: s, mountPath: /etc/s}\n    - {name: c, mountPath: /etc/c}\n"
           "    - {name: p, mountPath: /etc/p}\n";
  }
  // Checks what the pod printed; the token through a TokenReview.
  void CheckPrinted(const std::string& pod) {
    std::string log;
    ASSERT_TRUE(Eventually(
        [&] {
          auto r = Kubectl({"logs", pod});
          log = r.out;
          return r.exit_code == 0 && std::count(log.begin(), log.end(), '\n') >= 11;
        },
        30s))
        << log << ReadFile(dir_->File("kubelet.err")) << Pod(pod).value_or(Json()).dump()
        << KubectlOk({"get", "events"});
    std::istringstream in(log);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    ASSERT_GE(lines.size(), 11u) << log;
    EXPECT_EQ(lines[0], "admin");
    EXPECT_EQ(lines[1], "400") << "defaultMode 0400 not given";
    EXPECT_EQ(lines[2], "hello");
    EXPECT_EQ(lines[3], "s3cr3t");
    EXPECT_EQ(lines[4], "hello");
    EXPECT_EQ(lines[5], pod);
    EXPECT_EQ(lines[6], ns());
    EXPECT_EQ(lines[7], "app=\"vol\"");
    EXPECT_EQ(lines[8], "tier=\"x\"");
    EXPECT_EQ(lines[9], "say \"hi\"");
    // The token: kube-apiserver says whose it is, for that audience.
    const Json review = {{"apiVersion", "authentication.k8s.io/v1"},
                         {"kind", "TokenReview"},
                         {"spec", {{"token", lines[10]}, {"audiences", {"fairbench-test"}}}}};
    auto r = client_->Create({"authentication.k8s.io", "v1", "TokenReview", "tokenreviews", kube::Scope::kCluster}, "",
                             review);
    ASSERT_TRUE(r.ok()) << r.error().ToString();
    const Json status = (*r)["status"];
    EXPECT_TRUE(status.value("authenticated", false)) << status.dump();
    EXPECT_EQ(status["user"].value("username", ""), "system:serviceaccount:" + ns() + ":default") << status.dump();
    EXPECT_EQ(status["user"]["extra"]["authentication.kubernetes.io/pod-name"][0], pod) << status.dump();
  }
};

// Catches: secret, configMap or projected volumes not set up in process
// mode (their files absent, or the mount path left in the program's
// command line), `items` paths or `defaultMode` ignored, a projected
// source left out (secret, configMap, serviceAccountToken with its
// audience, downwardAPI name/namespace/labels/annotations), labels not in
// the kubelet's `key="value"` format.
TEST_F(VolumeTest, SecretConfigMapAndProjectedVolumesOfAProcess) {
  StartKubelet();
  Objects();
  Apply(VolumesPod("example.org/sh:1", "args"));
  CheckPrinted("volumes");
}

// Catches: a missing Secret failing the container (CreateContainerConfigError)
// or starting it without the volume, where a kubelet keeps the pod
// ContainerCreating with a FailedMount Event until the Secret exists.
TEST_F(VolumeTest, MissingSecretWaitsInContainerCreatingUntilItExists) {
  StartKubelet();
  Apply(
      "apiVersion: v1\nkind: Pod\nmetadata: {name: waits}\nspec:\n  nodeName: " + node_ +
      "\n  terminationGracePeriodSeconds: 1\n  volumes: [{name: s, secret: {secretName: later}}]\n"
      "  containers:\n  - name: main\n    image: example.org/sh:1\n"
      "    args: ['cat /etc/later/key; echo; exec sleep 600']\n    volumeMounts: [{name: s, mountPath: /etc/later}]\n");
  kube::ListOptions o;
  o.field_selector = "involvedObject.name=waits";
  std::string message;
  ASSERT_TRUE(Eventually([&] {
    auto events = client_->List(kube::resources::Events(), ns(), o);
    for (const Json& e : events.ok() ? events->items : std::vector<Json>{}) {
      if (e.value("reason", "") == "FailedMount") message = e.value("message", "");
    }
    return !message.empty();
  })) << "no FailedMount Event";
  EXPECT_EQ(message, "MountVolume.SetUp failed for volume \"s\" : secret \"later\" not found");
  Json pod = *Pod("waits");
  EXPECT_EQ(Phase(pod), "Pending");
  EXPECT_EQ(pod["status"]["containerStatuses"][0]["state"]["waiting"]["reason"], "ContainerCreating");
  Apply("apiVersion: v1\nkind: Secret\nmetadata: {name: later}\nstringData: {key: arrived}\n");
  WaitPod("waits", [](const Json& p) { return Phase(p) == "Running"; });
  EXPECT_TRUE(Eventually([&] { return Kubectl({"logs", "waits"}).out == "arrived\n"; }));
}

// Catches: projected volumes (and so the service-account volume the
// cluster's admission adds to every pod) not set up for containers of the
// engine, or not bind-mounted at their mount paths.
TEST_F(VolumeTest, ProjectedVolumesOfAContainer) {
  if (containers::DockerHost().empty()) GTEST_SKIP() << "no Docker engine answers (scripts/docker-engine start)";
  const std::string image = containers::Image("fairbench-target-grpc");
  if (containers::Inspect(image).is_null()) GTEST_SKIP() << image << " not built (ctest -L containers builds it)";
  node_ = "volumes-" + std::to_string(getpid());
  StartKubelet({"--container-runtime", "docker", "--docker-host", containers::DockerHost()});
  Objects();
  std::string pod = VolumesPod(image, "command");
  const std::string cmd = "command: ['";
  pod.replace(pod.find(cmd), cmd.size(), "command: [/bin/sh, -c, '");
  // The image's user could not read the 0400 file, as on any kubelet.
  const std::string containers = "  containers:\n";
  pod.replace(pod.find(containers), containers.size(), "  securityContext: {runAsUser: 0}\n" + containers);
  Apply(pod);
  CheckPrinted("volumes");
}

}  // namespace
}  // namespace fairbench::kubelet::testenv
