#include "controller/platform/kubernetes/pod_templates.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>

#include "api/cells.h"
#include "common/log_lines.h"
#include "api/quantity.h"

namespace fairbench::controller::k8s {
namespace {

using Json = nlohmann::json;

constexpr size_t kMaxLabel = 63;
constexpr size_t kHashPart = 11;  // "-" and 10 hex digits

std::string Hash10(std::string_view s) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a, 64 bits
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return std::string(buf, 10);
}

std::string CutPart(std::string_view s, size_t n) {
  std::string out(s.substr(0, std::min(n, s.size())));
  while (!out.empty() && (out.back() == '-' || out.back() == '.')) out.pop_back();
  return out;
}

Json Tolerations(const std::vector<api::Toleration>& tolerations) {
  Json out = Json::array();
  for (const api::Toleration& t : tolerations) {
    Json j = Json::object();
    if (!t.key.empty()) j["key"] = t.key;
    if (!t.operator_.empty()) j["operator"] = t.operator_;
    if (!t.value.empty()) j["value"] = t.value;
    if (!t.effect.empty()) j["effect"] = t.effect;
    if (t.toleration_seconds) j["tolerationSeconds"] = *t.toleration_seconds;
    out.push_back(std::move(j));
  }
  return out;
}

// requests == limits.
Json Resources(const std::optional<api::CpuQuantity>& cpu, const std::optional<api::MemoryQuantity>& memory) {
  Json list = Json::object();
  if (cpu) list["cpu"] = api::FormatCpu(*cpu);
  if (memory) list["memory"] = api::FormatMemory(*memory);
  if (list.empty()) return Json::object();
  return Json{{"requests", list}, {"limits", list}};
}

// The placement part of a pod spec: nodeName, nodeSelector, tolerations.
void Place(Json& spec, const std::string& node, const api::NodePlacement& placement) {
  spec["nodeName"] = node;
  if (!placement.node_selector.empty()) spec["nodeSelector"] = placement.node_selector;
  if (!placement.tolerations.empty()) spec["tolerations"] = Tolerations(placement.tolerations);
}

Json Metadata(const std::string& name, const RunIdentity& run, Json labels) {
  Json md = {{"name", name}, {"labels", std::move(labels)}};
  if (!run.namespace_.empty()) md["namespace"] = run.namespace_;
  Json owners = OwnerReferences(run);
  if (!owners.empty()) md["ownerReferences"] = std::move(owners);
  return md;
}

// Common pod spec settings of both pods, with what the Pod Security
// Standard "restricted" asks of a pod: non-root, the runtime's seccomp
// profile.
Json BaseSpec(int64_t grace_period_seconds) {
  return {{"restartPolicy", "Never"},
          {"terminationGracePeriodSeconds", grace_period_seconds},
          {"automountServiceAccountToken", false},
          {"enableServiceLinks", false},
          {"securityContext", {{"runAsNonRoot", true}, {"seccompProfile", {{"type", "RuntimeDefault"}}}}}};
}

// What "restricted" asks of each container.
Json RestrictedContainer() {
  return {{"allowPrivilegeEscalation", false}, {"capabilities", {{"drop", Json::array({"ALL"})}}}};
}

// The target container's: restricted, but for what the run's
// spec.targets[].securityContext sets.
Json TargetSecurityContext(const api::Target& t) {
  Json sc = RestrictedContainer();
  if (!t.security_context) return sc;
  const api::TargetSecurityContext& given = *t.security_context;
  if (given.run_as_non_root) sc["runAsNonRoot"] = *given.run_as_non_root;
  if (given.run_as_user) sc["runAsUser"] = *given.run_as_user;
  if (given.run_as_group) sc["runAsGroup"] = *given.run_as_group;
  if (given.allow_privilege_escalation) sc["allowPrivilegeEscalation"] = *given.allow_privilege_escalation;
  if (given.capabilities) {
    Json caps = Json::object();
    if (!given.capabilities->add.empty()) caps["add"] = given.capabilities->add;
    if (!given.capabilities->drop.empty()) caps["drop"] = given.capabilities->drop;
    sc["capabilities"] = caps;
  }
  return sc;
}

}  // namespace

