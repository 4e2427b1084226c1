// PodWorker: one pod bound to the test kubelet's node, run for as long as
// the pod exists — as local processes, or as containers of their images
// through a Docker engine (KubeletConfig::runtime) — init containers in order, then
// the containers, restarts per restartPolicy with back-off, startup,
// liveness and readiness probes (exec, httpGet, tcpSocket, grpc), the pod
// status a real kubelet writes (through
// pods/{name}/status), and graceful deletion (SIGTERM, the grace period,
// SIGKILL, then DELETE with gracePeriodSeconds=0 and a uid precondition).
//
// Each worker owns a thread. Containers are forked from that thread and
// only from it: Process asks the kernel to SIGKILL a child when the thread
// that forked it ends, and the thread ends only after the containers did.
//
// Thread-safe: Update, Remove, Sample and LogFile may be called from any
// thread while the worker runs. The destructor kills what still runs.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <map>
#include <variant>
#include <vector>

#include "common/mutex.h"
#include "controller/kube/client.h"
#include "controller/kube/event_recorder.h"
#include "host/cgroup.h"
#include "host/docker_client.h"
#include "host/process.h"
#include "testing/kubelet/container_config.h"
#include "testing/kubelet/cpu_manager.h"
#include "testing/kubelet/pod_spec.h"
#include "testing/kubelet/service_proxy.h"

namespace fairbench::kubelet {

// How a pod's containers run: as local processes from the --images map, or
// as containers of their images through the Docker Engine API.
enum class ContainerRuntime { kProcess, kDocker };

struct KubeletConfig {
  std::string node_name;
  ContainerRuntime runtime = ContainerRuntime::kProcess;
  // kDocker: the engine; the file limit every container gets (the
  // kubelet's own hard limit: an engine cannot give more).
  std::shared_ptr<docker::DockerClient> docker;
  uint64_t container_nofile = 0;
  // What the service-account volume and the in-cluster environment need:
  // the API server's CA (ca.crt) and its address
  // (KUBERNETES_SERVICE_HOST/PORT, and kubernetes.default.svc in /etc/hosts).
  std::string api_ca_pem;
  std::string api_host;
  int api_port = 0;
  std::string node_ip = "127.0.0.1";  // hostIP, and a hostNetwork pod's IP
  // The Node's InternalIP: where the API server reaches this kubelet
  // (its node proxy, pods/log). "" = node_ip. kube-apiserver proxies to
  // no loopback address: on Kubernetes, an address of the nodes' network
  // namespace (scripts/kube).
  std::string node_address;
  std::vector<int> cpus;
  // Which CPUs each container runs on (--cpu-manager-policy); the Kubelet
  // makes a `none` one over `cpus` when this is null.
  std::shared_ptr<CpuManager> cpu_manager;
  // What /configz reports besides: the endpoint and its certificate.
  std::string listen_address;
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string log_dir;   // container logs: <log_dir>/pods/<ns>_<pod>_<uid>/<container>/<restart>.log
  std::string root_dir;  // emptyDir volumes: <root_dir>/pods/<uid>/volumes/kubernetes.io~empty-dir/<name>
  ImageMap images;
  std::chrono::milliseconds restart_backoff{10000};  // first CrashLoopBackOff delay; doubles up to 300 s
  std::chrono::milliseconds tick{50};
  bool cgroups = true;  // per-container cgroups where the machine allows
  // How often container stats are collected: between two collections the
  // Summary API serves the last one, its "time" unchanged (a real kubelet's
  // cAdvisor housekeeping: every 10 s by default). 0: on every request.
  std::chrono::milliseconds stats_period{10000};
  // What Services are resolved with (each pod's /etc/hosts names every
  // Service of its namespace with a ready pod's IP: the stand-in for
  // kube-proxy and cluster DNS, since EndpointSlices cannot hold loopback
  // addresses): a client with kube-proxy's identity on Kubernetes, where
  // the Node authorizer lets a kubelet list only its own pods; null: the
  // kubelet's own client.
  kube::Client* service_client = nullptr;
  // Where a Service whose port is not its targetPort is forwarded (the
  // Kubelet makes it).
  std::shared_ptr<ServiceProxy> service_proxy;
};

// One container's resource use at one moment.
struct ContainerStats {
  std::string name;
  std::chrono::system_clock::time_point start_time;
  std::chrono::system_clock::time_point time;
  uint64_t usage_core_nano_seconds = 0;
  std::optional<uint64_t> usage_nano_cores;  // needs an earlier sample
  uint64_t working_set_bytes = 0;
  uint64_t rss_bytes = 0;
  uint64_t usage_bytes = 0;
};

struct PodStats {
  std::string name;
  std::string ns;
  std::string uid;
  std::chrono::system_clock::time_point start_time;
  std::vector<ContainerStats> containers;
};

// Why a container's log cannot be served: HTTP code and message.
struct LogError {
  int code = 404;
  std::string message;
};

class PodWorker {
 public:
  // `pod_ip` empty: the pod is rejected (`reject_reason`/`reject_message`
  // become its Failed status) or was already terminal (`adopt_terminal`).
  struct Admission {
    std::string pod_ip;
    std::string reject_reason;
    std::string reject_message;
    bool adopt_terminal = false;
  };
  // `events` may be null (no Events recorded).
  PodWorker(const KubeletConfig& config, kube::Client& client, kube::EventRecorder* events, kube::Json pod,
            Admission admission);
  ~PodWorker();
  PodWorker(const PodWorker&) = delete;
  PodWorker& operator=(const PodWorker&) = delete;

