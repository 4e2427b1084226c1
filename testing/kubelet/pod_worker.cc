#include "testing/kubelet/pod_worker.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sched.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <random>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "common/base64.h"
#include "common/mutex.h"
#include "host/grpc_probe.h"
#include "host/http_probe.h"
#include "host/container_cgroup.h"
#include "api/time_text.h"
#include "testing/kubelet/pod_worker_container.h"
#include "common/json_read.h"

namespace fairbench::kubelet {

using kube::Json;

namespace {

namespace jr = json_read;

std::string RandomHex(size_t n) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* kDigits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) s.push_back(kDigits[rng() % 16]);
  return s;
}

// A tcpSocket probe: "" once a connection is established, else why not
// in the words of Go's dialer, as the kubelet's Unhealthy Event has them
// ("dial tcp 127.0.0.1:80: connect: connection refused").
std::string TcpConnectError(const std::string& host, int port, std::chrono::milliseconds timeout) {
  const std::string what = "dial tcp " + host + ":" + std::to_string(port);
  auto syscall_error = [&](int err) {
    std::string text = std::strerror(err);
    if (!text.empty()) text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
    return what + ": connect: " + text;
  };
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return syscall_error(errno);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  std::string error;
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    error = what + ": invalid address";
  } else if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno != EINPROGRESS) {
      error = syscall_error(errno);
    } else {
      pollfd p{fd, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof err;
      if (poll(&p, 1, static_cast<int>(timeout.count())) != 1) {
        error = what + ": i/o timeout";
      } else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
        error = syscall_error(err);
      }
    }
  }
  close(fd);
  return error;
}

// The three probes of a container, in the order the kubelet gates them:
// the startup probe first, then liveness and readiness.
enum ProbeKind { kStartupProbe = 0, kLivenessProbe = 1, kReadinessProbe = 2 };
constexpr const char* kProbeField[] = {"startupProbe", "livenessProbe", "readinessProbe"};
constexpr const char* kProbeName[] = {"Startup", "Liveness", "Readiness"};
constexpr const char* kProbeWord[] = {"startup", "liveness", "readiness"};

constexpr uint64_t kNofile = 1048576;  // containerd's default RLIMIT_NOFILE
constexpr auto kMaxBackoff = std::chrono::seconds(300);

}  // namespace

PodWorker::PodWorker(const KubeletConfig& config, kube::Client& client, kube::EventRecorder* events, Json pod,
                     Admission admission)
    : config_(config),
      client_(client),
      events_(events),
      uid_(jr::String(pod["metadata"], "uid")),
      name_(jr::String(pod["metadata"], "name")),
      ns_(jr::String(pod["metadata"], "namespace")),
      admission_(std::move(admission)),
      pod_(std::move(pod)),
      start_time_(SysClock::now()) {
  const Json spec = pod_.value("spec", Json::object());
  for (const char* list : {"initContainers", "containers"}) {
    if (!spec.contains(list) || !spec[list].is_array()) continue;
    for (const Json& cs : spec[list]) {
      auto c = std::make_unique<Container>();
      c->spec = cs;
      c->init = std::string(list) == "initContainers";
      c->name = jr::String(cs, "name");
      c->image = jr::String(cs, "image");
      if (!c->init && !init_.empty()) c->waiting_reason = "PodInitializing";
      (c->init ? init_ : main_).push_back(std::move(c));
    }
  }
  if (admission_.adopt_terminal) {
    stage_ = Stage::kDone;
  } else if (!admission_.reject_reason.empty()) {
    stage_ = Stage::kDone;
    // The kubelet's rejectPod: a Warning of the reason, then the status.
    MutexLock lock(mu_);
    std::string message = admission_.reject_message;
    if (const std::string prefix = "Pod was rejected: "; message.rfind(prefix, 0) == 0) message.erase(0, prefix.size());
    Event(true, admission_.reject_reason, message);
  } else {
    stage_ = init_.empty() ? Stage::kMain : Stage::kInit;
    // The volumes are set up on the worker's thread, when the first
    // container starts (Secrets and ConfigMaps are read then).
  }
  thread_ = std::jthread([this](std::stop_token st) { Run(st); });
}