std::string DnsLabelName(std::string_view prefix, std::string_view suffix) {
  const std::string whole = std::string(prefix) + std::string(suffix);
  if (whole.size() <= kMaxLabel) return whole;
  const std::string hash = "-" + Hash10(whole);
  if (suffix.size() <= 30) return CutPart(prefix, kMaxLabel - kHashPart - suffix.size()) + hash + std::string(suffix);
  return CutPart(whole, kMaxLabel - kHashPart) + hash;
}

std::string TargetPodName(std::string_view run, std::string_view target) {
  return DnsLabelName(run, "-" + std::string(target));
}

std::string AgentPodName(std::string_view run, int index) {
  return DnsLabelName(run, "-agent-" + std::to_string(index));
}

std::string LabelValue(std::string_view value) { return DnsLabelName(value); }

std::string RunPodsSelector(std::string_view run) {
  return std::string(api::label::kManagedBy) + "=" + api::label::kFairbench + "," + api::label::kRun + "=" +
         LabelValue(run);
}

Json OwnerReferences(const RunIdentity& run) {
  if (run.uid.empty()) return Json::array();
  return Json::array({{{"apiVersion", std::string(api::kApiVersion)},
                       {"kind", std::string(api::kKind)},
                       {"name", run.name},
                       {"uid", run.uid},
                       {"controller", true},
                       {"blockOwnerDeletion", true}}});
}

std::optional<std::string> NofileInForce(std::string_view log) {
  for (std::string_view value : LinesAfter(log, "fairbench-nofile: nofile ")) {
    const bool number = !value.empty() && value.find_first_not_of("0123456789") == std::string_view::npos;
    if (number || value == "unlimited") return std::string(value);
  }
  return std::nullopt;
}

std::optional<std::string> NofileShortfall(std::string_view log) {
  constexpr std::string_view kPrefix = "fairbench-nofile: asked for nofile ";
  const size_t at = log.find(kPrefix);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view line = log.substr(at + 18);  // from "asked for"
  line = line.substr(0, line.find('\n'));
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return std::string(line);
}

