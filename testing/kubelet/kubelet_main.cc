// fairbench-test-kubelet: a kubelet for a machine without a cluster. Pods
// bound to its node run as local processes, or with --container-runtime
// docker as containers of their images (see kubelet.h, pod_worker.h,
// container_config.h).
//
//   fairbench-test-kubelet --kubeconfig FILE --node NAME --cpus 0-1 --memory 2Gi
//       [--cpu-manager-policy static --reserved-cpus 0]
//       --images images.yaml --pod-ip-base 127.0.5 --listen 127.0.0.1:0 --log-dir DIR
//
// Prints "listening on HOST:PORT" once the node is registered; exits 0 on
// SIGTERM or SIGINT after killing its pods' processes; 2 on bad flags; 1 when
// it cannot register.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <stdlib.h>
#include <sys/resource.h>

#include <spdlog/spdlog.h>

#include "common/signals.h"
#include "common/units.h"
#include "controller/kube/kubeconfig.h"
#include "testing/kubelet/kubelet.h"
#include "testing/kubelet/kubelet_http.h"

namespace {

namespace kl = fairbench::kubelet;

struct Flags {
  std::string kubeconfig, node, cpus_text, memory_text = "0", labels_text, taints_text, images_path;
  std::string ip_base = "127.0.1", listen = "127.0.0.1:0", log_dir, root_dir;
  std::string heartbeat_text = "3s", backoff_text = "10s", stats_period_text = "10s";
  int64_t max_pods = 110;
  bool no_cgroups = false;
  std::string runtime = "process";
  std::string docker_host = fairbench::docker::DefaultDockerHost();
  std::string cpu_policy = "none", reserved_text;
  std::string tls_cert, tls_key, proxy_kubeconfig, node_address, listen_netns;
};

void AddFlags(CLI::App& app, Flags* f) {
  app.add_option("--kubeconfig", f->kubeconfig, "kubeconfig of the API server")->required();
  app.add_option("--node", f->node, "node name")->required();
  app.add_option("--cpus", f->cpus_text, "the node's CPUs (0-1,3); capacity cpu = their count")->required();
  app.add_option("--cpu-manager-policy", f->cpu_policy,
                 "none: every container on --cpus; static: Guaranteed pods' integer-CPU containers get CPUs of "
                 "their own, the others the shared pool (the kubelet's cpuManagerPolicy)")
      ->check(CLI::IsMember({"none", "static"}));
  app.add_option("--reserved-cpus", f->reserved_text,
                 "static: CPUs of --cpus never given exclusively, not allocatable (the kubelet's reservedSystemCPUs)");
  app.add_option("--memory", f->memory_text, "memory capacity (bytes, or 2Gi); default: the machine's");
  app.add_option("--labels", f->labels_text, "node labels k=v,...");
  app.add_option("--taints", f->taints_text, "node taints key=value:Effect,...");
  app.add_option("--images", f->images_path, "YAML/JSON map image -> argv (required with --container-runtime process)");
  app.add_option("--container-runtime", f->runtime,
                 "process: containers as local processes from --images; docker: containers of their images "
                 "through the Docker engine")
      ->check(CLI::IsMember({"process", "docker"}));
  app.add_option("--docker-host", f->docker_host,
                 "the Docker engine (unix:///path; default $DOCKER_HOST, else /var/run/docker.sock)");
  app.add_option("--pod-ip-base", f->ip_base, "pods get <base>.1, <base>.2, ...");
  app.add_option("--listen", f->listen, "HOST:PORT of the kubelet endpoint (port 0: any)");
  app.add_option("--log-dir", f->log_dir, "container logs go here")->required();
  app.add_option("--root-dir", f->root_dir, "pod volumes go here (default: <log-dir>/kubelet)");
  app.add_option("--heartbeat", f->heartbeat_text, "node status and lease renewal period");
  app.add_option("--restart-backoff", f->backoff_text, "first restart back-off (doubles, up to 300s)");
  app.add_option(
      "--stats-period", f->stats_period_text,
      "how often container stats are collected; /stats/summary serves the last collection (0: every request)");
  app.add_option("--max-pods", f->max_pods, "pods capacity");
  app.add_option("--listen-netns", f->listen_netns,
                 "network namespace (a name under /run/netns, or a path) the endpoint listens in; --listen names an "
                 "address of that namespace, which becomes the Node's InternalIP");
  app.add_option("--node-address", f->node_address,
                 "the Node's InternalIP, where the API server reaches this kubelet (default: the --listen host when "
                 "a 127.x address or with --listen-netns, else 127.0.0.1)");
  app.add_option("--proxy-kubeconfig", f->proxy_kubeconfig,
                 "kubeconfig Services are resolved with (kube-proxy's identity); default: --kubeconfig's");
  app.add_option("--tls-cert-file", f->tls_cert,
                 "serving certificate (PEM): the endpoint speaks HTTPS, as a kubelet's does");
  app.add_option("--tls-private-key-file", f->tls_key, "its key (PEM)");
  app.add_flag("--no-cgroups", f->no_cgroups, "never create per-container cgroups");
}

// Says what is wrong on stderr; the exit code of a bad flag.
int Bad(const std::string& msg) {
  std::fprintf(stderr, "fairbench-test-kubelet: %s\n", msg.c_str());
  return 2;
}

// The node's CPUs and their manager, memory, labels and taints; 0, or the
// exit code.
int ConfigureNode(const Flags& f, kl::KubeletConfig* config, kl::NodeOptions* opts) {
  auto cpus = kl::ParseCpuList(f.cpus_text);
  if (!cpus.ok()) return Bad(cpus.status().message());
  config->cpus = *cpus;
  std::vector<int> reserved;
  if (!f.reserved_text.empty()) {
    auto r = kl::ParseCpuList(f.reserved_text);
    if (!r.ok()) return Bad("--reserved-cpus: " + r.status().message());
    reserved = *r;
  }
  auto manager = kl::CpuManager::Create(
      f.cpu_policy == "static" ? kl::CpuManagerPolicy::kStatic : kl::CpuManagerPolicy::kNone, config->cpus, reserved);
  if (!manager.ok()) return Bad(manager.status().message());
  config->cpu_manager = std::move(*manager);
  auto mem = fairbench::ParseBytes(f.memory_text);
  if (!mem.ok()) return Bad("--memory: " + mem.status().message());
  opts->memory_bytes = static_cast<int64_t>(*mem);
  if (opts->memory_bytes == 0) {
    // Default: the machine's memory, as a real kubelet reports it.
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    int64_t kib = 0;
    if (meminfo >> key >> kib && key == "MemTotal:") opts->memory_bytes = kib * 1024;
  }
  auto labels = kl::ParseLabels(f.labels_text);
  if (!labels.ok()) return Bad(labels.status().message());
  opts->labels = *labels;
  auto taints = kl::ParseTaints(f.taints_text);
  if (!taints.ok()) return Bad(taints.status().message());
  opts->taints = *taints;
  return 0;
}

// Containers as processes from the image map, or through the Docker
// engine (which must answer); 0, or the exit code.
int ConfigureRuntime(const Flags& f, kl::KubeletConfig* config) {
  if (f.runtime == "process") {
    if (f.images_path.empty()) return Bad("--images is required with --container-runtime process");
    auto images = kl::LoadImageMap(f.images_path);
    if (!images.ok()) return Bad(images.status().message());
    config->images = *images;
    return 0;
  }
  auto socket = fairbench::docker::SocketFromHost(f.docker_host);
  if (!socket.ok()) return Bad("--docker-host: " + socket.status().message());
  config->runtime = kl::ContainerRuntime::kDocker;
  config->docker = std::make_shared<fairbench::docker::DockerClient>(*socket);
  if (auto v = config->docker->Version(); !v.ok()) {
    std::fprintf(stderr, "fairbench-test-kubelet: %s\n", v.status().message().c_str());
    return 1;
  }
  // An engine cannot give a container more open files than the hard
  // limit it runs under; containerd's default is 1048576.
  rlimit nofile{};
  getrlimit(RLIMIT_NOFILE, &nofile);
  config->container_nofile = std::min<uint64_t>(1048576, nofile.rlim_max);
  return 0;
}

// Pod addresses, periods, limits and directories; 0, or the exit code.
int ConfigurePods(const Flags& f, kl::KubeletConfig* config, kl::NodeOptions* opts) {
  if (!std::regex_match(f.ip_base, std::regex(R"(127\.\d{1,3}\.\d{1,3})"))) {
    return Bad("--pod-ip-base must be 127.X.Y (loopback)");
  }
  opts->pod_ip_base = f.ip_base;
  auto hb = fairbench::ParseDuration(f.heartbeat_text);
  if (!hb.ok()) return Bad("--heartbeat: " + hb.status().message());
  opts->heartbeat = std::chrono::duration_cast<std::chrono::milliseconds>(*hb);
  auto backoff = fairbench::ParseDuration(f.backoff_text);
  if (!backoff.ok()) return Bad("--restart-backoff: " + backoff.status().message());
  config->restart_backoff = std::chrono::duration_cast<std::chrono::milliseconds>(*backoff);
  auto stats_period = fairbench::ParseDuration(f.stats_period_text);
  if (!stats_period.ok()) return Bad("--stats-period: " + stats_period.status().message());
  config->stats_period = std::chrono::duration_cast<std::chrono::milliseconds>(*stats_period);
  opts->max_pods = f.max_pods;
  config->cgroups = !f.no_cgroups;
  config->log_dir = std::filesystem::absolute(f.log_dir).string();
  config->root_dir = f.root_dir.empty() ? config->log_dir + "/kubelet" : std::filesystem::absolute(f.root_dir).string();
  return 0;
}

// --listen's HOST and PORT; 0, or the exit code.
int ParseListen(const std::string& listen, std::string* host, int* port) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return Bad("--listen must be HOST:PORT");
  *host = listen.substr(0, colon);
  try {
    *port = std::stoi(listen.substr(colon + 1));
  } catch (const std::exception&) {
    return Bad("--listen must be HOST:PORT");
  }
  return 0;
}