PodWorker::~PodWorker() {
  Remove();
  thread_.request_stop();
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void PodWorker::Update(Json pod) {
  MutexLock lock(mu_);
  pod_ = std::move(pod);
  wake_.notify_all();
}

void PodWorker::Remove() {
  MutexLock lock(mu_);
  removed_ = true;
  wake_.notify_all();
}

bool PodWorker::finished() const {
  MutexLock lock(mu_);
  return finished_;
}

bool PodWorker::over() const {
  MutexLock lock(mu_);
  return finished_ || stage_ == Stage::kDone || stage_ == Stage::kFinished || admission_.pod_ip.empty();
}

std::vector<int> PodWorker::ContainerCpus(const Container& c) const {
  return config_.cpu_manager ? config_.cpu_manager->ContainerCpus(uid_, c.name) : config_.cpus;
}

namespace {

// Every thread of every process of the tree onto `cpus`; threads and
// processes that end meanwhile are skipped.
void PinProcessTree(pid_t root, const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  for (pid_t pid : host::ProcessTreePids(root)) {
    const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
    DIR* dir = opendir(tasks.c_str());
    if (dir == nullptr) continue;
    while (dirent* d = readdir(dir)) {
      char* end = nullptr;
      const long tid = std::strtol(d->d_name, &end, 10);
      if (*end != '\0' || tid <= 0) continue;
      (void)sched_setaffinity(static_cast<pid_t>(tid), sizeof set, &set);
    }
    closedir(dir);
  }
}

}  // namespace

void PodWorker::ReconcileCpus() {
  if (!config_.cpu_manager) return;
  const uint64_t generation = config_.cpu_manager->generation();
  if (generation == cpu_generation_) return;
  cpu_generation_ = generation;
  for (auto* list : {&init_, &main_}) {
    for (auto& cp : *list) {
      Container& c = *cp;
      if (c.state != Container::State::kRunning) continue;
      const std::vector<int> cpus = ContainerCpus(c);
      if (cpus == c.cpus) continue;
      if (!c.docker_id.empty()) {
        const Json update = {{"CpusetCpus", FormatCpuList(cpus)}};
        auto r = config_.docker->Do("POST", "/containers/" + c.docker_id + "/update", update.dump(),
                                    std::chrono::seconds(10));
        if (!r.ok() || r->status / 100 != 2) {
          cpu_generation_ = 0;  // tried again on the next tick
          continue;
        }
      } else if (c.process) {
        PinProcessTree(c.process->pid(), cpus);
      }
      c.cpus = cpus;
    }
  }
}

PodRequests PodWorker::requests() const {
  MutexLock lock(mu_);
  if (stage_ == Stage::kDone || stage_ == Stage::kFinished || admission_.pod_ip.empty()) return {};
  return ComputeRequests(pod_.value("spec", Json::object()));
}

namespace {

using EnvList = std::vector<std::pair<std::string, std::string>>;

// What a pod's downward API fields (fieldRef) resolve to.
struct PodFields {
  std::string name, ns, uid, pod_ip, node_ip;
};

// One container's environment as the kubelet builds it: envFrom first,
// then env in order ($(VAR) in a value expands what came before it).
// Secrets and ConfigMaps are read once per container start.
class EnvBuilder {
 public:
  EnvBuilder(kube::Client& client, Json& pod, PodFields fields, size_t node_cpus)
      : client_(client), pod_(pod), fields_(std::move(fields)), node_cpus_(node_cpus) {}

  Result<EnvList> Build(const Json& container) {
    EnvList env;
    if (container.contains("envFrom") && container["envFrom"].is_array()) {
      for (const Json& from : container["envFrom"]) {
        if (Status s = AddEnvFrom(from, env); !s.ok()) return s;
      }
    }
    if (container.contains("env") && container["env"].is_array()) {
      for (const Json& e : container["env"]) {
        if (Status s = AddEnv(e, container, env); !s.ok()) return s;
      }
    }
    return env;
  }

 private:
  std::optional<std::string> Field(const std::string& path) {
    const Json& md = pod_["metadata"];
    const Json spec = pod_.value("spec", Json::object());
    if (path == "metadata.name") return fields_.name;
    if (path == "metadata.namespace") return fields_.ns;
    if (path == "metadata.uid") return fields_.uid;
    if (path == "spec.nodeName") return jr::String(spec, "nodeName");
    if (path == "spec.serviceAccountName") return jr::String(spec, "serviceAccountName");
    if (path == "status.podIP" || path == "status.podIPs") return fields_.pod_ip;
    if (path == "status.hostIP" || path == "status.hostIPs") return fields_.node_ip;
    for (const char* map : {"labels", "annotations"}) {
      const std::string prefix = std::string("metadata.") + map + "['";
      if (path.rfind(prefix, 0) == 0 && path.size() > prefix.size() + 2 && path.substr(path.size() - 2) == "']") {
        const std::string key = path.substr(prefix.size(), path.size() - prefix.size() - 2);
        const Json m = md.value(map, Json::object());
        return jr::String(m, key.c_str());
      }
    }
    return std::nullopt;
  }

  std::optional<Json> Object(bool secret, const std::string& oname) {
    const std::string key = (secret ? "s/" : "c/") + oname;
    if (auto it = fetched_.find(key); it != fetched_.end()) return it->second;
    const kube::ResourceType r = secret ? kube::resources::Secrets() : kube::resources::ConfigMaps();
    auto got = client_.Get(r, fields_.ns, oname);
    if (!got.ok()) return std::nullopt;
    fetched_[key] = *got;
    return *got;
  }

  // A Secret's key decoded (data, else stringData), a ConfigMap's as it is
  // (data, else binaryData decoded).
  static std::optional<std::string> DataValue(bool secret, const Json& obj, const std::string& key) {
    const Json data = obj.value("data", Json::object());
    if (!data.contains(key) || !data[key].is_string()) {
      const Json bin = obj.value("binaryData", Json::object());
      if (!secret && bin.contains(key) && bin[key].is_string()) {
        auto d = Base64Decode(bin[key].get<std::string>());
        if (d.ok()) return *d;
      }
      if (secret) {
        const Json sd = obj.value("stringData", Json::object());
        if (sd.contains(key) && sd[key].is_string()) return sd[key].get<std::string>();
      }
      return std::nullopt;
    }
    if (!secret) return data[key].get<std::string>();
    auto d = Base64Decode(data[key].get<std::string>());
    if (!d.ok()) return std::nullopt;
    return *d;
  }

  // Every key of a Secret or ConfigMap, named with the prefix.
  Status AddEnvFrom(const Json& from, EnvList& env) {
    const std::string prefix = jr::String(from, "prefix");
    const bool secret = from.contains("secretRef");
    const Json ref = secret ? from["secretRef"] : from.value("configMapRef", Json::object());
    const std::string oname = jr::String(ref, "name");
    auto obj = Object(secret, oname);
    if (!obj) {
      if (ref.value("optional", false)) return Status::Ok();
      return Status::NotFound(std::string(secret ? "secret" : "configmap") + " \"" + oname + "\" not found");
    }
    for (const char* dk : {"data", "binaryData", "stringData"}) {
      const Json keys = obj->value(dk, Json::object());  // named: items() would outlive a temporary
      for (const auto& [k, unused] : keys.items()) {
        (void)unused;
        auto v = DataValue(secret, *obj, k);
        if (v) env.emplace_back(prefix + k, *v);
      }
    }
    return Status::Ok();
  }

  // One entry of env: a value, or one from a field, a key of a Secret or
  // ConfigMap (skipped when optional and missing), or a resource.
  Status AddEnv(const Json& e, const Json& container, EnvList& env) {
    const std::string ename = jr::String(e, "name");
    if (e.contains("value")) {
      env.emplace_back(ename, ExpandWith(jr::String(e, "value"), env));
      return Status::Ok();
    }
    if (!e.contains("valueFrom")) {
      env.emplace_back(ename, "");
      return Status::Ok();
    }
    const Json& from = e["valueFrom"];
    if (from.contains("fieldRef")) {
      const std::string path = jr::String(from["fieldRef"], "fieldPath");
      auto v = Field(path);
      if (!v) return Status::InvalidArgument("unsupported fieldRef \"" + path + "\"");
      env.emplace_back(ename, *v);
    } else if (from.contains("secretKeyRef") || from.contains("configMapKeyRef")) {
      const bool secret = from.contains("secretKeyRef");
      const Json ref = secret ? from["secretKeyRef"] : from["configMapKeyRef"];
      const std::string oname = jr::String(ref, "name");
      const std::string key = jr::String(ref, "key");
      const bool optional = ref.value("optional", false);
      auto obj = Object(secret, oname);
      if (!obj) {
        if (optional) return Status::Ok();
        return Status::NotFound(std::string(secret ? "secret" : "configmap") + " \"" + oname + "\" not found");
      }
      auto v = DataValue(secret, *obj, key);
      if (!v) {
        if (optional) return Status::Ok();
        return Status::NotFound("couldn't find key " + key + " in " + (secret ? "Secret " : "ConfigMap ") + fields_.ns +
                                "/" + oname);
      }
      env.emplace_back(ename, *v);
    } else if (from.contains("resourceFieldRef")) {
      env.emplace_back(ename, ResourceValue(from["resourceFieldRef"], container));
    } else {
      env.emplace_back(ename, "");
    }
    return Status::Ok();
  }

  // requests.cpu, limits.memory, ...: whole cores rounded up, bytes; a cpu
  // limit not set is the node's CPUs.
  std::string ResourceValue(const Json& ref, const Json& container) const {
    const std::string res = jr::String(ref, "resource");
    const Json resources = container.value("resources", Json::object());
    const std::string kind = res.substr(0, res.find('.'));
    const std::string what = res.substr(res.find('.') + 1);
    const Json m = resources.value(kind, Json::object());
    std::string v;
    if (m.contains(what)) {
      const std::string q = m[what].is_string() ? m[what].get<std::string>() : m[what].dump();
      if (what == "cpu") {
        auto milli = ParseCpuMillis(q);
        // The divisor defaults to 1 core; the value is rounded up.
        if (milli.ok()) v = std::to_string((*milli + 999) / 1000);
      } else {
        auto b = ParseMemoryBytes(q);
        if (b.ok()) v = std::to_string(*b);
      }
    } else if (what == "cpu") {
      v = std::to_string(node_cpus_);
    }
    return v;
  }

  kube::Client& client_;
  Json& pod_;
  const PodFields fields_;
  const size_t node_cpus_;
  std::map<std::string, Json> fetched_;
};

}  // namespace

Result<std::vector<std::pair<std::string, std::string>>> PodWorker::BuildEnv(const Json& container) {
  EnvBuilder builder(client_, pod_, {name_, ns_, uid_, admission_.pod_ip, config_.node_ip}, config_.cpus.size());
  return builder.Build(container);
}

std::optional<std::vector<std::pair<std::string, std::string>>> PodWorker::ContainerEnv(Container& c) {
  auto env = BuildEnv(c.spec);
  if (env.ok()) return std::move(*env);
  // A Secret or ConfigMap missing: the kubelet's CreateContainerConfigError, tried again.
  c.state = Container::State::kWaiting;
  c.waiting_reason = "CreateContainerConfigError";
  c.waiting_message = env.status().message();
  Event(true, "Failed", "Error: " + c.waiting_message);
  c.restart_at = Clock::now() + std::chrono::seconds(1);
  return std::nullopt;
}

namespace {

// Volume mounts: the mount path, where it appears in argv, env and the
// working directory, becomes the volume's host directory (`volume_dir`).
EnvList HostMounts(const Json& pod, const Json& container, const std::function<std::string(const Json&)>& volume_dir) {
  EnvList mounts;
  std::map<std::string, Json> volumes;
  for (const Json& v : pod.value("spec", Json::object()).value("volumes", Json::array())) {
    volumes[jr::String(v, "name")] = v;
  }
  for (const Json& vm : container.value("volumeMounts", Json::array())) {
    auto v = volumes.find(jr::String(vm, "name"));
    if (v == volumes.end()) continue;
    const std::string dir = volume_dir(v->second);
    if (dir.empty() || !std::filesystem::exists(dir)) continue;  // kinds this kubelet does not set up
    std::string host = dir;
    if (!jr::String(vm, "subPath").empty()) {
      host = dir + "/" + jr::String(vm, "subPath");
      if (v->second.contains("emptyDir")) {
        std::error_code ec;
        std::filesystem::create_directories(host, ec);
      }
    }
    mounts.emplace_back(jr::String(vm, "mountPath"), host);
  }
  return mounts;
}

// The container's command, environment (HOSTNAME first) and working
// directory as a process runs them, mount paths made host paths.
host::ProcessOptions ProcessOptionsFor(const ImageEntry& image, const Json& container, const EnvList& env,
                                       const EnvList& mounts, const std::string& hostname) {
  EnvList full_env = {{"HOSTNAME", hostname}};
  for (auto& [k, v] : env) full_env.emplace_back(k, SubstituteMounts(v, mounts));
  host::ProcessOptions po;
  for (const std::string& a : ComposeArgv(image, container)) {
    po.argv.push_back(SubstituteMounts(ExpandWith(a, env), mounts));
  }
  for (const auto& [k, v] : full_env) po.env[k] = v;
  po.working_dir = SubstituteMounts(jr::String(container, "workingDir"), mounts);
  return po;
}

// resources.limits of the container: memory in bytes, cpu in millicores.
void ResourceLimits(const Json& container, std::optional<int64_t>* memory, std::optional<int64_t>* cpu) {
  const Json limits = container.value("resources", Json::object()).value("limits", Json::object());
  if (limits.contains("memory")) {
    auto b =
        ParseMemoryBytes(limits["memory"].is_string() ? limits["memory"].get<std::string>() : limits["memory"].dump());
    if (b.ok()) *memory = *b;
  }
  if (limits.contains("cpu")) {
    auto m = ParseCpuMillis(limits["cpu"].is_string() ? limits["cpu"].get<std::string>() : limits["cpu"].dump());
    if (m.ok()) *cpu = *m;
  }
}

}  // namespace

void PodWorker::StartContainer(Container& c) {
  c.ready = false;
  c.started = false;
  c.probe_kill_at.reset();
  if (!volumes_ready_) {
    if (Status s = PrepareVolumes(); !s.ok()) {
      // As a kubelet: the pod waits in ContainerCreating until the volume
      // can be set up (a Secret created later), with a FailedMount Event.
      c.state = Container::State::kWaiting;
      c.waiting_reason = "ContainerCreating";
      c.waiting_message.clear();
      if (c.restart_at == Clock::time_point{} || Clock::now() >= c.restart_at + std::chrono::seconds(10)) {
        Event(true, "FailedMount", s.message());
      }
      c.restart_at = Clock::now() + std::chrono::seconds(1);
      return;
    }
    volumes_ready_ = true;
  }
  if (config_.runtime == ContainerRuntime::kDocker) {
    if (auto env = ContainerEnv(c)) StartDockerContainer(c, *env);
    return;
  }
  auto image = config_.images.find(c.image);
  if (image == config_.images.end()) {
    c.state = Container::State::kWaiting;
    c.waiting_reason = "ErrImagePull";
    c.waiting_message = "image \"" + c.image + "\" is not in the test kubelet's image map";
    Event(true, "Failed", "Failed to pull image \"" + c.image + "\": " + c.waiting_message);
    c.restart_at = Clock::now() + config_.restart_backoff;
    return;
  }
  auto env = ContainerEnv(c);
  if (!env) return;
  const EnvList mounts = HostMounts(pod_, c.spec, [this](const Json& v) { return VolumeDir(v); });
  host::ProcessOptions po = ProcessOptionsFor(image->second, c.spec, *env, mounts, name_);
  c.cpus = ContainerCpus(c);
  po.cpus = c.cpus;
  po.nofile = kNofile;
  const std::string dir = config_.log_dir + "/pods/" + ns_ + "_" + name_ + "_" + uid_ + "/" + c.name;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!c.log_path.empty()) c.previous_log_path = c.log_path;
  c.log_path = dir + "/" + std::to_string(c.restart_count) + ".log";
  std::filesystem::remove(c.log_path, ec);
  po.log_file = c.log_path;
  c.cgroup.reset();
  if (config_.cgroups) {
    std::optional<int64_t> mem;
    std::optional<int64_t> cpu;
    ResourceLimits(c.spec, &mem, &cpu);
    auto cg = host::TargetCgroup::Create(
        "kubelet-" + config_.node_name + "-" + uid_.substr(0, 8) + "-" + c.name + "-" + std::to_string(c.restart_count),
        mem, cpu);
    if (cg.ok()) {
      c.cgroup = std::move(*cg);
      po.cgroup_procs = c.cgroup->procs_files();
    }
  }
  c.container_id = "fairbench://" + RandomHex(64);
  c.started_at = SysClock::now();
  c.last_cpu.reset();
  c.last_stats.reset();
  Event(false, "Pulled", "Container image \"" + c.image + "\" already present on machine");
  Event(false, "Created", "Created container " + c.name);
  auto p = host::Process::Start(po);
  if (!p.ok()) {
    Event(true, "Failed", "Error: failed to start container \"" + c.name + "\": " + p.status().message());
    c.process.reset();
    c.state = Container::State::kTerminated;
    c.exit_code = 128;
    c.signal = 0;
    c.term_reason = "StartError";
    c.term_message = p.status().message();
    c.finished_at = SysClock::now();
    c.ever_started = true;
    return;
  }
  c.process = std::move(*p);
  Event(false, "Started", "Started container " + c.name);
  c.state = Container::State::kRunning;
  c.ever_started = true;
  c.waiting_reason.clear();
  c.waiting_message.clear();
  ArmProbes(c);
}

