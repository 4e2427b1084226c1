#include "testing/kubelet/kubelet.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>

#include "common/mutex.h"
#include "api/time_text.h"
#include "common/json_read.h"

namespace fairbench::kubelet {

using kube::Json;
using SysClock = std::chrono::system_clock;

namespace {

namespace jr = json_read;

std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string OsImage() {
  std::ifstream in("/etc/os-release");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      std::string v = line.substr(12);
      if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
      return v;
    }
  }
  return "Linux";
}

std::string MicroTime(SysClock::time_point t) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(us / 1000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(us % 1000000));
  return buf;
}

std::string MemoryQuantity(int64_t bytes) {
  if (bytes > 0 && bytes % 1024 == 0) return std::to_string(bytes / 1024) + "Ki";
  return std::to_string(bytes);
}

// CPU time (not idle) of the node's CPUs in nanoseconds, from /proc/stat.
uint64_t NodeCpuNanos(const std::vector<int>& cpus) {
  std::ifstream in("/proc/stat");
  std::string line;
  uint64_t ticks = 0;
  while (std::getline(in, line)) {
    if (line.rfind("cpu", 0) != 0 || line.size() < 4 || !std::isdigit(static_cast<unsigned char>(line[3]))) continue;
    std::istringstream ls(line);
    std::string name;
    uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    ls >> name >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
    const int n = std::atoi(name.c_str() + 3);
    if (std::find(cpus.begin(), cpus.end(), n) == cpus.end()) continue;
    ticks += user + nice + system + irq + softirq + steal;
  }
  const long hz = sysconf(_SC_CLK_TCK);
  return ticks * (1000000000ULL / static_cast<uint64_t>(hz > 0 ? hz : 100));
}

std::map<std::string, uint64_t> MemInfo() {
  std::map<std::string, uint64_t> m;
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t value = 0;
  std::string unit;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    if (ls >> key >> value) {
      if (!key.empty() && key.back() == ':') key.pop_back();
      m[key] = value * 1024;
    }
  }
  return m;
}

}  // namespace

Result<std::map<std::string, std::string>> ParseLabels(const std::string& text) {
  std::map<std::string, std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) return Status::InvalidArgument("label \"" + item + "\": want key=value");
    out[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return out;
}

Result<std::vector<Taint>> ParseTaints(const std::string& text) {
  std::vector<Taint> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const size_t colon = item.rfind(':');
    if (colon == std::string::npos) return Status::InvalidArgument("taint \"" + item + "\": want key=value:Effect");
    Taint t;
    t.effect = item.substr(colon + 1);
    if (t.effect != "NoSchedule" && t.effect != "PreferNoSchedule" && t.effect != "NoExecute") {
      return Status::InvalidArgument("taint \"" + item +
                                     "\": effect must be NoSchedule, PreferNoSchedule or NoExecute");
    }
    const std::string kv = item.substr(0, colon);
    const size_t eq = kv.find('=');
    t.key = kv.substr(0, eq);
    if (eq != std::string::npos) t.value = kv.substr(eq + 1);
    if (t.key.empty()) return Status::InvalidArgument("taint \"" + item + "\": empty key");
    out.push_back(t);
  }
  return out;
}

Result<std::vector<int>> ParseCpuList(const std::string& text) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const size_t dash = item.find('-');
    try {
      size_t used = 0;
      const int a = std::stoi(item.substr(0, dash), &used);
      int b = a;
      if (dash != std::string::npos) b = std::stoi(item.substr(dash + 1));
      if (a < 0 || b < a) return Status::InvalidArgument("cpu list \"" + text + "\": bad range " + item);
      for (int c = a; c <= b; ++c) out.push_back(c);
    } catch (const std::exception&) {
      return Status::InvalidArgument("cpu list \"" + text + "\": bad item " + item);
    }
  }
  if (out.empty()) return Status::InvalidArgument("empty cpu list");
  return out;
}

