// Golden-file tests of the pod templates. The golden files are in
// testdata/; after an intended change, regenerate them with
//   FAIRBENCH_UPDATE_GOLDEN=1 ctest --test-dir BUILD -R PodTemplates
// and review the diff.
#include "controller/platform/kubernetes/pod_templates.h"
#include "controller/platform/kubernetes/stats_summary.h"
#include "controller/platform/kubernetes/pod_templates_test_params.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "api/names.h"

namespace fairbench::controller::k8s {
namespace {

using Json = nlohmann::json;

std::string GoldenPath(const std::string& name) { return std::string(K8S_TESTDATA) + "/" + name; }

// Compares `pod` with the golden file (or rewrites it in update mode).
void ExpectGolden(const Json& pod, const std::string& name) {
  const std::string text = pod.dump(2) + "\n";
  const char* update = std::getenv("FAIRBENCH_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(GoldenPath(name)) << text;
    return;
  }
  std::ifstream in(GoldenPath(name));
  ASSERT_TRUE(in.good()) << "missing golden file " << GoldenPath(name) << " (FAIRBENCH_UPDATE_GOLDEN=1 writes it)";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(text, want.str()) << "pod differs from " << name << " (FAIRBENCH_UPDATE_GOLDEN=1 rewrites it)";
}

RunIdentity TestRun() { return RunIdentity{"cpp-frameworks", "bench", "0b6f7d2e-1111-4222-8333-944455556666"}; }

TargetPodParams Drogon() { return DrogonTargetParams(TestRun()); }

// Catches: any unreviewed change to the target pod (labels, owner
// reference, nodeName/selector/tolerations, Guaranteed resources, probe,
// the nofile init container and wrapper, grace period, token, links).
TEST(PodTemplatesTest, TargetPodWithCommandMatchesGolden) {
  const PodTemplate t = TargetPod(Drogon());
  ExpectGolden(t.pod, "target_pod_command.json");
  ASSERT_EQ(t.notes.size(), 3u);
  EXPECT_EQ(t.notes[0],
            "target drogon: nofile 65536 set by the fairbench-nofile wrapper (soft limit raised, up to the runtime's "
            "hard limit)");
  EXPECT_EQ(t.notes[1], "target drogon: Guaranteed QoS (requests == limits: cpu 4, memory 1Gi)");
  EXPECT_EQ(t.notes[2],
            "target drogon: runs as the restricted Pod Security Standard asks (non-root, no privilege escalation, "
            "every capability dropped, RuntimeDefault seccomp)");
}

// Catches: a wrapper around an unknown entrypoint (the pod would run the
// helper with no command), or a silent loss of the nofile setting.
TEST(PodTemplatesTest, TargetPodWithoutCommandMatchesGolden) {
  TargetPodParams p = Drogon();
  p.command.clear();
  p.target.resources = {};
  p.target.env.clear();
  p.target.readiness.reset();
  p.placement = {};
  const PodTemplate t = TargetPod(p);
  ExpectGolden(t.pod, "target_pod_no_command.json");
  EXPECT_FALSE(t.pod["spec"].contains("initContainers"));
  EXPECT_FALSE(t.pod["spec"]["containers"][0].contains("command"));
  ASSERT_EQ(t.notes.size(), 3u);
  EXPECT_NE(t.notes[0].find("nofile was left to the container runtime"), std::string::npos) << t.notes[0];
  EXPECT_NE(t.notes[1].find("not Guaranteed QoS"), std::string::npos) << t.notes[1];
}

// Catches: spec.targets[].hostNetwork ignored, or the pod on the node's
// network without the DNS policy that keeps Services resolving.
TEST(PodTemplatesTest, HostNetworkPutsTheTargetOnItsNodesNetwork) {
  TargetPodParams p = Drogon();
  EXPECT_FALSE(TargetPod(p).pod["spec"].contains("hostNetwork"));
  p.target.host_network = true;
  const PodTemplate t = TargetPod(p);
  EXPECT_EQ(t.pod["spec"]["hostNetwork"], true);
  EXPECT_EQ(t.pod["spec"]["dnsPolicy"], "ClusterFirstWithHostNet");
  EXPECT_EQ(t.notes[1],
            "target drogon: on its node's network (hostNetwork): agents reach it at the node's address, port 8080");
}

// Catches: the kubelet's CPU manager policy read from the wrong place of
// its /configz, or an answer without one taken for a policy.
TEST(PodTemplatesTest, CpuManagerPolicyComesFromTheKubeletsConfigz) {
  std::string why;
  EXPECT_EQ(CpuManagerPolicy(
                Json::parse(R"({"kubeletconfig": {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0"}})"), &why),
            "static");
  EXPECT_EQ(CpuManagerPolicy(Json::parse(R"({"kubeletconfig": {"cpuManagerPolicy": "none"}})"), &why), "none");
  EXPECT_EQ(CpuManagerPolicy(Json::parse(R"({"cpuManagerPolicy": "static"})"), &why), "");
  EXPECT_EQ(why, "/configz has no kubeletconfig object");
  EXPECT_EQ(CpuManagerPolicy(Json::parse(R"({"kubeletconfig": {}})"), &why), "");
  EXPECT_EQ(why, "/configz's kubeletconfig has no cpuManagerPolicy");
}

// Catches: an agent pod that cannot dial (args), learn its id and node
// (downward API), authenticate (secretKeyRef), or that is not Guaranteed.
// Catches: the limit in force read from the wrong line or field of the
// container's log (what fairbench-nofile prints before it runs the target),
// a line of the target's own taken for it, or a number read from a failure.
TEST(PodTemplatesTest, NofileInForceComesFromTheHelpersLine) {
  EXPECT_EQ(NofileInForce("fairbench-nofile: nofile 65536\nlistening on 0.0.0.0:8080\n"), "65536");
  EXPECT_EQ(NofileInForce("fairbench-nofile: nofile unlimited\r\n"), "unlimited");
  EXPECT_EQ(NofileInForce("starting\nfairbench-nofile: nofile 1024"), "1024");
  EXPECT_EQ(NofileInForce("fairbench-nofile: asked for nofile 65536, the hard limit is 1024 and cannot be raised\n"),
            std::nullopt);
  EXPECT_EQ(NofileInForce("app: fairbench-nofile: nofile 5\n"), std::nullopt);
  EXPECT_EQ(NofileInForce("fairbench-nofile: nofile 12ab\n"), std::nullopt);
  EXPECT_EQ(NofileInForce(""), std::nullopt);
}

TEST(PodTemplatesTest, AgentPodMatchesGolden) {
  AgentPodParams p;
  p.run = TestRun();
  p.index = 1;
  p.node = "node-load-2";
  p.placement.node_selector = {{"fairbench.dev/role", "load"}};
  p.placement.tolerations = {{"fairbench.dev/load", "Exists", "", "NoExecute", int64_t{30}}};
  p.threads = 4;
  p.image = "example.org/fairbench/agent:0.4.0";
  p.controller_address = "fairbench-controller.fairbench-system.svc:7070";
  p.token_secret = "fairbench-agent-token";
  p.memory = api::MemoryQuantity{512LL << 20};
  ExpectGolden(AgentPod(p), "agent_pod.json");
}

// Catches: the token in the agent's arguments (every user of the node sees
// them in ps, and kubectl shows them), or TLS flags without the Secret
// mounted where they point.
TEST(PodTemplatesTest, AgentPodTakesItsSecretsFromVolumesAndSecretKeyRefs) {
  AgentPodParams p;
  p.run = TestRun();
  p.image = "agent";
  p.controller_address = "fairbench-controller.ns.svc:9090";
  p.token_secret = "agent-token";
  const Json plain = AgentPod(p);
  EXPECT_FALSE(plain["spec"].contains("volumes"));
  for (const Json& a : plain["spec"]["containers"][0]["args"]) {
    EXPECT_EQ(a.get<std::string>().find("tls"), std::string::npos) << a;
    EXPECT_EQ(a.get<std::string>().find("token"), std::string::npos) << a;
  }
  bool token_from_secret = false;
  for (const Json& e : plain["spec"]["containers"][0]["env"]) {
    if (e["name"] == "FAIRBENCH_AGENT_TOKEN") {
      EXPECT_FALSE(e.contains("value"));
      EXPECT_EQ(e["valueFrom"]["secretKeyRef"]["name"], "agent-token");
      token_from_secret = true;
    }
  }
  EXPECT_TRUE(token_from_secret);

  p.tls_secret = "agent-tls";
  p.tls_client_certificate = true;
  p.tls_server_name = "hub.example";
  const Json tls = AgentPod(p);
  const Json& c = tls["spec"]["containers"][0];
  std::vector<std::string> args;
  for (const Json& a : c["args"]) args.push_back(a.get<std::string>());
  const std::vector<std::string> tail(args.end() - 8, args.end());
  EXPECT_EQ(tail, (std::vector<std::string>{"--tls-ca", "/etc/fairbench/agent-tls/ca.crt", "--tls-cert",
                                            "/etc/fairbench/agent-tls/tls.crt", "--tls-key",
                                            "/etc/fairbench/agent-tls/tls.key", "--tls-server-name", "hub.example"}));
  EXPECT_EQ(c["volumeMounts"][0]["mountPath"], "/etc/fairbench/agent-tls");
  EXPECT_EQ(c["volumeMounts"][0]["readOnly"], true);
  EXPECT_EQ(tls["spec"]["volumes"][0]["name"], c["volumeMounts"][0]["name"]);
  EXPECT_EQ(tls["spec"]["volumes"][0]["secret"]["secretName"], "agent-tls");

  p.tls_client_certificate = false;
  p.tls_server_name.clear();
  const Json server_only = AgentPod(p);
  const Json& a = server_only["spec"]["containers"][0]["args"];
  EXPECT_EQ(a[a.size() - 2], "--tls-ca");
  EXPECT_EQ(a.dump().find("tls.key"), std::string::npos);
}

// Catches: requests != limits (Burstable) on any container of the target
// pod, the init container included, which costs exclusive cores.
TEST(PodTemplatesTest, EveryContainerRequestsItsLimits) {
  const Json pod = TargetPod(Drogon()).pod;
  for (const char* list : {"containers", "initContainers"}) {
    for (const Json& c : pod["spec"][list]) {
      SCOPED_TRACE(c["name"].get<std::string>());
      EXPECT_EQ(c["resources"]["requests"], c["resources"]["limits"]);
      EXPECT_EQ(c["resources"]["requests"]["cpu"], "4");
    }
  }
}

// Catches: the owner reference written without a uid (the API server
// answers 422) when the run came from a file.
TEST(PodTemplatesTest, NoOwnerReferenceWithoutUid) {
  TargetPodParams p = Drogon();
  p.run.uid.clear();
  EXPECT_FALSE(TargetPod(p).pod["metadata"].contains("ownerReferences"));
}

// Catches: names longer than 63 characters (pods fail validation) and
// truncation that makes two agents or two targets collide.
TEST(PodTemplatesTest, LongNamesAreCutWithAHash) {
  const std::string run(200, 'r');
  const std::string a0 = AgentPodName(run, 0), a1 = AgentPodName(run, 1);
  EXPECT_LE(a0.size(), 63u);
  EXPECT_NE(a0, a1);
  EXPECT_EQ(a0.substr(a0.size() - 8), "-agent-0");
  EXPECT_EQ(api::CheckDnsLabel(a0), "");
  const std::string t1 = TargetPodName(run, std::string(63, 'a'));
  const std::string t2 = TargetPodName(run, std::string(62, 'a') + "b");
  EXPECT_LE(t1.size(), 63u);
  EXPECT_NE(t1, t2);
  EXPECT_EQ(api::CheckDnsLabel(t1), "");
  EXPECT_EQ(TargetPodName("cpp-frameworks", "drogon"), "cpp-frameworks-drogon");
  // A cut must not leave '-' or '.' before the hash.
  const std::string dotted = TargetPodName(std::string(49, 'x') + ".-yyyyyyyyyyyy", "t");
  EXPECT_EQ(api::CheckDnsLabel(dotted), "") << dotted;
  EXPECT_EQ(LabelValue(run).size(), 63u);
  EXPECT_EQ(api::CheckLabelValue(LabelValue(run)), "");
}

// Catches: an https target probed over plain HTTP (a TLS-only server never
// becomes ready).
TEST(PodTemplatesTest, HttpsTargetsAreProbedOverHttps) {
  TargetPodParams p = Drogon();
  EXPECT_EQ(TargetPod(p).pod["spec"]["containers"][0]["readinessProbe"]["httpGet"]["scheme"], "HTTP");
  p.target.scheme = Scheme::kHttps;
  EXPECT_EQ(TargetPod(p).pod["spec"]["containers"][0]["readinessProbe"]["httpGet"]["scheme"], "HTTPS");
}

// Catches: an h2c target (HTTP/2 with prior knowledge only) given the
// kubelet's HTTP/1.1 httpGet probe: it would never become ready.
TEST(PodTemplatesTest, H2cTargetsAreProbedAsAPort) {
  TargetPodParams p = Drogon();
  p.target.protocol = Protocol::kH2c;
  const auto probe = TargetPod(p).pod["spec"]["containers"][0]["readinessProbe"];
  EXPECT_FALSE(probe.contains("httpGet"));
  EXPECT_EQ(probe["tcpSocket"]["port"], p.target.port);
  p.target.protocol = Protocol::kH2;
  p.target.scheme = Scheme::kHttps;
  EXPECT_EQ(TargetPod(p).pod["spec"]["containers"][0]["readinessProbe"]["httpGet"]["scheme"], "HTTPS");
}

// Catches: a gRPC target given an httpGet probe (a gRPC server answers
// HTTP/1.1 with nothing useful), the health service's name dropped, or the
// kubelet's grpc probe (plaintext only) used against a TLS target or for a
// named method it cannot call.
TEST(PodTemplatesTest, GrpcTargetsUseTheKubeletsGrpcProbe) {
  TargetPodParams p = Drogon();
  p.target.protocol = Protocol::kGrpc;
  auto probe = TargetPod(p).pod["spec"]["containers"][0]["readinessProbe"];
  EXPECT_FALSE(probe.contains("httpGet"));
  EXPECT_EQ(probe["grpc"], (nlohmann::json{{"port", p.target.port}})) << probe.dump();
  p.target.readiness =
      api::Readiness{"/", std::chrono::seconds(5), api::GrpcReadiness{"fairbench.echo.v1.Echo", std::nullopt}};
  probe = TargetPod(p).pod["spec"]["containers"][0]["readinessProbe"];
  EXPECT_EQ(probe["grpc"]["service"], "fairbench.echo.v1.Echo");
  EXPECT_EQ(probe["failureThreshold"], 5);
  p.target.readiness->grpc = api::GrpcReadiness{"", "fairbench.echo.v1.Echo/Stats"};
  probe = TargetPod(p).pod["spec"]["containers"][0]["readinessProbe"];
  EXPECT_FALSE(probe.contains("grpc"));
  EXPECT_EQ(probe["tcpSocket"]["port"], p.target.port);
  p.target.readiness.reset();
  p.target.scheme = Scheme::kHttps;
  probe = TargetPod(p).pod["spec"]["containers"][0]["readinessProbe"];
  EXPECT_FALSE(probe.contains("grpc"));
  EXPECT_EQ(probe["tcpSocket"]["port"], p.target.port);
}

// Catches: a readiness probe that gives up sooner than the readiness
// timeout, or a zero failureThreshold (invalid).
TEST(PodTemplatesTest, ProbeFailureThresholdFollowsTimeout) {
  TargetPodParams p = Drogon();
  p.target.readiness = api::Readiness{"/", std::chrono::milliseconds(2500), std::nullopt};
  EXPECT_EQ(TargetPod(p).pod["spec"]["containers"][0]["readinessProbe"]["failureThreshold"], 3);
  p.target.readiness = api::Readiness{"/", std::chrono::milliseconds(0), std::nullopt};
  EXPECT_EQ(TargetPod(p).pod["spec"]["containers"][0]["readinessProbe"]["failureThreshold"], 1);
}

// A framework image that must run as root: spec.targets[].securityContext
// reaches the target's container alone, and the nofile helper goes without
// --at-most once SYS_RESOURCE is granted. (That the restricted standard
// then refuses the pod, naming its checks, the real Pod Security admission
// shows: pod_security_test.cc.) Catches: the run's field ignored, applied
// to the init container too, or merged into the restricted defaults where
// it should replace them (capabilities).
TEST(PodTemplatesTest, TheRunsSecurityContextReplacesTheRestrictedDefaults) {
  TargetPodParams p = Drogon();
  api::TargetSecurityContext sc;
  sc.run_as_non_root = false;
  sc.run_as_user = 0;
  sc.capabilities = api::Capabilities{{"SYS_RESOURCE"}, {"NET_RAW"}};
  p.target.security_context = sc;
  const PodTemplate t = TargetPod(p);
  const nlohmann::json& target = t.pod["spec"]["containers"][0];
  EXPECT_EQ(target["securityContext"],
            nlohmann::json::parse(R"({"allowPrivilegeEscalation": false, "runAsNonRoot": false, "runAsUser": 0,
                                      "capabilities": {"add": ["SYS_RESOURCE"], "drop": ["NET_RAW"]}})"));
  EXPECT_EQ(t.pod["spec"]["initContainers"][0]["securityContext"]["capabilities"]["drop"], nlohmann::json({"ALL"}));
  EXPECT_EQ(target["args"][0], "--nofile=65536");
  EXPECT_EQ(target["args"][1], "--");
  EXPECT_NE(t.notes.back().find("securityContext from the run"), std::string::npos) << t.notes.back();
  // Restricted (the default): the helper goes on with less, and says so.
  EXPECT_EQ(TargetPod(Drogon()).pod["spec"]["containers"][0]["args"][1], "--at-most");
}

// Catches: the helper's shortfall line not found, or a reached limit taken
// for a shortfall.
TEST(PodTemplatesTest, NofileShortfallComesFromTheHelpersWarning) {
  EXPECT_EQ(
      NofileShortfall("fairbench-nofile: asked for nofile 65536, the hard limit is 20000 and cannot be raised "
                      "(no CAP_SYS_RESOURCE); continuing with less (--at-most)\nfairbench-nofile: nofile 20000\n"),
      "asked for nofile 65536, the hard limit is 20000 and cannot be raised (no CAP_SYS_RESOURCE); continuing "
      "with less (--at-most)");
  EXPECT_EQ(NofileShortfall("fairbench-nofile: nofile 65536\n"), std::nullopt);
}

}  // namespace
}  // namespace fairbench::controller::k8s
