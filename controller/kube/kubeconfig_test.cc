// kubeconfig, in-cluster configuration, token files and exec plugins.
#include "controller/kube/kubeconfig.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "controller/kube/exec_credential.h"
#include "controller/kube/in_cluster_config.h"
#include "api/time_text.h"
#include "common/base64.h"
#include "testing/kubetest/tls_material.h"

namespace fairbench::kube {
namespace {

namespace fs = std::filesystem;
using fairbench::Base64Encode;
using kubetest::TlsMaterial;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/fairbench-kube-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string Write(const std::string& name, const std::string& text, mode_t mode = 0644) const {
    std::string p = path_ + "/" + name;
    fs::create_directories(fs::path(p).parent_path());
    std::ofstream(p) << text;
    chmod(p.c_str(), mode);
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

const TlsMaterial& Tls() {
  static TlsMaterial m = *TlsMaterial::Generate();
  return m;
}

TEST(Kubeconfig, MergesFilesFirstDefinitionWins) {
  TempDir d;
  auto a = d.Write("a", R"(
clusters:
- name: c
  cluster: {server: "https://first:6443"}
contexts:
- name: ctx
  context: {cluster: c, user: u, namespace: bench}
current-context: ctx
)");
  auto b = d.Write("b", R"(
clusters:
- name: c
  cluster: {server: "https://second:6443"}
users:
- name: u
  user: {token: tok}
current-context: other
)");
  auto cfg = LoadKubeconfig({{a, b}, "", nullptr});
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->server, "https://first:6443");
  EXPECT_EQ(cfg->default_namespace, "bench");
  ASSERT_TRUE(cfg->credentials);
  EXPECT_EQ(cfg->credentials->Get()->token, "tok");
}

TEST(Kubeconfig, KubeconfigEnvListSkipsMissingFiles) {
  TempDir d;
  auto a = d.Write("a",
                   "clusters:\n- name: c\n  cluster: {server: 'https://x:1'}\n"
                   "contexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n");
  setenv("KUBECONFIG", (d.path() + "/missing:" + a).c_str(), 1);
  auto cfg = LoadKubeconfig();
  unsetenv("KUBECONFIG");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->server, "https://x:1");
  EXPECT_EQ(cfg->default_namespace, "default");
}

TEST(Kubeconfig, RelativePathsResolveAgainstTheFileAndDataWins) {
  TempDir d;
  d.Write("sub/ca.crt", Tls().ca.cert_pem);
  d.Write("sub/client.crt", Tls().admin_client.cert_pem);
  d.Write("sub/client.key", Tls().admin_client.key_pem, 0600);
  auto path = d.Write("sub/config", R"(
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443", certificate-authority: ca.crt, tls-server-name: api.local}
users:
- name: u
  user:
    client-certificate: client.crt
    client-key: client.key
    client-key-data: )" + Base64Encode(Tls().admin_client.key_pem) +
                                        R"(
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
)");
  auto cfg = LoadKubeconfig({{path}, "", nullptr});
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->tls.ca_pem, Tls().ca.cert_pem);
  EXPECT_EQ(cfg->tls.client_cert_pem, Tls().admin_client.cert_pem);
  EXPECT_EQ(cfg->tls.server_name, "api.local");
}