namespace {

KubeletConfig Completed(KubeletConfig config, const std::shared_ptr<AddressPool>& addresses) {
  if (!config.cpu_manager) {
    auto m = CpuManager::Create(CpuManagerPolicy::kNone, config.cpus, {});
    if (m.ok()) config.cpu_manager = std::move(*m);
  }
  if (!config.service_proxy) config.service_proxy = std::make_shared<ServiceProxy>(addresses);
  return config;
}

// A Go time.Duration's String(): "1s", "10s", "1m0s", "200ms", "1.5s".
std::string GoDuration(std::chrono::milliseconds d) {
  const int64_t ms = d.count();
  if (ms == 0) return "0s";
  if (ms < 1000) return std::to_string(ms) + "ms";
  std::string out;
  int64_t secs = ms / 1000;
  const int64_t frac = ms % 1000;
  if (secs >= 3600) {
    out += std::to_string(secs / 3600) + "h";
    secs %= 3600;
    out += std::to_string(secs / 60) + "m";
    secs %= 60;
  } else if (secs >= 60) {
    out += std::to_string(secs / 60) + "m";
    secs %= 60;
  }
  out += std::to_string(secs);
  if (frac != 0) {
    std::string f = std::to_string(1000 + frac).substr(1);
    while (!f.empty() && f.back() == '0') f.pop_back();
    out += "." + f;
  }
  return out + "s";
}

}  // namespace

Kubelet::Kubelet(KubeletConfig config, NodeOptions node, kube::Client& client)
    : addresses_(std::make_shared<AddressPool>(node.pod_ip_base)),
      config_(Completed(std::move(config), addresses_)),
      node_(std::move(node)),
      client_(client),
      started_at_(api::FormatTimeSeconds(SysClock::now())),
      events_(client, SystemClock::Instance(),
              {"kubelet", config_.node_name, config_.node_name, 256, std::chrono::minutes(10)}) {}

Kubelet::~Kubelet() { Stop(); }

Json Kubelet::NodeStatus() const {
  const std::string now = api::FormatTimeSeconds(SysClock::now());
  Json resources = {{"cpu", std::to_string(config_.cpus.size())},
                    {"memory", MemoryQuantity(node_.memory_bytes)},
                    {"pods", std::to_string(node_.max_pods)}};
  // Reserved CPUs count as systemReserved cpu, as a kubelet with
  // reservedSystemCPUs has it.
  Json allocatable = resources;
  allocatable["cpu"] = std::to_string(config_.cpu_manager->AllocatableMillis() / 1000);
  auto cond = [&](const char* type, const char* status, const char* reason, const char* message) {
    return Json{
        {"type", type},     {"status", status},  {"lastHeartbeatTime", now}, {"lastTransitionTime", started_at_},
        {"reason", reason}, {"message", message}};
  };
  struct utsname u {};
  uname(&u);
  std::string arch = u.machine;
  if (arch == "x86_64") arch = "amd64";
  if (arch == "aarch64") arch = "arm64";
  return {
      {"capacity", resources},
      {"allocatable", allocatable},
      {"conditions",
       {cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        cond("Ready", "True", "KubeletReady", "kubelet is posting ready status")}},
      {"addresses",
       {{{"type", "InternalIP"}, {"address", config_.node_address.empty() ? config_.node_ip : config_.node_address}},
        {{"type", "Hostname"}, {"address", config_.node_name}}}},
      {"daemonEndpoints", {{"kubeletEndpoint", {{"Port", node_.kubelet_port}}}}},
      {"nodeInfo",
       {{"machineID", FirstLine("/etc/machine-id")},
        {"systemUUID", FirstLine("/etc/machine-id")},
        {"bootID", FirstLine("/proc/sys/kernel/random/boot_id")},
        {"kernelVersion", u.release},
        {"osImage", OsImage()},
        {"containerRuntimeVersion", std::string("fairbench-process://") + u.release},
        {"kubeletVersion", "v1.30.0-fairbench"},
        {"kubeProxyVersion", ""},
        {"operatingSystem", "linux"},
        {"architecture", arch}}}};
}

