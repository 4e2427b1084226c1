// PodWorker's container runtime: each container of the pod a container of
// its image through the Docker Engine API (KubeletConfig::runtime kDocker).
// The create body comes from container_config.h; here are the parts that
// talk to the engine and the API server: the image's user and id, the
// volumes as host directories (both runtimes: Secrets, ConfigMaps, the
// downward API, projected volumes, service-account tokens from
// TokenRequests), the pod's /etc/hosts, the engine's view of a container's
// end, and the removal of every container with the pod.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>

#include "common/base64.h"
#include "common/json_read.h"
#include "testing/kubelet/pod_worker.h"
#include "testing/kubelet/pod_worker_container.h"

namespace fairbench::kubelet {

using kube::Json;
namespace jr = json_read;

namespace {

namespace jr = json_read;

constexpr char kServiceAccountDir[] = "/var/run/secrets/kubernetes.io/serviceaccount";
constexpr char kServiceAccountVolume[] = "kube-api-access";

kube::ResourceType ServiceAccounts() {
  return {"", "v1", "ServiceAccount", "serviceaccounts", kube::Scope::kNamespaced};
}

// The engine's RFC 3339 time with nanoseconds ("2026-12-04T19:12:53.123456789Z").
SysClock::time_point EngineTime(const std::string& text, SysClock::time_point fallback) {
  std::tm tm{};
  int nanos_digits = 0;
  char frac[16] = {};
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%15[0-9]", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, frac) < 6) {
    return fallback;
  }
  if (tm.tm_year <= 1) return fallback;  // 0001-01-01: not yet
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  const time_t secs = timegm(&tm);
  std::string f(frac);
  nanos_digits = static_cast<int>(f.size());
  int64_t nanos = 0;
  for (int i = 0; i < 9; ++i) nanos = nanos * 10 + (i < nanos_digits ? f[static_cast<size_t>(i)] - '0' : 0);
  return SysClock::time_point(
      std::chrono::duration_cast<SysClock::duration>(std::chrono::seconds(secs) + std::chrono::nanoseconds(nanos)));
}

// Writes `data` to `path` (parents made) with `mode`, group `gid` when >= 0.
Status WriteVolumeFile(const std::string& path, const std::string& data, mode_t mode, int64_t gid) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::ofstream out(path, std::ios::trunc | std::ios::binary);
  out << data;
  out.close();
  if (!out) return Status::IoError("cannot write " + path);
  if (gid >= 0 && chown(path.c_str(), static_cast<uid_t>(-1), static_cast<gid_t>(gid)) != 0) {
    return Status::IoError("cannot chown " + path);
  }
  if (chmod(path.c_str(), mode) != 0) return Status::IoError("cannot chmod " + path);
  return Status::Ok();
}

// "a=b,c=d" from a Service's selector.
std::string SelectorText(const Json& selector) {
  std::string s;
  for (const auto& [k, v] : selector.items()) {
    if (v.is_string()) s += (s.empty() ? "" : ",") + k + "=" + v.get<std::string>();
  }
  return s;
}

// The containerPort of the pod's port of this name, or 0.
int NamedPort(const Json& pod, const std::string& name) {
  for (const Json& c : pod.value("spec", Json::object()).value("containers", Json::array())) {
    for (const Json& p : c.value("ports", Json::array())) {
      if (jr::String(p, "name") == name) return p.value("containerPort", 0);
    }
  }
  return 0;
}

bool PodReady(const Json& pod) {
  if (pod["metadata"].contains("deletionTimestamp")) return false;
  for (const Json& c : pod.value("status", Json::object()).value("conditions", Json::array())) {
    if (jr::String(c, "type") == "Ready") return jr::String(c, "status") == "True";
  }
  return false;
}

}  // namespace

std::string PodWorker::PodDir() const { return config_.root_dir + "/pods/" + uid_; }