// Where pods find the API server: its CA for the service-account volume,
// its address for KUBERNETES_SERVICE_HOST/PORT.
void UseApiServer(const fairbench::kube::RestConfig& rest, kl::KubeletConfig* config) {
  config->api_ca_pem = rest.tls.ca_pem;
  std::smatch m;
  if (std::regex_match(rest.server, m, std::regex(R"(https?://\[?([^\]/]+?)\]?:(\d+)/?)"))) {
    config->api_host = m[1];
    config->api_port = std::stoi(m[2]);
  } else if (std::regex_match(rest.server, m, std::regex(R"(https://([^:/]+)/?)"))) {
    config->api_host = m[1];
    config->api_port = 443;
  }
}

// A client of the API server from `kubeconfig`, or a Status saying why not.
fairbench::Result<std::unique_ptr<fairbench::kube::Client>> ClientFrom(const std::string& kubeconfig,
                                                                       kl::KubeletConfig* config) {
  auto rest = fairbench::kube::LoadKubeconfig({{kubeconfig}, "", nullptr});
  if (!rest.ok()) return rest.status();
  if (config != nullptr) UseApiServer(*rest, config);
  rest->timeout = std::chrono::milliseconds(10000);
  return fairbench::kube::Client::Create(*rest);
}

// Registers the node, serves the kubelet endpoint until SIGTERM or SIGINT.
int Run(const Flags& f, kl::KubeletConfig config, kl::NodeOptions opts, const std::string& host, int port,
        fairbench::kube::Client& client, const fairbench::BlockedSignals& shutdown) {
  if (!f.listen_netns.empty() && config.node_address.empty()) config.node_address = host;
  config.listen_address = host;
  config.tls_cert_file = f.tls_cert.empty() ? "" : std::filesystem::absolute(f.tls_cert).string();
  config.tls_key_file = f.tls_key.empty() ? "" : std::filesystem::absolute(f.tls_key).string();
  auto http = kl::KubeletHttp::Bind(host, port, f.tls_cert, f.tls_key, f.listen_netns);
  if (!http.ok()) {
    std::fprintf(stderr, "fairbench-test-kubelet: %s\n", http.status().ToString().c_str());
    return 1;
  }
  opts.kubelet_port = (*http)->port();
  kl::Kubelet kubelet(config, opts, client);
  (*http)->Serve(kubelet);
  if (fairbench::Status s = kubelet.Start(); !s.ok()) {
    std::fprintf(stderr, "fairbench-test-kubelet: cannot register node %s: %s\n", f.node.c_str(), s.ToString().c_str());
    (*http)->Stop();
    return 1;
  }
  std::printf("listening on %s:%d\n", host.c_str(), opts.kubelet_port);
  std::fflush(stdout);
  shutdown.Wait();
  kubelet.Stop();
  (*http)->Stop();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Before any thread starts: only the wait at the end takes these.
  fairbench::BlockedSignals shutdown({SIGTERM, SIGINT});

  CLI::App app{"fairbench test kubelet: runs the pods bound to its node as local processes"};
  Flags f;
  AddFlags(app, &f);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  kl::KubeletConfig config;
  config.node_address = f.node_address;
  config.node_name = f.node;
  kl::NodeOptions opts;
  if (int rc = ConfigureNode(f, &config, &opts); rc != 0) return rc;
  if (int rc = ConfigureRuntime(f, &config); rc != 0) return rc;
  if (int rc = ConfigurePods(f, &config, &opts); rc != 0) return rc;
  std::string host;
  int port = 0;
  if (int rc = ParseListen(f.listen, &host, &port); rc != 0) return rc;

  // Containers inherit this process's environment (Process adds theirs on
  // top): start them as a container runtime would, from an image's usual
  // PATH only. No thread has started yet.
  clearenv();
  setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 1);
  // spdlog's registry and default logger are a function-local static inside
  // Debian's libspdlog, which is not instrumented: built here, before any
  // thread, every thread's logging is ordered after it for ThreadSanitizer
  // too (it cannot see the library's own initialisation guard; the
  // informer's and the heartbeat's first lines raced otherwise).
  spdlog::set_level(spdlog::level::info);

  // The node's InternalIP is where the API server reaches this kubelet.
  if (std::regex_match(host, std::regex(R"(127\.\d{1,3}\.\d{1,3}\.\d{1,3})"))) config.node_ip = host;

  auto client = ClientFrom(f.kubeconfig, &config);
  if (!client.ok()) return Bad(client.status().ToString());
  std::unique_ptr<fairbench::kube::Client> proxy_client;
  if (!f.proxy_kubeconfig.empty()) {
    auto c = ClientFrom(f.proxy_kubeconfig, nullptr);
    if (!c.ok()) return Bad(c.status().ToString());
    proxy_client = std::move(*c);
    config.service_client = proxy_client.get();
  }
  return Run(f, std::move(config), opts, host, port, **client, shutdown);
}