Json Kubelet::NodeObject() const {
  Json labels = {
      {"kubernetes.io/hostname", config_.node_name}, {"kubernetes.io/os", "linux"}, {"beta.kubernetes.io/os", "linux"}};
  Json status = NodeStatus();
  labels["kubernetes.io/arch"] = status["nodeInfo"]["architecture"];
  labels["beta.kubernetes.io/arch"] = status["nodeInfo"]["architecture"];
  for (const auto& [k, v] : node_.labels) labels[k] = v;
  Json spec = Json::object();
  if (!node_.taints.empty()) {
    spec["taints"] = Json::array();
    for (const Taint& t : node_.taints) {
      Json tj = {{"key", t.key}, {"effect", t.effect}};
      if (!t.value.empty()) tj["value"] = t.value;
      spec["taints"].push_back(tj);
    }
  }
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", config_.node_name}, {"labels", labels}, {"annotations", {{"node.alpha.kubernetes.io/ttl", "0"}}}}},
          {"spec", spec},
          {"status", status}};
}

Status Kubelet::Register() {
  Json node = NodeObject();
  auto created = client_.Create(kube::resources::Nodes(), "", node);
  if (!created.ok() && created.reason() == kube::Reason::kAlreadyExists) {
    Json patch = {{"metadata", {{"labels", node["metadata"]["labels"]}}},
                  {"spec", {{"taints", node["spec"].value("taints", Json::array())}}}};
    auto patched =
        client_.Patch(kube::resources::Nodes(), "", config_.node_name, kube::PatchType::kMerge, patch.dump());
    if (!patched.ok()) return patched.status();
  } else if (!created.ok()) {
    return created.status();
  }
  Json status = {{"status", node["status"]}};
  auto s = client_.Patch(kube::resources::Nodes(), "", config_.node_name, kube::PatchType::kMerge, status.dump(), {},
                         "status");
  return s.status();
}

void Kubelet::Heartbeat() {
  Json status = {{"status", NodeStatus()}};
  auto s = client_.Patch(kube::resources::Nodes(), "", config_.node_name, kube::PatchType::kMerge, status.dump(), {},
                         "status");
  if (!s.ok() && s.reason() == kube::Reason::kNotFound) {
    if (Status r = Register(); !r.ok()) std::fprintf(stderr, "test kubelet: re-register: %s\n", r.ToString().c_str());
  }
  const std::string now = MicroTime(SysClock::now());
  auto lease = client_.Get(kube::resources::Leases(), "kube-node-lease", config_.node_name);
  if (lease.ok()) {
    Json patch = {{"spec", {{"holderIdentity", config_.node_name}, {"renewTime", now}}}};
    (void)client_.Patch(kube::resources::Leases(), "kube-node-lease", config_.node_name, kube::PatchType::kMerge,
                        patch.dump());
  } else if (lease.reason() == kube::Reason::kNotFound) {
    Json l = {{"apiVersion", "coordination.k8s.io/v1"},
              {"kind", "Lease"},
              {"metadata", {{"name", config_.node_name}, {"namespace", "kube-node-lease"}}},
              {"spec", {{"holderIdentity", config_.node_name}, {"leaseDurationSeconds", 40}, {"renewTime", now}}}};
    auto node = client_.Get(kube::resources::Nodes(), "", config_.node_name);
    if (node.ok()) {
      l["metadata"]["ownerReferences"] = {{{"apiVersion", "v1"},
                                           {"kind", "Node"},
                                           {"name", config_.node_name},
                                           {"uid", jr::String((*node)["metadata"], "uid")}}};
    }
    (void)client_.Create(kube::resources::Leases(), "kube-node-lease", l);
  }
}

Status Kubelet::Start() {
  if (config_.runtime == ContainerRuntime::kDocker) {
    // Containers an earlier kubelet of this node left (it was killed):
    // their pods start again from the API, so none of these is adopted.
    auto left = config_.docker->ListContainers({{"fairbench.dev/test-kubelet-node", config_.node_name}});
    if (!left.ok()) return left.status();
    for (const Json& c : *left) (void)config_.docker->RemoveContainer(c.value("Id", std::string()));
  }
  if (Status s = Register(); !s.ok()) return s;
  Heartbeat();
  kube::ReflectorOptions ro;
  ro.field_selector = "spec.nodeName=" + config_.node_name;
  ro.backoff = {std::chrono::milliseconds(100), std::chrono::milliseconds(2000), 2.0, 0.2};
  informer_ = std::make_unique<kube::Informer>(client_, kube::resources::Pods(), "", ro);
  auto poke = [this] {
    MutexLock lock(mu_);
    dirty_ = true;
    wake_.notify_all();
  };
  informer_->AddHandlers(
      {[poke](const Json&) { poke(); }, [poke](const Json&, const Json&) { poke(); }, [poke](const Json&) { poke(); }});
  informer_->Start();
  heartbeat_ = std::jthread([this](std::stop_token st) { HeartbeatLoop(st); });
  sync_ = std::jthread([this](std::stop_token st) { SyncLoop(st); });
  return Status::Ok();
}