void PodWorker::ArmProbes(Container& c) {
  const auto now = Clock::now();
  for (int kind = 0; kind < 3; ++kind) {
    const Json probe = c.spec.value(kProbeField[kind], Json::object());
    c.probes[kind] = {};
    c.probes[kind].next = now + std::chrono::seconds(probe.is_object() ? probe.value("initialDelaySeconds", 0) : 0);
  }
  c.probe_kill_at.reset();
  // Without a startup probe a running container is started at once, and
  // Ready at once without a readiness probe.
  c.started = c.spec.value("startupProbe", Json::object()).empty();
  c.ready = c.started && c.spec.value("readinessProbe", Json::object()).empty();
}

void PodWorker::KillForProbe(Container& c, int kind) {
  const std::string policy = jr::String(pod_.value("spec", Json::object()), "restartPolicy");
  std::string message = "Container " + c.name + " failed " + kProbeWord[kind] + " probe";
  if (policy != "Never") message += ", will be restarted";
  Event(false, "Killing", message);
  // The probe's terminationGracePeriodSeconds, else the pod's; at least
  // the kubelet's minimum of 2 s.
  const Json probe = c.spec.value(kProbeField[kind], Json::object());
  const Json spec = pod_.value("spec", Json::object());
  int64_t grace = spec.value("terminationGracePeriodSeconds", int64_t{30});
  if (probe.contains("terminationGracePeriodSeconds") && probe["terminationGracePeriodSeconds"].is_number_integer()) {
    grace = probe["terminationGracePeriodSeconds"].get<int64_t>();
  }
  grace = std::max<int64_t>(grace, 2);
  c.ready = false;
  c.probe_kill_at = Clock::now() + std::chrono::seconds(grace);
  if (!c.docker_id.empty()) {
    (void)config_.docker->KillContainer(c.docker_id, c.stop_signal);
  } else if (c.process) {
    c.process->Kill(SIGTERM);
  }
}

