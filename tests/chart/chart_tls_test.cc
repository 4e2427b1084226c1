// The chart's TLS for the agents' stream (agentTls): the Secrets it
// generates are tried for real — a hub started with the controller's
// files, as the Deployment points at them, accepts an agent holding the
// agents' files and dialing the name in --agent-address, over mutual TLS.
#include <fstream>

#include "agent/agent_client.h"
#include "common/base64.h"
#include "controller/hub/agent_hub.h"
#include "controller/hub/grpc_server.h"
#include "tests/chart/chart_test_env.h"

namespace fairbench::chart_test {
namespace {

class ChartTlsTest : public ChartTestBase {
 protected:
  static json Controller(const std::vector<json>& objects) {
    const json* d = Find(objects, "Deployment");
    EXPECT_NE(d, nullptr);
    if (d == nullptr) return json::object();
    return (*d)["spec"]["template"]["spec"]["containers"][0];
  }
  static std::map<std::string, std::string> Flags(const json& container) {
    std::map<std::string, std::string> out;
    for (const json& a : container.value("args", json::array())) {
      const std::string arg = a.get<std::string>();
      const size_t eq = arg.find('=');
      out[arg.substr(0, eq)] = eq == std::string::npos ? "" : arg.substr(eq + 1);
    }
    return out;
  }
  // The Secret's data written as files in `dir`; its keys.
  std::set<std::string> WriteSecret(const json& secret, const fs::path& dir) {
    fs::create_directories(dir);
    std::set<std::string> keys;
    for (const auto& [key, value] : secret["data"].items()) {
      auto bytes = Base64Decode(value.get<std::string>());
      EXPECT_TRUE(bytes.ok()) << key;
      std::ofstream(dir / key, std::ios::binary) << bytes.value();
      keys.insert(key);
    }
    return keys;
  }
};

// Catches: generated certificates gRPC refuses, a controller certificate
// without the Service name the agents dial, an agent certificate the
// controller's CA did not sign, a Deployment reading its files from
// elsewhere than it mounts them, Secrets an uninstall would delete.
TEST_F(ChartTlsTest, GeneratedCertificatesCarryAMutualTlsStream) {
  const std::vector<json> objects = RenderWith(kChart + "/ci/tls-values.yaml");
  const json* hub_secret = Find(objects, "Secret", "fairbench-controller-tls");
  const json* agent_secret = Find(objects, "Secret", "fairbench-agent-tls");
  ASSERT_NE(hub_secret, nullptr);
  ASSERT_NE(agent_secret, nullptr);
  for (const json* s : {hub_secret, agent_secret}) {
    EXPECT_EQ(Str(*s, "type"), "kubernetes.io/tls");
    EXPECT_EQ((*s)["metadata"]["annotations"]["helm.sh/resource-policy"], "keep");
  }
  const std::set<std::string> all = {"ca.crt", "tls.crt", "tls.key"};
  EXPECT_EQ(WriteSecret(*hub_secret, root() / "hub-tls"), all);
  EXPECT_EQ(WriteSecret(*agent_secret, root() / "agent-tls"), all);

  // The Deployment mounts the controller's Secret where its flags look.
  const json* deployment = Find(objects, "Deployment");
  ASSERT_NE(deployment, nullptr);
  const json& pod = (*deployment)["spec"]["template"]["spec"];
  std::string mount_path, volume_secret;
  for (const json& m : pod["containers"][0]["volumeMounts"]) {
    if (m["name"] == "hub-tls") mount_path = Str(m, "mountPath");
  }
  for (const json& v : pod["volumes"]) {
    if (v["name"] == "hub-tls") volume_secret = Str(v["secret"], "secretName");
  }
  EXPECT_EQ(volume_secret, "fairbench-controller-tls");
  ASSERT_FALSE(mount_path.empty());
  const auto flags = Flags(Controller(objects));
  EXPECT_EQ(flags.at("--hub-tls-cert"), mount_path + "/tls.crt");
  EXPECT_EQ(flags.at("--hub-tls-key"), mount_path + "/tls.key");
  EXPECT_EQ(flags.at("--hub-tls-client-ca"), mount_path + "/ca.crt");
  EXPECT_EQ(flags.at("--agent-tls-secret"), "fairbench-agent-tls");
  const std::string address = flags.at("--agent-address");
  const std::string service_host = address.substr(0, address.rfind(':'));

  // The files as the controller and an agent pod see them, over real gRPC.
  const fs::path hub_dir = root() / "hub-tls", agent_dir = root() / "agent-tls";
  controller::AgentHub hub("t");
  controller::GrpcServerOptions so;
  so.tls = {(hub_dir / "tls.crt").string(), (hub_dir / "tls.key").string(), (hub_dir / "ca.crt").string()};
  auto server = controller::StartGrpcServer(&hub, "127.0.0.1:0", so);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto dial = [&](const std::string& server_name) {
    agent::AgentTls tls{(agent_dir / "ca.crt").string(), (agent_dir / "tls.crt").string(),
                        (agent_dir / "tls.key").string(), server_name};
    auto creds = agent::AgentCredentials(tls);
    EXPECT_TRUE(creds.ok()) << creds.status().ToString();
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride(server_name);
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    auto stub =
        v1::AgentHub::NewStub(grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(server->port), *creds, args));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    auto stream = stub->Connect(&ctx);
    v1::AgentMessage hello;
    hello.mutable_hello()->set_agent_id("a-" + server_name);
    hello.mutable_hello()->set_token("t");
    stream->Write(hello);
    v1::ControllerMessage m;
    const bool welcomed = stream->Read(&m) && m.has_welcome();
    ctx.TryCancel();
    (void)stream->Finish();  // cancelled on purpose
    return welcomed;
  };
  EXPECT_TRUE(dial(service_host)) << "the controller's certificate must name " << service_host;
  EXPECT_FALSE(dial("somewhere-else.fairbench.svc"));
  hub.Shutdown();
  server->server->Shutdown(std::chrono::system_clock::now() + 1s);
}

// Catches: TLS flags or volumes in the default install, Secrets generated
// when the user brings their own, a client CA required without mutual.
TEST_F(ChartTlsTest, PlainTextByDefaultAndYourOwnSecretsWhenAsked) {
  const std::vector<json> plain = Render();
  EXPECT_EQ(Find(plain, "Secret", "fairbench-controller-tls"), nullptr);
  const auto plain_flags = Flags(Controller(plain));
  EXPECT_EQ(plain_flags.count("--hub-tls-cert"), 0u);
  EXPECT_EQ(plain_flags.count("--agent-tls-secret"), 0u);
  EXPECT_EQ(Controller(plain)["volumeMounts"].size(), 1u);

  const std::vector<json> own = RenderWith(kChart + "/ci/tls-existing-values.yaml");
  EXPECT_TRUE(FindAll(own, "Secret").size() == 1u) << "only the token Secret";
  const auto flags = Flags(Controller(own));
  EXPECT_EQ(flags.count("--hub-tls-client-ca"), 0u);
  EXPECT_EQ(flags.at("--agent-tls-secret"), "my-agent-tls");
  const json& pod = (*Find(own, "Deployment"))["spec"]["template"]["spec"];
  bool mounted = false;
  for (const json& v : pod["volumes"]) mounted |= v.contains("secret") && v["secret"]["secretName"] == "my-hub-tls";
  EXPECT_TRUE(mounted);
}

}  // namespace
}  // namespace fairbench::chart_test
