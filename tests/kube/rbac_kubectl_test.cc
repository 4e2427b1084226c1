// Real RBAC, seen as users see it: the real kubectl and fairbench's client
// against the shared cluster's kube-apiserver (authorization Node,RBAC) as
// a ServiceAccount of the test's namespace, with a bearer token the
// TokenRequest API issued (`kubectl create token`), beside the
// administrator's client certificate (group system:masters). A forbidden
// get answers 403 with the real server's message; `kubectl auth can-i` (a
// SelfSubjectAccessReview) says no; after the administrator applies a Role
// and a RoleBinding the same requests succeed, and what the Role does not
// grant stays refused.
//
// Catches: the client not sending a kubeconfig's bearer token (the server
// would answer 401 for an anonymous request, or the admin's rights would
// leak in), a 403 Status not read into the error (code, reason, the
// server's message), and the client not picking up a grant at once (no
// caching of a refusal).
#include <filesystem>

#include "tests/kube/kubectl_env.h"

namespace fairbench::kube {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class RbacKubectl : public testenv::KubeTest {
 protected:
  void SetUp() override {
    KubeTest::SetUp();
    if (HasFatalFailure()) return;
    kubectl_ = cluster_->kubectl();
    char tmpl[] = "/tmp/fairbench-rbac-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    sa_user_ = "system:serviceaccount:" + ns() + ":fairbench-controller";
    auto sa =
        fairbench::testing::AdminKubectl(*cluster_, {"-n", ns(), "create", "serviceaccount", "fairbench-controller"});
    ASSERT_TRUE(sa.ok()) << sa.status().ToString();
    auto token = fairbench::testing::AdminKubectl(
        *cluster_, {"-n", ns(), "create", "token", "fairbench-controller", "--duration=10m"});
    ASSERT_TRUE(token.ok()) << token.status().ToString();
    std::string t = *token;
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
    ASSERT_FALSE(t.empty());
    // The ServiceAccount admission refuses the namespace's pods until
    // kube-controller-manager has made its "default" ServiceAccount.
    ASSERT_TRUE(testenv::Eventually(
        [&] {
          return client_->Get(ResourceType{"", "v1", "ServiceAccount", "serviceaccounts"}, ns(), "default").ok();
        },
        20s));
    admin_ = dir_ + "/admin.kubeconfig";
    controller_ = dir_ + "/controller.kubeconfig";
    ASSERT_TRUE(WriteTextFile(admin_, fairbench::testing::KubeconfigFor(*cluster_, ns())));
    ASSERT_TRUE(WriteTextFile(controller_, fairbench::testing::KubeconfigFor(*cluster_, ns(), t)));
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

  std::string kubectl_;
  std::string dir_;
  std::string sa_user_;
  std::string admin_;
  std::string controller_;
};

TEST_F(RbacKubectl, ForbiddenUntilARoleBindingGrantsItThenAllowed) {
  const std::string forbidden = "pods \"x\" is forbidden: User \"" + sa_user_ +
                                "\" cannot get resource \"pods\" in API group \"\" in the namespace \"" + ns() + "\"";

  // The administrator creates the pod; the service account may not read it.
  ASSERT_TRUE(WriteTextFile(dir_ + "/pod.yaml", R"(apiVersion: v1
kind: Pod
metadata: {name: x}
spec:
  containers: [{name: c, image: busybox}]
)"));
  auto created = Run(admin_, {"apply", "-f", dir_ + "/pod.yaml"});
  ASSERT_EQ(created.exit_code, 0) << created.out << created.err;
  EXPECT_EQ(created.out, "pod/x created\n");

  auto get = Run(controller_, {"get", "pod", "x", "-o", "name"});
  EXPECT_NE(get.exit_code, 0);
  EXPECT_EQ(get.err, "Error from server (Forbidden): " + forbidden + "\n");
  EXPECT_EQ(CanI({"get", "pods"}), "no");
  EXPECT_EQ(CanI({"get", "pods", "--subresource=log"}), "no");
  auto whoami = Run(controller_, {"auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"});
  EXPECT_EQ(whoami.exit_code, 0) << whoami.err;
  EXPECT_EQ(whoami.out, sa_user_);

  // The 403 itself: the Status the client reads, with the same token.
  auto cfg = LoadKubeconfig({{controller_}, "", nullptr});
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  auto client = Client::Create(*cfg, testenv::FastRetries());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto refused = (*client)->Get(resources::Pods(), ns(), "x");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.reason(), Reason::kForbidden);
  EXPECT_EQ(refused.error().http_code, 403);
  EXPECT_EQ(refused.error().status_reason, "Forbidden");
  EXPECT_EQ(refused.error().message, forbidden);

  // The administrator (system:masters) may do anything, and can-i says so.
  auto admin_can = Run(admin_, {"auth", "can-i", "delete", "nodes"});
  EXPECT_EQ(admin_can.exit_code, 0) << admin_can.out << admin_can.err;
  EXPECT_EQ(admin_can.out, "yes\n");

  ASSERT_TRUE(WriteTextFile(dir_ + "/rbac.yaml", R"(apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: pod-reader
rules:
- apiGroups: [""]
  resources: ["pods", "pods/log"]
  verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: fairbench-controller-reads-pods
subjects:
- kind: ServiceAccount
  name: fairbench-controller
  namespace: )" + ns() + R"(
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: pod-reader
)"));
  auto applied = Run(admin_, {"apply", "-f", dir_ + "/rbac.yaml"});
  ASSERT_EQ(applied.exit_code, 0) << applied.out << applied.err;
  EXPECT_EQ(applied.out,
            "role.rbac.authorization.k8s.io/pod-reader created\n"
            "rolebinding.rbac.authorization.k8s.io/fairbench-controller-reads-pods created\n");

  // The RBAC authorizer reads Roles from its informers: a grant takes
  // effect within moments, not at once.
  ASSERT_TRUE(testenv::Eventually([&] { return (*client)->Get(resources::Pods(), ns(), "x").ok(); }, 10s));
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
  EXPECT_EQ(list.err, "Error from server (Forbidden): pods is forbidden: User \"" + sa_user_ +
                          "\" cannot list resource \"pods\" in API group \"\" in the namespace \"" + ns() + "\"\n");
  auto listed = (*client)->List(resources::Pods(), ns());
  ASSERT_FALSE(listed.ok());
  EXPECT_EQ(listed.reason(), Reason::kForbidden);
  EXPECT_EQ(listed.error().message, "pods is forbidden: User \"" + sa_user_ +
                                        "\" cannot list resource \"pods\" in API group \"\" in the namespace \"" +
                                        ns() + "\"");
}

// Catches: the client sending no credentials, or the wrong ones, when the
// kubeconfig's token is not (any more) good: the real server answers 401
// for a token it cannot verify, and the client must report it as
// Unauthorized, not retry it as a transient error or read it as a 403.
TEST_F(RbacKubectl, ABadTokenIsUnauthorized) {
  const std::string bad = dir_ + "/bad.kubeconfig";
  ASSERT_TRUE(WriteTextFile(bad, fairbench::testing::KubeconfigFor(*cluster_, ns(), "not-a-token")));
  auto get = Run(bad, {"get", "configmaps"});
  EXPECT_NE(get.exit_code, 0);
  const std::string said =
      "error: You must be logged in to the server (the server has asked for the client to "
      "provide credentials)\n";
  ASSERT_GE(get.err.size(), said.size()) << get.err;
  EXPECT_EQ(get.err.substr(get.err.size() - said.size()), said) << get.err;
  auto cfg = LoadKubeconfig({{bad}, "", nullptr});
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  auto client = Client::Create(*cfg, testenv::FastRetries());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto refused = (*client)->List(resources::ConfigMaps(), ns());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.reason(), Reason::kUnauthorized) << refused.error().ToString();
  EXPECT_EQ(refused.error().http_code, 401);
  EXPECT_EQ(refused.error().message, "Unauthorized");
}

}  // namespace
}  // namespace fairbench::kube
