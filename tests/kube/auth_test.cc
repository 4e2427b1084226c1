// KUBE-API.md §8: TLS, client certificates, tokens and their rotation, exec
// plugins, kubeconfig — against the test API server over HTTPS.
#include <filesystem>
#include <fstream>

#include "controller/kube/exec_credential.h"
#include "tests/kube/kube_test_env.h"

namespace fairbench::kube {
namespace {

namespace fs = std::filesystem;
using apiserver::TlsMaterial;

class Auth : public testenv::KubeTest {
 protected:
  void SetUp() override {
    apiserver::TestApiServerOptions o;
    o.tls = true;
    o.tokens = {{"token-1", "controller"}};
    Start(o);
    char tmpl[] = "/tmp/fairbench-auth-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override {
    KubeTest::TearDown();
    fs::remove_all(dir_);
  }
  RestConfig Config() const {
    RestConfig c;
    c.server = server_->url();
    c.tls.ca_pem = server_->tls()->ca.cert_pem;
    c.timeout = std::chrono::milliseconds(5000);
    return c;
  }
  ApiResult<ObjectList> ListWith(RestConfig c, ClientOptions o = testenv::FastRetries()) {
    auto client = Client::Create(std::move(c), o);
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    if (!client.ok()) return ApiError{Reason::kUnknown, 0, client.status().message(), "", {}, {}};
    return (*client)->List(resources::Namespaces(), "");
  }
  std::string Write(const std::string& name, const std::string& text, fs::perms perms = fs::perms::owner_read |
                                                                                       fs::perms::owner_write) {
    std::string p = dir_ + "/" + name;
    std::ofstream(p) << text;
    fs::permissions(p, perms);
    return p;
  }
  std::string dir_;
};

TEST_F(Auth, ClientCertificateWithTheRightCa) {
  RestConfig c = Config();
  c.tls.client_cert_pem = server_->tls()->admin_client.cert_pem;
  c.tls.client_key_pem = server_->tls()->admin_client.key_pem;
  auto list = ListWith(c);
  ASSERT_TRUE(list.ok()) << list.error().ToString();
  EXPECT_GE(list->items.size(), 4u);
}

TEST_F(Auth, WrongCaFailsClearlyAndIsNotRetried) {
  auto other = TlsMaterial::Generate();
  ASSERT_TRUE(other.ok());
  RestConfig c = Config();
  c.tls.ca_pem = other->ca.cert_pem;
  c.credentials = std::make_shared<StaticToken>("token-1");
  FakeClock clock(FakeClock::Mode::kOnSleep);
  auto list = ListWith(c, testenv::FastRetries(&clock));
  ASSERT_EQ(list.reason(), Reason::kTls);
  EXPECT_NE(list.error().message.find("TLS with " + server_->url() + " failed"), std::string::npos)
      << list.error().message;
  EXPECT_NE(list.error().message.find("certificate"), std::string::npos);
  EXPECT_EQ(clock.slept(), std::chrono::nanoseconds(0));
}

TEST_F(Auth, InsecureSkipVerifyAndTlsServerName) {
  RestConfig insecure = Config();
  insecure.tls.ca_pem.clear();
  insecure.tls.insecure = true;
  insecure.credentials = std::make_shared<StaticToken>("token-1");
  EXPECT_TRUE(ListWith(insecure).ok());

  // The certificate names localhost; connect to 127.0.0.1 and verify that name.
  RestConfig named = Config();
  named.tls.server_name = "localhost";
  named.credentials = std::make_shared<StaticToken>("token-1");
  auto ok = ListWith(named);
  EXPECT_TRUE(ok.ok()) << ok.error().ToString();
  named.tls.server_name = "api.elsewhere.example";
  EXPECT_EQ(ListWith(named).reason(), Reason::kTls);
}

TEST_F(Auth, MissingOrWrongCredentialsAreUnauthorized) {
  EXPECT_EQ(ListWith(Config()).reason(), Reason::kUnauthorized);
  RestConfig wrong = Config();
  wrong.credentials = std::make_shared<StaticToken>("nope");
  auto r = ListWith(wrong);
  ASSERT_EQ(r.reason(), Reason::kUnauthorized);
  EXPECT_EQ(r.error().http_code, 401);
}

// Catches: the operator's tests unable to tell the controller's requests
// from kubectl's (kubectl sends no token over plain HTTP): with anonymous
// requests served, a token still names its user in the audit log, an
// unknown token is still refused (as kube-apiserver refuses it with
// --anonymous-auth), and each request is one audit event with the verb and
// resource RBAC sees.
TEST_F(Auth, AnonymousRequestsServedTokensNamedInTheAuditLog) {
  const std::string audit = dir_ + "/audit.log";
  apiserver::TestApiServerOptions o;
  o.tokens = {{"ctl-token", "system:serviceaccount:fb:ctl"}};
  o.groups = {{"system:serviceaccount:fb:ctl", {"system:serviceaccounts"}}};
  o.anonymous = true;
  o.audit_log = audit;
  Start(o);
  RestConfig anonymous;
  anonymous.server = server_->url();
  ASSERT_TRUE(ListWith(anonymous).ok());
  RestConfig controller = anonymous;
  controller.credentials = std::make_shared<StaticToken>("ctl-token");
  auto client = Client::Create(controller, testenv::FastRetries());
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->Get(resources::Pods(), "default", "p").reason() == Reason::kNotFound);
  RestConfig wrong = anonymous;
  wrong.credentials = std::make_shared<StaticToken>("nope");
  EXPECT_EQ(ListWith(wrong).reason(), Reason::kUnauthorized);