void Kubelet::Stop() {
  if (stopped_.exchange(true)) return;
  sync_.request_stop();
  heartbeat_.request_stop();
  {
    MutexLock lock(mu_);
    wake_.notify_all();
  }
  if (sync_.joinable()) sync_.join();
  if (heartbeat_.joinable()) heartbeat_.join();
  if (informer_) informer_->Stop();
  std::map<std::string, std::unique_ptr<PodWorker>> workers;
  {
    MutexLock lock(mu_);
    workers.swap(workers_);
  }
  for (auto& [uid, w] : workers) w->Remove();
  workers.clear();
  config_.service_proxy->Stop();
}

void Kubelet::HeartbeatLoop(std::stop_token stop) {
  std::mutex m;
  std::condition_variable_any cv;
  while (!stop.stop_requested()) {
    std::unique_lock<std::mutex> lock(m);
    cv.wait_for(lock, stop, node_.heartbeat, [] { return false; });
    if (stop.stop_requested()) break;
    Heartbeat();
  }
}

void Kubelet::SyncLoop(std::stop_token stop) {
  while (!stop.stop_requested()) {
    Sync();
    MutexLock lock(mu_);
    wake_.wait_for(lock, std::chrono::milliseconds(200),
                   [&]() REQUIRES(mu_) { return dirty_ || stop.stop_requested(); });
    dirty_ = false;
  }
}

void Kubelet::Sync() {
  std::vector<Json> pods = informer_->List();
  std::vector<std::unique_ptr<PodWorker>> dead;
  {
    MutexLock lock(mu_);
    std::set<std::string> seen;
    for (Json& pod : pods) {
      const std::string uid = jr::String(pod["metadata"], "uid");
      seen.insert(uid);
      if (auto it = workers_.find(uid); it != workers_.end()) {
        it->second->Update(pod);
        // A pod over gives its exclusive CPUs back (the CPU manager's
        // removal of stale state: only active pods keep theirs).
        if (it->second->over()) config_.cpu_manager->RemovePod(uid);
        continue;
      }
      PodWorker::Admission adm;
      const std::string phase = jr::String(pod.value("status", Json::object()), "phase");
      if (phase == "Succeeded" || phase == "Failed" || pod["metadata"].contains("deletionTimestamp")) {
        adm.adopt_terminal = true;
      } else {
        // Admission against allocatable, as the kubelet's resource predicate does.
        PodRequests used;
        size_t running = 0;
        for (const auto& [wuid, w] : workers_) {
          PodRequests r = w->requests();
          used.cpu_millis += r.cpu_millis;
          used.memory_bytes += r.memory_bytes;
          if (!w->pod_ip().empty()) running++;
        }
        const PodRequests want = ComputeRequests(pod.value("spec", Json::object()));
        const int64_t cpu_cap = config_.cpu_manager->AllocatableMillis();
        auto reject = [&](const std::string& res, int64_t requested, int64_t in_use, int64_t cap) {
          adm.reject_reason = "OutOf" + res;
          adm.reject_message = "Pod was rejected: Node didn't have enough resource: " + res +
                               ", requested: " + std::to_string(requested) + ", used: " + std::to_string(in_use) +
                               ", capacity: " + std::to_string(cap);
        };
        const Json selector = pod.value("spec", Json::object()).value("nodeSelector", Json::object());
        const Json node_labels = NodeObject()["metadata"]["labels"];
        bool selected = true;
        for (const auto& [k, v] : selector.items()) selected = selected && node_labels.value(k, Json()) == v;
        // The resource managers' admission comes before the predicates
        // (the kubelet's admit handlers in that order).
        const Status cpus = config_.cpu_manager->AllocatePod(uid, pod.value("spec", Json::object()));
        if (!cpus.ok()) {
          adm.reject_reason = "UnexpectedAdmissionError";
          adm.reject_message = "Pod was rejected: Allocate failed due to " + cpus.message() + ", which is unexpected";
        } else if (!selected) {
          adm.reject_reason = "NodeAffinity";
          adm.reject_message =
              "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector";
        } else if (want.cpu_millis > 0 && used.cpu_millis + want.cpu_millis > cpu_cap) {
          reject("cpu", want.cpu_millis, used.cpu_millis, cpu_cap);
        } else if (want.memory_bytes > 0 && node_.memory_bytes > 0 &&
                   used.memory_bytes + want.memory_bytes > node_.memory_bytes) {
          reject("memory", want.memory_bytes, used.memory_bytes, node_.memory_bytes);
        } else if (static_cast<int64_t>(running) + 1 > node_.max_pods) {
          reject("pods", 1, static_cast<int64_t>(running), node_.max_pods);
        } else {
          if (pod.value("spec", Json::object()).value("hostNetwork", false)) {
            adm.pod_ip = config_.node_ip;  // host network: the pod IP is the node's
          } else if (const std::string ip = addresses_->Allocate(uid); ip.empty()) {
            reject("pods", 1, static_cast<int64_t>(running), 254);
          } else {
            adm.pod_ip = ip;
          }
        }
      }
      // A rejected pod holds nothing.
      if (adm.pod_ip.empty()) config_.cpu_manager->RemovePod(uid);
      workers_[uid] = std::make_unique<PodWorker>(config_, client_, &events_, pod, adm);
    }
    for (auto it = workers_.begin(); it != workers_.end();) {
      if (!seen.count(it->first)) {
        it->second->Remove();
        if (it->second->finished()) {
          config_.cpu_manager->RemovePod(it->first);
          addresses_->Release(it->first);
          dead.push_back(std::move(it->second));
          it = workers_.erase(it);
          continue;
        }
      }
      ++it;
    }
  }
  dead.clear();
}

