// The six images built from this repository, run for real in containers
// of the test engine: each as its numeric non-root user on a read-only root
// with every capability dropped (plus only the tmpfs its Dockerfile's
// comment names). The images are each Dockerfile's runtime stage with this
// build's binaries (the containers.images fixture: scripts/images
// --prebuilt), so the package lists, users, entrypoints and CMDs are the
// ones a from-source build gives.
#include <sys/stat.h>
#include <unistd.h>

#include <functional>
#include <regex>
#include <sstream>
#include <thread>

#include "host/http_probe.h"
#include "testing/support/bin_dir.h"
#include "testing/support/kube_cluster.h"
#include "testing/support/nginx_fixture.h"
#include "testing/support/subprocess.h"
#include "testing/support/ports.h"
#include "testing/support/temp_dir.h"
#include "tests/containers/docker_env.h"

namespace fairbench::containers {
namespace {

using namespace std::chrono_literals;

const std::vector<std::string> kLocked = {"--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges"};

std::vector<std::string> RunArgs(std::vector<std::string> extra, const std::string& image,
                                 std::vector<std::string> args) {
  std::vector<std::string> a = {"run", "--rm"};
  a.insert(a.end(), kLocked.begin(), kLocked.end());
  a.insert(a.end(), extra.begin(), extra.end());
  a.push_back(image);
  a.insert(a.end(), args.begin(), args.end());
  return a;
}

// The image's configured user, and that it is numeric and not root.
// Catches: a USER line dropped or made a name (runAsNonRoot cannot check a
// name), an image left running as root.
TEST(ImagesRun, EveryImageHasANumericNonRootUser) {
  FAIRBENCH_NEED_ENGINE();
  for (const std::string name :
       {"fairbench-controller", "fairbench-agent", "fairbench-target-beast", "fairbench-target-cpp-httplib-debian",
        "fairbench-target-nginx", "fairbench-target-grpc"}) {
    const nlohmann::json image = Inspect(Image(name));
    ASSERT_TRUE(image.is_object()) << Image(name) << " was not built (containers.images)";
    EXPECT_EQ(image["Config"]["User"], "65532:65532") << name;
    EXPECT_EQ(image["Config"]["Labels"]["org.opencontainers.image.title"], name);
  }
}

// `--help` of the controller and the agent, in a locked-down container with
// no network. Catches: a missing runtime library (the loader fails before
// main), a wrong ENTRYPOINT path.
TEST(ImagesRun, TheControllerAndTheAgentAnswerHelp) {
  FAIRBENCH_NEED_ENGINE();
  auto c = Docker(RunArgs({"--network", "none"}, Image("fairbench-controller"), {"--help"}));
  EXPECT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("--agent-image"), std::string::npos) << c.out;
  auto a = Docker(RunArgs({"--network", "none"}, Image("fairbench-agent"), {"--help"}));
  EXPECT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE((a.out + a.err).find("load"), std::string::npos) << a.out;
}

// The agent image loads a real nginx on the host's loopback and prints its
// summary; the count it prints is checked against nginx's own access log.
// Catches: the agent unable to open sockets under --cap-drop ALL or to
// write on a read-only root, a summary that miscounts.
TEST(ImagesRun, TheAgentImageLoadsNginxOnTheHostsLoopback) {
  FAIRBENCH_NEED_ENGINE();
  testing::NginxFixture nginx;
  ASSERT_TRUE(nginx.Start().ok());
  const std::string url = "http://127.0.0.1:" + std::to_string(nginx.port()) + "/";
  auto r = Docker(RunArgs({"--network", "host"}, Image("fairbench-agent"), {"load", url, "-t1", "-c4", "-d2s"}), 60s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"((\d+) requests in [0-9.]+s)"))) << r.out;
  const uint64_t printed = std::stoull(m[1]);
  EXPECT_NE(r.out.find("Requests/sec:"), std::string::npos) << r.out;
  auto log = nginx.StopAndReadAccessLog();
  ASSERT_TRUE(log.ok()) << log.status().message();
  ASSERT_GT(printed, 100u);
  // nginx also served the responses drained after the end (at most one per
  // connection), which the summary does not count.
  EXPECT_GE(log->size(), printed);
  EXPECT_LE(log->size(), printed + 4) << "the agent's count and nginx's disagree";
}