void PodWorker::OnExit(Container& c, const host::ExitInfo& exit) {
  c.state = Container::State::kTerminated;
  c.finished_at = SysClock::now();
  c.ready = false;
  c.exit_code = exit.exited ? exit.code : 128 + exit.signal;
  c.signal = exit.exited ? 0 : exit.signal;
  c.term_message.clear();
  // As containerd: an OOM kill anywhere in the container's cgroup makes the
  // reason OOMKilled, whether the main process died of it or exited after
  // a child did (a shell reports 137).
  if (c.cgroup && c.cgroup->OomKilled()) {
    c.term_reason = "OOMKilled";
  } else {
    c.term_reason = c.exit_code == 0 ? "Completed" : "Error";
  }
}

bool PodWorker::ShouldRestart(const Container& c) const {
  const std::string policy = jr::String(pod_.value("spec", Json::object()), "restartPolicy");
  if (policy == "Never") return false;
  if (policy == "OnFailure" || c.init) return c.exit_code != 0 && policy != "Never";
  return true;  // Always (the default)
}

namespace {

Json TerminatedJson(const std::string& reason, const std::string& message, int exit_code, int signal,
                    SysClock::time_point started, SysClock::time_point finished, const std::string& id) {
  Json t = {{"exitCode", exit_code},
            {"reason", reason},
            {"startedAt", api::FormatTimeSeconds(started)},
            {"finishedAt", api::FormatTimeSeconds(finished)},
            {"containerID", id}};
  (void)signal;  // containerd reports 128 + signal as the exit code, never the signal field
  if (!message.empty()) t["message"] = message;
  return t;
}

}  // namespace