  std::ifstream in(audit);
  std::vector<Json> events;
  for (std::string line; std::getline(in, line);) events.push_back(Json::parse(line));
  ASSERT_GE(events.size(), 3u);  // the client tries a refused token twice
  EXPECT_EQ(events[0]["user"]["username"], "system:anonymous");
  EXPECT_EQ(events[0]["verb"], "list");
  EXPECT_EQ(events[0]["objectRef"]["resource"], "namespaces");
  EXPECT_EQ(events[1]["user"]["username"], "system:serviceaccount:fb:ctl");
  EXPECT_EQ(events[1]["user"]["groups"], (Json{"system:serviceaccounts", "system:authenticated"}));
  EXPECT_EQ(events[1]["verb"], "get");
  EXPECT_EQ(events[1]["objectRef"], (Json{{"resource", "pods"}, {"namespace", "default"}, {"name", "p"}, {"apiVersion", "v1"}}));
  EXPECT_EQ(events[1]["responseStatus"]["code"], 404);
  for (size_t i = 2; i < events.size(); ++i) EXPECT_EQ(events[i]["responseStatus"]["code"], 401);
}

TEST_F(Auth, RotatedTokenFileIsReadAgainAfterA401) {
  std::string path = Write("token", "token-1\n");
  FakeClock clock;
  auto source = std::make_shared<TokenFile>(path, clock);
  RestConfig c = Config();
  c.credentials = source;
  auto client = Client::Create(c, testenv::FastRetries());
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->List(resources::Namespaces(), "").ok());
  // The token rotates: the server only accepts the new one, the file has it.
  server_->SetTokens({{"token-2", "controller"}});
  Write("token", "token-2\n");
  auto after = (*client)->List(resources::Namespaces(), "");
  ASSERT_TRUE(after.ok()) << after.error().ToString();
  EXPECT_EQ(source->reads(), 2);
  // Without a 401 the file is re-read once a minute.
  Write("token", "token-3\n");
  server_->SetTokens({{"token-2", "controller"}, {"token-3", "controller"}});
  clock.Advance(std::chrono::seconds(61));
  ASSERT_TRUE((*client)->List(resources::Namespaces(), "").ok());
  EXPECT_EQ(source->reads(), 3);
}

TEST_F(Auth, ExecPluginRunsAgainAfterA401) {
  std::string state = Write("current", "token-1");
  std::string plugin = Write("plugin.sh",
                             "#!/bin/sh\nprintf '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                             "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"%s\"}}' \"$(cat " + state + ")\"\n",
                             fs::perms::owner_all);
  FakeClock clock;
  ExecConfig ec;
  ec.command = plugin;
  auto source = std::make_shared<ExecCredentialSource>(ec, clock);
  RestConfig c = Config();
  c.credentials = source;
  auto client = Client::Create(c, testenv::FastRetries());
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->List(resources::Namespaces(), "").ok());
  ASSERT_TRUE((*client)->List(resources::Namespaces(), "").ok());
  EXPECT_EQ(source->runs(), 1);  // cached
  server_->SetTokens({{"token-2", "controller"}});
  Write("current", "token-2");
  ASSERT_TRUE((*client)->List(resources::Namespaces(), "").ok());
  EXPECT_EQ(source->runs(), 2);
}

TEST_F(Auth, KubeconfigWrittenByTheServerWorks) {
  std::string with_cert = dir_ + "/cert.kubeconfig";
  ASSERT_TRUE(server_->WriteKubeconfig(with_cert).ok());
  std::string with_token = dir_ + "/token.kubeconfig";
  ASSERT_TRUE(server_->WriteKubeconfig(with_token, "token-1", "bench").ok());
  for (const auto& path : {with_cert, with_token}) {
    auto cfg = LoadKubeconfig({{path}, "", nullptr});
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    auto list = ListWith(*cfg);
    EXPECT_TRUE(list.ok()) << path << ": " << list.error().ToString();
  }
  EXPECT_EQ(LoadKubeconfig({{with_token}, "", nullptr})->default_namespace, "bench");
}

}  // namespace
}  // namespace fairbench::kube