struct TargetImage {
  std::string name;
  std::vector<std::string> extra;  // what its Dockerfile's comment says it needs
};

// Each target image serves the study's four endpoints, as its own user.
// Catches: an endpoint missing or answering another body, a server that
// needs a writable root (nginx outside /tmp), a server running as root.
TEST(ImagesRun, EachTargetImageServesTheFourEndpointsAsItsUser) {
  FAIRBENCH_NEED_ENGINE();
  for (const TargetImage& t :
       {TargetImage{"fairbench-target-beast", {}}, TargetImage{"fairbench-target-cpp-httplib-debian", {}},
        TargetImage{"fairbench-target-nginx", {"--tmpfs", "/tmp"}}}) {
    SCOPED_TRACE(t.name);
    auto port = testing::FreeLoopbackPort();
    ASSERT_TRUE(port.ok());
    const std::string name = "fairbench-images-test-" + std::to_string(getpid()) + "-" + t.name;
    std::vector<std::string> args = {"run", "-d", "--name", name, "--network", "host"};
    args.insert(args.end(), kLocked.begin(), kLocked.end());
    args.insert(args.end(), t.extra.begin(), t.extra.end());
    args.insert(args.end(), {Image(t.name), "--host", "127.0.0.1", "--port", std::to_string(*port), "--threads", "1"});
    auto started = Docker(args);
    ASSERT_EQ(started.exit_code, 0) << started.err;
    ASSERT_TRUE(testing::WaitForPort("127.0.0.1", *port, 20s).ok()) << Docker({"logs", name}).err;
    auto get = [&](const std::string& method, const std::string& path, const std::string& body) {
      host::ProbeRequest r;
      r.host = "127.0.0.1";
      r.port = *port;
      r.method = method;
      r.path = path;
      r.body = body;
      if (!body.empty()) r.headers = {{"Content-Type", "application/json"}};
      return host::HttpProbe(r);
    };
    auto hello = get("GET", "/", "");
    ASSERT_TRUE(hello.ok()) << hello.status().message();
    EXPECT_EQ(hello->status, 200);
    EXPECT_EQ(hello->body, "Hello, World!");
    auto status = get("GET", "/api/status", "");
    ASSERT_TRUE(status.ok());
    EXPECT_EQ(status->status, 200);
    EXPECT_EQ(status->content_type.rfind("application/json", 0), 0u) << status->content_type;
    const std::string body = R"({"name":"Alice","age":30,"email":"alice@example.com"})";
    auto echo = get("POST", "/api/echo", body);
    ASSERT_TRUE(echo.ok());
    EXPECT_EQ(echo->status, 200);
    EXPECT_EQ(nlohmann::json::parse(echo->body, nullptr, false), nlohmann::json::parse(body));
    auto user = get("GET", "/users/42", "");
    ASSERT_TRUE(user.ok());
    EXPECT_EQ(user->status, 200);
    EXPECT_NE(user->body.find("42"), std::string::npos) << user->body;
    // The server process's real user, as the kernel sees it.
    const nlohmann::json inspect = Inspect(name);
    const int pid = inspect["State"]["Pid"].get<int>();
    const std::string proc = ReadFile("/proc/" + std::to_string(pid) + "/status");
    EXPECT_NE(proc.find("\nUid:\t65532\t65532\t65532\t65532\n"), std::string::npos) << proc;
    EXPECT_NE(proc.find("\nCapEff:\t0000000000000000\n"), std::string::npos) << proc;
    EXPECT_TRUE(inspect["HostConfig"]["ReadonlyRootfs"].get<bool>());
    Docker({"rm", "-f", name});
  }
}