void PodWorker::Tick() {
  const auto now = Clock::now();
  auto poll = [&](Container& c) {
    if (c.state != Container::State::kRunning) return;
    if (c.probe_kill_at && now >= *c.probe_kill_at) {
      // Killed for a probe and still running after its grace period.
      c.probe_kill_at = Clock::time_point::max();
      if (!c.docker_id.empty()) {
        (void)config_.docker->KillContainer(c.docker_id, "SIGKILL");
      } else if (c.process) {
        c.process->Kill(SIGKILL);
      }
    }
    if (config_.runtime == ContainerRuntime::kDocker) {
      PollDocker(c);
      return;
    }
    if (!c.process) return;
    if (auto exit = c.process->Poll()) OnExit(c, *exit);
  };
  auto schedule_restart = [&](Container& c) REQUIRES(mu_) {
    c.last_state = {{"terminated", TerminatedJson(c.term_reason, c.term_message, c.exit_code, c.signal, c.started_at,
                                                  c.finished_at, c.container_id)}};
    const auto delay =
        std::min<std::chrono::milliseconds>(config_.restart_backoff * (1LL << std::min(c.backoff_step, 16)),
                                            std::chrono::duration_cast<std::chrono::milliseconds>(kMaxBackoff));
    c.backoff_step++;
    c.restart_at = now + delay;
    c.state = Container::State::kWaiting;
    c.waiting_reason = "CrashLoopBackOff";
    Event(true, "BackOff",
          "Back-off restarting failed container " + c.name + " in pod " + name_ + "_" + ns_ + "(" + uid_ + ")");
    c.waiting_message = "back-off " + std::to_string(delay.count() / 1000) + "s restarting failed container=" + c.name +
                        " pod=" + name_ + "_" + ns_ + "(" + uid_ + ")";
  };
  auto due = [&](const Container& c) { return c.state == Container::State::kWaiting && now >= c.restart_at; };
  auto restart_if_due = [&](Container& c) REQUIRES(mu_) {
    if (!due(c)) return;
    if (c.ever_started && !c.waiting_reason.empty() && c.waiting_reason == "CrashLoopBackOff") c.restart_count++;
    StartContainer(c);
  };
  switch (stage_) {
    case Stage::kInit: {
      Container& c = *init_[init_index_];
      restart_if_due(c);
      poll(c);
      if (c.state == Container::State::kTerminated) {
        if (c.exit_code == 0) {
          if (++init_index_ == init_.size()) {
            stage_ = Stage::kMain;
            for (auto& m : main_) m->waiting_reason = "ContainerCreating";
          }
        } else if (ShouldRestart(c)) {
          schedule_restart(c);
        } else {
          init_failed_ = true;
          stage_ = Stage::kDone;
        }
      }
      break;
    }
    case Stage::kMain: {
      bool active = false;
      for (auto& cp : main_) {
        Container& c = *cp;
        restart_if_due(c);
        poll(c);
        if (c.state == Container::State::kTerminated && ShouldRestart(c)) schedule_restart(c);
        if (c.state != Container::State::kTerminated) active = true;
      }
      if (!active) stage_ = Stage::kDone;
      break;
    }
    case Stage::kTerminating: {
      bool alive = false;
      for (auto* list : {&init_, &main_}) {
        for (auto& cp : *list) {
          poll(*cp);
          if (cp->state == Container::State::kRunning) alive = true;
        }
      }
      if (!alive || now >= kill_deadline_) FinishTermination();
      break;
    }
    case Stage::kDone:
    case Stage::kFinished: break;
  }
}

void PodWorker::BeginTermination() {
  const Json& md = pod_["metadata"];
  const int64_t grace = md.value("deletionGracePeriodSeconds", int64_t{30});
  kill_deadline_ = Clock::now() + std::chrono::seconds(std::max<int64_t>(grace, 0));
  for (auto* list : {&init_, &main_}) {
    for (auto& cp : *list) {
      if (cp->state == Container::State::kRunning && !cp->docker_id.empty()) {
        // The image's stop signal, then SIGKILL when the grace period ends.
        Event(false, "Killing", "Stopping container " + cp->name);
        (void)config_.docker->KillContainer(cp->docker_id, cp->stop_signal);
      } else if (cp->state == Container::State::kRunning && cp->process) {
        Event(false, "Killing", "Stopping container " + cp->name);
        cp->process->Kill(SIGTERM);
      } else if (cp->state == Container::State::kWaiting) {
        cp->restart_at = Clock::time_point::max();
      }
    }
  }
  stage_ = Stage::kTerminating;
}