TEST(Kubeconfig, ClearErrors) {
  TempDir d;
  auto base = std::string(R"(
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443"CLUSTER}
users:
- name: u
  user: {USER}
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
)");
  auto make = [&](const std::string& name, const std::string& cluster_extra, const std::string& user) {
    std::string t = base;
    t.replace(t.find("CLUSTER"), 7, cluster_extra);
    t.replace(t.find("USER"), 4, user);
    return d.Write(name, t);
  };
  auto missing_ctx = LoadKubeconfig({{make("ok", "", "token: t")}, "nope", nullptr});
  ASSERT_FALSE(missing_ctx.ok());
  EXPECT_NE(missing_ctx.status().message().find("context \"nope\" not found"), std::string::npos);

  auto unreadable =
      LoadKubeconfig({{make("ca", ", certificate-authority: /nonexistent/ca.crt", "token: t")}, "", nullptr});
  ASSERT_FALSE(unreadable.ok());
  EXPECT_NE(unreadable.status().message().find("/nonexistent/ca.crt"), std::string::npos);

  auto bad_cert = LoadKubeconfig({{make("cert", "",
                                        "client-certificate-data: " + Base64Encode("not a cert") +
                                            ", client-key-data: " + Base64Encode(Tls().admin_client.key_pem))},
                                  "",
                                  nullptr});
  ASSERT_FALSE(bad_cert.ok());
  EXPECT_NE(bad_cert.status().message().find("client-certificate: not a PEM certificate"), std::string::npos);

  auto wrong_key = LoadKubeconfig({{make("key", "",
                                         "client-certificate-data: " + Base64Encode(Tls().admin_client.cert_pem) +
                                             ", client-key-data: " + Base64Encode(Tls().server.key_pem))},
                                   "",
                                   nullptr});
  ASSERT_FALSE(wrong_key.ok());
  EXPECT_NE(wrong_key.status().message().find("does not match"), std::string::npos);

  auto insecure = LoadKubeconfig(
      {{make("insecure",
             ", insecure-skip-tls-verify: true, certificate-authority-data: " + Base64Encode(Tls().ca.cert_pem),
             "token: t")},
       "",
       nullptr});
  ASSERT_FALSE(insecure.ok());
  EXPECT_NE(insecure.status().message().find("insecure"), std::string::npos);

  auto none = LoadKubeconfig({{d.path() + "/absent"}, "", nullptr});
  EXPECT_FALSE(none.ok());

  // yaml-cpp would read the NUL as an escape and make a token of "t" and a
  // lone byte 0xA0; kubectl refuses control characters, and so does this.
  const std::string nul = make("nul", "", std::string("token: t\0_x", 11));
  auto control = LoadKubeconfig({{nul}, "", nullptr});
  ASSERT_FALSE(control.ok());
  EXPECT_EQ(control.status().message(),
            "kubeconfig " + nul +
                ":7:18: not valid YAML: control character U+0000 (YAML text holds only TAB, LF and "
                "CR raw; in a double-quoted string write it as \\x00)");
  auto latin1 = LoadKubeconfig({{make("latin1", "", "token: caf\xe9")}, "", nullptr});
  ASSERT_FALSE(latin1.ok());
  EXPECT_NE(latin1.status().message().find(":7:20: not valid YAML: not UTF-8 text"), std::string::npos)
      << latin1.status().message();
}

TEST(TokenFile, RereadEveryMinuteAndAfterA401) {
  TempDir d;
  auto path = d.Write("token", "first\n");
  FakeClock clock;
  TokenFile source(path, clock);
  EXPECT_EQ(source.Get()->token, "first");
  d.Write("token", "second");
  EXPECT_EQ(source.Get()->token, "first");  // cached
  clock.Advance(std::chrono::seconds(61));
  EXPECT_EQ(source.Get()->token, "second");
  d.Write("token", "third");
  source.Invalidate();
  EXPECT_EQ(source.Get()->token, "third");
  EXPECT_EQ(source.reads(), 3);
}

TEST(InClusterConfig, FromEnvironmentAndServiceAccountFiles) {
  TempDir d;
  d.Write("token", "sa-token");
  d.Write("ca.crt", Tls().ca.cert_pem);
  d.Write("namespace", "fairbench-system\n");
  setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  FakeClock clock;
  auto cfg = InClusterConfig({d.path(), &clock});
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->server, "https://[fd00::1]:443");
  EXPECT_EQ(cfg->default_namespace, "fairbench-system");
  EXPECT_EQ(cfg->credentials->Get()->token, "sa-token");
  auto outside = InClusterConfig({d.path(), &clock});
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.status().message().find("not running in a cluster"), std::string::npos);
}

// A plugin that counts its runs and reports KUBERNETES_EXEC_INFO.
std::string Plugin(const TempDir& d, const std::string& body) {
  return d.Write("plugin.sh", "#!/bin/sh\n" + body, 0755);
}

TEST(ExecCredential, CachesUntilExpiryAndRerunsAfterInvalidate) {
  TempDir d;
  FakeClock clock;
  std::string expiry = api::FormatTimeSeconds(clock.WallNow() + std::chrono::minutes(5));
  auto plugin = Plugin(d,
                       "n=$(cat \"$DIR/runs\" 2>/dev/null || echo 0); n=$((n+1)); echo $n > \"$DIR/runs\"\n"
                       "echo \"$KUBERNETES_EXEC_INFO\" > \"$DIR/info\"\n"
                       "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
                       "\"status\":{\"token\":\"tok-%s\",\"expirationTimestamp\":\"%s\"}}' $n \"$EXPIRY\"\n");
  ExecConfig cfg;
  cfg.command = plugin;
  cfg.env = {{"DIR", d.path()}, {"EXPIRY", expiry}};
  ExecCredentialSource source(cfg, clock);
  EXPECT_EQ(source.Get()->token, "tok-1");
  EXPECT_EQ(source.Get()->token, "tok-1");
  clock.Advance(std::chrono::minutes(6));
  EXPECT_EQ(source.Get()->token, "tok-2");
  source.Invalidate();
  EXPECT_EQ(source.Get()->token, "tok-3");
  EXPECT_EQ(source.runs(), 3);
  std::ifstream info(d.path() + "/info");
  std::string line;
  std::getline(info, line);
  EXPECT_NE(line.find("\"kind\":\"ExecCredential\""), std::string::npos);
  EXPECT_NE(line.find("\"interactive\":false"), std::string::npos);
}

