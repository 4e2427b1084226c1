// The pod templates against Kubernetes' own Pod Security admission: each
// pod the operator makes, created with a server-side dry run (dryRun=All:
// admitted and validated, never stored) in a namespace of the shared cluster
// labelled pod-security.kubernetes.io/enforce=restricted. A pod that breaks
// the restricted standard is refused there with 403 and the server's words,
// which name each check it fails; the templates' restricted fields are
// taken out one at a time to show which of them the standard needs.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "controller/kube/client.h"
#include "controller/kube/kubeconfig.h"
#include "controller/platform/kubernetes/pod_templates.h"
#include "controller/platform/kubernetes/pod_templates_test_params.h"
#include "testing/support/kube_cluster.h"

namespace fairbench::controller::k8s {
namespace {

using Json = nlohmann::json;
using namespace std::chrono_literals;

class PodSecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cluster = fairbench::testing::SharedKubeCluster();
    ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
    cluster_ = *cluster;
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    auto ns = fairbench::testing::TestNamespace::Create(*cluster_, info != nullptr ? info->name() : "podsecurity",
                                                        {{"pod-security.kubernetes.io/enforce", "restricted"}});
    ASSERT_TRUE(ns.ok()) << ns.status().ToString();
    ns_.emplace(std::move(*ns));
    auto cfg = kube::LoadKubeconfig({{cluster_->admin_kubeconfig()}, "", nullptr});
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    auto client = kube::Client::Create(*cfg);
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(*client);
  }
  void TearDown() override {
    client_.reset();
    ns_.reset();
  }

  const std::string& ns() const { return ns_->name(); }

  RunIdentity Run() const { return RunIdentity{"cpp-frameworks", ns(), "0b6f7d2e-1111-4222-8333-944455556666"}; }

  TargetPodParams Drogon() const { return DrogonTargetParams(Run()); }

  Json Agent() const {
    AgentPodParams a;
    a.run = Run();
    a.node = "node-load-1";
    a.image = "example.org/fairbench/agent:0.4.0";
    a.controller_address = "fairbench-controller.fairbench.svc:9090";
    a.token_secret = "fairbench-agent-token";
    a.tls_secret = "fairbench-agent-tls";
    a.tls_client_certificate = true;
    return AgentPod(a);
  }

  // The server's answer to creating `pod` in the restricted namespace, with
  // a dry run: "" if admitted, else the refusal's message.
  std::string Admit(const Json& pod) {
    kube::WriteOptions dry;
    dry.dry_run = true;
    auto r = client_->Create(kube::resources::Pods(), ns(), pod, dry);
    if (r.ok()) {
      EXPECT_EQ((*r)["metadata"].value("namespace", ""), ns());
      return "";
    }
    EXPECT_EQ(r.reason(), kube::Reason::kForbidden) << r.error().ToString();
    return r.error().message;
  }

  fairbench::testing::KubeCluster* cluster_ = nullptr;
  std::optional<fairbench::testing::TestNamespace> ns_;
  std::unique_ptr<kube::Client> client_;
};

// Catches: a restricted field dropped from the target pod, its nofile init
// container or the agent pod (the pod would be refused in a namespace that
// enforces the restricted standard), or a template the real API server
// refuses for any other reason (validation of a probe, a volume, an env
// source, the owner reference).
TEST_F(PodSecurityTest, EveryPodPassesTheRestrictedStandard) {
  const PodTemplate with_command = TargetPod(Drogon());
  ASSERT_TRUE(with_command.pod["spec"].contains("initContainers"));
  EXPECT_EQ(Admit(with_command.pod), "");
  TargetPodParams bare = Drogon();
  bare.command.clear();
  EXPECT_EQ(Admit(TargetPod(bare).pod), "");
  TargetPodParams grpc = Drogon();
  grpc.target.protocol = Protocol::kGrpc;
  EXPECT_EQ(Admit(TargetPod(grpc).pod), "");
  const Json agent = Agent();
  EXPECT_EQ(Admit(agent), "");
  EXPECT_EQ(agent["spec"]["containers"][0]["securityContext"]["readOnlyRootFilesystem"], true);
}