void PodWorker::FinishTermination() {
  for (auto* list : {&init_, &main_}) {
    for (auto& cp : *list) {
      Container& c = *cp;
      if (c.state == Container::State::kRunning && !c.docker_id.empty()) {
        (void)config_.docker->KillContainer(c.docker_id, "SIGKILL");
        const auto until = Clock::now() + std::chrono::seconds(10);
        while (c.state == Container::State::kRunning && Clock::now() < until) {
          c.next_inspect = {};
          PollDocker(c);
          if (c.state == Container::State::kRunning) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
      } else if (c.state == Container::State::kRunning && c.process) {
        host::ExitInfo e = c.process->Stop(std::chrono::milliseconds(0));
        OnExit(c, e);
      }
    }
  }
  stage_ = Stage::kFinished;
  WriteStatus();
  kube::DeleteOptions opts;
  opts.grace_period_seconds = 0;
  opts.precondition_uid = uid_;
  mu_.unlock();
  auto deleted = client_.Delete(kube::resources::Pods(), ns_, name_, opts);
  mu_.lock();
  (void)deleted;  // NotFound/Conflict: the pod is already gone or replaced
}

namespace {

// One probe to run, copied out of the worker so that it runs unlocked.
struct ProbeCall {
  Json probe;
  std::string host;
  int port = 0;
  std::string docker_id;
  std::vector<int> cpus;
};

struct ProbeOutcome {
  bool ok = false;
  std::string output;  // what the kubelet says of a failure
};

ProbeOutcome RunProbe(const KubeletConfig& config, const ProbeCall& call) {
  ProbeOutcome out;
  const int timeout = std::max(1, call.probe.value("timeoutSeconds", 1));
  if (call.probe.contains("exec") && !call.docker_id.empty()) {
    // exec: the command runs in the container, exit 0 = success.
    std::vector<std::string> argv;
    for (const Json& a : call.probe["exec"].value("command", Json::array())) {
      if (a.is_string()) argv.push_back(a.get<std::string>());
    }
    auto code = config.docker->Exec(call.docker_id, argv, std::chrono::seconds(timeout));
    out.ok = code.ok() && *code == 0;
    if (!code.ok()) out.output = code.status().message();
    return out;
  }
  if (call.probe.contains("exec")) {
    // exec: the command runs beside the container (same CPUs), exit 0 = success.
    host::ProcessOptions po;
    for (const Json& a : call.probe["exec"].value("command", Json::array())) {
      if (a.is_string()) po.argv.push_back(a.get<std::string>());
    }
    po.cpus = call.cpus;
    auto p =
        po.argv.empty() ? Result<host::Process>(Status::InvalidArgument("empty exec probe")) : host::Process::Start(po);
    if (!p.ok()) {
      out.output = p.status().message();
      return out;
    }
    const auto deadline = Clock::now() + std::chrono::seconds(timeout);
    std::optional<host::ExitInfo> exit;
    while (!(exit = p->Poll()) && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (!exit) {
      exit = p->Stop(std::chrono::milliseconds(0));
      out.output = "command timed out after " + std::to_string(timeout) + "s";
      return out;
    }
    out.ok = exit->exited && exit->code == 0;
    return out;
  }
  if (call.probe.contains("tcpSocket")) {
    out.output = TcpConnectError(call.host, call.port, std::chrono::seconds(timeout));
    out.ok = out.output.empty();
    return out;
  }
  if (call.probe.contains("grpc")) {
    // grpc, as the kubelet does it (pkg/probe/grpc): Health/Check {service}
    // over plaintext h2c to the pod IP and the port; SERVING = success,
    // anything else (an answer, a gRPC error, no connection) a failure.
    const std::string service = jr::String(call.probe["grpc"], "service");
    auto h = host::GrpcHealthCheck(call.host, static_cast<uint16_t>(call.port), /*tls=*/false, service,
                                   std::chrono::seconds(timeout));
    out.ok = h.ok() && h->ok();
    out.output = h.ok() ? h->Describe()
                        : "error: failed to connect service at \"" + call.host + ":" + std::to_string(call.port) +
                              "\": " + h.status().message();
    return out;
  }
  // httpGet, as the kubelet does it: scheme HTTP or HTTPS (the certificate
  // not verified), its User-Agent, the probe's headers; 200-399 = success.
  // Through the controller's libcurl probe, not cpp-httplib's client,
  // whose function-local static regex an uninstrumented library builds on
  // one probing thread and reads on another, which ThreadSanitizer cannot
  // see ordered.
  const Json get = call.probe.value("httpGet", Json::object());
  host::ProbeRequest request;
  request.host = call.host;
  request.port = static_cast<uint16_t>(call.port);
  request.scheme = jr::String(get, "scheme") == "HTTPS" ? Scheme::kHttps : Scheme::kHttp;
  request.path = jr::String(get, "path").empty() ? "/" : jr::String(get, "path");
  request.headers = {{"User-Agent", "kube-probe/1.30"}};
  for (const Json& h : get.value("httpHeaders", Json::array())) {
    request.headers.emplace_back(jr::String(h, "name"), jr::String(h, "value"));
  }
  request.timeout = std::chrono::seconds(timeout);
  auto res = host::HttpProbe(request);
  out.ok = res.ok() && res->status >= 200 && res->status < 400;
  if (!res.ok()) {
    out.output = std::string("Get \"") + std::string(ToString(request.scheme)) + "://" + call.host + ":" +
                 std::to_string(call.port) + request.path + "\": " + res.status().message();
  } else if (!out.ok) {
    out.output = "HTTP probe failed with statuscode: " + std::to_string(res->status);
  }
  return out;
}

}  // namespace

void PodWorker::RunProbes() {
  struct Due {
    Container* c;
    int kind;
    ProbeCall call;
  };
  std::vector<Due> due;
  const auto now = Clock::now();
  if (stage_ != Stage::kMain) return;
  for (auto& cp : main_) {
    Container& c = *cp;
    if (c.state != Container::State::kRunning || c.probe_kill_at) continue;
    for (int kind = 0; kind < 3; ++kind) {
      // The startup probe runs until it succeeds; the others only after.
      if ((kind == kStartupProbe) == c.started) continue;
      const Json probe = c.spec.value(kProbeField[kind], Json::object());
      if (!probe.is_object() || probe.empty() || now < c.probes[kind].next) continue;
      c.probes[kind].next = now + std::chrono::seconds(std::max(1, probe.value("periodSeconds", 10)));
      Json get = probe.value("httpGet", Json::object());
      if (get.empty()) get = probe.value("tcpSocket", Json::object());
      // grpc: a port number only (GRPCAction has no named port, no host).
      if (get.empty()) get = probe.value("grpc", Json::object());
      if (get.empty() && !probe.contains("exec")) continue;
      int port = 0;
      if (get.contains("port") && get["port"].is_number_integer()) {
        port = get["port"].get<int>();
      } else if (get.contains("port") && get["port"].is_string()) {
        const std::string pname = get["port"].get<std::string>();
        for (const Json& p : c.spec.value("ports", Json::array())) {
          if (jr::String(p, "name") == pname) port = p.value("containerPort", 0);
        }
      }
      std::string host = jr::String(get, "host");
      if (host.empty()) host = admission_.pod_ip;
      due.push_back({&c, kind, {probe, host, port, c.docker_id, c.cpus}});
    }
  }
  if (due.empty()) return;
  std::vector<ProbeOutcome> outcomes;
  mu_.unlock();
  for (const Due& d : due) outcomes.push_back(RunProbe(config_, d.call));
  mu_.lock();
  for (size_t i = 0; i < due.size(); ++i) {
    Container& c = *due[i].c;
    const int kind = due[i].kind;
    // Only this thread starts containers: the instance probed is the one running.
    if (c.state != Container::State::kRunning || c.probe_kill_at) continue;
    Container::ProbeState& state = c.probes[kind];
    const Json& probe = due[i].call.probe;
    if (outcomes[i].ok) {
      state.failures = 0;
      if (++state.successes < std::max(1, probe.value("successThreshold", 1))) continue;
      if (kind == kReadinessProbe) c.ready = true;
      if (kind == kStartupProbe) {
        c.started = true;
        c.ready = c.spec.value("readinessProbe", Json::object()).empty();
      }
      continue;
    }
    state.successes = 0;
    const std::string& output = outcomes[i].output;
    Event(true, "Unhealthy",
          std::string(kProbeName[kind]) + (output.empty() ? " probe failed" : " probe failed: " + output));
    if (++state.failures < std::max(1, probe.value("failureThreshold", 3))) continue;
    if (kind == kReadinessProbe) {
      c.ready = false;
    } else {
      KillForProbe(c, kind);
    }
  }
}

namespace {

// One container's entry of containerStatuses. A template over the worker's
// container record, which is private to PodWorker.
template <typename ContainerT>
Json ContainerStatusJson(const ContainerT& c) {
  using State = typename ContainerT::State;
  Json s = {{"name", c.name},
            {"image", c.image},
            {"imageID", c.image_id},
            {"ready", c.ready},
            {"restartCount", c.restart_count},
            {"started", c.state == State::kRunning && c.started},
            {"lastState", c.last_state}};
  switch (c.state) {
    case State::kWaiting: {
      Json w = {{"reason", c.waiting_reason}};
      if (!c.waiting_message.empty()) w["message"] = c.waiting_message;
      s["state"] = {{"waiting", w}};
      break;
    }
    case State::kRunning: s["state"] = {{"running", {{"startedAt", api::FormatTimeSeconds(c.started_at)}}}}; break;
    case State::kTerminated:
      s["state"] = {{"terminated", TerminatedJson(c.term_reason, c.term_message, c.exit_code, c.signal, c.started_at,
                                                  c.finished_at, c.container_id)}};
      break;
  }
  if (c.ever_started) s["containerID"] = c.container_id;
  return s;
}

// The main containers by state, as the kubelet's getPhase counts them (a
// container waiting to restart after it ran counts as stopped).
struct ContainerCounts {
  int running = 0, waiting = 0, stopped = 0, succeeded = 0;
};

template <typename ContainerPtrs>
ContainerCounts CountContainers(const ContainerPtrs& containers) {
  ContainerCounts n;
  for (const auto& cp : containers) {
    using State = typename std::decay_t<decltype(*cp)>::State;
    switch (cp->state) {
      case State::kRunning: n.running++; break;
      case State::kWaiting:
        if (cp->last_state.contains("terminated")) {
          n.stopped++;
        } else {
          n.waiting++;
        }
        break;
      case State::kTerminated:
        n.stopped++;
        if (cp->exit_code == 0) n.succeeded++;
        break;
    }
  }
  return n;
}

// The phase of a pod past its init containers (kubelet getPhase).
std::string MainPhase(const ContainerCounts& n, bool finished, const std::string& policy) {
  if (finished) {
    // Terminated by deletion: a terminal phase, as kubelets since 1.27 write.
    return (n.waiting == 0 && n.running == 0 && n.stopped > 0 && n.stopped == n.succeeded) ? "Succeeded" : "Failed";
  }
  if (n.waiting > 0) return "Pending";
  if (n.running > 0) return "Running";
  if (n.stopped == 0) return "Pending";
  if (policy == "Always") return "Running";
  if (n.stopped == n.succeeded) return "Succeeded";
  if (policy == "Never") return "Failed";
  return "Running";
}

std::string BracketList(const std::vector<std::string>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + v[i];
  return s + "]";
}

// Pod conditions, each with the time its status last changed (kept in
// `transitions`: type → (status, time)).
class Conditions {
 public:
  Conditions(std::map<std::string, std::pair<std::string, std::string>>& transitions, std::string now_text)
      : transitions_(transitions), now_text_(std::move(now_text)) {}

  void Add(const std::string& type, bool value, const std::string& why, const std::string& text) {
    const std::string v = value ? "True" : "False";
    auto& tr = transitions_[type];
    if (tr.first != v) tr = {v, now_text_};
    Json c = {{"type", type}, {"status", v}, {"lastProbeTime", nullptr}, {"lastTransitionTime", tr.second}};
    if (!value && !why.empty()) c["reason"] = why;
    if (!value && !text.empty()) c["message"] = text;
    list_.push_back(std::move(c));
  }
  const Json& list() const { return list_; }

 private:
  std::map<std::string, std::pair<std::string, std::string>>& transitions_;
  const std::string now_text_;
  Json list_ = Json::array();
};

}  // namespace

Json PodWorker::BuildStatus() {
  const Json spec = pod_.value("spec", Json::object());
  const std::string policy = jr::String(spec, "restartPolicy").empty() ? "Always" : jr::String(spec, "restartPolicy");
  Json status = Json::object();
  // Phase (kubelet getPhase).
  std::string phase;
  if (!admission_.reject_reason.empty()) {
    phase = "Failed";
    status["reason"] = admission_.reject_reason;
    if (!admission_.reject_message.empty()) status["message"] = admission_.reject_message;
  } else if (init_failed_) {
    phase = "Failed";
  } else if (stage_ == Stage::kInit) {
    phase = "Pending";
  } else {
    phase = MainPhase(CountContainers(main_), stage_ == Stage::kFinished, policy);
  }
  status["phase"] = phase;
  // Conditions.
  const bool terminal = phase == "Succeeded" || phase == "Failed";
  std::vector<std::string> incomplete;
  for (const auto& cp : init_) {
    if (!(cp->state == Container::State::kTerminated && cp->exit_code == 0)) incomplete.push_back(cp->name);
  }
  std::vector<std::string> unready;
  for (const auto& cp : main_) {
    if (!cp->ready) unready.push_back(cp->name);
  }
  Conditions conditions(transitions_, api::FormatTimeSeconds(SysClock::now()));
  const bool rejected = !admission_.reject_reason.empty();
  if (!rejected && !admission_.adopt_terminal) {
    conditions.Add("PodReadyToStartContainers", stage_ != Stage::kFinished, "", "");
    conditions.Add("Initialized", incomplete.empty(), "ContainersNotInitialized",
                   "containers with incomplete status: " + BracketList(incomplete));
    const bool ready = unready.empty() && !terminal;
    const std::string why = terminal ? "PodCompleted" : "ContainersNotReady";
    const std::string text = terminal ? "" : "containers with unready status: " + BracketList(unready);
    conditions.Add("Ready", ready, why, text);
    conditions.Add("ContainersReady", ready, why, text);
  }
  conditions.Add("PodScheduled", true, "", "");
  status["conditions"] = conditions.list();
  status["hostIP"] = config_.node_ip;
  status["hostIPs"] = Json::array({{{"ip", config_.node_ip}}});
  if (!admission_.pod_ip.empty()) {
    status["podIP"] = admission_.pod_ip;
    status["podIPs"] = Json::array({{{"ip", admission_.pod_ip}}});
  }
  status["startTime"] = api::FormatTimeSeconds(start_time_);
  status["qosClass"] = QosClassName(ComputeQos(spec));
  if (!rejected) {
    Json cs = Json::array();
    for (const auto& cp : main_) cs.push_back(ContainerStatusJson(*cp));
    status["containerStatuses"] = cs;
    if (!init_.empty()) {
      Json is = Json::array();
      for (const auto& cp : init_) is.push_back(ContainerStatusJson(*cp));
      status["initContainerStatuses"] = is;
    }
  }
  return status;
}

void PodWorker::WriteStatus() {
  if (admission_.adopt_terminal) return;
  Json status = BuildStatus();
  last_status_ = status;
  if (status == written_status_) return;
  if (Clock::now() < next_write_attempt_) return;
  Json patch = {{"status", status}};
  mu_.unlock();
  auto r = client_.Patch(kube::resources::Pods(), ns_, name_, kube::PatchType::kMerge, patch.dump(), {}, "status");
  mu_.lock();
  if (r.ok()) {
    written_status_ = status;
  } else {
    next_write_attempt_ = Clock::now() + std::chrono::milliseconds(500);
  }
}

void PodWorker::Run(std::stop_token stop) {
  MutexLock lock(mu_);
  while (!stop.stop_requested()) {
    if (removed_) break;
    const bool deleting = pod_["metadata"].contains("deletionTimestamp");
    if (deleting && stage_ != Stage::kTerminating && stage_ != Stage::kFinished) {
      if (stage_ == Stage::kDone) {
        FinishTermination();
      } else {
        BeginTermination();
      }
    }
    if (stage_ != Stage::kFinished) {
      if (config_.runtime == ContainerRuntime::kDocker && (stage_ == Stage::kInit || stage_ == Stage::kMain)) {
        RefreshHosts();
      }
      Tick();
      ReconcileCpus();
      if (stage_ != Stage::kFinished) RunProbes();
      if (stage_ != Stage::kFinished) WriteStatus();
    }
    FlushEvents();
    if (removed_) break;
    wake_.wait_for(lock, config_.tick, [&]() REQUIRES(mu_) { return removed_ || stop.stop_requested(); });
  }
  // Gone from the API (or the kubelet stops): nothing may outlive the pod.
  if (config_.runtime == ContainerRuntime::kDocker) RemoveDockerContainers();
  for (auto* list : {&init_, &main_}) {
    for (auto& cp : *list) {
      if (cp->process && cp->state == Container::State::kRunning) {
        host::Process p = std::move(*cp->process);
        cp->process.reset();
        lock.unlock();
        p.Stop(std::chrono::milliseconds(500));
        lock.lock();
        cp->state = Container::State::kTerminated;
      }
      cp->cgroup.reset();
    }
  }
  std::error_code ec;
  if (!config_.root_dir.empty() && !uid_.empty()) std::filesystem::remove_all(config_.root_dir + "/pods/" + uid_, ec);
  finished_ = true;
}

void PodWorker::Event(bool warning, const std::string& reason, const std::string& message) {
  if (events_ && pending_events_.size() < 100) pending_events_.push_back({warning, reason, message});
}

void PodWorker::FlushEvents() {
  if (pending_events_.empty()) return;
  std::vector<PendingEvent> events;
  events.swap(pending_events_);
  Json object = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", pod_["metadata"]}};
  mu_.unlock();
  for (const PendingEvent& e : events) {
    (void)events_->Record(object, e.warning ? kube::EventType::kWarning : kube::EventType::kNormal, e.reason,
                          e.message);
  }
  mu_.lock();
}

PodStats PodWorker::Sample() {
  MutexLock lock(mu_);
  PodStats ps;
  ps.name = name_;
  ps.ns = ns_;
  ps.uid = uid_;
  ps.start_time = start_time_;
  for (auto* list : {&init_, &main_}) {
    for (auto& cp : *list) {
      Container& c = *cp;
      if (c.state != Container::State::kRunning || (!c.process && c.host_pid <= 0)) continue;
      const auto now = SysClock::now();
      if (c.last_stats && now - c.last_stats->time < config_.stats_period) {
        ps.containers.push_back(*c.last_stats);
        continue;
      }
      ContainerStats s;
      s.name = c.name;
      s.start_time = c.started_at;
      s.time = now;
      auto tree = host::SampleProcessTree(c.process ? c.process->pid() : static_cast<pid_t>(c.host_pid));
      double cpu_seconds = 0;
      if (tree.ok()) {
        s.rss_bytes = tree->rss_bytes;
        s.working_set_bytes = tree->rss_bytes;
        s.usage_bytes = tree->rss_bytes;
        cpu_seconds = tree->cpu_seconds;
      }
      if (c.cgroup) {
        if (auto ws = c.cgroup->MemoryWorkingSet(); ws.ok()) s.working_set_bytes = *ws;
        if (auto cpu = c.cgroup->CpuSeconds(); cpu.ok()) cpu_seconds = *cpu;
      } else if (c.host_pid > 0) {
        // The container's own cgroup, as cAdvisor reads it.
        if (auto u = host::ContainerCgroup::Of(c.host_pid).Read()) {
          s.working_set_bytes = u->memory_bytes;
          cpu_seconds = u->cpu_seconds;
        }
      }
      s.usage_core_nano_seconds = static_cast<uint64_t>(cpu_seconds * 1e9);
      if (c.last_cpu) {
        const double dt = std::chrono::duration<double>(s.time - c.last_cpu->first).count();
        if (dt > 0 && s.usage_core_nano_seconds >= c.last_cpu->second) {
          s.usage_nano_cores =
              static_cast<uint64_t>(static_cast<double>(s.usage_core_nano_seconds - c.last_cpu->second) / dt);
        }
      }
      c.last_cpu = std::make_pair(s.time, s.usage_core_nano_seconds);
      c.last_stats = s;
      ps.containers.push_back(s);
    }
  }
  return ps;
}

std::variant<std::string, LogError> PodWorker::LogFile(const std::string& container, bool previous) {
  MutexLock lock(mu_);
  for (auto* list : {&init_, &main_}) {
    for (auto& cp : *list) {
      if (cp->name != container) continue;
      if (config_.runtime == ContainerRuntime::kDocker) {
        const std::string id = previous ? (cp->old_docker_ids.empty() ? "" : cp->old_docker_ids.back()) : cp->docker_id;
        if (id.empty()) {
          if (previous) {
            return LogError{400,
                            "previous terminated container \"" + container + "\" in pod \"" + name_ + "\" not found"};
          }
          return LogError{400, "container \"" + container + "\" in pod \"" + name_ + "\" is waiting to start: " +
                                   (cp->waiting_reason.empty() ? "ContainerCreating" : cp->waiting_reason)};
        }
        // Through the engine: its log of that container, kept in a file
        // the endpoint serves.
        auto text = config_.docker->Logs(id);
        if (!text.ok()) return LogError{500, text.status().message()};
        const std::string path = (previous ? cp->previous_log_path : cp->log_path);
        const std::string tmp = path + ".tmp";
        {
          std::ofstream out(tmp, std::ios::trunc | std::ios::binary);
          out << *text;
        }
        std::error_code ec;
        std::filesystem::rename(tmp, path, ec);
        if (ec) return LogError{500, "cannot write " + path + ": " + ec.message()};
        return path;
      }
      if (previous) {
        if (cp->previous_log_path.empty()) {
          return LogError{400,
                          "previous terminated container \"" + container + "\" in pod \"" + name_ + "\" not found"};
        }
        return cp->previous_log_path;
      }
      if (cp->log_path.empty()) {
        return LogError{400, "container \"" + container + "\" in pod \"" + name_ + "\" is waiting to start: " +
                                 (cp->waiting_reason.empty() ? "ContainerCreating" : cp->waiting_reason)};
      }
      return cp->log_path;
    }
  }
  return LogError{404, "container \"" + container + "\" not found in pod \"" + name_ + "\""};
}

Json PodWorker::PodJson() {
  MutexLock lock(mu_);
  Json p = pod_;
  if (!last_status_.is_null()) p["status"] = last_status_;
  return p;
}

}  // namespace fairbench::kubelet
