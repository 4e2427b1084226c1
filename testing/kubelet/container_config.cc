#include "testing/kubelet/container_config.h"

#include <algorithm>
#include <cctype>

#include "testing/kubelet/cpu_manager.h"
#include "testing/kubelet/pod_spec.h"
#include "common/json_read.h"

namespace fairbench::kubelet {

using Json = nlohmann::json;

namespace {

namespace jr = json_read;

std::string QuantityText(const Json& q) { return q.is_string() ? q.get<std::string>() : q.dump(); }

std::string PodText(const Json& pod) {
  const Json md = pod.value("metadata", Json::object());
  return jr::String(md, "name") + "_" + jr::String(md, "namespace") + "(" + jr::String(md, "uid") + ")";
}

constexpr int64_t kCpuPeriodMicros = 100000;  // the kubelet's CFS period

}  // namespace

std::optional<int64_t> NumericUser(const std::string& user) {
  const std::string uid = user.substr(0, user.find(':'));
  if (uid.empty() || uid.size() > 10) return std::nullopt;
  if (!std::all_of(uid.begin(), uid.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) return std::nullopt;
  return std::stoll(uid);
}

Json EffectiveSecurityContext(const Json& pod_spec, const Json& container) {
  Json effective = container.value("securityContext", Json::object());
  if (!effective.is_object()) effective = Json::object();
  const Json pod_sc = pod_spec.value("securityContext", Json::object());
  if (!pod_sc.is_object()) return effective;
  for (const char* key : {"runAsUser", "runAsGroup", "runAsNonRoot", "seccompProfile", "seLinuxOptions",
                          "appArmorProfile", "windowsOptions"}) {
    if (!effective.contains(key) && pod_sc.contains(key) && !pod_sc[key].is_null()) effective[key] = pod_sc[key];
  }
  return effective;
}

Status VerifyRunAsNonRoot(const Json& effective, const std::string& image_user, const std::string& pod_text,
                          const std::string& container) {
  if (!effective.value("runAsNonRoot", false)) return Status::Ok();
  if (effective.contains("runAsUser") && effective["runAsUser"].is_number_integer()) {
    if (effective["runAsUser"].get<int64_t>() == 0) {
      return Status::FailedPrecondition("container's runAsUser breaks non-root policy (pod: \"" + pod_text +
                                        "\", container: " + container + ")");
    }
    return Status::Ok();
  }
  // The image's user: a number, a name, or none (root, as the kubelet takes it).
  const std::optional<int64_t> uid = image_user.empty() ? std::optional<int64_t>(0) : NumericUser(image_user);
  if (uid && *uid == 0) {
    return Status::FailedPrecondition("container has runAsNonRoot and image will run as root (pod: \"" + pod_text +
                                      "\", container: " + container + ")");
  }
  if (!uid) {
    return Status::FailedPrecondition(
        "container has runAsNonRoot and image has non-numeric user (" + image_user.substr(0, image_user.find(':')) +
        "), cannot verify user is non-root (pod: \"" + pod_text + "\", container: " + container + ")");
  }
  return Status::Ok();
}

Result<Json> DockerCreateBody(const ContainerInputs& in) {
  const Json spec = in.pod.value("spec", Json::object());
  const std::string name = jr::String(in.container, "name");
  const Json sc = EffectiveSecurityContext(spec, in.container);
  if (Status s = VerifyRunAsNonRoot(sc, in.image_user, PodText(in.pod), name); !s.ok()) return s;

  Json body = {{"Image", jr::String(in.container, "image")}, {"Labels", in.labels}};
  if (in.has_command) {
    body["Entrypoint"] = in.command;
    body["Cmd"] = in.args;  // the image's CMD goes with its ENTRYPOINT
  } else if (in.has_args) {
    body["Cmd"] = in.args;
  }
  Json env = Json::array();
  for (const auto& [k, v] : in.env) env.push_back(k + "=" + v);
  body["Env"] = env;
  if (!jr::String(in.container, "workingDir").empty()) body["WorkingDir"] = jr::String(in.container, "workingDir");

  // The user: runAsUser (else the image's) and runAsGroup.
  std::string user;
  if (sc.contains("runAsUser") && sc["runAsUser"].is_number_integer()) {
    user = std::to_string(sc["runAsUser"].get<int64_t>());
  }
  if (sc.contains("runAsGroup") && sc["runAsGroup"].is_number_integer()) {
    if (user.empty()) user = in.image_user.empty() ? "0" : in.image_user.substr(0, in.image_user.find(':'));
    user += ":" + std::to_string(sc["runAsGroup"].get<int64_t>());
  }
  if (!user.empty()) body["User"] = user;

  Json host = {{"NetworkMode", "host"}};
  // Volumes and the pod's /etc/hosts.
  Json binds = Json::array();
  for (const BindMount& m : in.mounts) {
    binds.push_back(m.host_path + ":" + m.container_path + (m.read_only ? ":ro" : ""));
  }
  if (!in.hosts_file.empty()) binds.push_back(in.hosts_file + ":/etc/hosts");
  host["Binds"] = binds;

  // Resources.
  const Json resources = in.container.value("resources", Json::object());
  const Json limits = resources.value("limits", Json::object());
  const Json requests = resources.value("requests", Json::object());
  if (limits.contains("memory")) {
    auto bytes = ParseMemoryBytes(QuantityText(limits["memory"]));
    if (!bytes.ok()) return Status::InvalidArgument("resources.limits.memory: " + bytes.status().message());
    host["Memory"] = *bytes;
    host["MemorySwap"] = *bytes;  // no swap: over the limit is an OOM kill
  }
  if (limits.contains("cpu")) {
    auto millis = ParseCpuMillis(QuantityText(limits["cpu"]));
    if (!millis.ok()) return Status::InvalidArgument("resources.limits.cpu: " + millis.status().message());
    // The kubelet's milliCPUToQuota: at least 1 ms per period.
    host["CpuPeriod"] = kCpuPeriodMicros;
    host["CpuQuota"] = std::max<int64_t>(1000, *millis * kCpuPeriodMicros / 1000);
  }
  {
    // The kubelet's milliCPUToShares: requests (defaulted from limits), at least 2.
    const Json& cpu_request = requests.contains("cpu") ? requests["cpu"] : limits.value("cpu", Json());
    int64_t shares = 2;
    if (!cpu_request.is_null()) {
      auto millis = ParseCpuMillis(QuantityText(cpu_request));
      if (millis.ok()) shares = std::max<int64_t>(2, *millis * 1024 / 1000);
    }
    host["CpuShares"] = shares;
  }
  if (!in.cpus.empty()) {
    host["CpusetCpus"] = FormatCpuList(in.cpus);
  }
  if (in.nofile > 0) {
    host["Ulimits"] = Json::array({{{"Name", "nofile"}, {"Soft", in.nofile}, {"Hard", in.nofile}}});
  }

  // Security.
  host["ReadonlyRootfs"] = sc.value("readOnlyRootFilesystem", false);
  host["Privileged"] = sc.value("privileged", false);
  const Json caps = sc.value("capabilities", Json::object());
  Json add = Json::array();
  Json drop = Json::array();
  for (const Json& c : caps.value("add", Json::array())) {
    if (c.is_string()) add.push_back(c);
  }
  for (const Json& c : caps.value("drop", Json::array())) {
    if (c.is_string()) drop.push_back(c);
  }
  if (!add.empty()) host["CapAdd"] = add;
  if (!drop.empty()) host["CapDrop"] = drop;
  Json security_opt = Json::array();
  if (sc.contains("allowPrivilegeEscalation") && sc["allowPrivilegeEscalation"].is_boolean() &&
      !sc["allowPrivilegeEscalation"].get<bool>()) {
    security_opt.push_back("no-new-privileges");
  }
  // Kubernetes' default is Unconfined (the SeccompDefault kubelet option
  // off); RuntimeDefault is the engine's own profile.
  const std::string seccomp = jr::String(sc.value("seccompProfile", Json::object()), "type");
  if (seccomp == "Localhost") {
    return Status::InvalidArgument("seccompProfile type Localhost is not supported by the test kubelet");
  }
  if (seccomp != "RuntimeDefault" && !host["Privileged"].get<bool>()) security_opt.push_back("seccomp=unconfined");
  if (!security_opt.empty()) host["SecurityOpt"] = security_opt;
  Json groups = Json::array();
  const Json pod_sc = spec.value("securityContext", Json::object());
  if (pod_sc.is_object()) {
    if (pod_sc.contains("fsGroup") && pod_sc["fsGroup"].is_number_integer()) {
      groups.push_back(std::to_string(pod_sc["fsGroup"].get<int64_t>()));
    }
    for (const Json& g : pod_sc.value("supplementalGroups", Json::array())) {
      if (g.is_number_integer()) groups.push_back(std::to_string(g.get<int64_t>()));
    }
  }
  if (!groups.empty()) host["GroupAdd"] = groups;
  body["HostConfig"] = host;
  return body;
}

}  // namespace fairbench::kubelet