TEST(ExecCredential, ErrorsAreClear) {
  TempDir d;
  FakeClock clock;
  ExecConfig cfg;
  cfg.command = Plugin(d, "echo 'token expired, run login' >&2; exit 3\n");
  auto failed = ExecCredentialSource(cfg, clock).Get();
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("exited with status 3"), std::string::npos);
  EXPECT_NE(failed.status().message().find("run login"), std::string::npos);

  auto wrong = ParseExecCredential(
      R"({"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"t"}})",
      "client.authentication.k8s.io/v1");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("v1beta1"), std::string::npos);
  EXPECT_FALSE(ParseExecCredential(R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential"})",
                                   "client.authentication.k8s.io/v1")
                   .ok());

  cfg.command = d.path() + "/does-not-exist";
  EXPECT_FALSE(ExecCredentialSource(cfg, clock).Get().ok());
  cfg.command = Plugin(d, "echo '{}'\n");
  cfg.interactive_mode = "Always";
  auto interactive = ExecCredentialSource(cfg, clock).Get();
  ASSERT_FALSE(interactive.ok());
  EXPECT_NE(interactive.status().message().find("interactive"), std::string::npos);
}

TEST(ExecCredential, ConfiguredFromKubeconfigWithClientCertificates) {
  TempDir d;
  d.Write("bin/plugin.sh",
          "#!/bin/sh\nprintf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
          "\"status\":{\"clientCertificateData\":\"%s\",\"clientKeyData\":\"%s\"}}' \"$CERT\" \"$KEY\"\n",
          0755);
  auto escape = [](std::string pem) {
    std::string out;
    for (char c : pem) out += c == '\n' ? std::string("\\n") : std::string(1, c);
    return out;
  };
  auto path = d.Write("config",
                      "clusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1'}\n"
                      "users:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
                      "      command: bin/plugin.sh\n      interactiveMode: Never\n      env:\n"
                      "      - {name: CERT, value: '" +
                          escape(Tls().admin_client.cert_pem) +
                          "'}\n"
                          "      - {name: KEY, value: '" +
                          escape(Tls().admin_client.key_pem) +
                          "'}\n"
                          "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n");
  auto cfg = LoadKubeconfig({{path}, "", nullptr});
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  auto creds = cfg->credentials->Get();
  ASSERT_TRUE(creds.ok()) << creds.status().ToString();
  EXPECT_EQ(creds->client_cert_pem, Tls().admin_client.cert_pem);
}

// Found by fuzz/kubeconfig_fuzzer: an entry with a name but without its
// inner map ("- name: k" with no "cluster:") made yaml-cpp throw out of
// LoadKubeconfig (an invalid node assigned), and so did a user that is not
// a map; the controller would have terminated. Now they are errors.
TEST(Kubeconfig, EntriesOfTheWrongShapeAreErrorsNotExceptions) {
  TempDir d;
  auto no_inner =
      d.Write("no-inner", "current-context: c\nclusters:\n- name: k\ncontexts:\n- name: c\n  context: {cluster: k}\n");
  auto cfg = LoadKubeconfig({{no_inner}, "", nullptr});
  ASSERT_FALSE(cfg.ok());
  EXPECT_NE(cfg.status().message().find("cluster \"k\" has no server"), std::string::npos) << cfg.status().message();

  auto scalar_user =
      d.Write("scalar-user",
              "current-context: c\nclusters:\n- {name: k, cluster: {server: 'https://x:1'}}\n"
              "contexts:\n- {name: c, context: {cluster: k, user: u}}\nusers:\n- {name: u, user: just-a-string}\n");
  cfg = LoadKubeconfig({{scalar_user}, "", nullptr});
  EXPECT_TRUE(cfg.ok()) << cfg.status().message();  // no credentials, like a user without fields
}

}  // namespace
}  // namespace fairbench::kube
