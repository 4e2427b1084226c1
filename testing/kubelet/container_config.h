// What the test kubelet's container runtime makes of one container of a
// pod: the Docker Engine API's create body (POST /containers/create), as a
// kubelet and its CRI runtime would set the container up.
//
// - command/args: `command` becomes the ENTRYPOINT (and the image's CMD is
//   dropped, as the engine does when an entrypoint is given), `args` the
//   CMD; both already `$(VAR)`-expanded by the caller.
// - securityContext: the container's fields over the pod's (runAsUser,
//   runAsGroup, runAsNonRoot, seccompProfile), as the kubelet's
//   determineEffectiveSecurityContext merges them; runAsNonRoot checked
//   against the image's user as the kubelet's verifyRunAsNonRoot does (a
//   root or non-numeric image user is refused with the kubelet's words, and
//   the container never starts: CreateContainerConfigError);
//   readOnlyRootFilesystem, capabilities add/drop, privileged,
//   allowPrivilegeEscalation=false as no-new-privileges, seccompProfile
//   RuntimeDefault as the engine's default profile (Unconfined: none),
//   fsGroup and supplementalGroups as extra groups.
// - resources.limits: memory as the cgroup limit without swap
//   (MemorySwap = Memory), cpu as a CFS quota per 100 ms period,
//   requests.cpu as CPU shares; the container pinned to the CPUs the CPU
//   manager gives it (CpusetCpus).
// - the node's host network (no pod network here), the pod's /etc/hosts
//   file (written by the kubelet: pod name and Services), volume mounts as
//   bind mounts of host directories, RLIMIT_NOFILE, labels naming the pod.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace fairbench::kubelet {

// A host directory or file bind-mounted into the container.
struct BindMount {
  std::string host_path;
  std::string container_path;
  bool read_only = false;
};

struct ContainerInputs {
  nlohmann::json pod;        // the whole pod (metadata, spec)
  nlohmann::json container;  // one entry of spec.containers or spec.initContainers
  std::string image_user;    // the image's Config.User ("" = root)
  // Final values: expanded, env resolved (value, fieldRef, secretKeyRef, …).
  std::vector<std::string> command;  // empty: the image's ENTRYPOINT and CMD
  std::vector<std::string> args;     // empty: the image's CMD (when command is empty too)
  bool has_command = false;          // spec.command given (an empty CMD then)
  bool has_args = false;
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<BindMount> mounts;
  std::string hosts_file;  // bind-mounted at /etc/hosts; "" = the engine's own
  std::vector<int> cpus;   // the container's CPUs (the CPU manager's): CpusetCpus
  uint64_t nofile = 0;     // RLIMIT_NOFILE soft and hard; 0 = the engine's default
  std::map<std::string, std::string> labels;
};

// The create body, or why the container cannot be created (the message a
// kubelet shows with CreateContainerConfigError).
Result<nlohmann::json> DockerCreateBody(const ContainerInputs& in);

// The security context in force for a container: the pod's
// runAsUser/runAsGroup/runAsNonRoot/seccompProfile/seLinuxOptions under the
// container's own fields.
nlohmann::json EffectiveSecurityContext(const nlohmann::json& pod_spec, const nlohmann::json& container);

// The kubelet's check of runAsNonRoot against the image's user; OK when the
// container may start. `pod_text` is the kubelet's format.Pod: "name_ns(uid)".
Status VerifyRunAsNonRoot(const nlohmann::json& effective, const std::string& image_user, const std::string& pod_text,
                          const std::string& container);

// "1000", "1000:1000" → 1000; "nobody", "" → nullopt (not numeric; "" is root).
std::optional<int64_t> NumericUser(const std::string& user);

}  // namespace fairbench::kubelet