std::string PodWorker::VolumeDir(const Json& volume) const {
  const std::string name = jr::String(volume, "name");
  const char* kind = volume.contains("emptyDir")      ? "kubernetes.io~empty-dir"
                     : volume.contains("secret")      ? "kubernetes.io~secret"
                     : volume.contains("configMap")   ? "kubernetes.io~configmap"
                     : volume.contains("downwardAPI") ? "kubernetes.io~downward-api"
                     : volume.contains("projected")   ? "kubernetes.io~projected"
                                                      : nullptr;
  if (kind == nullptr) return "";
  return PodDir() + "/volumes/" + kind + "/" + name;
}

namespace {

// Go's %q of a string, as the kubelet's fieldpath.FormatMap writes values.
std::string GoQuote(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    const unsigned char u = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (u < 0x20 || u == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", u);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

// A map as a downwardAPI file holds it: `key="value"` lines sorted by key,
// no newline after the last (fieldpath.FormatMap).
std::string FormatMap(const Json& m) {
  std::string out;
  for (const auto& [k, v] : m.items()) {  // nlohmann's object keys are sorted
    if (!out.empty()) out += "\n";
    out += k + "=" + GoQuote(v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;
}

// The fsGroup makes a file group-readable: mode | 0440 (the kubelet's
// volume ownership change).
mode_t FileMode(int mode, int64_t fs_group) { return static_cast<mode_t>(mode) | (fs_group >= 0 ? 0440 : 0); }

}  // namespace

Status PodWorker::WriteObjectFiles(bool secret, const Json& source, const std::string& volume, const std::string& dir,
                                   int default_mode, int64_t fs_group) {
  const std::string oname =
      secret && source.contains("secretName") ? jr::String(source, "secretName") : jr::String(source, "name");
  auto obj = client_.Get(secret ? kube::resources::Secrets() : kube::resources::ConfigMaps(), ns_, oname);
  if (!obj.ok()) {
    if (source.value("optional", false)) return Status::Ok();
    return Status::Unavailable("MountVolume.SetUp failed for volume \"" + volume +
                               "\" : " + (secret ? "secret \"" : "configmap \"") + oname + "\" not found");
  }
  // Every key (or the listed items) as a file; the mode as given (0644
  // by default), readable by the pod's fsGroup as a kubelet makes it.
  std::map<std::string, std::string> data;
  // Named first: a range over items() of a temporary would outlive it.
  const Json text_data = obj->value("data", Json::object());
  for (const auto& [k, val] : text_data.items()) {
    if (!val.is_string()) continue;
    if (secret) {
      auto d = Base64Decode(val.get<std::string>());
      if (d.ok()) data[k] = *d;
    } else {
      data[k] = val.get<std::string>();
    }
  }
  if (!secret) {
    const Json binary_data = obj->value("binaryData", Json::object());
    for (const auto& [k, val] : binary_data.items()) {
      if (!val.is_string()) continue;
      if (auto d = Base64Decode(val.get<std::string>()); d.ok()) data[k] = *d;
    }
  }
  std::vector<std::tuple<std::string, std::string, int>> files;  // path, key, mode
  if (source.contains("items") && source["items"].is_array() && !source["items"].empty()) {
    for (const Json& item : source["items"]) {
      files.emplace_back(jr::String(item, "path"), jr::String(item, "key"), item.value("mode", default_mode));
    }
  } else {
    for (const auto& [k, unused] : data) files.emplace_back(k, k, default_mode);
  }
  for (const auto& [path, key, mode] : files) {
    auto it = data.find(key);
    if (it == data.end()) {
      if (source.value("optional", false)) continue;
      return Status::Unavailable("MountVolume.SetUp failed for volume \"" + volume + "\" : " +
                                 (secret ? "secret" : "configmap") + " references non-existent config key: " + key);
    }
    if (Status s = WriteVolumeFile(dir + "/" + path, it->second, FileMode(mode, fs_group), fs_group); !s.ok()) {
      return s;
    }
  }
  return Status::Ok();
}

Status PodWorker::WriteDownwardApiFiles(const Json& source, const std::string& dir, int default_mode,
                                        int64_t fs_group) {
  const Json md = pod_.value("metadata", Json::object());
  for (const Json& item : source.value("items", Json::array())) {
    const std::string path = jr::String(item, "path");
    if (!item.contains("fieldRef")) continue;  // resourceFieldRef: not here
    const std::string field = jr::String(item["fieldRef"], "fieldPath");
    std::optional<std::string> value;
    if (field == "metadata.name") value = name_;
    if (field == "metadata.namespace") value = ns_;
    if (field == "metadata.uid") value = uid_;
    if (field == "metadata.labels") value = FormatMap(md.value("labels", Json::object()));
    if (field == "metadata.annotations") value = FormatMap(md.value("annotations", Json::object()));
    for (const char* map : {"labels", "annotations"}) {
      const std::string prefix = std::string("metadata.") + map + "['";
      if (field.rfind(prefix, 0) == 0 && field.size() > prefix.size() + 2 && field.substr(field.size() - 2) == "']") {
        value = jr::String(md.value(map, Json::object()),
                           field.substr(prefix.size(), field.size() - prefix.size() - 2).c_str());
      }
    }
    if (!value) return Status::InvalidArgument("downwardAPI: unsupported fieldPath \"" + field + "\"");
    if (Status s =
            WriteVolumeFile(dir + "/" + path, *value, FileMode(item.value("mode", default_mode), fs_group), fs_group);
        !s.ok()) {
      return s;
    }
  }
  return Status::Ok();
}

Status PodWorker::PrepareVolumes() {
  const Json spec = pod_.value("spec", Json::object());
  const Json pod_sc = spec.value("securityContext", Json::object());
  const int64_t fs_group = pod_sc.is_object() && pod_sc.contains("fsGroup") && pod_sc["fsGroup"].is_number_integer()
                               ? pod_sc["fsGroup"].get<int64_t>()
                               : -1;
  std::error_code ec;
  std::filesystem::create_directories(PodDir(), ec);
  if (ec) return Status::IoError("cannot create " + PodDir() + ": " + ec.message());
  for (const Json& v : spec.value("volumes", Json::array())) {
    const std::string vname = jr::String(v, "name");
    const std::string dir = VolumeDir(v);
    if (dir.empty()) continue;  // kinds this kubelet does not set up: not mounted
    std::filesystem::create_directories(dir, ec);
    if (ec) return Status::IoError("cannot create volume " + dir + ": " + ec.message());
    if (v.contains("emptyDir")) {
      chmod(dir.c_str(), 0777);  // as a kubelet's emptyDir: any user of the pod writes it
      continue;
    }
    Status s;
    if (v.contains("secret") || v.contains("configMap")) {
      const bool secret = v.contains("secret");
      const Json source = secret ? v["secret"] : v["configMap"];
      s = WriteObjectFiles(secret, source, vname, dir, source.value("defaultMode", 0644), fs_group);
    } else if (v.contains("downwardAPI")) {
      s = WriteDownwardApiFiles(v["downwardAPI"], dir, v["downwardAPI"].value("defaultMode", 0644), fs_group);
    } else {
      // projected: its sources one after another into one directory.
      const Json projected = v["projected"];
      const int mode = projected.value("defaultMode", 0644);
      for (const Json& source : projected.value("sources", Json::array())) {
        if (source.contains("secret")) {
          s = WriteObjectFiles(true, source["secret"], vname, dir, mode, fs_group);
        } else if (source.contains("configMap")) {
          s = WriteObjectFiles(false, source["configMap"], vname, dir, mode, fs_group);
        } else if (source.contains("downwardAPI")) {
          s = WriteDownwardApiFiles(source["downwardAPI"], dir, mode, fs_group);
        } else if (source.contains("serviceAccountToken")) {
          const Json t = source["serviceAccountToken"];
          auto token = RequestToken(jr::String(t, "audience"), t.value("expirationSeconds", int64_t{3600}));
          if (!token.ok()) {
            s = Status::Unavailable("MountVolume.SetUp failed for volume \"" + vname +
                                    "\" : " + token.status().message());
          } else {
            s = WriteVolumeFile(dir + "/" + jr::String(t, "path"), *token, FileMode(mode, fs_group), fs_group);
          }
        }
        if (!s.ok()) break;
      }
    }
    if (!s.ok()) return s;
    if (fs_group >= 0) (void)chown(dir.c_str(), static_cast<uid_t>(-1), static_cast<gid_t>(fs_group));
  }
  // A pod the ServiceAccount admission gave a token carries it as a
  // projected volume (kube-api-access-…, set up above); processes see the
  // host's filesystem and get none of their own.
  bool projected_token = false;
  for (const Json& v : spec.value("volumes", Json::array())) {
    for (const Json& source : v.value("projected", Json::object()).value("sources", Json::array())) {
      projected_token |= source.contains("serviceAccountToken");
    }
  }
  if (config_.runtime != ContainerRuntime::kDocker) return Status::Ok();
  // The service-account token, unless the pod (or else its ServiceAccount)
  // says automountServiceAccountToken: false.
  const std::string sa = !jr::String(spec, "serviceAccountName").empty() ? jr::String(spec, "serviceAccountName")
                         : !jr::String(spec, "serviceAccount").empty()   ? jr::String(spec, "serviceAccount")
                                                                         : "default";
  // kube-apiserver's ServiceAccount admission has decided already where it
  // runs (the projected volume above), and a kubelet may not read
  // ServiceAccounts there (the Node authorizer forbids it).
  std::optional<bool> automount;
  if (projected_token) {
    automount = false;
  } else if (spec.contains("automountServiceAccountToken") && spec["automountServiceAccountToken"].is_boolean()) {
    automount = spec["automountServiceAccountToken"].get<bool>();
  } else if (auto account = client_.Get(ServiceAccounts(), ns_, sa); account.ok()) {
    if (account->contains("automountServiceAccountToken") && (*account)["automountServiceAccountToken"].is_boolean()) {
      automount = (*account)["automountServiceAccountToken"].get<bool>();
    }
  } else if (account.reason() == kube::Reason::kForbidden) {
    automount = false;  // Kubernetes, and no projected token: admission said no
  }
  if (automount.value_or(true)) {
    const std::string dir = PodDir() + "/volumes/kubernetes.io~projected/" + kServiceAccountVolume;
    if (Status s = WriteServiceAccountVolume(dir); !s.ok()) return s;
    if (fs_group >= 0) (void)chown(dir.c_str(), static_cast<uid_t>(-1), static_cast<gid_t>(fs_group));
  }
  // The pod's /etc/hosts exists before any container names it (the engine
  // would make a directory of a missing path); RefreshHosts fills it.
  const std::string hosts = PodDir() + "/etc-hosts";
  if (!std::filesystem::exists(hosts)) {
    std::ofstream(hosts) << "127.0.0.1\tlocalhost\n";
    chmod(hosts.c_str(), 0644);
  }
  return Status::Ok();
}

Result<std::string> PodWorker::RequestToken(const std::string& audience, int64_t expiration_seconds) {
  const Json spec = pod_.value("spec", Json::object());
  const std::string sa =
      jr::String(spec, "serviceAccountName").empty() ? "default" : jr::String(spec, "serviceAccountName");
  // A token bound to this pod, as the kubelet's projected volume asks for
  // it: valid while the pod and its ServiceAccount exist.
  Json audiences = Json::array();
  if (!audience.empty()) audiences.push_back(audience);
  const Json request = {
      {"apiVersion", "authentication.k8s.io/v1"},
      {"kind", "TokenRequest"},
      {"spec",
       {{"audiences", audiences},
        {"expirationSeconds", expiration_seconds},
        {"boundObjectRef", {{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", name_}, {"uid", uid_}}}}}};
  auto token = client_.CreateSubresource(ServiceAccounts(), ns_, sa, "token", request);
  if (!token.ok()) return Status::Unavailable("failed to fetch token: " + token.status().message());
  const std::string text = jr::String(jr::Object(*token, "status"), "token");
  if (text.empty()) return Status::Unavailable("the TokenRequest for serviceaccount " + sa + " gave no token");
  return text;
}

Status PodWorker::WriteServiceAccountVolume(const std::string& dir) {
  auto token = RequestToken("", 3607);
  if (!token.ok()) {
    return Status::Unavailable("MountVolume.SetUp failed for volume \"" + std::string(kServiceAccountVolume) +
                               "\" : " + token.status().message());
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  chmod(dir.c_str(), 0755);
  for (const auto& [file, content] : std::vector<std::pair<std::string, std::string>>{
           {"token", *token}, {"ca.crt", config_.api_ca_pem}, {"namespace", ns_}}) {
    if (Status s = WriteVolumeFile(dir + "/" + file, content, 0644, -1); !s.ok()) return s;
  }
  return Status::Ok();
}

void PodWorker::RefreshHosts() {
  const auto now = Clock::now();
  if (now < next_hosts_refresh_) return;
  next_hosts_refresh_ = now + std::chrono::seconds(1);
  // Services of the pod's namespace, each to the IP of a ready pod its
  // selector picks (the first by name): what kube-proxy would reach.
  mu_.unlock();
  std::string services;
  kube::Client& client = config_.service_client != nullptr ? *config_.service_client : client_;
  auto list = client.List(kube::resources::Services(), ns_);
  if (list.ok()) {
    std::vector<Json> items = list->items;
    std::sort(items.begin(), items.end(), [](const Json& a, const Json& b) {
      return jr::String(a["metadata"], "name") < jr::String(b["metadata"], "name");
    });
    for (const Json& svc : items) {
      const std::string sname = jr::String(svc["metadata"], "name");
      const Json sspec = svc.value("spec", Json::object());
      const Json selector = sspec.value("selector", Json::object());
      if (!selector.is_object() || selector.empty()) continue;
      kube::ListOptions o;
      o.label_selector = SelectorText(selector);
      auto pods = client.List(kube::resources::Pods(), ns_, o);
      if (!pods.ok()) continue;
      std::vector<Json> ready;
      const bool not_ready_too = sspec.value("publishNotReadyAddresses", false);
      for (const Json& p : pods->items) {
        const std::string ip = jr::String(p.value("status", Json::object()), "podIP");
        if (!ip.empty() && (not_ready_too || PodReady(p))) ready.push_back(p);
      }
      if (ready.empty()) continue;
      std::sort(ready.begin(), ready.end(), [](const Json& a, const Json& b) {
        return jr::String(a["metadata"], "name") < jr::String(b["metadata"], "name");
      });
      std::string ip = jr::String(ready.front()["status"], "podIP");
      // A port that is not its targetPort (a number, or the name of a
      // container port of the pod): the names go to an address of the
      // Service's own, forwarded as kube-proxy would.
      std::vector<ServicePortRoute> routes;
      bool translated = false;
      for (const Json& p : sspec.value("ports", Json::array())) {
        const std::string protocol = jr::String(p, "protocol");
        if (!protocol.empty() && protocol != "TCP") continue;
        const int port = p.value("port", 0);
        int target = port;
        if (p.contains("targetPort") && p["targetPort"].is_number_integer()) {
          target = p["targetPort"].get<int>();
        } else if (p.contains("targetPort") && p["targetPort"].is_string()) {
          target = NamedPort(ready.front(), p["targetPort"].get<std::string>());
        }
        if (port <= 0 || target <= 0) continue;
        translated |= target != port;
        routes.push_back({port, ip, target});
      }
      if (translated && config_.service_proxy) {
        auto address = config_.service_proxy->Route(ns_, sname, routes);
        if (address.ok()) ip = *address;
      }
      services += ip + "\t" + sname + " " + sname + "." + ns_ + " " + sname + "." + ns_ + ".svc " + sname + "." + ns_ +
                  ".svc.cluster.local\n";
    }
  }
  mu_.lock();
  std::string text = "# Kubernetes-managed hosts file (fairbench-test-kubelet).\n127.0.0.1\tlocalhost\n";
  text += "::1\tlocalhost ip6-localhost ip6-loopback\n";
  if (!admission_.pod_ip.empty()) text += admission_.pod_ip + "\t" + name_ + "\n";
  if (!config_.api_host.empty() && config_.api_host.find_first_not_of("0123456789.") == std::string::npos) {
    text += config_.api_host +
            "\tkubernetes kubernetes.default kubernetes.default.svc kubernetes.default.svc.cluster.local\n";
  }
  text += "# Services of namespace " + ns_ + ", each to a ready pod behind it (no kube-proxy here):\n" + services;
  if (text == hosts_text_) return;
  // In place: the containers' bind mounts hold this inode.
  const std::string path = PodDir() + "/etc-hosts";
  std::error_code ec;
  std::filesystem::create_directories(PodDir(), ec);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const ssize_t n = write(fd, text.data(), text.size());
  close(fd);
  if (n == static_cast<ssize_t>(text.size())) hosts_text_ = text;
}

namespace {

using EnvList = std::vector<std::pair<std::string, std::string>>;

// command and args, $(VAR) expanded with the container's environment.
void AddCommand(const Json& container, const EnvList& env, ContainerInputs* in) {
  for (const Json& a : container.value("command", Json::array())) {
    if (a.is_string()) in->command.push_back(ExpandWith(a.get<std::string>(), env));
  }
  for (const Json& a : container.value("args", Json::array())) {
    if (a.is_string()) in->args.push_back(ExpandWith(a.get<std::string>(), env));
  }
  in->has_command = !in->command.empty();
  in->has_args = !in->args.empty();
}

// What every container of a pod sees: its hostname, and where the API
// server is (the kubelet adds these whatever enableServiceLinks says),
// then the container's own environment.
void AddPodEnv(const std::string& hostname, const KubeletConfig& config, const EnvList& env, ContainerInputs* in) {
  in->env.emplace_back("HOSTNAME", hostname);
  if (!config.api_host.empty()) {
    const std::string port = std::to_string(config.api_port);
    in->env.emplace_back("KUBERNETES_SERVICE_HOST", config.api_host);
    in->env.emplace_back("KUBERNETES_SERVICE_PORT", port);
    in->env.emplace_back("KUBERNETES_SERVICE_PORT_HTTPS", port);
    in->env.emplace_back("KUBERNETES_PORT", "tcp://" + config.api_host + ":" + port);
  }
  in->env.insert(in->env.end(), env.begin(), env.end());
}

// Volume mounts onto the pod's host directories (`volume_dir`), and the
// service account's token where the container does not mount it itself.
void AddMounts(const Json& pod, const Json& container, const std::function<std::string(const Json&)>& volume_dir,
               const std::string& pod_dir, ContainerInputs* in) {
  std::map<std::string, std::string> volume_dirs;
  for (const Json& v : pod.value("spec", Json::object()).value("volumes", Json::array())) {
    volume_dirs[jr::String(v, "name")] = volume_dir(v);
  }
  bool sa_mounted = false;
  for (const Json& vm : container.value("volumeMounts", Json::array())) {
    const std::string dir = volume_dirs[jr::String(vm, "name")];
    if (dir.empty()) continue;
    std::string host = dir;
    if (!jr::String(vm, "subPath").empty()) host += "/" + jr::String(vm, "subPath");
    in->mounts.push_back({host, jr::String(vm, "mountPath"), vm.value("readOnly", false)});
    sa_mounted |= jr::String(vm, "mountPath") == kServiceAccountDir;
  }
  const std::string sa_dir = pod_dir + "/volumes/kubernetes.io~projected/" + kServiceAccountVolume;
  if (!sa_mounted && std::filesystem::exists(sa_dir)) in->mounts.push_back({sa_dir, kServiceAccountDir, true});
}

// Creates container `name`, replacing one of that name left by an earlier
// kubelet of this node.
Result<std::string> CreateReplacing(docker::DockerClient& engine, const std::string& name, const Json& body) {
  auto id = engine.CreateContainer(name, body);
  if (!id.ok() && id.status().code() == Status::Code::kFailedPrecondition) {
    (void)engine.RemoveContainer(name);
    id = engine.CreateContainer(name, body);
  }
  return id;
}

}  // namespace

void PodWorker::StartDockerContainer(Container& c, const std::vector<std::pair<std::string, std::string>>& env) {
  docker::DockerClient& engine = *config_.docker;
  auto wait = [&](const std::string& reason, const std::string& message, std::chrono::milliseconds retry) {
    c.state = Container::State::kWaiting;
    c.waiting_reason = reason;
    c.waiting_message = message;
    c.restart_at = Clock::now() + retry;
  };
  auto image = engine.InspectImage(c.image);
  if (!image.ok()) {
    // Nothing is pulled here: an image the engine has not got stays so.
    wait("ErrImagePull", image.status().message(), config_.restart_backoff);
    Event(true, "Failed", "Failed to pull image \"" + c.image + "\": " + image.status().message());
    Event(true, "Failed", "Error: ErrImagePull");
    return;
  }
  const std::string image_user = jr::String(jr::Object(*image, "Config"), "User");
  c.image_id = "docker://" + jr::String(*image, "Id");

  ContainerInputs in;
  in.pod = pod_;
  in.container = c.spec;
  in.image_user = image_user;
  AddCommand(c.spec, env, &in);
  AddPodEnv(name_, config_, env, &in);
  AddMounts(
      pod_, c.spec, [this](const Json& v) { return VolumeDir(v); }, PodDir(), &in);
  in.hosts_file = PodDir() + "/etc-hosts";
  c.cpus = ContainerCpus(c);
  in.cpus = c.cpus;
  in.nofile = config_.container_nofile;
  in.labels = {{"io.kubernetes.pod.name", name_},
               {"io.kubernetes.pod.namespace", ns_},
               {"io.kubernetes.pod.uid", uid_},
               {"io.kubernetes.container.name", c.name},
               {"fairbench.dev/test-kubelet-node", config_.node_name}};
  auto body = DockerCreateBody(in);
  if (!body.ok()) {
    wait("CreateContainerConfigError", body.status().message(), std::chrono::seconds(1));
    Event(true, "Failed", "Error: " + body.status().message());
    return;
  }
  // The earlier instance stays (for `logs --previous`) until the next one.
  if (!c.docker_id.empty()) {
    c.old_docker_ids.push_back(c.docker_id);
    c.docker_id.clear();
    while (c.old_docker_ids.size() > 1) {
      (void)engine.RemoveContainer(c.old_docker_ids.front());
      c.old_docker_ids.erase(c.old_docker_ids.begin());
    }
  }
  // dockershim's names: k8s_<container>_<pod>_<namespace>_<uid>_<attempt>.
  const std::string cname =
      "k8s_" + c.name + "_" + name_ + "_" + ns_ + "_" + uid_ + "_" + std::to_string(c.restart_count);
  auto id = CreateReplacing(engine, cname, *body);
  if (!id.ok()) {
    wait("CreateContainerError", id.status().message(), config_.restart_backoff);
    Event(true, "Failed", "Error: " + id.status().message());
    return;
  }
  c.docker_id = *id;
  c.container_id = "docker://" + *id;
  const std::string dir = config_.log_dir + "/pods/" + ns_ + "_" + name_ + "_" + uid_ + "/" + c.name;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!c.log_path.empty()) c.previous_log_path = c.log_path;
  c.log_path = dir + "/" + std::to_string(c.restart_count) + ".log";
  c.last_cpu.reset();
  c.last_stats.reset();
  c.host_pid = 0;
  Event(false, "Pulled", "Container image \"" + c.image + "\" already present on machine");
  Event(false, "Created", "Created container " + c.name);
  c.started_at = SysClock::now();
  if (Status s = engine.StartContainer(*id); !s.ok()) {
    // As containerd: a container whose process cannot start (no such
    // executable, a mount refused) ends at once with StartError.
    Event(true, "Failed", "Error: failed to start container \"" + c.name + "\": " + s.message());
    c.state = Container::State::kTerminated;
    c.exit_code = 128;
    c.signal = 0;
    c.term_reason = "StartError";
    c.term_message = s.message();
    c.finished_at = SysClock::now();
    c.ever_started = true;
    return;
  }
  if (auto inspect = engine.InspectContainer(*id); inspect.ok()) {
    const Json state = jr::Object(*inspect, "State");
    c.host_pid = state.value("Pid", int64_t{0});
    c.started_at = EngineTime(jr::String(state, "StartedAt"), c.started_at);
    const std::string stop = jr::String(jr::Object(*inspect, "Config"), "StopSignal");
    if (!stop.empty()) c.stop_signal = stop;
  }
  Event(false, "Started", "Started container " + c.name);
  c.state = Container::State::kRunning;
  c.ever_started = true;
  c.waiting_reason.clear();
  c.waiting_message.clear();
  c.next_inspect = Clock::now() + std::chrono::milliseconds(100);
  ArmProbes(c);
}

void PodWorker::PollDocker(Container& c) {
  if (c.state != Container::State::kRunning || c.docker_id.empty()) return;
  const auto now = Clock::now();
  if (now < c.next_inspect) return;
  c.next_inspect = now + std::chrono::milliseconds(50);  // an exit is seen within a tick
  auto inspect = config_.docker->InspectContainer(c.docker_id);
  if (!inspect.ok()) {
    if (inspect.status().code() != Status::Code::kNotFound) return;
    // Removed behind the kubelet's back: what a kubelet reports then.
    c.state = Container::State::kTerminated;
    c.finished_at = SysClock::now();
    c.ready = false;
    c.exit_code = 137;
    c.signal = 0;
    c.host_pid = 0;
    c.term_reason = "ContainerStatusUnknown";
    c.term_message = "The container could not be located when the pod was terminated";
    return;
  }
  const Json state = jr::Object(*inspect, "State");
  if (state.value("Running", false)) return;
  OnDockerExit(c, state);
}

void PodWorker::OnDockerExit(Container& c, const Json& state) {
  c.state = Container::State::kTerminated;
  c.ready = false;
  c.host_pid = 0;
  c.signal = 0;
  c.exit_code = state.value("ExitCode", 0);
  c.started_at = EngineTime(jr::String(state, "StartedAt"), c.started_at);
  c.finished_at = EngineTime(jr::String(state, "FinishedAt"), SysClock::now());
  // The kernel's OOM kill, as the engine saw it.
  if (state.value("OOMKilled", false)) {
    c.term_reason = "OOMKilled";
  } else {
    c.term_reason = c.exit_code == 0 ? "Completed" : "Error";
  }
  c.term_message = jr::String(state, "Error");
}

void PodWorker::RemoveDockerContainers() {
  std::vector<std::string> ids;
  for (auto* list : {&init_, &main_}) {
    for (auto& cp : *list) {
      if (!cp->docker_id.empty()) ids.push_back(cp->docker_id);
      ids.insert(ids.end(), cp->old_docker_ids.begin(), cp->old_docker_ids.end());
      if (cp->state == Container::State::kRunning) {
        cp->state = Container::State::kTerminated;
        cp->finished_at = SysClock::now();
      }
      cp->docker_id.clear();
      cp->old_docker_ids.clear();
      cp->host_pid = 0;
    }
  }
  mu_.unlock();
  for (const std::string& id : ids) (void)config_.docker->RemoveContainer(id);
  mu_.lock();
}

}  // namespace fairbench::kubelet