// The gRPC target image serves fairbench.echo.v1.Echo as its user, loaded
// by this build's agent from the host with --grpc; every call counted OK.
// Catches: a gRPC library missing from the runtime stage, a wrong
// ENTRYPOINT, a server that needs a writable root or runs as root.
TEST(ImagesRun, TheGrpcTargetImageServesEchoAsItsUser) {
  FAIRBENCH_NEED_ENGINE();
  auto port = testing::FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  const std::string name = "fairbench-images-test-" + std::to_string(getpid()) + "-grpc";
  std::vector<std::string> args = {"run", "-d", "--name", name, "--network", "host"};
  args.insert(args.end(), kLocked.begin(), kLocked.end());
  args.insert(args.end(), {Image("fairbench-target-grpc"), "--host", "127.0.0.1", "--port", std::to_string(*port),
                           "--api", "sync", "--threads", "1"});
  auto started = Docker(args);
  ASSERT_EQ(started.exit_code, 0) << started.err;
  ASSERT_TRUE(testing::WaitForPort("127.0.0.1", *port, 20s).ok()) << Docker({"logs", name}).err;
  auto dir = testing::TempDir::Create("fairbench-grpc-image");
  ASSERT_TRUE(dir.ok());
  const std::string json = (dir->path() / "out.json").string();
  testing::SubprocessOptions o;
  o.argv = {testing::BinaryPath("fairbench-agent"),
            "load",
            "--grpc",
            "fairbench.echo.v1.Echo/Unary",
            "http://127.0.0.1:" + std::to_string(*port),
            "-t1",
            "-c2",
            "--streams",
            "4",
            "-d1s",
            "--json",
            json};
  o.stdout_to = testing::Redirect::File((dir->path() / "out").string());
  o.stderr_to = testing::Redirect::File((dir->path() / "err").string());
  auto p = testing::Subprocess::Start(o);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto status = p->Wait(60s);
  ASSERT_TRUE(status.ok() && status->exited && status->exit_code == 0) << ReadFile((dir->path() / "err").string());
  const nlohmann::json d = nlohmann::json::parse(ReadFile(json));
  EXPECT_GT(d["requests"].get<uint64_t>(), 100u);
  EXPECT_EQ(d["grpc"]["status"]["OK"].get<uint64_t>(), d["requests"].get<uint64_t>());
  const nlohmann::json inspect = Inspect(name);
  const int pid = inspect["State"]["Pid"].get<int>();
  const std::string proc = ReadFile("/proc/" + std::to_string(pid) + "/status");
  EXPECT_NE(proc.find("\nUid:\t65532\t65532\t65532\t65532\n"), std::string::npos) << proc;
  EXPECT_TRUE(inspect["HostConfig"]["ReadonlyRootfs"].get<bool>());
  Docker({"rm", "-f", name});
}

// fairbench-nofile, installed from the agent image into a folder (as a
// target pod's init container does), raises RLIMIT_NOFILE in a target
// container up to the container's hard limit, and fails with one line
// above it (raising the hard limit needs CAP_SYS_RESOURCE, dropped here).
// Catches: the helper not static (it would not run in another image), the
// soft limit left alone, a silent success below the limit asked for.
TEST(ImagesRun, TheNofileHelperRaisesTheLimitInATargetContainer) {
  FAIRBENCH_NEED_ENGINE();
  auto dir = testing::TempDir::Create("fairbench-nofile-helper");
  ASSERT_TRUE(dir.ok());
  chmod(dir->path().c_str(), 0777);  // the agent image's user writes into it
  const std::string mount = dir->path().string() + ":/helper";
  auto install = Docker(RunArgs({"--network", "none", "-v", mount, "--entrypoint", "/usr/local/bin/fairbench-nofile"},
                                Image("fairbench-agent"), {"--install", "/helper/fairbench-nofile"}));
  ASSERT_EQ(install.exit_code, 0) << install.err;
  const std::vector<std::string> target = {"--network",    "none",
                                           "-v",           mount + ":ro",
                                           "--ulimit",     "nofile=1024:4096",
                                           "--entrypoint", "/helper/fairbench-nofile"};
  auto raised =
      Docker(RunArgs(target, Image("fairbench-target-beast"), {"--nofile=4096", "--", "cat", "/proc/self/limits"}));
  ASSERT_EQ(raised.exit_code, 0) << raised.err;
  EXPECT_TRUE(std::regex_search(raised.out, std::regex(R"(Max open files\s+4096\s+4096\s+files)"))) << raised.out;
  EXPECT_NE(raised.err.find("fairbench-nofile: nofile 4096"), std::string::npos) << raised.err;

  auto refused = Docker(RunArgs(target, Image("fairbench-target-beast"), {"--nofile=8192", "--", "true"}));
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
  EXPECT_NE(refused.err.find("8192"), std::string::npos) << refused.err;
}