  // The latest state of the pod from the API.
  void Update(kube::Json pod);
  // The pod is gone from the API: kill everything, no final delete.
  void Remove();
  bool finished() const;
  const std::string& uid() const { return uid_; }
  const std::string& pod_ip() const { return admission_.pod_ip; }
  // The pod's summed requests (admission); zero when it holds nothing.
  PodRequests requests() const;
  // The pod is over (terminal, rejected, or its containers killed for a
  // deletion): what it held (exclusive CPUs) may go to others.
  bool over() const;

  PodStats Sample();
  // The log file of the container's current (or previous) instance.
  std::variant<std::string, LogError> LogFile(const std::string& container, bool previous);
  // The pod as the kubelet's /pods lists it (spec from the API, status as written).
  kube::Json PodJson();

 private:
  struct Container;
  enum class Stage { kInit, kMain, kDone, kTerminating, kFinished };

  void Run(std::stop_token stop);
  // Queued under mu_, sent by Run without it: recording blocks on the API.
  void Event(bool warning, const std::string& reason, const std::string& message) REQUIRES(mu_);
  void FlushEvents() REQUIRES(mu_);
  void Tick() REQUIRES(mu_);
  void StartContainer(Container& c) REQUIRES(mu_);
  void OnExit(Container& c, const host::ExitInfo& exit);
  bool ShouldRestart(const Container& c) const REQUIRES(mu_);
  void BeginTermination() REQUIRES(mu_);
  void FinishTermination() REQUIRES(mu_);
  // Startup, liveness and readiness probes that are due: the startup probe
  // gates the others; a failed startup or liveness probe kills the container.
  void RunProbes() REQUIRES(mu_);
  // A container just started: its probes from initialDelaySeconds on.
  void ArmProbes(Container& c) REQUIRES(mu_);
  // The kubelet's kill of a container that failed its `kind` probe: the
  // Killing Event, the stop signal, SIGKILL after the grace period.
  void KillForProbe(Container& c, int kind) REQUIRES(mu_);
  // The CPUs a container runs on now (its own, or the shared pool).
  std::vector<int> ContainerCpus(const Container& c) const;
  // The shared pool changed: running containers are moved onto their CPUs
  // now (process mode: every thread of the container's processes; the
  // engine's CpusetCpus in docker mode).
  void ReconcileCpus() REQUIRES(mu_);
  kube::Json BuildStatus() REQUIRES(mu_);
  void WriteStatus() REQUIRES(mu_);
  Result<std::vector<std::pair<std::string, std::string>>> BuildEnv(const kube::Json& container) REQUIRES(mu_);
  // BuildEnv, or nullopt with the container left waiting (CreateContainerConfigError).
  std::optional<std::vector<std::pair<std::string, std::string>>> ContainerEnv(Container& c) REQUIRES(mu_);
  // The container runtime (container_runtime.cc): each container a container
  // of its image through the Docker engine.
  void StartDockerContainer(Container& c, const std::vector<std::pair<std::string, std::string>>& env) REQUIRES(mu_);
  // The volumes as host directories (container_runtime.cc): emptyDir,
  // secret, configMap, downwardAPI, projected (secret, configMap,
  // serviceAccountToken, downwardAPI sources) and, for containers of
  // images, the service-account token; Unavailable while a Secret or
  // ConfigMap is missing.
  Status PrepareVolumes() REQUIRES(mu_);
  // One volume's files from a Secret or ConfigMap (every key, or `items`).
  Status WriteObjectFiles(bool secret, const kube::Json& source, const std::string& volume, const std::string& dir,
                          int default_mode, int64_t fs_group) REQUIRES(mu_);
  // A downwardAPI volume's (or projected source's) items.
  Status WriteDownwardApiFiles(const kube::Json& source, const std::string& dir, int default_mode, int64_t fs_group)
      REQUIRES(mu_);
  Status WriteServiceAccountVolume(const std::string& dir) REQUIRES(mu_);
  // A TokenRequest for the pod's ServiceAccount, bound to the pod.
  Result<std::string> RequestToken(const std::string& audience, int64_t expiration_seconds) REQUIRES(mu_);
  // The pod's /etc/hosts: itself and the Services of its namespace, each
  // to a ready pod behind it. Rewritten in place when that changes.
  void RefreshHosts() REQUIRES(mu_);
  void PollDocker(Container& c);
  void OnDockerExit(Container& c, const kube::Json& state);
  void RemoveDockerContainers() REQUIRES(mu_);
  std::string VolumeDir(const kube::Json& volume) const;
  std::string PodDir() const;