namespace {

Json TargetLabels(const TargetPodParams& p) {
  Json labels = {{api::label::kManagedBy, api::label::kFairbench},
                 {api::label::kName, api::label::kTargetApp},
                 {api::label::kRun, LabelValue(p.run.name)},
                 {api::label::kTarget, LabelValue(p.target.name)}};
  if (!p.run_namespace.empty()) labels[api::label::kRunNamespace] = LabelValue(p.run_namespace);
  return labels;
}

// The target's readinessProbe: the readiness path over HTTP(S), or, where
// the kubelet cannot speak the target's protocol, a port or gRPC probe.
Json TargetReadinessProbe(const api::Target& t) {
  const api::Readiness readiness = api::EffectiveReadiness(t);
  const auto timeout_s = std::chrono::ceil<std::chrono::seconds>(readiness.timeout).count();
  Json probe = {
      {"httpGet",
       {{"path", readiness.path}, {"port", t.port}, {"scheme", t.scheme == Scheme::kHttps ? "HTTPS" : "HTTP"}}},
      {"periodSeconds", 1},
      {"timeoutSeconds", 1},
      {"successThreshold", 1},
      {"failureThreshold", std::max<int64_t>(1, timeout_s)}};
  if (api::EffectiveProtocol(t) == Protocol::kH2c) {
    // The kubelet's httpGet speaks HTTP/1.1 (or h2 by ALPN over TLS): an
    // h2c listener (HTTP/2 with prior knowledge only) is probed as a port.
    probe.erase("httpGet");
    probe["tcpSocket"] = {{"port", t.port}};
  }
  if (api::EffectiveProtocol(t) == Protocol::kGrpc) {
    // Kubernetes' own grpc probe: grpc.health.v1.Health/Check answering
    // SERVING. The kubelet speaks it without TLS only, and cannot call a
    // named method: those targets are probed as a port, and the controller
    // calls the method (readiness.grpc.method) once the pod is ready.
    probe.erase("httpGet");
    const bool health = !(readiness.grpc && readiness.grpc->method);
    if (health && t.scheme == Scheme::kHttp) {
      Json grpc = {{"port", t.port}};
      if (readiness.grpc && !readiness.grpc->service.empty()) grpc["service"] = readiness.grpc->service;
      probe["grpc"] = std::move(grpc);
    } else {
      probe["tcpSocket"] = {{"port", t.port}};
    }
  }
  return probe;
}

Json TargetContainer(const api::Target& t, const Json& resources) {
  Json container = {{"name", kTargetContainer},
                    {"image", t.image},
                    {"ports", Json::array({{{"name", "http"}, {"containerPort", t.port}, {"protocol", "TCP"}}})},
                    {"readinessProbe", TargetReadinessProbe(t)},
                    {"resources", resources},
                    {"securityContext", TargetSecurityContext(t)}};
  if (!t.env.empty()) {
    Json env = Json::array();
    for (const auto& [k, v] : t.env) env.push_back({{"name", k}, {"value", v}});
    container["env"] = std::move(env);
  }
  return container;
}

// Without CAP_SYS_RESOURCE (restricted drops every capability) the
// helper can raise the soft limit only up to the hard one: it does, runs
// the target, and says what it could not reach (read back into the
// record). Given the capability, falling short is an error again.
bool AddsSysResource(const api::Target& t) {
  bool sys_resource = false;
  if (t.security_context && t.security_context->capabilities) {
    for (const std::string& c : t.security_context->capabilities->add)
      sys_resource |= c == "SYS_RESOURCE" || c == "ALL";
  }
  return sys_resource;
}

// Runs the target's command under fairbench-nofile, which an init
// container copies into a volume the two share; returns the note for the
// report.
std::string WrapInNofileHelper(const TargetPodParams& p, const Json& resources, Json& container, Json& spec) {
  const api::Target& t = p.target;
  const bool sys_resource = AddsSysResource(t);
  Json args = Json::array({"--nofile=" + std::to_string(t.nofile)});
  if (!sys_resource) args.push_back("--at-most");
  args.push_back("--");
  for (const std::string& a : p.command) args.push_back(a);
  container["command"] = Json::array({kHelperInPod});
  container["args"] = std::move(args);
  container["volumeMounts"] = Json::array({{{"name", "fairbench-bin"}, {"mountPath", kHelperDir}, {"readOnly", true}}});
  // The init container gets the target's resources, so the pod stays in
  // the same QoS class and asks for nothing more.
  spec["initContainers"] =
      Json::array({{{"name", kNofileContainer},
                    {"image", p.helper_image},
                    {"command", Json::array({p.helper_path, "--install", kHelperInPod})},
                    {"volumeMounts", Json::array({{{"name", "fairbench-bin"}, {"mountPath", kHelperDir}}})},
                    {"resources", resources},
                    {"securityContext", RestrictedContainer()}}});
  spec["volumes"] = Json::array({{{"name", "fairbench-bin"}, {"emptyDir", Json::object()}}});
  return "target " + t.name + ": nofile " + std::to_string(t.nofile) +
         " set by the fairbench-nofile wrapper (soft limit raised, up to the runtime's hard limit" +
         (sys_resource ? "; the hard limit too, with CAP_SYS_RESOURCE)" : ")");
}

std::string QosNote(const api::Target& t) {
  if (t.resources.cpu && t.resources.memory) {
    return "target " + t.name + ": Guaranteed QoS (requests == limits: cpu " + api::FormatCpu(*t.resources.cpu) +
           ", memory " + api::FormatMemory(*t.resources.memory) + ")" +
           (t.resources.cpu->millicores % 1000 == 0 ? "" : "; a fractional CPU gets no exclusive cores");
  }
  return "target " + t.name + ": not Guaranteed QoS (spec.targets[].resources lacks " +
         std::string(!t.resources.cpu && !t.resources.memory ? "cpu and memory"
                     : !t.resources.cpu                      ? "cpu"
                                                             : "memory") +
         "): no exclusive cores";
}

std::string SecurityNote(const api::Target& t) {
  return "target " + t.name + ": " +
         (t.security_context ? "securityContext from the run (" + TargetSecurityContext(t).dump() +
                                   "), the rest as the restricted Pod Security Standard asks"
                             : std::string("runs as the restricted Pod Security Standard asks (non-root, no privilege "
                                           "escalation, every capability dropped, RuntimeDefault seccomp)"));
}

}  // namespace