// Each restricted field of the templates, taken out on its own: the real
// server then refuses the pod, naming the check and the containers. So the
// pass above means something (the namespace enforces, the fields carry the
// standard), and the templates carry no field the standard does not need
// for it. Catches: a template that passes only because another of its
// fields happens to cover the check (a pod-level setting removed, the
// containers' copy kept), and a namespace that does not enforce.
TEST_F(PodSecurityTest, EachRestrictedFieldIsWhatTheStandardAsksFor) {
  const Json target = TargetPod(Drogon()).pod;
  const Json agent = Agent();
  const std::string target_refused =
      "pods \"cpp-frameworks-drogon\" is forbidden: violates PodSecurity \"restricted:latest\": ";
  const std::string agent_refused =
      "pods \"cpp-frameworks-agent-0\" is forbidden: violates PodSecurity \"restricted:latest\": ";
  struct Case {
    const char* what;
    const Json* pod;
    Json::json_pointer field;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"pod runAsNonRoot", &target, Json::json_pointer("/spec/securityContext/runAsNonRoot"),
       target_refused + "runAsNonRoot != true (pod or containers \"fairbench-nofile\", \"target\" must set "
                        "securityContext.runAsNonRoot=true)"},
      {"pod seccompProfile", &target, Json::json_pointer("/spec/securityContext/seccompProfile"),
       target_refused + "seccompProfile (pod or containers \"fairbench-nofile\", \"target\" must set "
                        "securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"},
      {"init container capabilities", &target,
       Json::json_pointer("/spec/initContainers/0/securityContext/capabilities"),
       target_refused + "unrestricted capabilities (container \"fairbench-nofile\" must set "
                        "securityContext.capabilities.drop=[\"ALL\"])"},
      {"init container allowPrivilegeEscalation", &target,
       Json::json_pointer("/spec/initContainers/0/securityContext/allowPrivilegeEscalation"),
       target_refused + "allowPrivilegeEscalation != false (container \"fairbench-nofile\" must set "
                        "securityContext.allowPrivilegeEscalation=false)"},
      {"target capabilities", &target, Json::json_pointer("/spec/containers/0/securityContext/capabilities"),
       target_refused +
           "unrestricted capabilities (container \"target\" must set securityContext.capabilities.drop=[\"ALL\"])"},
      {"target allowPrivilegeEscalation", &target,
       Json::json_pointer("/spec/containers/0/securityContext/allowPrivilegeEscalation"),
       target_refused + "allowPrivilegeEscalation != false (container \"target\" must set "
                        "securityContext.allowPrivilegeEscalation=false)"},
      {"agent runAsNonRoot", &agent, Json::json_pointer("/spec/securityContext/runAsNonRoot"),
       agent_refused + "runAsNonRoot != true (pod or container \"agent\" must set securityContext.runAsNonRoot=true)"},
      {"agent seccompProfile", &agent, Json::json_pointer("/spec/securityContext/seccompProfile"),
       agent_refused + "seccompProfile (pod or container \"agent\" must set securityContext.seccompProfile.type to "
                       "\"RuntimeDefault\" or \"Localhost\")"},
      {"agent capabilities", &agent, Json::json_pointer("/spec/containers/0/securityContext/capabilities"),
       agent_refused +
           "unrestricted capabilities (container \"agent\" must set securityContext.capabilities.drop=[\"ALL\"])"},
      {"agent allowPrivilegeEscalation", &agent,
       Json::json_pointer("/spec/containers/0/securityContext/allowPrivilegeEscalation"),
       agent_refused + "allowPrivilegeEscalation != false (container \"agent\" must set "
                       "securityContext.allowPrivilegeEscalation=false)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Json pod = *c.pod;
    ASSERT_TRUE(pod.contains(c.field)) << c.field.to_string();
    pod[c.field.parent_pointer()].erase(c.field.back());
    EXPECT_EQ(Admit(pod), c.message);
  }
}

// A framework image that must run as root: spec.targets[].securityContext
// replaces the restricted defaults on the target's container, and the
// restricted namespace then refuses the pod, naming the three checks it
// fails, the target container alone (the init container keeps its
// restricted settings). Catches: the run's field ignored (the pod would be
// admitted), applied to the init container too (the refusal would name
// it), or merged into the restricted defaults where it should replace them
// (capabilities: drop ALL would stay, and the refusal would not name it).
TEST_F(PodSecurityTest, TheRunsSecurityContextIsRefusedByTheRestrictedStandard) {
  TargetPodParams p = Drogon();
  api::TargetSecurityContext sc;
  sc.run_as_non_root = false;
  sc.run_as_user = 0;
  sc.capabilities = api::Capabilities{{"SYS_RESOURCE"}, {"NET_RAW"}};
  p.target.security_context = sc;
  EXPECT_EQ(Admit(TargetPod(p).pod),
            "pods \"cpp-frameworks-drogon\" is forbidden: violates PodSecurity \"restricted:latest\": unrestricted "
            "capabilities (container \"target\" must set securityContext.capabilities.drop=[\"ALL\"]; container "
            "\"target\" must not include \"SYS_RESOURCE\" in securityContext.capabilities.add), runAsNonRoot != true "
            "(container \"target\" must not set securityContext.runAsNonRoot=false), runAsUser=0 (container "
            "\"target\" must not set runAsUser=0)");
}

}  // namespace
}  // namespace fairbench::controller::k8s
