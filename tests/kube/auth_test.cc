// KUBE-API.md §8: TLS, client certificates, tokens and their rotation, exec
// plugins, kubeconfig — against the real kube-apiserver over HTTPS (its CA,
// the administrator's client certificate, ServiceAccount tokens from the
// TokenRequest API, RBAC Roles for what a token may do, its audit log).
//
// A token the server refuses is one bound to a Secret that has been
// deleted: kube-apiserver refuses it at once if it never accepted it, but
// remembers a token it accepted for 10 s (its authentication cache). So the
// rotation tests hand the refused token to the credential source before
// any request (as if read before the rotation), not after a success.
#include <cstdlib>

#include <filesystem>
#include <fstream>
#include <set>

#include "common/base64.h"
#include "controller/kube/exec_credential.h"
#include "testing/kubetest/tls_material.h"
#include "tests/kube/kube_test_env.h"

namespace fairbench::kube {
namespace {

namespace fs = std::filesystem;
using kubetest::TlsMaterial;
using testenv::Eventually;

const ResourceType kServiceAccounts{"", "v1", "ServiceAccount", "serviceaccounts", Scope::kNamespaced};
const ResourceType kSelfSubjectReviews{"authentication.k8s.io", "v1", "SelfSubjectReview", "selfsubjectreviews",
                                       Scope::kCluster};
const ResourceType kTokenReviews{"authentication.k8s.io", "v1", "TokenReview", "tokenreviews", Scope::kCluster};
const ResourceType kRoles{"rbac.authorization.k8s.io", "v1", "Role", "roles", Scope::kNamespaced};
const ResourceType kRoleBindings{"rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", Scope::kNamespaced};

std::string FileText(const std::string& path) {
  auto text = ReadSmallFile(path);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : "";
}

class Auth : public testenv::KubeTest {
 protected:
  void SetUp() override {
    KubeTest::SetUp();
    if (HasFatalFailure()) return;
    char tmpl[] = "/tmp/fairbench-auth-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ca_pem_ = FileText(cluster_->pki("ca.crt"));
  }
  void TearDown() override {
    KubeTest::TearDown();
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  RestConfig Config() const {
    RestConfig c;
    c.server = cluster_->server();
    c.tls.ca_pem = ca_pem_;
    c.timeout = std::chrono::milliseconds(5000);
    return c;
  }
  std::unique_ptr<Client> ClientWith(RestConfig c, ClientOptions o = testenv::FastRetries()) {
    auto client = Client::Create(std::move(c), o);
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    return client.ok() ? std::move(*client) : nullptr;
  }
  ApiResult<ObjectList> ListWith(RestConfig c, ClientOptions o = testenv::FastRetries()) {
    auto client = ClientWith(std::move(c), o);
    if (!client) return ApiError{Reason::kUnknown, 0, "no client", "", {}, {}};
    return client->List(resources::Namespaces(), "");
  }
  // Who the server takes the client for (a SelfSubjectReview, which every
  // authenticated user may create).
  static ApiResult<std::string> WhoAmI(Client& client) {
    auto review = client.Create(kSelfSubjectReviews, "",
                                Json{{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "SelfSubjectReview"}});
    if (!review.ok()) return review.error();
    return (*review)["status"]["userInfo"].value("username", "");
  }
  ApiResult<std::string> WhoAmI(RestConfig c) {
    auto client = ClientWith(std::move(c));
    if (!client) return ApiError{Reason::kUnknown, 0, "no client", "", {}, {}};
    return WhoAmI(*client);
  }
  std::string User(const std::string& service_account) const {
    return "system:serviceaccount:" + ns() + ":" + service_account;
  }
  // A ServiceAccount of the test's namespace.
  void CreateServiceAccount(const std::string& name) {
    auto sa = client_->Create(kServiceAccounts, ns(),
                              Json{{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", name}}}});
    ASSERT_TRUE(sa.ok() || sa.reason() == Reason::kAlreadyExists) << sa.error().ToString();
  }
  // A token for the ServiceAccount from the TokenRequest API, bound to the
  // Secret `bound_secret` (created here) if one is named.
  std::string Token(const std::string& service_account, const std::string& bound_secret = "") {
    CreateServiceAccount(service_account);
    Json request = {{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "TokenRequest"}, {"spec", Json::object()}};
    if (!bound_secret.empty()) {
      auto secret =
          client_->Create(resources::Secrets(), ns(),
                          Json{{"apiVersion", "v1"}, {"kind", "Secret"}, {"metadata", {{"name", bound_secret}}}});
      EXPECT_TRUE(secret.ok()) << secret.error().ToString();
      if (!secret.ok()) return "";
      request["spec"]["boundObjectRef"] = {
          {"kind", "Secret"}, {"apiVersion", "v1"}, {"name", bound_secret}, {"uid", (*secret)["metadata"]["uid"]}};
    }
    auto token = client_->CreateSubresource(kServiceAccounts, ns(), service_account, "token", request);
    EXPECT_TRUE(token.ok()) << token.error().ToString();
    return token.ok() ? (*token)["status"].value("token", "") : "";
  }
  // A token the server no longer accepts: the Secret it is bound to is gone.
  // Returns once a TokenReview says so (the server's informer has seen the
  // deletion; a request that beat it would have been accepted).
  std::string RevokedToken(const std::string& service_account) {
    const std::string secret = service_account + "-bound";
    std::string token = Token(service_account, secret);
    EXPECT_TRUE(client_->Delete(resources::Secrets(), ns(), secret).ok());
    EXPECT_TRUE(Eventually(
        [&] {
          auto review = client_->Create(
              kTokenReviews, "",
              Json{{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "TokenReview"}, {"spec", {{"token", token}}}});
          return review.ok() && !(*review)["status"].value("authenticated", false);
        },
        std::chrono::seconds(20)))
        << "the token bound to the deleted Secret " << secret << " is still accepted";
    return token;
  }
  // A Role allowing `verbs` on core `resource` in the test's namespace,
  // bound to the ServiceAccount.
  void Allow(const std::string& service_account, const std::string& resource, const Json& verbs) {
    const std::string name = service_account + "-" + resource;
    auto role = client_->Create(kRoles, ns(),
                                Json{{"apiVersion", "rbac.authorization.k8s.io/v1"},
                                     {"kind", "Role"},
                                     {"metadata", {{"name", name}}},
                                     {"rules", {{{"apiGroups", {""}}, {"resources", {resource}}, {"verbs", verbs}}}}});
    ASSERT_TRUE(role.ok()) << role.error().ToString();
    auto binding = client_->Create(
        kRoleBindings, ns(),
        Json{{"apiVersion", "rbac.authorization.k8s.io/v1"},
             {"kind", "RoleBinding"},
             {"metadata", {{"name", name}}},
             {"subjects", {{{"kind", "ServiceAccount"}, {"name", service_account}, {"namespace", ns()}}}},
             {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", name}}}});
    ASSERT_TRUE(binding.ok()) << binding.error().ToString();
  }
  // The first request after a rotation: refused (401) with the old token,
  // sent again with the refreshed one, which the server takes for
  // `service_account` (RBAC's 403 names the user); then a SelfSubjectReview
  // confirms who the client is now.
  void ExpectRefreshedTo(Client& client, const std::string& service_account) {
    auto get = client.Get(resources::Pods(), ns(), "p");
    ASSERT_EQ(get.reason(), Reason::kForbidden) << (get.ok() ? "found" : get.error().ToString());
    EXPECT_NE(get.error().message.find("User \"" + User(service_account) + "\""), std::string::npos)
        << get.error().message;
    auto who = WhoAmI(client);
    ASSERT_TRUE(who.ok()) << who.error().ToString();
    EXPECT_EQ(*who, User(service_account));
  }
  std::string Write(const std::string& name, const std::string& text,
                    fs::perms perms = fs::perms::owner_read | fs::perms::owner_write) {
    std::string p = dir_ + "/" + name;
    std::ofstream(p) << text;
    fs::permissions(p, perms);
    return p;
  }
  std::string dir_;
  std::string ca_pem_;
};

// Catches: a client certificate not presented (the request would be
// anonymous and refused), or the configured CA not trusted.
TEST_F(Auth, ClientCertificateWithTheRightCa) {
  RestConfig c = Config();
  c.tls.client_cert_pem = FileText(cluster_->pki("admin.crt"));
  c.tls.client_key_pem = FileText(cluster_->pki("admin.key"));
  auto list = ListWith(c);
  ASSERT_TRUE(list.ok()) << list.error().ToString();
  std::set<std::string> names;
  for (const auto& n : list->items) names.insert(n["metadata"]["name"].get<std::string>());
  EXPECT_TRUE(names.count("kube-system"));
  EXPECT_TRUE(names.count(ns()));
  auto who = WhoAmI(c);
  ASSERT_TRUE(who.ok()) << who.error().ToString();
  EXPECT_EQ(*who, "kubernetes-admin");
}

// Catches: a TLS failure retried (it cannot heal) or reported without the
// server and the certificate problem.
TEST_F(Auth, WrongCaFailsClearlyAndIsNotRetried) {
  auto other = TlsMaterial::Generate();
  ASSERT_TRUE(other.ok());
  RestConfig c = Config();
  c.tls.ca_pem = other->ca.cert_pem;
  c.credentials = std::make_shared<StaticToken>("token-1");
  FakeClock clock(FakeClock::Mode::kOnSleep);
  auto list = ListWith(c, testenv::FastRetries(&clock));
  ASSERT_EQ(list.reason(), Reason::kTls);
  EXPECT_NE(list.error().message.find("TLS with " + cluster_->server() + " failed"), std::string::npos)
      << list.error().message;
  EXPECT_NE(list.error().message.find("certificate"), std::string::npos);
  EXPECT_EQ(clock.slept(), std::chrono::nanoseconds(0));
}

// Catches: insecure-skip-tls-verify not switching verification off, or
// tls-server-name not verifying the certificate for that name (the
// cluster's serving certificate names localhost and kubernetes.default.svc,
// not api.elsewhere.example).
TEST_F(Auth, InsecureSkipVerifyAndTlsServerName) {
  auto token = std::make_shared<StaticToken>(Token("reader"));
  RestConfig insecure = Config();
  insecure.tls.ca_pem.clear();
  insecure.tls.insecure = true;
  insecure.credentials = token;
  auto who = WhoAmI(insecure);
  ASSERT_TRUE(who.ok()) << who.error().ToString();
  EXPECT_EQ(*who, User("reader"));

  // Connect to 127.0.0.1 and verify another name the certificate has.
  RestConfig named = Config();
  named.credentials = token;
  for (const char* name : {"localhost", "kubernetes.default.svc"}) {
    named.tls.server_name = name;
    auto ok = WhoAmI(named);
    EXPECT_TRUE(ok.ok()) << name << ": " << ok.error().ToString();
  }
  named.tls.server_name = "api.elsewhere.example";
  EXPECT_EQ(WhoAmI(named).reason(), Reason::kTls);
}

// Catches: a request without credentials that is not anonymous (kube-apiserver
// serves anonymous requests and RBAC refuses them: 403), or an ApiError that
// confuses that 403 with the 401 of a token the server does not know.
TEST_F(Auth, MissingCredentialsAreAnonymousWrongOnesUnauthorized) {
  auto anonymous = ListWith(Config());
  ASSERT_EQ(anonymous.reason(), Reason::kForbidden) << (anonymous.ok() ? "listed" : anonymous.error().ToString());
  EXPECT_EQ(anonymous.error().http_code, 403);
  EXPECT_EQ(anonymous.error().message,
            "namespaces is forbidden: User \"system:anonymous\" cannot list resource \"namespaces\" in API group \"\" "
            "at the cluster scope");
  RestConfig wrong = Config();
  wrong.credentials = std::make_shared<StaticToken>("nope");
  auto r = ListWith(wrong);
  ASSERT_EQ(r.reason(), Reason::kUnauthorized);
  EXPECT_EQ(r.error().http_code, 401);
  EXPECT_EQ(r.error().message, "Unauthorized");
}

// Catches: a refusal of a request with a body lost as a transport error.
// kube-apiserver answers a POST it refuses (401, 403) before reading the
// body, then resets the HTTP/2 stream; libcurl then often reports
// "Transferred a partial file" after the status line (a third of the time
// here). The client must see the refusal every time: a lost 401 would never
// refresh the credentials, and a create cannot be retried blindly.
TEST_F(Auth, ARefusedPostIsAlwaysTheServersAnswer) {
  RestConfig wrong = Config();
  wrong.credentials = std::make_shared<StaticToken>("nope");
  ClientOptions once = testenv::FastRetries();
  once.max_attempts = 1;
  auto bad = ClientWith(wrong, once);
  auto anonymous = ClientWith(Config(), once);
  ASSERT_NE(bad, nullptr);
  ASSERT_NE(anonymous, nullptr);
  std::string big(64 * 1024, 'x');  // a body the server never reads
  for (int i = 0; i < 20; ++i) {
    const Json cm = testenv::ConfigMapJson("refused-" + std::to_string(i), {{"k", big}});
    auto r = bad->Create(resources::ConfigMaps(), ns(), cm);
    ASSERT_EQ(r.reason(), Reason::kUnauthorized) << i << ": " << (r.ok() ? "created" : r.error().ToString());
    auto a = anonymous->Create(resources::ConfigMaps(), ns(), cm);
    ASSERT_EQ(a.reason(), Reason::kForbidden) << i << ": " << (a.ok() ? "created" : a.error().ToString());
  }
}

// Catches: a client whose token does not reach the server on each request
// (the audit log would name system:anonymous), a user agent not sent, a
// refused token retried more than once after refreshing its credentials.
// The audit log (kube-apiserver's own, JSON lines) names each request's
// user, groups, verb and object.
TEST_F(Auth, TokensNameTheirUserInTheAuditLog) {
  const std::string audit = cluster_->audit_log();
  std::error_code ec;
  const auto start = fs::file_size(audit, ec);
  ASSERT_FALSE(ec) << audit << ": " << ec.message();
  RestConfig anonymous = Config();
  auto anonymous_client = ClientWith(anonymous);
  ASSERT_EQ(anonymous_client->Get(resources::Pods(), ns(), "p").reason(), Reason::kForbidden);

  RestConfig controller = Config();
  controller.credentials = std::make_shared<StaticToken>(Token("ctl"));
  Allow("ctl", "pods", {"get"});
  if (HasFatalFailure()) return;
  auto controller_client = ClientWith(controller);
  // RBAC takes the new binding a moment after it is written.
  ASSERT_TRUE(
      Eventually([&] { return controller_client->Get(resources::Pods(), ns(), "p").reason() == Reason::kNotFound; }));

  RestConfig wrong = Config();
  wrong.credentials = std::make_shared<StaticToken>("nope");
  EXPECT_EQ(ClientWith(wrong)->Get(resources::Pods(), ns(), "p").reason(), Reason::kUnauthorized);

  const std::string uri = "/api/v1/namespaces/" + ns() + "/pods/p";
  std::vector<Json> anonymous_events, controller_events, refused_events;
  auto read = [&] {
    anonymous_events.clear();
    controller_events.clear();
    refused_events.clear();
    std::ifstream in(audit);
    in.seekg(static_cast<std::streamoff>(start));
    for (std::string line; std::getline(in, line);) {
      if (line.find(uri) == std::string::npos) continue;
      Json e = Json::parse(line, nullptr, false);
      if (e.is_discarded() || e.value("requestURI", "") != uri) continue;
      const std::string user = e["user"].value("username", "");
      if (user == "system:anonymous") anonymous_events.push_back(e);
      if (user == User("ctl")) controller_events.push_back(e);
      if (e["responseStatus"].value("code", 0) == 401) refused_events.push_back(e);
    }
    return !anonymous_events.empty() && !controller_events.empty() &&
           controller_events.back()["responseStatus"].value("code", 0) == 404 && refused_events.size() >= 2;
  };
  // The audit event of a request may be written just after its answer.
  ASSERT_TRUE(Eventually(read, std::chrono::seconds(5)))
      << anonymous_events.size() << " anonymous, " << controller_events.size() << " controller, "
      << refused_events.size() << " refused events for " << uri;
  ASSERT_EQ(anonymous_events.size(), 1u);
  const Json& a = anonymous_events[0];
  EXPECT_EQ(a["user"]["groups"], (Json{"system:unauthenticated"}));
  EXPECT_EQ(a["verb"], "get");
  EXPECT_EQ(a["responseStatus"]["code"], 403);
  EXPECT_EQ(a["userAgent"], "fairbench-controller/0.1.0");

  const Json& c = controller_events.back();
  EXPECT_EQ(c["user"]["groups"],
            (Json{"system:serviceaccounts", "system:serviceaccounts:" + ns(), "system:authenticated"}));
  EXPECT_EQ(c["verb"], "get");
  EXPECT_EQ(c["objectRef"], (Json{{"resource", "pods"}, {"namespace", ns()}, {"name", "p"}, {"apiVersion", "v1"}}));
  EXPECT_EQ(c["responseStatus"]["code"], 404);
  // The refused token: tried, refreshed (a static token stays the same),
  // tried once more; the server knows no user for it.
  EXPECT_EQ(refused_events.size(), 2u);
  for (const auto& e : refused_events) EXPECT_FALSE(e["user"].contains("username")) << e.dump();
}

// Catches: a token file not read again after a 401 (the rotated token in
// the file never used), or read again on every request instead of once a
// minute.
TEST_F(Auth, RotatedTokenFileIsReadAgainAfterA401) {
  const std::string revoked = RevokedToken("first");
  const std::string second = Token("second");
  const std::string third = Token("third");
  std::string path = Write("token", revoked + "\n");
  FakeClock clock;
  auto source = std::make_shared<TokenFile>(path, clock);
  // Read before the rotation: the source holds the token now refused.
  auto held = source->Get();
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  EXPECT_EQ(held->token, revoked);
  EXPECT_EQ(source->reads(), 1);
  // The file has the new token; the server refuses the old one.
  Write("token", second + "\n");
  RestConfig c = Config();
  c.credentials = source;
  auto client = ClientWith(c);
  ASSERT_TRUE(client);
  ExpectRefreshedTo(*client, "second");
  EXPECT_EQ(source->reads(), 2);
  // Without a 401 the file is re-read once a minute.
  Write("token", third + "\n");
  auto who = WhoAmI(*client);
  ASSERT_TRUE(who.ok()) << who.error().ToString();
  EXPECT_EQ(*who, User("second"));
  EXPECT_EQ(source->reads(), 2);
  clock.Advance(std::chrono::seconds(61));
  who = WhoAmI(*client);
  ASSERT_TRUE(who.ok()) << who.error().ToString();
  EXPECT_EQ(*who, User("third"));
  EXPECT_EQ(source->reads(), 3);
}

// Catches: an exec plugin run on every request (its credential is cached
// until it expires) or not run again after a 401.
TEST_F(Auth, ExecPluginRunsAgainAfterA401) {
  const std::string revoked = RevokedToken("first");
  const std::string second = Token("second");
  std::string state = Write("current", revoked);
  std::string plugin = Write("plugin.sh",
                             "#!/bin/sh\nprintf '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                             "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"%s\"}}' \"$(cat " +
                                 state + ")\"\n",
                             fs::perms::owner_all);
  FakeClock clock;
  ExecConfig ec;
  ec.command = plugin;
  auto source = std::make_shared<ExecCredentialSource>(ec, clock);
  // Run before the rotation: the plugin's credential, cached, is the one now refused.
  auto held = source->Get();
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  EXPECT_EQ(held->token, revoked);
  ASSERT_TRUE(source->Get().ok());
  EXPECT_EQ(source->runs(), 1);  // cached
  Write("current", second);
  RestConfig c = Config();
  c.credentials = source;
  auto client = ClientWith(c);
  ASSERT_TRUE(client);
  ExpectRefreshedTo(*client, "second");
  EXPECT_EQ(source->runs(), 2);
  ASSERT_TRUE(WhoAmI(*client).ok());
  EXPECT_EQ(source->runs(), 2);  // cached again
}

// Catches: a kubeconfig the loader cannot use for the real cluster — the
// one scripts/kube writes (files), one with embedded *-data, one with a
// ServiceAccount token whose context namespace becomes the default
// namespace of the writes.
TEST_F(Auth, KubeconfigsForTheClusterWork) {
  const std::string server = cluster_->server();
  const std::string with_cert = Write("cert.kubeconfig",
                                      "apiVersion: v1\nkind: Config\ncurrent-context: admin\n"
                                      "clusters:\n- name: c\n  cluster:\n    server: " +
                                          server +
                                          "\n"
                                          "    certificate-authority: " +
                                          cluster_->pki("ca.crt") +
                                          "\n"
                                          "users:\n- name: admin\n  user:\n"
                                          "    client-certificate-data: " +
                                          Base64Encode(FileText(cluster_->pki("admin.crt"))) +
                                          "\n"
                                          "    client-key-data: " +
                                          Base64Encode(FileText(cluster_->pki("admin.key"))) +
                                          "\n"
                                          "contexts:\n- name: admin\n  context: {cluster: c, user: admin}\n");
  const std::string with_token =
      Write("token.kubeconfig",
            "apiVersion: v1\nkind: Config\ncurrent-context: bench\n"
            "clusters:\n- name: c\n  cluster:\n    server: " +
                server +
                "\n"
                "    certificate-authority-data: " +
                Base64Encode(ca_pem_) +
                "\n"
                "users:\n- name: bench\n  user:\n    token: " +
                Token("bench") +
                "\n"
                "contexts:\n- name: bench\n  context: {cluster: c, user: bench, namespace: " +
                ns() + "}\n");
  for (const auto& [path, user] :
       std::vector<std::pair<std::string, std::string>>{{cluster_->admin_kubeconfig(), "kubernetes-admin"},
                                                        {with_cert, "kubernetes-admin"},
                                                        {with_token, User("bench")}}) {
    auto cfg = LoadKubeconfig({{path}, "", nullptr});
    ASSERT_TRUE(cfg.ok()) << path << ": " << cfg.status().ToString();
    auto who = WhoAmI(*cfg);
    ASSERT_TRUE(who.ok()) << path << ": " << who.error().ToString();
    EXPECT_EQ(*who, user) << path;
  }
  auto cfg = LoadKubeconfig({{with_token}, "", nullptr});
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->default_namespace, ns());
  Allow("bench", "configmaps", {"create", "get"});
  if (HasFatalFailure()) return;
  auto bench = ClientWith(*cfg);
  ApiResult<Json> created = ApiError{};
  ASSERT_TRUE(Eventually([&] {
    created = bench->Create(resources::ConfigMaps(), "", testenv::ConfigMapJson("from-kubeconfig", {{"k", "v"}}));
    return created.ok();
  })) << created.error().ToString();
  EXPECT_EQ((*created)["metadata"]["namespace"], ns());
}

}  // namespace
}  // namespace fairbench::kube