Json Kubelet::Summary() {
  std::vector<PodWorker*> workers;
  MutexLock lock(mu_);
  for (auto& [uid, w] : workers_) workers.push_back(w.get());
  // Workers stay alive while mu_ is held: Sync erases them under it.
  const auto now = SysClock::now();
  const std::string now_text = api::FormatTimeSeconds(now);
  const uint64_t cpu_ns = NodeCpuNanos(config_.cpus);
  Json node_cpu = {{"time", now_text}, {"usageCoreNanoSeconds", cpu_ns}};
  if (node_cpu_last_ && now > node_cpu_last_->first && cpu_ns >= node_cpu_last_->second) {
    const double dt = std::chrono::duration<double>(now - node_cpu_last_->first).count();
    node_cpu["usageNanoCores"] = static_cast<uint64_t>(static_cast<double>(cpu_ns - node_cpu_last_->second) / dt);
  }
  node_cpu_last_ = std::make_pair(now, cpu_ns);
  auto mem = MemInfo();
  const uint64_t total = mem["MemTotal"];
  const uint64_t available = mem.count("MemAvailable") ? mem["MemAvailable"] : mem["MemFree"];
  Json node = {{"nodeName", config_.node_name},
               {"startTime", started_at_},
               {"cpu", node_cpu},
               {"memory",
                {{"time", now_text},
                 {"availableBytes", available},
                 {"usageBytes", total - mem["MemFree"]},
                 {"workingSetBytes", total - available},
                 {"rssBytes", mem["AnonPages"]},
                 {"pageFaults", 0},
                 {"majorPageFaults", 0}}},
               {"systemContainers", Json::array()}};
  Json pods = Json::array();
  for (PodWorker* w : workers) {
    if (w->pod_ip().empty()) continue;
    PodStats ps = w->Sample();
    Json containers = Json::array();
    uint64_t cpu_sum = 0, nano_sum = 0, ws_sum = 0, rss_sum = 0, usage_sum = 0;
    bool have_nano = true;
    std::string pod_time = now_text;
    for (const ContainerStats& c : ps.containers) {
      const std::string t = api::FormatTimeSeconds(c.time);
      Json cpu = {{"time", t}, {"usageCoreNanoSeconds", c.usage_core_nano_seconds}};
      if (c.usage_nano_cores) {
        cpu["usageNanoCores"] = *c.usage_nano_cores;
        nano_sum += *c.usage_nano_cores;
      } else {
        have_nano = false;
      }
      containers.push_back({{"name", c.name},
                            {"startTime", api::FormatTimeSeconds(c.start_time)},
                            {"cpu", cpu},
                            {"memory",
                             {{"time", t},
                              {"usageBytes", c.usage_bytes},
                              {"workingSetBytes", c.working_set_bytes},
                              {"rssBytes", c.rss_bytes},
                              {"pageFaults", 0},
                              {"majorPageFaults", 0}}}});
      cpu_sum += c.usage_core_nano_seconds;
      ws_sum += c.working_set_bytes;
      rss_sum += c.rss_bytes;
      usage_sum += c.usage_bytes;
      pod_time = t;
    }
    Json pod_cpu = {{"time", pod_time}, {"usageCoreNanoSeconds", cpu_sum}};
    if (have_nano && !ps.containers.empty()) pod_cpu["usageNanoCores"] = nano_sum;
    pods.push_back(
        {{"podRef", {{"name", ps.name}, {"namespace", ps.ns}, {"uid", ps.uid}}},
         {"startTime", api::FormatTimeSeconds(ps.start_time)},
         {"containers", containers},
         {"cpu", pod_cpu},
         {"memory",
          {{"time", pod_time}, {"usageBytes", usage_sum}, {"workingSetBytes", ws_sum}, {"rssBytes", rss_sum}}}});
  }
  return {{"node", node}, {"pods", pods}};
}

