// Pod templates of the Kubernetes platform: the target pod and the agent
// pods, as pure functions returning the Pod JSON that is POSTed.
//
// Both pods: labels app.kubernetes.io/managed-by=fairbench,
// app.kubernetes.io/name=fairbench-target|fairbench-agent, fairbench.dev/run
// (and fairbench.dev/target on the target pod); a controller owner
// reference to the BenchmarkRun (when its uid is known); spec.nodeName set
// (no scheduler needed) plus the placement's nodeSelector and tolerations,
// so that the kubelet's admission checks them again; restartPolicy Never; a
// short termination grace period; no service-account token; no service
// links; requests == limits (Guaranteed QoS when CPU and memory are given);
// what the Pod Security Standard "restricted" asks (pod: runAsNonRoot,
// seccompProfile RuntimeDefault; each container: allowPrivilegeEscalation
// false, capabilities drop ALL; the agent's root file system read-only),
// the target's container departing from it only where the run's
// spec.targets[].securityContext says so.
//
// Target pod: one container "target" (image, port, env, readiness probe on
// the readiness path, every second). When the container's command is
// known, an init container from the helper image copies the static
// fairbench-nofile helper into an emptyDir mounted at /fairbench/bin and the
// target runs `/fairbench/bin/fairbench-nofile --nofile=N --at-most --
// <command...>`, since Kubernetes has no pod field for RLIMIT_NOFILE: without
// CAP_SYS_RESOURCE it raises the soft limit up to the hard one and says
// what it could not reach (without --at-most when the run adds that
// capability: falling short is then an error). With no command (the
// image's entrypoint is unknown to the controller) there is no wrapper and
// the notes say that nofile was left to the container runtime.
//
// Agent pod: one container "agent" running fairbench-agent in connect mode
// (`--controller ADDRESS --id $(POD_NAME) --node $(NODE_NAME)
// --give-up-after S`), POD_NAME and NODE_NAME from the downward API, the
// token from a Secret (FAIRBENCH_AGENT_TOKEN through secretKeyRef: never in
// the arguments), CPU = threads whole CPUs. With TLS, the agents' TLS
// Secret is mounted read-only at /etc/fairbench/agent-tls and the agent
// gets `--tls-ca …/ca.crt` (and `--tls-cert …/tls.crt --tls-key
// …/tls.key` when the controller requires client certificates,
// `--tls-server-name` when one is set).
//
// Names are DNS-1123 labels of at most 63 characters; longer ones are cut
// and end in a hash of the full name, so distinct inputs stay distinct.
//
// Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/benchmark_run.h"
#include "controller/platform/platform.h"

namespace fairbench::controller::k8s {

inline constexpr const char* kTargetContainer = "target";
inline constexpr const char* kAgentContainer = "agent";
inline constexpr const char* kNofileContainer = "fairbench-nofile";
inline constexpr const char* kHelperDir = "/fairbench/bin";
inline constexpr const char* kHelperInPod = "/fairbench/bin/fairbench-nofile";
inline constexpr const char* kAgentTlsDir = "/etc/fairbench/agent-tls";

// `prefix + suffix` when it fits in 63 characters; otherwise cut, with
// "-<10 hex digits of a hash of the whole>" before the suffix (short
// suffixes are kept whole). Trailing '-' and '.' of a cut part are dropped.
std::string DnsLabelName(std::string_view prefix, std::string_view suffix = {});
// "<run>-<target>".
std::string TargetPodName(std::string_view run, std::string_view target);
// "<run>-agent-<index>".
std::string AgentPodName(std::string_view run, int index);
// A label value for `value`: itself when at most 63 characters, else cut
// with a hash as DnsLabelName does.
std::string LabelValue(std::string_view value);
// The selector of every pod of a run ("app.kubernetes.io/managed-by=fairbench,fairbench.dev/run=<run>").
std::string RunPodsSelector(std::string_view run);

struct TargetPodParams {
  RunIdentity run;
  std::string run_namespace;  // the run's, when not the pod's: no owner reference, a label instead
  api::Target target;
  std::string node;              // spec.nodeName
  api::NodePlacement placement;  // spec.placement.target
  // The container's full command (entrypoint and arguments); empty: the
  // image's own, and nofile cannot be set.
  std::vector<std::string> command;
  std::string helper_image;                                     // holds the helper (the agent image)
  std::string helper_path = "/usr/local/bin/fairbench-nofile";  // in helper_image
  int64_t grace_period_seconds = 5;
};

struct PodTemplate {
  nlohmann::json pod;
  std::vector<std::string> notes;  // for the report: how nofile and QoS are handled
};

PodTemplate TargetPod(const TargetPodParams& params);

// The limit fairbench-nofile reports in the container's log ("fairbench-nofile:
// nofile 65536" before it runs the target), or nullopt.
std::optional<std::string> NofileInForce(std::string_view log);
// What fairbench-nofile could not reach ("asked for nofile 65536, the hard
// limit is 20000 and cannot be raised (no CAP_SYS_RESOURCE); continuing
// with less (--at-most)"), or nullopt when it reached what was asked.
std::optional<std::string> NofileShortfall(std::string_view log);

struct AgentPodParams {
  RunIdentity run;
  std::string run_namespace;  // as in TargetPodParams
  int index = 0;
  std::string node;              // spec.nodeName, never the target's
  api::NodePlacement placement;  // spec.placement.agents
  int threads = 1;               // whole CPUs requested and limited
  std::string image;
  std::string controller_address;  // host:port the agent dials
  std::string token_secret;        // Secret holding the agent token
  std::string token_key = "token";
  api::MemoryQuantity memory{512LL << 20};
  int give_up_after_seconds = 30;
  int64_t grace_period_seconds = 5;
  // TLS: the Secret with ca.crt (and tls.crt, tls.key for a client
  // certificate); empty: plain text.
  std::string tls_secret;
  bool tls_client_certificate = false;
  std::string tls_server_name;  // expected in the controller's certificate; empty: the host dialed
};

nlohmann::json AgentPod(const AgentPodParams& params);

// The owner reference to the run, or an empty array when its uid is unknown.
nlohmann::json OwnerReferences(const RunIdentity& run);

}  // namespace fairbench::controller::k8s