  const KubeletConfig& config_;
  kube::Client& client_;
  kube::EventRecorder* const events_;
  const std::string uid_;
  const std::string name_;
  const std::string ns_;
  const Admission admission_;

  mutable Mutex mu_;
  CondVar wake_;
  kube::Json pod_ GUARDED_BY(mu_);
  bool removed_ GUARDED_BY(mu_) = false;
  Stage stage_ GUARDED_BY(mu_) = Stage::kInit;
  std::vector<std::unique_ptr<Container>> init_ GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Container>> main_ GUARDED_BY(mu_);
  size_t init_index_ GUARDED_BY(mu_) = 0;
  bool init_failed_ GUARDED_BY(mu_) = false;
  std::chrono::system_clock::time_point start_time_;
  std::chrono::steady_clock::time_point kill_deadline_ GUARDED_BY(mu_);
  kube::Json written_status_ GUARDED_BY(mu_);
  kube::Json last_status_ GUARDED_BY(mu_);
  std::map<std::string, std::pair<std::string, std::string>> transitions_ GUARDED_BY(mu_);  // type → (status, time)
  std::chrono::steady_clock::time_point next_write_attempt_ GUARDED_BY(mu_){};
  bool finished_ GUARDED_BY(mu_) = false;
  struct PendingEvent {
    bool warning;
    std::string reason;
    std::string message;
  };
  std::vector<PendingEvent> pending_events_ GUARDED_BY(mu_);
  // Volumes set up once; kDocker: the last /etc/hosts written and when it is next looked at.
  bool volumes_ready_ GUARDED_BY(mu_) = false;
  std::string hosts_text_ GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point next_hosts_refresh_ GUARDED_BY(mu_){};
  // The CPU manager's generation the containers were last pinned for.
  uint64_t cpu_generation_ GUARDED_BY(mu_) = 0;
  std::jthread thread_;
};

}  // namespace fairbench::kubelet