PodTemplate TargetPod(const TargetPodParams& p) {
  const api::Target& t = p.target;
  PodTemplate out;
  const Json resources = Resources(t.resources.cpu, t.resources.memory);
  Json container = TargetContainer(t, resources);
  Json spec = BaseSpec(p.grace_period_seconds);
  Place(spec, p.node, p.placement);
  if (!p.command.empty()) {
    out.notes.push_back(WrapInNofileHelper(p, resources, container, spec));
  } else {
    out.notes.push_back("target " + t.name +
                        ": nofile was left to the container runtime (no command in the spec, so "
                        "the image's entrypoint cannot be wrapped; asked for " +
                        std::to_string(t.nofile) + ")");
  }
  spec["containers"] = Json::array({std::move(container)});
  if (t.host_network) {
    // The node's network: ports bound by the server are the node's; Services
    // still resolve (ClusterFirstWithHostNet).
    spec["hostNetwork"] = true;
    spec["dnsPolicy"] = "ClusterFirstWithHostNet";
    out.notes.push_back("target " + t.name +
                        ": on its node's network (hostNetwork): agents reach it at the node's "
                        "address, port " +
                        std::to_string(t.port));
  }
  out.notes.push_back(QosNote(t));
  out.notes.push_back(SecurityNote(t));
  out.pod = {{"apiVersion", "v1"},
             {"kind", "Pod"},
             {"metadata", Metadata(TargetPodName(p.run.name, t.name), p.run, TargetLabels(p))},
             {"spec", std::move(spec)}};
  return out;
}

Json AgentPod(const AgentPodParams& p) {
  Json labels = {{api::label::kManagedBy, api::label::kFairbench},
                 {api::label::kName, api::label::kAgentApp},
                 {api::label::kRun, LabelValue(p.run.name)}};
  if (!p.run_namespace.empty()) labels[api::label::kRunNamespace] = LabelValue(p.run_namespace);
  const Json env =
      Json::array({{{"name", "POD_NAME"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.name"}}}}}},
                   {{"name", "NODE_NAME"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "spec.nodeName"}}}}}},
                   {{"name", "FAIRBENCH_AGENT_TOKEN"},
                    {"valueFrom", {{"secretKeyRef", {{"name", p.token_secret}, {"key", p.token_key}}}}}}});
  Json args = Json::array({"--controller", p.controller_address, "--id", "$(POD_NAME)", "--node", "$(NODE_NAME)",
                           "--give-up-after", std::to_string(p.give_up_after_seconds)});
  if (!p.tls_secret.empty()) {
    const std::string dir = kAgentTlsDir;
    args.push_back("--tls-ca");
    args.push_back(dir + "/ca.crt");
    if (p.tls_client_certificate) {
      for (const char* a : {"--tls-cert", "/tls.crt", "--tls-key", "/tls.key"}) {
        args.push_back(a[0] == '/' ? dir + a : std::string(a));
      }
    }
    if (!p.tls_server_name.empty()) {
      args.push_back("--tls-server-name");
      args.push_back(p.tls_server_name);
    }
  }
  Json container = {{"name", kAgentContainer},
                    {"image", p.image},
                    {"args", std::move(args)},
                    {"env", env},
                    {"resources", Resources(api::CpuQuantity{int64_t{std::max(1, p.threads)} * 1000}, p.memory)}};
  // Restricted, and a read-only root: the agent writes nothing.
  Json sc = RestrictedContainer();
  sc["readOnlyRootFilesystem"] = true;
  container["securityContext"] = std::move(sc);
  Json spec = BaseSpec(p.grace_period_seconds);
  Place(spec, p.node, p.placement);
  if (!p.tls_secret.empty()) {
    container["volumeMounts"] = Json::array({{{"name", "agent-tls"}, {"mountPath", kAgentTlsDir}, {"readOnly", true}}});
    spec["volumes"] = Json::array({{{"name", "agent-tls"}, {"secret", {{"secretName", p.tls_secret}}}}});
  }
  spec["containers"] = Json::array({std::move(container)});
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", Metadata(AgentPodName(p.run.name, p.index), p.run, std::move(labels))},
          {"spec", std::move(spec)}};
}

}  // namespace fairbench::controller::k8s