// The controller image runs fairbench-controller in-cluster: only the files
// a kubelet mounts for a service account (token, ca.crt, namespace under
// /var/run/secrets/kubernetes.io/serviceaccount) and KUBERNETES_SERVICE_*,
// against Kubernetes' own API server (the shared cluster, on the host's
// loopback: the container shares the host network) over TLS, as the chart's
// ServiceAccount with the chart's RBAC (a token the TokenRequest API
// issued), as the image's user on a read-only root; a BenchmarkRun applied
// with kubectl is reconciled to Queued (its Event) and taken up.
// Catches: the in-cluster configuration not read from the mounted files
// (the controller would find no kubeconfig and exit), a CA not trusted, a
// controller that needs a writable root, an image whose controller asks
// the API for more than the chart grants (its Event or status would be
// forbidden).
TEST(ImagesRun, TheControllerImageReconcilesARunWithAServiceAccountsFiles) {
  FAIRBENCH_NEED_ENGINE();
  auto cluster = testing::SharedKubeCluster();
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  const testing::KubeCluster& kube_cluster = **cluster;
  auto test_ns = testing::TestNamespace::Create(kube_cluster, "controller-image");
  ASSERT_TRUE(test_ns.ok()) << test_ns.status().ToString();
  const std::string ns = test_ns->name();
  const std::string kubectl = kube_cluster.kubectl();
  auto dir = testing::TempDir::Create("fairbench-controller-image");
  ASSERT_TRUE(dir.ok());
  const std::filesystem::path root = dir->path();
  auto kc = [&](const std::vector<std::string>& args) {
    std::vector<std::string> a = {"--kubeconfig", kube_cluster.admin_kubeconfig()};
    a.insert(a.end(), args.begin(), args.end());
    auto r = kube::RunCommand(kubectl, a, {{"HOME", root.string()}, {"KUBECONFIG", ""}}, 60s);
    return r.ok() ? *r : kube::CommandResult{-1, "", r.status().message()};
  };
  // The product CRD (other tests of the shared cluster apply it too).
  const Status crd = testing::InstallProductCrd(kube_cluster);
  ASSERT_TRUE(crd.ok()) << crd.ToString();

  // The chart's identity for an installation in `ns`: its ServiceAccount,
  // Roles, ClusterRoles and bindings (helm template), applied; removed at
  // the end (the ClusterRoles and their bindings are cluster-scoped, named
  // after the namespace).
  auto rendered = kube::RunCommand(kube_cluster.bin_dir() + "/helm",
                                   {"template", "fairbench", (kRoot / "charts/fairbench").string(), "--namespace", ns},
                                   {{"HOME", root.string()}}, 60s);
  ASSERT_TRUE(rendered.ok() && rendered->exit_code == 0)
      << (rendered.ok() ? rendered->err : rendered.status().message());
  const std::string identity = testing::ChartIdentityObjects(rendered->out);
  const std::string identity_file = (root / "identity.yaml").string();
  std::ofstream(identity_file) << identity;
  auto applied = kc({"apply", "-f", identity_file});
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  struct RemoveIdentity {
    std::function<void()> f;
    ~RemoveIdentity() { f(); }
  } remove_identity{[&] { kc({"delete", "-f", identity_file, "--ignore-not-found", "--wait=false"}); }};
  auto token = kc({"create", "token", "fairbench-controller", "-n", ns, "--duration", "1h"});
  ASSERT_EQ(token.exit_code, 0) << token.err;
  std::smatch m;
  const std::string server = kube_cluster.server();
  ASSERT_TRUE(std::regex_match(server, m, std::regex(R"(https://127\.0\.0\.1:(\d+))"))) << server;
  const std::string port = m[1];

  // What a kubelet mounts for the pod's service account, readable by 65532.
  const std::filesystem::path sa = root / "serviceaccount";
  std::filesystem::create_directories(sa);
  std::ofstream(sa / "token") << Trim(token.out);
  std::filesystem::copy_file(kube_cluster.pki("ca.crt"), sa / "ca.crt");
  std::ofstream(sa / "namespace") << ns;
  for (const char* f : {"token", "ca.crt", "namespace"}) chmod((sa / f).c_str(), 0644);
  chmod(sa.c_str(), 0755);
  chmod(root.c_str(), 0755);

  auto agent_port = testing::FreeLoopbackPort();
  auto metrics_port = testing::FreeLoopbackPort();
  ASSERT_TRUE(agent_port.ok() && metrics_port.ok());
  const std::string name = "fairbench-controller-image-test-" + std::to_string(getpid());
  std::vector<std::string> args = {"run", "-d", "--name", name, "--network", "host"};
  args.insert(args.end(), kLocked.begin(), kLocked.end());
  args.insert(args.end(), {"-v", sa.string() + ":/var/run/secrets/kubernetes.io/serviceaccount:ro", "-e",
                           "KUBERNETES_SERVICE_HOST=127.0.0.1", "-e", "KUBERNETES_SERVICE_PORT=" + port,
                           Image("fairbench-controller"), "--identity", "image-test", "--namespace", ns,
                           "--pod-namespace", ns, "--agent-listen", "127.0.0.1:" + std::to_string(*agent_port),
                           "--agent-address", "127.0.0.1:" + std::to_string(*agent_port), "--metrics-address",
                           "127.0.0.1:" + std::to_string(*metrics_port)});
  auto started = Docker(args);
  ASSERT_EQ(started.exit_code, 0) << started.err;

  const std::string run =
      "apiVersion: fairbench.dev/v1alpha1\nkind: BenchmarkRun\nmetadata: {name: image-test, namespace: " + ns +
      "}\n"
      "spec:\n  targets:\n  - name: a\n    image: example.org/target:1\n  scenarios:\n  - name: hello\n"
      "    request: {path: /}\n";
  std::ofstream(root / "run.yaml") << run;
  auto created = kc({"apply", "-f", (root / "run.yaml").string()});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  // The run is queued at its first reconcile and, with no node it may use
  // here (the shared cluster's test nodes are tainted for their own
  // tests' pods), goes on at once: the controller's Event "Queued"
  // (written through the API with the service account's token) and the
  // status it wrote say so.
  bool queued = false;
  std::string phase, reasons;
  for (int i = 0; i < 300 && !queued; ++i) {
    phase = kc({"get", "benchmarkrun", "image-test", "-n", ns, "-o", "jsonpath={.status.phase}"}).out;
    reasons = kc({"get", "events", "-n", ns, "-o", "jsonpath={.items[*].reason}"}).out;
    queued = !phase.empty() && reasons.find("Queued") != std::string::npos;
    if (!queued) std::this_thread::sleep_for(100ms);
  }
  const auto logs = Docker({"logs", name});
  EXPECT_TRUE(queued) << "phase '" << phase << "', events " << reasons << "; the controller's log:\n"
                      << logs.out << logs.err;
  const nlohmann::json inspect = Inspect(name);
  EXPECT_TRUE(inspect["State"]["Running"].get<bool>()) << logs.err;
  Docker({"rm", "-f", name});
}

}  // namespace
}  // namespace fairbench::containers
