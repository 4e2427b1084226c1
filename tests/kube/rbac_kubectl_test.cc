// RBAC in the test API server, seen as users see it: real kubectl over
// HTTPS against a server started with --authorization-mode RBAC semantics
// (TestApiServerOptions::api.authorization), a service account's token
// (kubectl) and the administrator's client certificate (group
// system:masters). A forbidden get answers 403 with the real server's
// message; `kubectl auth can-i` (a SelfSubjectAccessReview) says no; after
// the administrator applies a Role and a RoleBinding the same requests
// succeed, and what the Role does not grant stays refused.
//
// Catches: the authorizer not wired into the HTTP path, the token's user
// or the certificate's groups not reaching it, the default policy missing
// (kubectl's discovery refused), SelfSubjectAccessReview absent or wrong,
// RBAC objects written through the API not read back.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "controller/kube/exec_credential.h"
#include "tests/kube/kube_test_env.h"
#include "testing/support/bin_dir.h"

namespace fairbench::kube {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr char kSaUser[] = "system:serviceaccount:default:fairbench-controller";

class RbacKubectl : public testenv::KubeTest {
 protected:
  void SetUp() override {
    kubectl_ = fairbench::testing::FindTool("kubectl");
    ASSERT_FALSE(kubectl_.empty()) << "kubectl not found on PATH nor in " << FAIRBENCH_SOURCE_DIR
                                   << "/.tools/bin: run scripts/setup --with-tools";
    apiserver::TestApiServerOptions o;
    o.tls = true;
    o.tokens = {{"controller-token", kSaUser}};
    o.api.authorization = apiserver::AuthorizationMode::kRbac;
    Start(o);
    char tmpl[] = "/tmp/fairbench-rbac-XXXXXX";
    dir_ = mkdtemp(tmpl);
    admin_ = dir_ + "/admin.kubeconfig";
    controller_ = dir_ + "/controller.kubeconfig";
    ASSERT_TRUE(server_->WriteKubeconfig(admin_).ok());
    ASSERT_TRUE(server_->WriteKubeconfig(controller_, "controller-token").ok());
  }
  void TearDown() override {
    KubeTest::TearDown();
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  CommandResult Run(const std::string& kubeconfig, std::vector<std::string> args) {
    // A private HOME and cache per identity: no discovery cached across them.
    args.insert(args.begin(), {"--kubeconfig", kubeconfig, "--cache-dir", kubeconfig + ".cache"});
    auto r = RunCommand(kubectl_, args, {{"HOME", dir_}, {"KUBECONFIG", ""}}, 60s);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : CommandResult{};
  }
  std::string CanI(std::vector<std::string> args) {
    args.insert(args.begin(), {"auth", "can-i"});
    auto r = Run(controller_, args);
    std::string out = r.out;
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    // kubectl exits 1 for "no", 0 for "yes".
    EXPECT_EQ(r.exit_code, out == "yes" ? 0 : 1) << r.out << r.err;
    return out;
  }
  void WriteFile(const std::string& path, const std::string& text) {
    std::ofstream f(path);
    f << text;
  }

  std::string kubectl_;
  std::string dir_;
  std::string admin_;
  std::string controller_;
};

TEST_F(RbacKubectl, ForbiddenUntilARoleBindingGrantsItThenAllowed) {
  const std::string forbidden =
      "pods \"x\" is forbidden: User \"system:serviceaccount:default:fairbench-controller\" cannot get resource "
      "\"pods\" in API group \"\" in the namespace \"default\"";

  // The administrator creates the pod; the service account may not read it.
  WriteFile(dir_ + "/pod.yaml", R"(apiVersion: v1
kind: Pod
metadata: {name: x, namespace: default}
spec:
  containers: [{name: c, image: busybox}]
)");
  auto created = Run(admin_, {"apply", "-f", dir_ + "/pod.yaml"});
  ASSERT_EQ(created.exit_code, 0) << created.out << created.err;

  auto get = Run(controller_, {"get", "pod", "x", "-o", "name"});
  EXPECT_NE(get.exit_code, 0);
  EXPECT_NE(get.err.find("Error from server (Forbidden): " + forbidden), std::string::npos) << get.err;
  EXPECT_EQ(CanI({"get", "pods"}), "no");
  EXPECT_EQ(CanI({"get", "pods", "--subresource=log"}), "no");

  // The 403 itself: the Status a client library reads.
  auto cfg = LoadKubeconfig({{controller_}, "", nullptr});
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  auto client = Client::Create(*cfg, testenv::FastRetries());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto refused = (*client)->Get(resources::Pods(), "default", "x");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().http_code, 403);
  EXPECT_EQ(refused.error().status_reason, "Forbidden");
  EXPECT_EQ(refused.error().message, forbidden);

  // The administrator (system:masters) may do anything, and can-i says so.
  auto admin_can = Run(admin_, {"auth", "can-i", "delete", "nodes"});
  EXPECT_EQ(admin_can.exit_code, 0) << admin_can.out << admin_can.err;
  EXPECT_EQ(admin_can.out, "yes\n");

  WriteFile(dir_ + "/rbac.yaml", R"(apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: pod-reader
  namespace: default
rules:
- apiGroups: [""]
  resources: ["pods", "pods/log"]
  verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: fairbench-controller-reads-pods
  namespace: default
subjects:
- kind: ServiceAccount
  name: fairbench-controller
  namespace: default
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: pod-reader
)");
  auto applied = Run(admin_, {"apply", "-f", dir_ + "/rbac.yaml"});
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
  EXPECT_NE(applied.out.find("role.rbac.authorization.k8s.io/pod-reader created"), std::string::npos) << applied.out;
  EXPECT_NE(applied.out.find("rolebinding.rbac.authorization.k8s.io/fairbench-controller-reads-pods created"),
            std::string::npos)
      << applied.out;

  auto allowed = Run(controller_, {"get", "pod", "x", "-o", "name"});
  EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
  EXPECT_EQ(allowed.out, "pod/x\n");
  EXPECT_EQ(CanI({"get", "pods"}), "yes");
  EXPECT_EQ(CanI({"get", "pods", "--subresource=log"}), "yes");
  // What the Role does not grant stays refused: list, other namespaces.
  EXPECT_EQ(CanI({"list", "pods"}), "no");
  EXPECT_EQ(CanI({"get", "pods", "-n", "kube-system"}), "no");
  auto list = Run(controller_, {"get", "pods"});
  EXPECT_NE(list.exit_code, 0);
  EXPECT_NE(list.err.find("pods is forbidden: User \"system:serviceaccount:default:fairbench-controller\" cannot "
                          "list resource \"pods\" in API group \"\" in the namespace \"default\""),
            std::string::npos)
      << list.err;
}

}  // namespace
}  // namespace fairbench::kube
