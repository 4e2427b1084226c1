// fairbench-test-apiserver: the test API server as a program, so that a
// person can point kubectl at it and a demo can run without a cluster.
//
//   fairbench-test-apiserver --listen 127.0.0.1:6443 --tls-dir /tmp/fb-tls
//       --token secret --write-kubeconfig /tmp/fb.kubeconfig
//   KUBECONFIG=/tmp/fb.kubeconfig kubectl get namespaces
//
// --token-auth-file takes kube-apiserver's static token file (one client
// identity per line); --audit-log writes kube-apiserver's audit events, one
// JSON line per request, naming each request's user. --faults injects the
// failures of a real API server (faults.h), e.g. for the controller alone:
//
//   --faults 'error=0.05,throttle=0.03,latency=50ms,watch-drop=0.2,expire=0.3,
//             user=system:serviceaccount:default:fairbench-controller,seed=7'
//
// and prints how many of each kind it injected when it stops.
//
// --authorization-mode RBAC decides every request from the Roles,
// ClusterRoles and bindings the server stores (authorization.h), starting
// from kube-apiserver's default policy; the admin client certificate (group
// system:masters) may do anything, a token user what its bindings grant
// (its groups from --token-auth-file). The default, AlwaysAllow, allows
// every authenticated request.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <optional>

#include "common/signals.h"
#include "testing/apiserver/test_apiserver.h"
#include "testing/apiserver/token_auth_file.h"

int main(int argc, char** argv) {
  using namespace fairbench::apiserver;
  CLI::App app{"fairbench test Kubernetes API server"};
  std::string listen = "127.0.0.1:6443";
  std::string tls_dir;
  std::vector<std::string> tokens;
  std::string token_file;
  std::string audit_log;
  std::string kubeconfig;
  size_t history = 10000;
  double bookmark_seconds = 10;
  double establish_seconds = 0;
  bool auto_pods = false;
  bool anonymous = false;
  std::string faults;
  std::string authorization_mode = "AlwaysAllow";
  app.add_option("--listen", listen, "host:port to listen on (port 0 = any free port)");
  app.add_option("--tls-dir", tls_dir, "serve HTTPS with certificates from (or generated into) this directory");
  app.add_option("--token", tokens, "accept this bearer token (repeatable)");
  app.add_option("--token-auth-file", token_file,
                 "accept the tokens of this file (kube-apiserver's format: token,user,uid,\"group1,group2\")");
  app.add_flag("--anonymous-auth", anonymous,
               "serve requests without credentials as system:anonymous (kubectl sends no token over plain HTTP)");
  app.add_option("--audit-log", audit_log, "append an audit.k8s.io/v1 Event per request to FILE (one JSON line each)");
  app.add_option("--write-kubeconfig", kubeconfig,
                 "write a kubeconfig for this server to FILE (with the first --token, else the token file's first)");
  app.add_option("--history", history, "watch history kept, in changes; older resource versions answer 410");
  app.add_option("--bookmark-interval", bookmark_seconds, "seconds between watch bookmarks");
  app.add_option("--crd-establish-delay", establish_seconds, "seconds before a new CRD is served");
  app.add_flag("--auto-finish-pods", auto_pods, "remove terminating pods when their grace period ends");
  app.add_option("--faults", faults,
                 "inject faults: error=RATE,throttle=RATE,retry-after=S,latency=D,latency-rate=RATE,watch-drop=RATE,"
                 "expire=RATE,timeout=RATE,codes=500+503+504,methods=GET+PUT,paths=/apis/x,user=NAME,watches=BOOL,"
                 "seed=N");
  app.add_option("--authorization-mode", authorization_mode,
                 "RBAC: authorize from the stored RBAC objects, as kube-apiserver does; AlwaysAllow: allow every "
                 "request")
      ->check(CLI::IsMember({"AlwaysAllow", "RBAC"}));
    CLI11_PARSE(app, argc, argv);
  std::optional<FaultConfig> fault_config;
  if (!faults.empty()) {
    auto parsed = FaultConfig::Parse(faults);
    if (!parsed.ok()) {
      std::cerr << "fairbench-test-apiserver: " << parsed.status().message() << "\n";
      return 2;
    }
    fault_config = *parsed;
  }

  size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    std::cerr << "fairbench-test-apiserver: --listen must be host:port\n";
    return 2;
  }
  TestApiServerOptions options;
  options.host = listen.substr(0, colon);
  if (options.host.size() > 2 && options.host.front() == '[') options.host = options.host.substr(1, options.host.size() - 2);
  options.port = std::atoi(listen.c_str() + colon + 1);
  options.tls = !tls_dir.empty();
  options.tls_dir = tls_dir;
  for (const auto& t : tokens) options.tokens[t] = "fairbench-token-user";
  if (!token_file.empty()) {
    auto users = fairbench::apiserver::ReadTokenAuthFile(token_file);
    if (!users.ok()) {
      std::cerr << "fairbench-test-apiserver: " << users.status().message() << "\n";
      return 2;
    }
    for (const auto& u : *users) {
      options.tokens[u.token] = u.name;
      options.groups[u.name] = u.groups;
      if (tokens.empty()) tokens.push_back(u.token);  // the kubeconfig's
    }
  }
  options.audit_log = audit_log;
  options.anonymous = anonymous;
  options.api.history_limit = history;
  options.api.bookmark_interval = std::chrono::milliseconds(static_cast<int64_t>(bookmark_seconds * 1000));
  options.api.crd_establish_delay = std::chrono::milliseconds(static_cast<int64_t>(establish_seconds * 1000));
  options.api.auto_finish_pod_termination = auto_pods;
  options.api.server_address = listen;
  options.api.authorization = *ParseAuthorizationMode(authorization_mode);

  // Block the signals before any thread starts so that only the wait below sees them.
  const fairbench::BlockedSignals signals({SIGINT, SIGTERM});

  auto server = TestApiServer::Start(options);
  if (!server.ok()) {
    std::cerr << "fairbench-test-apiserver: " << server.status().ToString() << "\n";
    return 1;
  }
  if (fault_config) {
    (*server)->api().faults().Configure(*fault_config);
    std::printf("fairbench-test-apiserver: injecting faults %s\n", fault_config->ToString().c_str());
  }
  if (!kubeconfig.empty()) {
    auto s = (*server)->WriteKubeconfig(kubeconfig, tokens.empty() ? "" : tokens.front());
    if (!s.ok()) {
      std::cerr << "fairbench-test-apiserver: " << s.ToString() << "\n";
      return 1;
    }
  }
  std::printf("fairbench-test-apiserver listening on %s\n", (*server)->url().c_str());
  std::fflush(stdout);
  signals.Wait();
  (*server)->Stop();
  if (fault_config) {
    std::printf("fairbench-test-apiserver: faults injected: %s\n",
                (*server)->api().faults().counts().ToString().c_str());
  }
  return 0;
}
