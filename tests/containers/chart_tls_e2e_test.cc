// The chart's agentTls on a real control plane (chart_cluster.h): helm
// install with agentTls.enabled, so that the chart generates its CA and
// certificates into two Secrets (Helm's genCA/genSignedCert, `lookup`
// against the real API server); the controllers mount theirs and the agent
// pods the operator makes mount the other, each a container on its own
// test-kubelet node, dialing the controller's Service over mutual TLS.
#include <regex>

#include "common/base64.h"
#include "testing/support/http_client.h"
#include "tests/containers/chart_cluster.h"

namespace fairbench::containers {
namespace {

class ChartTlsE2eTest : public ChartCluster {
 protected:
  void SetUp() override {
    more_values_ = {"--set", "agentTls.enabled=true"};
    ChartCluster::SetUp();
  }

  std::string PodIp(const std::string& pod) {
    return Run({"get", "pod", pod, "-n", kNamespace, "-o", "jsonpath={.status.podIP}"}).out;
  }
  // The value of one sample of the leader's /metrics (`series` with its
  // labels, as Prometheus's text format writes it); -1 when absent.
  double Metric(const std::string& series) {
    const std::string ip = PodIp(Leader());
    auto c = testing::HttpConnection::Connect(ip, static_cast<uint16_t>(metrics_port_));
    if (!c.ok()) {
      ADD_FAILURE() << ip << ":" << metrics_port_ << ": " << c.status().ToString();
      return -1;
    }
    auto r = c->RoundTrip(testing::BuildRequest("GET", "/metrics", "controller"));
    if (!r.ok() || r->status != 200) {
      ADD_FAILURE() << "/metrics: " << (r.ok() ? std::to_string(r->status) + r->body : r.status().ToString());
      return -1;
    }
    std::istringstream in(r->body);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
    }
    ADD_FAILURE() << "no " << series << " in\n" << r->body;
    return -1;
  }
  // A Secret's data written as files in `dir` (the agents' certificate and
  // key, the CA), as a pod that mounts it sees them.
  void WriteSecret(const std::string& name, const fs::path& dir) {
    const json s = Get("secret/" + name);
    ASSERT_TRUE(s.is_object() && s.contains("data")) << name;
    fs::create_directories(dir);
    for (const auto& [key, value] : s["data"].items()) {
      auto bytes = Base64Decode(value.get<std::string>());
      ASSERT_TRUE(bytes.ok()) << name << "/" << key;
      std::ofstream(dir / key, std::ios::binary) << *bytes;
    }
  }
  // A bare agent pod on a load node, outside any run, dialing the address
  // the chart gives the agents with the installation's token (or `token`
  // when given), restricted as the namespace demands. `tls_args` and the
  // Secret mounted at /tls make it the agent under test.
  void AgentPod(const std::string& name, const std::vector<std::string>& tls_args, const std::string& secret = "",
                const std::string& token = "") {
    std::string args =
        "[--controller, " + AgentAddress() + ", --id, " + name + ", --node, $(NODE_NAME), --give-up-after, \"5\"";
    for (const std::string& a : tls_args) args += ", " + a;
    args += "]";
    const std::string token_env =
        token.empty()
            ? "{name: FAIRBENCH_AGENT_TOKEN, valueFrom: {secretKeyRef: {name: fairbench-agent-token, key: token}}}"
            : "{name: FAIRBENCH_AGENT_TOKEN, value: " + token + "}";
    std::string text = std::string("apiVersion: v1\nkind: Pod\nmetadata: {name: ") + name +
                       ", namespace: " + kNamespace +
                       "}\nspec:\n  restartPolicy: Never\n  nodeSelector: {fairbench.dev/role: load}\n"
                       "  securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}\n"
                       "  containers:\n  - name: agent\n    image: " +
                       Image("fairbench-agent") + "\n    args: " + args + "\n    env:\n    - " + token_env +
                       "\n    - {name: NODE_NAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}\n"
                       "    resources: {requests: {cpu: 50m, memory: 64Mi}, limits: {memory: 128Mi}}\n"
                       "    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, "
                       "capabilities: {drop: [ALL]}}\n";
    if (!secret.empty()) {
      text +=
          "    volumeMounts: [{name: tls, mountPath: /tls, readOnly: true}]\n"
          "  volumes: [{name: tls, secret: {secretName: " +
          secret + "}}]\n";
    }
    Apply(name, text);
  }
  // Where the chart tells the agents to dial: the controller's
  // --agent-address (its Service's name and the agents' port).
  std::string AgentAddress() {
    const json d = Get("deployment/fairbench-controller");
    for (const json& a : d["spec"]["template"]["spec"]["containers"][0]["args"]) {
      const std::string arg = a.get<std::string>();
      if (arg.rfind("--agent-address=", 0) == 0) return arg.substr(16);
    }
    return "";
  }
  std::string PodPhase(const std::string& pod) {
    return Run({"get", "pod", pod, "-n", kNamespace, "-o", "jsonpath={.status.phase}"}).out;
  }
  std::string PodLog(const std::string& pod) { return Run({"logs", pod, "-n", kNamespace}).out; }
};

// A run with its controller and agents in separate containers on separate
// nodes, the hub speaking mutual TLS only: the run succeeds, and its agent
// pods were given the chart's agent Secret and TLS flags. A `helm upgrade`
// rolls the controllers and keeps both Secrets as they were; what the new
// leader shows on the wire (openssl s_client, not gRPC) is the chart's
// certificate for the Service's name, signed by the CA in the agents'
// Secret. Then agents outside the run, each with the installation's own
// token: in plain text, with TLS but no client certificate, and with a
// certificate of another CA, all three are refused in the handshake (their
// logs say they were never welcomed, the pods fail when they give up, the
// controller's log names each handshake, and the hub's token refusals stay
// at zero: the token was never looked at), while a fourth, with the
// chart's client certificate, is welcomed, and a fifth with that
// certificate and a wrong token gets past TLS and is refused for its token
// (the refusal metric counts it).
// Catches: chart Secrets a real install does not create or the controller
// cannot read (fsGroup, defaultMode); a controller started without
// --hub-tls-cert or --hub-tls-client-ca (plain text accepted, or any
// client certificate); agent pods without the Secret or the TLS flags
// (--agent-tls-secret not passed on: the run's agents are never welcomed);
// a controller certificate that does not name the Service the agents dial,
// or that the agents' CA did not sign; an upgrade that makes new
// certificates (`lookup` finding nothing on a real API server), which
// agents of the old CA, or controllers started before, would refuse.
TEST_F(ChartTlsE2eTest, AgentsReachTheControllerOverMutualTlsAndNothingElseDoes) {
  std::string leader = Leader();
  const std::string log = Ok({"logs", leader, "-n", kNamespace});
  EXPECT_NE(log.find("(mutual TLS); waiting to lead"), std::string::npos) << log;

  // The run: the agents' pods seen while they exist.
  Apply("sealed", RunText("sealed", Target("httplib", "cpp-httplib-debian")));
  json agents;
  ASSERT_TRUE(Eventually(
      [&] {
        agents = Get("pods", "-l", "fairbench.dev/run=sealed,app.kubernetes.io/name=fairbench-agent");
        return agents.is_object() && agents["items"].size() == 2 &&
               !agents["items"][0]["spec"].value("nodeName", std::string()).empty() &&
               !agents["items"][1]["spec"].value("nodeName", std::string()).empty();
      },
      120s))
      << Logs();
  ASSERT_TRUE(Finishes("sealed")) << Logs();
  const json run = Get("br/sealed");
  ASSERT_EQ(run["status"]["phase"], "Succeeded") << run["status"].dump(1) << Logs();
  ASSERT_EQ(run["status"]["results"].size(), 1u);
  EXPECT_GT(run["status"]["results"][0]["requests"].get<uint64_t>(), 50u) << run["status"].dump(1);

  const std::string leader_node = Get("pod/" + leader)["spec"].value("nodeName", std::string());
  std::set<std::string> agent_nodes;
  for (const json& p : agents["items"]) {
    const json& spec = p["spec"];
    agent_nodes.insert(spec.value("nodeName", std::string()));
    const std::string args = spec["containers"][0]["args"].dump();
    for (const char* want :
         {"\"--tls-ca\",\"/etc/fairbench/agent-tls/ca.crt\"", "\"--tls-cert\",\"/etc/fairbench/agent-tls/tls.crt\"",
          "\"--tls-key\",\"/etc/fairbench/agent-tls/tls.key\""}) {
      EXPECT_NE(args.find(want), std::string::npos) << want << " in " << args;
    }
    EXPECT_EQ(spec["volumes"][0]["secret"]["secretName"], "fairbench-agent-tls") << spec.dump();
  }
  // Two load nodes, one agent on each: one of them is not the leader's.
  EXPECT_EQ(agent_nodes, (std::set<std::string>{"chart-load-1", "chart-load-2"}));
  EXPECT_TRUE(leader_node == "chart-load-1" || leader_node == "chart-load-2") << leader_node;

  // helm upgrade, the controllers rolled by a changed argument: the chart
  // finds both Secrets through the API server (`lookup`) and keeps them, so
  // the new controllers and the agents still trust each other (below).
  const json hub_data = Get("secret/fairbench-controller-tls")["data"];
  const json agent_data = Get("secret/fairbench-agent-tls")["data"];
  std::vector<std::string> upgrade = {"upgrade", "fairbench", (kRoot / "charts/fairbench").string()};
  const auto values = Values();
  upgrade.insert(upgrade.end(), values.begin(), values.end());
  upgrade.insert(upgrade.end(), {"--set", "controller.logLevel=debug"});
  const auto upgraded = Helm(upgrade);
  ASSERT_EQ(upgraded.exit_code, 0) << upgraded.out << upgraded.err;
  EXPECT_EQ(Get("secret/fairbench-controller-tls")["data"], hub_data) << "the upgrade made new certificates";
  EXPECT_EQ(Get("secret/fairbench-agent-tls")["data"], agent_data) << "the upgrade made new certificates";
  const std::string old_leader = leader;
  ASSERT_TRUE(Eventually(
      [&] {
        leader = Leader();
        if (leader.empty() || leader == old_leader || ReadyControllers() != 1) return false;
        const json pods = Get("pods", "-l", "app.kubernetes.io/component=controller");
        if (!pods.is_object()) return false;  // kubectl failed (the API server busy with the upgrade): ask again
        for (const json& p : pods.value("items", json::array())) {
          if (p["metadata"].contains("deletionTimestamp")) return false;
          if (p["spec"]["containers"][0]["args"].dump().find("--log-level=debug") == std::string::npos) return false;
        }
        return pods.value("items", json::array()).size() == 2;
      },
      120s))
      << Run({"get", "pods", "-n", kNamespace, "-o", "wide"}).out << Logs();

  // The hub's listener as OpenSSL sees it, with the agents' files.
  const fs::path files = root_ / "agent-tls";
  WriteSecret("fairbench-agent-tls", files);
  const std::string service = AgentAddress().substr(0, AgentAddress().rfind(':'));
  ASSERT_EQ(service, "fairbench-controller.fairbench.svc");
  auto s_client = kube::RunCommand(
      "openssl",
      {"s_client", "-connect", PodIp(leader) + ":" + std::to_string(agent_port_), "-CAfile",
       (files / "ca.crt").string(), "-cert", (files / "tls.crt").string(), "-key", (files / "tls.key").string(),
       "-verify_hostname", service, "-verify_return_error", "-alpn", "h2"},
      {}, 20s);
  ASSERT_TRUE(s_client.ok());
  EXPECT_EQ(s_client->exit_code, 0) << s_client->out << s_client->err;
  EXPECT_NE(s_client->out.find("Verify return code: 0 (ok)"), std::string::npos) << s_client->out << s_client->err;
  EXPECT_NE(s_client->out.find("ALPN protocol: h2"), std::string::npos) << s_client->out;

  // Agents outside the run, the installation's token in each.
  const fs::path foreign = root_ / "foreign";
  fs::create_directories(foreign);
  auto made = kube::RunCommand(
      "openssl",
      {"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj",
       "/CN=fairbench-agent", "-keyout", (foreign / "tls.key").string(), "-out", (foreign / "tls.crt").string()},
      {}, 20s);
  ASSERT_TRUE(made.ok() && made->exit_code == 0) << (made.ok() ? made->err : made.status().ToString());
  fs::copy_file(files / "ca.crt", foreign / "ca.crt");
  Ok({"create", "secret", "generic", "foreign-agent-tls", "-n", kNamespace, "--from-file", foreign.string()});
  const double token_refusals = Metric("fairbench_agent_streams_refused_total{reason=\"token\"}");
  EXPECT_EQ(token_refusals, 0) << "the run's agents had the token";
  const std::vector<std::string> ca = {"--tls-ca", "/tls/ca.crt"};
  const std::vector<std::string> own = {"--tls-ca",     "/tls/ca.crt", "--tls-cert",
                                        "/tls/tls.crt", "--tls-key",   "/tls/tls.key"};
  AgentPod("plain", {});
  AgentPod("no-client-cert", ca, "fairbench-agent-tls");
  AgentPod("foreign-cert", own, "foreign-agent-tls");
  AgentPod("welcomed", own, "fairbench-agent-tls");
  AgentPod("wrong-token", own, "fairbench-agent-tls", "not-the-token");

  ASSERT_TRUE(Eventually([&] { return PodLog("welcomed").find("connected to controller") != std::string::npos; }, 60s))
      << PodPhase("welcomed") << PodLog("welcomed") << Logs();
  for (const char* refused : {"plain", "no-client-cert", "foreign-cert"}) {
    ASSERT_TRUE(Eventually([&] { return PodPhase(refused) == "Failed"; }, 60s)) << refused << ": " << PodPhase(refused);
    const std::string said = PodLog(refused);
    std::cout << "--- " << refused << "\n" << said;
    EXPECT_NE(said.find("ended before a welcome"), std::string::npos) << refused << ":\n" << said;
    EXPECT_NE(said.find("no controller at " + AgentAddress()), std::string::npos) << refused << ":\n" << said;
    EXPECT_EQ(said.find("connected to controller"), std::string::npos) << refused << ":\n" << said;
  }
  ASSERT_TRUE(Eventually([&] { return PodPhase("wrong-token") == "Failed"; }, 60s)) << PodPhase("wrong-token");
  EXPECT_NE(PodLog("wrong-token").find("refused this agent (UNAUTHENTICATED)"), std::string::npos)
      << PodLog("wrong-token");
  // Past TLS, the hub counts one token refusal: the wrong token's; the
  // three refused in the handshake never reached it. One agent is connected.
  EXPECT_EQ(Metric("fairbench_agent_streams_refused_total{reason=\"token\"}"), token_refusals + 1);
  EXPECT_EQ(Metric("fairbench_agent_streams_refused_total{reason=\"hello_timeout\"}"), 0);
  EXPECT_EQ(Metric("fairbench_agents_connected"), 1);
  EXPECT_EQ(PodPhase("welcomed"), "Running");
  // The controller's log names each handshake it refused (gRPC's own
  // line, OpenSSL's reason): plain text, no certificate, an unknown CA.
  const std::string refusals = Ok({"logs", leader, "-n", kNamespace});
  for (
      const char* why :
      {"Handshake failed with fatal error SSL_ERROR_SSL: error:0A00010B:SSL routines::wrong version number",
       "Handshake failed with fatal error SSL_ERROR_SSL: error:0A0000C7:SSL routines::peer did not return a certificate",
       "Handshake failed with fatal error SSL_ERROR_SSL: error:0A000086:SSL routines::certificate verify failed"}) {
    EXPECT_NE(refusals.find(why), std::string::npos) << why << "\n" << refusals;
  }
  EXPECT_TRUE(std::regex_search(refusals, std::regex("refused agent wrong-token from chart-load-[12]: wrong token")))
      << refusals;
  Ok({"delete", "pod", "welcomed", "-n", kNamespace, "--timeout=60s"});
  // Nothing of this made a controller restart.
  EXPECT_EQ(Leader(), leader);
  for (const json& p : Get("pods", "-l", "app.kubernetes.io/component=controller")["items"]) {
    EXPECT_EQ(p["status"]["containerStatuses"][0]["restartCount"], 0) << p["status"].dump();
  }
}

}  // namespace
}  // namespace fairbench::containers