std::variant<std::string, LogError> Kubelet::LogFile(const std::string& ns, const std::string& pod,
                                                     const std::string& container, bool previous) {
  MutexLock lock(mu_);
  for (auto& [uid, w] : workers_) {
    Json p = w->PodJson();
    if (jr::String(p["metadata"], "namespace") == ns && jr::String(p["metadata"], "name") == pod) {
      return w->LogFile(container, previous);
    }
  }
  return LogError{404, "pod \"" + ns + "/" + pod + "\" does not exist"};
}

Json Kubelet::Configz() const {
  const CpuManager& cpus = *config_.cpu_manager;
  Json taints = Json::array();
  for (const Taint& t : node_.taints) {
    Json tj = {{"key", t.key}, {"effect", t.effect}};
    if (!t.value.empty()) tj["value"] = t.value;
    taints.push_back(tj);
  }
  Json kc = {{"enableServer", true},
             {"podLogsDir", config_.log_dir + "/pods"},
             {"port", node_.kubelet_port},
             {"nodeStatusUpdateFrequency", GoDuration(node_.heartbeat)},
             {"nodeStatusReportFrequency", GoDuration(node_.heartbeat)},
             {"nodeLeaseDurationSeconds", 40},
             {"cgroupsPerQOS", false},
             {"cpuManagerPolicy", CpuManagerPolicyName(cpus.policy())},
             // The shared pool's containers are moved at the pod worker's next tick.
             {"cpuManagerReconcilePeriod", GoDuration(config_.tick)},
             {"memoryManagerPolicy", "None"},
             {"topologyManagerPolicy", "none"},
             {"topologyManagerScope", "container"},
             {"maxPods", node_.max_pods},
             {"registerNode", true},
             {"registerWithTaints", taints},
             {"crashLoopBackOff", {{"maxContainerRestartPeriod", "5m0s"}}}};
  if (!config_.listen_address.empty()) kc["address"] = config_.listen_address;
  if (!config_.tls_cert_file.empty()) kc["tlsCertFile"] = config_.tls_cert_file;
  if (!config_.tls_key_file.empty()) kc["tlsPrivateKeyFile"] = config_.tls_key_file;
  // omitempty, as the kubelet's: absent without reserved CPUs.
  if (!cpus.reserved().empty()) kc["reservedSystemCPUs"] = FormatCpuList(cpus.reserved());
  return {{"kubeletconfig", kc}};
}

Json Kubelet::Pods() {
  MutexLock lock(mu_);
  Json items = Json::array();
  for (auto& [uid, w] : workers_) items.push_back(w->PodJson());
  return {{"kind", "PodList"}, {"apiVersion", "v1"}, {"metadata", Json::object()}, {"items", items}};
}

}  // namespace fairbench::kubelet
